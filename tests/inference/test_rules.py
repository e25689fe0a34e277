"""LightGBM's input rules folded into the trees give the predictions of applying them to X; small batches run the
serial twins of the kernels and agree with the parallel ones."""

import dataclasses

import numpy as np
import pytest

from dtlab.inference import Forest, _predict_cpu
from dtlab.inference import reference as R
from dtlab.inference.lightgbm_rules import fold_input_rules
from dtlab.testing import random_grid_tree
from dtlab.trees import FlatTree
from dtlab.trees.ensemble import Ensemble
from dtlab.trees.packed import PackedForest

Z = float(np.float32(1e-35))


def _with_rules(rng, n_trees=6, n_features=4):
    """An ensemble whose thresholds sit in and around the zero band, features 0-1 reading NaN as 0."""
    grid = np.array([-1.0, -Z, -Z / 2, -1e-36, 0.0, 1e-36, Z / 2, Z, 1.0])
    trees = [random_grid_tree(rng, n_features, 4, grid, p_split=0.9) for _ in range(n_trees)]
    forest = PackedForest.from_trees([FlatTree(t.feature, t.threshold, t.left, t.right, t.value, n_features,
                                               "regression", None, rng.random(t.feature.shape[0]) < 0.5)
                                      for t in trees])
    return Ensemble(forest, n_features, 1, np.zeros(n_trees, np.int64), np.zeros(1), 1.0, None,
                    nan_as_zero=np.array([0, 1]), zero_threshold=Z)


def _rules_applied(ens, X):
    """The rules as LightGBM states them, applied to the values: the band reads 0, NaN on nan_as_zero reads 0."""
    X = np.where(np.abs(X) <= X.dtype.type(ens.zero_threshold), X.dtype.type(0), X)
    X[:, ens.nan_as_zero] = np.nan_to_num(X[:, ens.nan_as_zero], nan=0.0)
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_folded_trees_read_x_as_the_rules_would(rng, dtype):
    for _ in range(5):
        ens = _with_rules(rng)
        band = np.array([-1.0, -Z, -Z / 2, -1e-36, 0.0, 1e-36, Z / 2, Z, 1.0, np.nan, -2 * Z, 2 * Z])
        X = rng.choice(band, size=(400, 4)).astype(dtype)
        expected = R.raw_from_leaves(ens, R.leaves_traversal(ens.forest, _rules_applied(ens, X)))[:, 0]
        folded = fold_input_rules(ens)
        assert folded.nan_as_zero.size == 0 and fold_input_rules(folded).forest.threshold.tolist() == \
            folded.forest.threshold.tolist()  # folding twice changes nothing
        forest = Forest(ens)
        for method in ("traversal", "bitmask", "quickscorer"):
            np.testing.assert_array_equal(forest.predict(X, method=method), expected)


def test_unfolded_trees_would_differ(rng):
    """The check above can fail: the band's thresholds matter (the same trees without folding differ)."""
    differs = 0
    for _ in range(5):
        ens = _with_rules(rng)
        X = rng.choice(np.array([-Z / 2, 1e-36, Z / 2, np.nan]), size=(400, 4))
        plain = dataclasses.replace(ens, nan_as_zero=np.zeros(0, np.int64), zero_threshold=0.0)
        unfolded = R.raw_from_leaves(ens, R.leaves_traversal(plain.forest, X))
        expected = R.raw_from_leaves(ens, R.leaves_traversal(ens.forest, _rules_applied(ens, X)))
        differs += int((unfolded != expected).any())
    assert differs > 0


def test_small_batches_run_the_serial_twins_with_the_same_sums(rng):
    grid = np.quantile(rng.normal(size=999), np.linspace(0.05, 0.95, 19))
    forest = Forest([random_grid_tree(rng, 5, 6, grid) for _ in range(40)], combine="sum")
    X = rng.normal(size=(3_000, 5)).astype(np.float32)
    assert _predict_cpu.for_size(_predict_cpu.traverse_heap, 1, 40) is _predict_cpu.SERIAL[_predict_cpu.traverse_heap]
    assert (_predict_cpu.for_size(_predict_cpu.traverse_heap, 3_000, 40) is _predict_cpu.traverse_heap
            or _predict_cpu.numba.get_num_threads() == 1)
    for method in ("traversal", "bitmask", "quickscorer", "traversal_nodes"):
        whole = forest.raw_sum(X, method)  # 120,000 tree-rows: the parallel kernel
        rows = np.vstack([forest.raw_sum(X[i:i + 7], method) for i in range(0, 3_000, 7)])  # serial twins
        np.testing.assert_array_equal(rows, whole)
