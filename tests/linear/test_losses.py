"""Losses: fun, grad, Hv and the Hessian diagonal against the formulas, on every kind of row block."""

import numpy as np
import pytest
import scipy.sparse

from dtlab.linear._row_blocks import ArrayRows, NumbaCsrRows
from dtlab.linear.losses import LOSSES, L2Objective, LiblinearVectorOps

BLOCKS = {
    "numba-csr": lambda X: NumbaCsrRows(X),
    "numba-csr-reordered": lambda X: NumbaCsrRows(X, np.arange(X.shape[0])[::-1].copy()),
    "array-csr": lambda X: ArrayRows(X, np),
    "array-dense": lambda X: ArrayRows(X.toarray(), np),
}


def _dense_formulas(X, y, C, loss, w, s):
    Xd = X.toarray()
    t = y * (Xd @ w)
    if loss == "logistic":
        f = 0.5 * w @ w + C * np.logaddexp(0, -t).sum()
        sig = 1 / (1 + np.exp(-t))
        g = w + Xd.T @ (C * (sig - 1) * y)
        dd = C * sig * (1 - sig)
    else:
        d = np.maximum(1 - t, 0)
        f = 0.5 * w @ w + C * (d * d).sum()
        active = t < 1
        g = w + 2 * C * Xd[active].T @ (y[active] * (t[active] - 1))
        dd = 2 * C * active
    H = np.eye(len(w)) + Xd.T @ (dd[:, None] * Xd)
    return f, g, H @ s, np.diag(H)



@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("kind", sorted(BLOCKS))
def test_objective_matches_formulas(loss, kind, small_problem):
    X, y = small_problem
    rng = np.random.default_rng(0)
    w, s = rng.standard_normal(X.shape[1]) * 0.3, rng.standard_normal(X.shape[1])
    block = BLOCKS[kind](X)
    if kind == "numba-csr-reordered":
        X_seen, y_seen = X[::-1], y[::-1].copy()
    else:
        X_seen, y_seen = X, y
    obj = L2Objective([LOSSES[loss](block, y_seen, 2.0)], np)
    f = obj.fun(w)
    g = obj.grad(w)
    hv = obj.hv(s)
    diag = obj.diag()
    f_ref, g_ref, hv_ref, diag_ref = _dense_formulas(X_seen, y_seen, 2.0, loss, w, s)
    assert f == pytest.approx(f_ref, rel=1e-12)
    np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(hv, hv_ref, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(diag, diag_ref, rtol=1e-12)
    assert diag[7] == 1.0  # the empty column: only the regulariser


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_gradient_and_hessian_by_finite_differences(loss, small_problem):
    X, y = small_problem
    rng = np.random.default_rng(1)
    w, s = rng.standard_normal(X.shape[1]) * 0.3, rng.standard_normal(X.shape[1])
    obj = L2Objective([LOSSES[loss](NumbaCsrRows(X), y, 1.5)], np)
    obj.fun(w)
    g = obj.grad(w)
    hv = obj.hv(s)
    h = 1e-6
    fd = (obj.fun(w + h * s) - obj.fun(w - h * s)) / (2 * h)
    assert fd == pytest.approx(g @ s, rel=1e-6)
    obj.fun(w + h * s)
    g_plus = obj.grad(w + h * s)
    obj.fun(w - h * s)
    g_minus = obj.grad(w - h * s)
    # The squared hinge is not twice differentiable at its kink: its generalized Hessian matches a.e.
    np.testing.assert_allclose((g_plus - g_minus) / (2 * h), hv, rtol=1e-4, atol=1e-4 * np.abs(hv).max())


@pytest.mark.parametrize("loss", sorted(LOSSES))
@pytest.mark.parametrize("kind", ["numba-csr", "array-csr"])
def test_line_search_values(loss, kind, small_problem):
    """f(w + a s) from the kept z + a X s, as LIBLINEAR >= 2.40 evaluates it, equals a fresh evaluation."""
    X, y = small_problem
    rng = np.random.default_rng(2)
    w, s = rng.standard_normal(X.shape[1]) * 0.3, rng.standard_normal(X.shape[1])
    obj = L2Objective([LOSSES[loss](BLOCKS[kind](X), y, 1.0)], np)
    obj.fun(w)
    wTs, sTs = obj.line_prepare(w, s)
    along = obj.line_fun(0.25, wTs, sTs)
    obj.line_accept(0.25, wTs, sTs)
    fresh = L2Objective([LOSSES[loss](BLOCKS[kind](X), y, 1.0)], np)
    assert along == pytest.approx(fresh.fun(w + 0.25 * s), rel=1e-12)
    np.testing.assert_allclose(obj.parts[0].z, X @ (w + 0.25 * s), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("loss", sorted(LOSSES))
def test_blocks_add_up(loss, small_problem):
    """Rows split over two blocks (the mixed placement) give the objective of one block."""
    X, y = small_problem
    rng = np.random.default_rng(3)
    w, s = rng.standard_normal(X.shape[1]) * 0.3, rng.standard_normal(X.shape[1])
    one = L2Objective([LOSSES[loss](NumbaCsrRows(X), y, 1.0)], np)
    two = L2Objective([LOSSES[loss](ArrayRows(X[:120], np), y[:120], 1.0),
                       LOSSES[loss](NumbaCsrRows(X[120:]), y[120:], 1.0)], np)
    for obj in (one, two):
        obj.result = (obj.fun(w), obj.grad(w), obj.hv(s), obj.diag())
    for a, b in zip(one.result, two.result):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert isinstance(one.ops, LiblinearVectorOps)


def test_timings_are_kept(small_problem):
    X, y = small_problem
    obj = L2Objective([LOSSES["logistic"](NumbaCsrRows(X), y, 1.0)], np)
    w = np.zeros(X.shape[1])
    obj.fun(w)
    obj.grad(w)
    obj.hv(w)
    assert set(obj.seconds) == {"Xw", "XTu", "Hv"} and all(v >= 0 for v in obj.seconds.values())


def test_sparse_squares_share_nothing_with_x(small_problem):
    X, _ = small_problem
    block = ArrayRows(X, np)
    before = X.data.copy()
    block.sq_rmatvec(2.0, np.ones(X.shape[0]))
    np.testing.assert_array_equal(X.data, before)
    assert scipy.sparse.issparse(block._X2)


def test_outputs_reuse_vectors_only_while_solving(small_problem):
    """Outside ``solving()`` every grad / hv is a new vector (callers may keep them); inside, one fused block's
    products write into vectors of the solve, valid until the next call of the same method."""
    X, y = small_problem
    rng = np.random.default_rng(4)
    w, s = rng.standard_normal(X.shape[1]) * 0.3, rng.standard_normal(X.shape[1])
    obj = L2Objective([LOSSES["logistic"](NumbaCsrRows(X), y, 1.0)], np)
    obj.fun(w)
    g1, h1 = obj.grad(w).copy(), obj.hv(s).copy()
    assert obj.grad(w) is not obj.grad(w) and obj.hv(s) is not obj.hv(s)
    with obj.solving():
        g, d, h = obj.grad(w), obj.diag(), obj.hv(s)
        assert obj.grad(w) is g and obj.diag() is d and obj.hv(s) is h
        assert g.tobytes() == g1.tobytes() and h.tobytes() == h1.tobytes()
    assert obj.grad(w) is not g and obj.hv(s) is not h


def test_vector_ops_reuse_their_vectors_only_when_asked():
    rng = np.random.default_rng(2)
    g, M = rng.standard_normal(50), rng.random(50) + 1.0
    for reuse in (False, True):
        ops = LiblinearVectorOps(reuse=reuse)
        first, second = ops.cg_start(g, M)[:4], ops.cg_start(g, M)[:4]
        assert all((a is b) == reuse for a, b in zip(first, second))
        w = np.zeros(50)
        assert (ops.axpy(0.5, g, w, out=w) is w) == reuse
        assert (ops.preconditioner(M, 0.01) is ops.preconditioner(M, 0.01)) == reuse
