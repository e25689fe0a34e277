"""The small-batch path of ``Forest.predict`` (a few rows per call): the same predictions as the general path,
the same errors, and the general path wherever its conditions do not hold."""

import numpy as np
import pytest

from dtlab.inference import Forest, _predict_cpu
from dtlab.testing import random_grid_tree

METHODS = ("traversal", "bitmask", "quickscorer", "auto")


@pytest.fixture
def forest(rng):
    grid = np.quantile(rng.normal(size=999), np.linspace(0.05, 0.95, 19))
    return Forest([random_grid_tree(rng, 5, 6, grid) for _ in range(30)], combine="sum")


def _general(forest, X, method):
    """The general path spelled out: prepare (checks), the kernel, the base score."""
    P = forest.prepare(X)
    return forest.finish(forest.raw_sum(P, "traversal" if method == "auto" else method))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_small_calls_predict_as_the_general_path(forest, rng, dtype, monkeypatch):
    X = rng.normal(size=(40, 5)).astype(dtype)
    X[::3, 2] = np.nan
    expected = {m: _general(forest, X, m) for m in METHODS}
    # a small call must not reach prepare(): that is the general path's input handling
    monkeypatch.setattr(Forest, "prepare", lambda self, X: pytest.fail("the small-batch path was not taken"))
    for method in METHODS:
        for rows in (1, 4, 13):
            got = np.concatenate([forest.predict(X[i:i + rows], method=method) for i in range(0, 40, rows)])
            np.testing.assert_array_equal(got, expected[method], err_msg=f"{method}, {rows} rows per call")
    assert forest._serving_method  # "auto" was measured for the serial kernels once and kept


def test_small_calls_keep_the_errors(forest):
    with pytest.raises(ValueError, match="inf"):
        forest.predict(np.array([[0.0, 1.0, -np.inf, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="inf"):
        forest.predict(np.array([[0.0, 1.0, np.inf, 0.0, 0.0]], np.float32), method="quickscorer")
    with pytest.raises(ValueError, match="n_jobs"):
        forest.predict(np.zeros((1, 5)), n_jobs=0)
    with pytest.raises(ValueError, match="method must be one of"):
        forest.predict(np.zeros((1, 5)), method="fastest")
    with pytest.raises(ValueError, match="6 features, but 5 were expected"):
        forest.predict(np.zeros((1, 6)))
    with pytest.raises(ValueError, match="2-D"):
        forest.predict(np.zeros(5))


def test_other_inputs_take_the_general_path_with_the_same_result(forest, rng):
    X = rng.normal(size=(4, 5))
    expected = _general(forest, X, "auto")
    for other in (np.asfortranarray(X), X.tolist(), X[::-1][::-1], np.hstack([X, X])[:, :5]):
        np.testing.assert_array_equal(forest.predict(other), expected)
    integers = np.arange(20).reshape(4, 5) - 10
    np.testing.assert_array_equal(forest.predict(integers), _general(forest, integers.astype(np.float64), "auto"))
    np.testing.assert_array_equal(forest.predict(X, n_jobs=1), expected)
    assert forest.predict(np.zeros((0, 5))).shape == (0,)


def test_a_float32_model_reads_float64_rows_as_float32(rng):
    xgb = pytest.importorskip("xgboost")
    X = rng.normal(size=(300, 4)).astype(np.float32)
    booster = xgb.train({"max_depth": 4, "nthread": 1}, xgb.DMatrix(X, X[:, 0] > 0), 8)
    forest = Forest(booster)
    assert forest.ensemble.input_dtype == np.float32
    rows = X[:3].astype(np.float64) + 1e-9  # rounds back to the float32 values
    np.testing.assert_allclose(forest.predict(rows), booster.inplace_predict(X[:3], predict_type="margin"),
                               rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(forest.predict(rows), forest.predict(X[:3]))


def test_the_inf_scan_matches_numpy(rng):
    X = rng.normal(size=(7, 3))
    assert not _predict_cpu.has_inf(X.ravel())
    X[4, 1] = np.nan
    assert not _predict_cpu.has_inf(X.ravel())
    X[6, 2] = -np.inf
    assert _predict_cpu.has_inf(X.ravel()) == bool(np.isinf(X).any())
