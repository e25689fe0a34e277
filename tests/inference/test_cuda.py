"""CUDA kernels (simulator unless a real GPU run) against the CPU, on tiny inputs."""

import numpy as np
import pytest

from dtlab.backend import cuda_status
from dtlab.inference import Forest
from dtlab.testing import random_grid_tree

from .test_methods import GRID, grid_rows

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
    from dtlab.inference._cuda import bitmask_leaves_cuda
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


def test_cuda_rejects_quickscorer():
    forest = Forest(random_grid_tree(np.random.default_rng(0), 2, 2, GRID))
    with pytest.raises(ValueError, match="no CUDA kernel"):
        forest.predict(np.zeros((2, 2)), method="quickscorer", backend="cuda")


@pytest.mark.gpu
def test_real_gpu_large_forest():
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20000, 28)).astype(np.float32)
    booster = xgb.train({"max_depth": 8, "nthread": 2}, xgb.DMatrix(X, X[:, 0] + X[:, 1] ** 2), 50)
    forest = Forest(booster)
    expected = booster.inplace_predict(X, predict_type="margin")
    for method in ("traversal", "bitmask"):
        np.testing.assert_allclose(forest.predict(X, method=method, backend="cuda"), expected, rtol=1e-5, atol=1e-5)
