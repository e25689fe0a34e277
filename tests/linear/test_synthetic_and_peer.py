"""The synthetic power-law data, the w8a loader and the LIBLINEAR runner."""

import numpy as np
import pytest
import scipy.sparse

from dtlab.datasets import load_w8a
from dtlab.linear.synthetic import make_sparse_classification
from workbench.linear.peers import Liblinear, capture_fd1, liblinear_fit, objective_value


def test_synthetic_shape_seed_and_format():
    X, y = make_sparse_classification(5_000, 2_000, nnz_per_row=8, positive_fraction=0.25, seed=3)
    assert isinstance(X, scipy.sparse.csr_matrix) and X.shape == (5_000, 2_000) and X.dtype == np.float64
    assert X.indices.dtype == np.int32 and X.has_sorted_indices
    Y = X.copy()
    Y.sum_duplicates()
    assert Y.nnz == X.nnz  # no duplicate entries
    assert 6 * 5_000 < X.nnz <= 8.5 * 5_000
    assert set(np.unique(y)) == {-1.0, 1.0} and abs((y > 0).mean() - 0.25) < 0.01
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1))).ravel()
    np.testing.assert_allclose(norms[norms > 0], 1.0)  # tf-idf-like rows of unit length
    X2, y2 = make_sparse_classification(5_000, 2_000, nnz_per_row=8, positive_fraction=0.25, seed=3)
    assert (X2 != X).nnz == 0 and np.array_equal(y, y2)
    X3, _ = make_sparse_classification(5_000, 2_000, nnz_per_row=8, seed=4)
    assert (X3 != X).nnz > 0


def test_synthetic_feature_frequencies_follow_a_power_law():
    X, _ = make_sparse_classification(20_000, 5_000, nnz_per_row=10, zipf_a=1.1, seed=0)
    counts = np.sort(np.bincount(X.indices, minlength=5_000))[::-1]
    ranks = np.arange(1, 5_001)
    mid = slice(10, 1_000)  # away from the saturated head and the sparse tail
    slope = np.polyfit(np.log(ranks[mid]), np.log(counts[mid]), 1)[0]
    assert -1.4 < slope < -0.8
    uniform, _ = make_sparse_classification(20_000, 5_000, nnz_per_row=10, zipf_a=0.0, seed=0)
    u = np.bincount(uniform.indices, minlength=5_000)
    assert u.max() < 3 * u.mean() < counts[0] / 10


def test_synthetic_bad_parameters():
    with pytest.raises(ValueError):
        make_sparse_classification(0)
    with pytest.raises(ValueError, match="positive_fraction"):
        make_sparse_classification(10, positive_fraction=1.0)
    with pytest.raises(ValueError):
        make_sparse_classification(10, nnz_per_row=0)


def test_load_w8a():
    d = load_w8a()
    assert d.X.shape == (49_749, 300) and d.X.nnz == 579_586
    assert (d.y > 0).sum() == 1_479 and set(np.unique(d.y)) == {-1.0, 1.0}


def test_capture_fd1_reads_what_c_code_prints():
    import ctypes

    libc = ctypes.CDLL(None)
    with capture_fd1() as out:
        libc.printf(b"hello from C\n")
        libc.fflush(None)
    assert "hello from C" in out[0]


def test_liblinear_run_parses_its_log(small_problem):
    pytest.importorskip("liblinear")
    X, y = small_problem
    run = liblinear_fit(X, y, loss="logistic", C=2.0, eps=0.01, repeats=2)
    assert run.n_iter == len(run.grad_norm_per_iter) >= 1 and run.seconds > 0 and run.version >= 240
    assert run.objective == pytest.approx(objective_value(X, y, run.coef, 0.0, 2.0, "logistic"))
    labels = np.where(y > 0, "spam", "ham")  # "spam" > "ham": the same +1 class, the same weights
    again = Liblinear(X, labels).fit("logistic", 2.0, 0.01)
    np.testing.assert_allclose(again.coef, run.coef)
    with pytest.raises(ValueError, match="two classes"):
        Liblinear(X, np.arange(X.shape[0]) % 3)


def test_objective_value_formula():
    X = scipy.sparse.csr_matrix(np.array([[1.0, 0.0], [0.0, 2.0]]))
    y = np.array([1.0, -1.0])
    w, b = np.array([0.5, 0.25]), 0.1
    t = y * (X @ w + b)
    assert objective_value(X, y, w, b, 3.0, "logistic") == pytest.approx(
        0.5 * (w @ w + b * b) + 3.0 * np.log1p(np.exp(-t)).sum())
    assert objective_value(X, y, w, b, 3.0, "squared_hinge") == pytest.approx(
        0.5 * (w @ w + b * b) + 3.0 * (np.maximum(0, 1 - t) ** 2).sum())
