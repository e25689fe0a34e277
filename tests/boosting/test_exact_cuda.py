"""The CUDA exact search (numba's simulator without a GPU) grows the CPU exact search's trees, bit for bit."""

import numpy as np
import pytest
import scipy.sparse

from dtlab.backend import cuda_status
from dtlab.boosting import GBDTClassifier, GBDTRegressor

pytestmark = pytest.mark.skipif(not cuda_status()[0], reason="numba.cuda unavailable")

FIELDS = ("feature", "threshold", "missing_left", "left", "right", "value", "gain", "cover")


def _tiny(rng, n=24, d=3, missing=0.2):
    """Few distinct values (ties in every column), NaN holes, a target that splits on features 0 and 1."""
    X = rng.integers(0, 8, size=(n, d)).astype(np.float32) * 0.5
    X[rng.random((n, d)) < missing] = np.nan
    y = (np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) * 0.5 + rng.normal(size=n)).astype(np.float32)
    return X, y


def _assert_same_trees(cpu, gpu):
    assert gpu.backend_ == "cuda" and cpu.backend_ == "cpu"
    assert len(cpu.trees_) == len(gpu.trees_)
    for a, b in zip(cpu.trees_, gpu.trees_):
        for field in FIELDS:
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field), err_msg=field)


def test_regressor_with_nan_trees_identical_to_cpu(rng):
    X, y = _tiny(rng)
    kw = dict(n_estimators=2, max_depth=3, split_method="exact", min_child_weight=0.0)
    cpu = GBDTRegressor(backend="cpu", **kw).fit(X, y)
    gpu = GBDTRegressor(backend="cuda", **kw).fit(X, y)
    assert cpu.trees_[0].n_nodes >= 7  # real trees, not stumps
    assert not cpu.trees_[0].missing_left.all()  # both default directions occur
    _assert_same_trees(cpu, gpu)
    np.testing.assert_array_equal(cpu.predict(X), gpu.predict(X))


def test_binary_logistic_on_csc_sparse_trees_identical_to_cpu(rng):
    X, y = _tiny(rng, missing=0.0)
    X[X < 1.0] = 0.0  # absent entries are missing
    labels = (y > np.median(y)).astype(int)
    Xs = scipy.sparse.csc_matrix(X)
    assert Xs.nnz < X.size
    kw = dict(n_estimators=2, max_depth=2, split_method="exact", min_child_weight=0.1)
    cpu = GBDTClassifier(backend="cpu", **kw).fit(Xs, labels)
    gpu = GBDTClassifier(backend="cuda", **kw).fit(Xs, labels)
    _assert_same_trees(cpu, gpu)
    np.testing.assert_array_equal(cpu.predict_proba(Xs), gpu.predict_proba(Xs))


def test_softmax_trees_identical_to_cpu(rng):
    X, y = _tiny(rng, n=18, d=2, missing=0.1)
    labels = np.digitize(y, np.quantile(y, [1 / 3, 2 / 3]))
    kw = dict(n_estimators=1, max_depth=2, split_method="exact", reg_lambda=0.5)
    cpu = GBDTClassifier(backend="cpu", **kw).fit(X, labels)
    gpu = GBDTClassifier(backend="cuda", **kw).fit(X, labels)
    assert len(cpu.trees_) == 3
    _assert_same_trees(cpu, gpu)


def test_segments_longer_than_a_block(rng):
    """40 rows, one feature without missing values: several chunks per segment, only "missing left" searched."""
    X, y = _tiny(rng, n=40, d=2, missing=0.0)
    X[::3, 1] = np.nan
    kw = dict(n_estimators=1, max_depth=2, split_method="exact", min_child_weight=0.0)
    cpu = GBDTRegressor(backend="cpu", **kw).fit(X, y)
    gpu = GBDTRegressor(backend="cuda", **kw).fit(X, y)
    _assert_same_trees(cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("sparse", [False, True])
def test_same_trees_on_a_real_gpu(rng, sparse):
    """20,000 rows, 8 features: segments of many 128-thread chunks, deep trees, 5 rounds."""
    n, d = 20_000, 8
    X = rng.normal(size=(n, d)).astype(np.float32)
    y = (X[:, 0] > 0) ^ (X[:, 1] * X[:, 2] > 0.3)
    X[rng.random((n, d)) < 0.1] = np.nan
    if sparse:
        X[np.abs(np.nan_to_num(X)) < 0.5] = 0.0
        X = scipy.sparse.csc_matrix(np.nan_to_num(X))
    kw = dict(n_estimators=5, max_depth=6, split_method="exact")
    cpu = GBDTClassifier(backend="cpu", **kw).fit(X, y)
    gpu = GBDTClassifier(backend="cuda", **kw).fit(X, y)
    _assert_same_trees(cpu, gpu)


def _root_split(search_class, X, g, h, tpb=None):
    from dtlab.backend import resolve_backend
    from dtlab.boosting.grower import ColumnData

    data = ColumnData.from_input(X)
    search = search_class(data, 1) if tpb is None else search_class(data, resolve_backend("cuda"))
    if tpb is not None:
        search.tpb = tpb
    search.start_tree(g, h)
    best_f, best, thr, left = search.find(1, np.array([g.sum(dtype=np.float64)]),
                                          np.array([h.sum(dtype=np.float64)]), np.array([g.shape[0]]), 1.0, 0.0)
    return int(best_f[0]), float(best[0]), float(thr[0]), bool(left[0])


@pytest.mark.parametrize("tpb", [2, 8, 16])
@pytest.mark.parametrize("case", ["missing_left_keeps_last", "missing_right_keeps_first"])
def test_equal_proxies_break_ties_as_the_cpu(case, tpb):
    """Two candidates with equal proxies, in one thread or in two (by ``tpb``): "missing left"
    keeps the larger left size (XGBoost scans it downwards), "missing right" the smaller."""
    from dtlab.boosting._exact_cuda import ExactCudaSearch
    from dtlab.boosting.exact import ExactSearch

    n = 20
    X = np.arange(n, dtype=np.float32)[:, None]
    if case == "missing_left_keeps_last":  # no missing value; mirror-symmetric gradients: ties at nl = 6 and 14
        g = np.where((np.arange(n) < 6) | (np.arange(n) >= 14), 1.0, -0.75).astype(np.float32)
        expected = (13.5, True)
    else:  # rows 18, 19 missing (on the right in that scan); ties at nl = 7 and 13
        g = np.array([1.5, -2.0, 1.5, -1.5, -2.0, 1.0, -2.0, 0.5, -0.5, 1.0, -0.5, -0.5, 0.0, 2.0, 0.5, 1.5,
                      -0.5, -0.5, -1.5, 2.0], np.float32)
        X[18:] = np.nan
        expected = (6.5, False)
    h = np.ones(n, np.float32)
    cpu = _root_split(ExactSearch, X, g, h)
    assert cpu[0] == 0 and cpu[2:] == expected
    assert _root_split(ExactCudaSearch, X, g, h, tpb) == cpu
