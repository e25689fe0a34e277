"""CUDA kernels (simulator unless a real GPU run) against the CPU, on tiny inputs."""

import numpy as np
import pytest

from dtlab.backend import cuda_status
from dtlab.inference import Forest
from dtlab.testing import random_grid_tree
from tests.inference.test_methods import GRID, grid_rows

pytestmark = pytest.mark.skipif(not cuda_status()[0], reason="cuda backend unavailable")


@pytest.mark.parametrize("seed", [0, 1])
def test_cuda_methods_equal_cpu(seed):
    rng = np.random.default_rng(seed)
    forest = Forest([random_grid_tree(rng, 3, d, GRID, p_split=0.7) for d in (1, 3, 4)], combine="sum")
    X = grid_rows(rng, 12, 3, np.float32)
    expected = forest.predict(X, method="traversal", backend="cpu")
    for method in ("traversal", "bitmask"):
        np.testing.assert_allclose(forest.predict(X, method=method, backend="cuda"), expected, rtol=1e-12)


@pytest.mark.parametrize("assignment", ["node", "nodes", "level"])
def test_bitmask_thread_assignments_find_the_same_leaves(assignment):
    from dtlab.backend import resolve_backend
    from dtlab.inference._predict_cuda_host import bitmask_leaves_cuda
    from dtlab.inference.reference import leaves_traversal

    rng = np.random.default_rng(7)
    tree = random_grid_tree(rng, 3, 7, np.linspace(-1, 1, 9), p_split=0.9)  # > 64 leaves likely: two words
    forest = Forest(tree)
    X = forest.prepare(grid_rows(rng, 5, 3, np.float64))
    be = resolve_backend("cuda")
    leaves = be.to_host(bitmask_leaves_cuda(forest, X, assignment, be, nodes_per_thread=3))
    ens = forest.ensemble
    walked = leaves_traversal(ens.forest, X)[:, 0]
    from dtlab.inference.layout import tree_shape

    np.testing.assert_array_equal(leaves[:, 0], tree_shape(ens.forest).first_leaf[walked])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cuda_quickscorer_equals_cpu_and_reference(seed):
    """Depth 1-7, ties at the thresholds, NaN sent either way, trees of > 64 leaves (several words)."""
    from dtlab.inference import reference as R

    rng = np.random.default_rng(seed)
    dtype = (np.float32, np.float64)[seed % 2]
    trees = [random_grid_tree(rng, 4, d, GRID, p_split=0.9, n_outputs=1) for d in (1, 2, 4, 7, 7)]
    forest = Forest(trees, combine="sum")
    assert forest.layout("quickscorer_runs", dtype).n_words >= 2
    assert {bool(m) for t in trees for m in t.missing_left[t.left != -1]} == {False, True}
    X = forest.prepare(grid_rows(rng, 30, 4, dtype, p_nan=0.2))
    cuda = forest.predict(X, method="quickscorer", backend="cuda")
    np.testing.assert_array_equal(cuda, forest.predict(X, method="quickscorer", backend="cpu"))
    expected = forest.finish(R.raw_from_leaves(forest.ensemble, R.leaves_traversal(forest.ensemble.forest, X)))
    np.testing.assert_array_equal(cuda, expected)


def test_cuda_quickscorer_one_word_multi_output():
    """Every tree <= 64 leaves (the CPU's one-word kernel), several outputs, a lone leaf, an empty X."""
    rng = np.random.default_rng(3)
    forest = Forest([random_grid_tree(rng, 3, d, GRID, n_outputs=3) for d in (0, 2, 5)], combine="mean")
    X = grid_rows(rng, 20, 3, np.float32)
    cpu = forest.predict(X, method="quickscorer", backend="cpu")
    np.testing.assert_array_equal(forest.predict(X, method="quickscorer", backend="cuda"), cpu)
    assert forest.predict(X[:0], method="quickscorer", backend="cuda").shape == (0, 3)


def test_cuda_quickscorer_tree_runs_layout():
    """Tests sorted by (tree, feature, threshold); each run one feature of one tree."""
    forest = Forest([random_grid_tree(np.random.default_rng(s), 3, 5, GRID) for s in range(3)], combine="sum")
    lay = forest.layout("quickscorer_runs", np.float64)
    f = forest.ensemble.forest
    assert lay.tree_run[-1] == lay.run_feature.shape[0] and lay.run_test[-1] == (f.left != -1).sum()
    for t in range(forest.n_trees):
        feats = lay.run_feature[lay.tree_run[t]:lay.tree_run[t + 1]]
        assert np.all(np.diff(feats) > 0)
        for r in range(lay.tree_run[t], lay.tree_run[t + 1]):
            assert np.all(np.diff(lay.threshold[lay.run_test[r]:lay.run_test[r + 1]]) >= 0)


def test_cuda_quickscorer_peers():
    """An XGBoost and a LightGBM model: the CUDA quickscorer equals the CPU quickscorer to the bit."""
    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(300, 4)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    y = np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) ** 2
    models = [xgb.train({"max_depth": 7, "nthread": 1, "seed": 0}, xgb.DMatrix(X, y), 4),
              lgb.train({"num_leaves": 90, "max_depth": 8, "min_data_in_leaf": 2, "verbose": -1, "num_threads": 1},
                        lgb.Dataset(X, y), 4)]
    Xt = X[:30].copy()
    Xt[:10] = np.round(Xt[:10], 0)  # values on round thresholds
    for model in models:
        forest = Forest(model)
        got = forest.predict(Xt, method="quickscorer", backend="cuda")
        np.testing.assert_array_equal(got, forest.predict(Xt, method="quickscorer", backend="cpu"))
        np.testing.assert_allclose(got, forest.predict(Xt, method="traversal", backend="cpu"), rtol=1e-12)


def test_cuda_quickscorer_names_the_leaf_limit():
    from dtlab.inference._predict_cuda import MAX_WORDS
    from tests.inference.test_methods import _chain

    forest = Forest(_chain(64 * MAX_WORDS))  # 4097 leaves
    with pytest.raises(ValueError, match="<= 4096 leaves.*4097 leaves.*traversal"):
        forest.predict(np.zeros((2, 1)), method="quickscorer", backend="cuda")


def test_first_leaf_and_clear_leaves_in_python():
    """The device functions, run as plain Python: clear ranges across words, find the lowest set bit."""
    from dtlab.inference._predict_cuda import ALL, clear_leaves, first_leaf

    for first, count in [(0, 1), (3, 61), (60, 10), (0, 64), (64, 64), (5, 200), (127, 1)]:
        bits = np.full(5, ALL)
        clear_leaves(bits, first, count)
        expected = np.ones(320, bool)
        expected[first:first + count] = False
        got = np.unpackbits(bits.view(np.uint8), bitorder="little").astype(bool)
        np.testing.assert_array_equal(got, expected)
        assert first_leaf(bits, 5) == (count if first == 0 else 0)
    assert first_leaf(np.zeros(2, np.uint64), 2) == -1
    assert first_leaf(np.array([0, 1 << 63], np.uint64), 2) == 127


@pytest.mark.gpu
def test_real_gpu_large_forest():
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 28)).astype(np.float32)
    booster = xgb.train({"max_depth": 8, "nthread": 2}, xgb.DMatrix(X, X[:, 0] + X[:, 1] ** 2), 50)
    forest = Forest(booster)
    expected = booster.inplace_predict(X, predict_type="margin")
    for method in ("traversal", "bitmask", "quickscorer"):
        np.testing.assert_allclose(forest.predict(X, method=method, backend="cuda"), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.gpu
def test_real_gpu_quickscorer_equals_cpu_on_deep_trees_with_nan():
    """Trees of several hundred leaves (several words), NaN both ways, 50 000 rows: the same sums to the bit."""
    rng = np.random.default_rng(1)
    trees = [random_grid_tree(rng, 8, 12, GRID, p_split=0.75) for _ in range(40)]
    forest = Forest(trees, combine="sum")
    assert forest.layout("quickscorer_runs", np.float32).n_words >= 2
    X = grid_rows(rng, 50_000, 8, np.float32)
    np.testing.assert_array_equal(forest.predict(X, method="quickscorer", backend="cuda"),
                                  forest.predict(X, method="quickscorer", backend="cpu"))
