"""The numba kernels of dtlab.linear._products_cpu against their plain references, serial and parallel."""

import numba
import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings
from hypothesis import strategies as st

from dtlab.linear import _products_cpu
from dtlab.linear._row_blocks import _ALL_ROWS, NumbaCsrRows, csr_arrays


def _random_csr(rng, n_rows, n_features, density):
    X = scipy.sparse.random(n_rows, n_features, density=density, random_state=rng, format="csr")
    X.data = rng.standard_normal(X.nnz)
    return X


def _arrays(X):
    a = csr_arrays(X)
    return a["indptr"], a["indices"], a["data"]


@pytest.mark.parametrize("variant", ["serial", "parallel"])
@pytest.mark.parametrize("n_chunks", [1, 3])
@pytest.mark.parametrize("subset", [False, True])
def test_products_match_references(variant, n_chunks, subset):
    rng = np.random.default_rng(0)
    X = _random_csr(rng, 57, 23, 0.2)
    ip, ix, dt = _arrays(X)
    k = _products_cpu.SERIAL if variant == "serial" else _products_cpu.PARALLEL
    rows = np.sort(rng.choice(57, 31, replace=False)).astype(np.int64) if subset else _ALL_ROWS
    ref_rows = rows if subset else np.arange(57)
    m = len(ref_rows)
    v, u, coef = rng.standard_normal(23), rng.standard_normal(m), rng.random(m)
    out, partial = np.empty(23), np.empty((n_chunks, 23))
    if n_chunks == 1:
        partial = out.reshape(1, -1)
    z = np.empty(m)
    k["_csr_matvec"](ip, ix, dt, rows, v, z)
    np.testing.assert_allclose(z, _products_cpu.matvec_reference(ip, ix, dt, ref_rows, v), rtol=1e-12, atol=1e-12)
    k["_csr_rmatvec"](ip, ix, dt, rows, u, partial, out)
    expected = _products_cpu.rmatvec_reference(ip, ix, dt, ref_rows, u, 23)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    k["_csr_hv"](ip, ix, dt, rows, coef, v, partial, out)
    np.testing.assert_allclose(out, _products_cpu.hv_reference(ip, ix, dt, ref_rows, coef, v), rtol=1e-12, atol=1e-12)
    k["_csr_sq_rmatvec"](ip, ix, dt, rows, 4.0, coef, 1.0, partial, out)
    sq = _products_cpu.sq_rmatvec_reference(ip, ix, dt, ref_rows, 4.0, coef, 1.0, 23)
    np.testing.assert_allclose(out, sq, rtol=1e-12, atol=1e-12)
    out2, partial2 = np.empty(23), (np.empty((n_chunks, 23)) if n_chunks > 1 else None)
    partial2 = out2.reshape(1, -1) if partial2 is None else partial2
    k["_csr_rmatvec_sq"](ip, ix, dt, rows, u, 4.0, coef, 1.0, partial, out, partial2, out2)
    expected = _products_cpu.rmatvec_reference(ip, ix, dt, ref_rows, u, 23)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out2, sq, rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(n_rows=st.integers(1, 40), n_features=st.integers(1, 30), density=st.floats(0.0, 1.0),
       seed=st.integers(0, 2**31 - 1), n_chunks=st.integers(1, 4))
def test_hv_property(n_rows, n_features, density, seed, n_chunks):
    """Any shape, empty rows and columns included: the fused product equals X.T (c * (X s))."""
    rng = np.random.default_rng(seed)
    X = _random_csr(rng, n_rows, n_features, density)
    ip, ix, dt = _arrays(X)
    s, coef = rng.standard_normal(n_features), rng.random(n_rows)
    out, partial = np.empty(n_features), np.empty((n_chunks, n_features))
    _products_cpu.PARALLEL["_csr_hv"](ip, ix, dt, _ALL_ROWS, coef, s, partial, out)
    np.testing.assert_allclose(out, X.T @ (coef * (X @ s)), rtol=1e-10, atol=1e-12)


def test_one_chunk_adds_in_row_order():
    """With one chunk the scatter adds each output's terms in row order (LIBLINEAR's axpy loop)."""
    rng = np.random.default_rng(1)
    X = _random_csr(rng, 200, 5, 0.6)
    ip, ix, dt = _arrays(X)
    u = rng.standard_normal(200)
    out = np.empty(5)
    _products_cpu.SERIAL["_csr_rmatvec"](ip, ix, dt, _ALL_ROWS, u, out.reshape(1, -1), out)
    expected = [0.0] * 5
    for i in range(200):
        for k in range(X.indptr[i], X.indptr[i + 1]):
            expected[X.indices[k]] += u[i] * X.data[k]
    assert out.tolist() == expected


@pytest.mark.parametrize("variant", ["serial", "parallel"])
def test_row_terms(variant):
    rng = np.random.default_rng(2)
    z, y = rng.standard_normal(101) * 30, np.where(rng.random(101) < 0.4, 1.0, -1.0)
    zs = rng.standard_normal(101)
    k = _products_cpu.SERIAL if variant == "serial" else _products_cpu.PARALLEL
    for kind in (0, 1):
        for n_chunks in (1, 4):
            got = k["_loss_value"](z, zs, 0.3, y, 2.5, 7.0, kind, n_chunks)
            assert got == pytest.approx(_products_cpu.loss_value_reference(z, zs, 0.3, y, 2.5, 7.0, kind), rel=1e-12)
    u, D, cd = np.empty(101), np.empty(101), np.empty(101)
    k["_logistic_terms"](z, y, 2.5, u, D, cd)
    for got, ref in zip((u, D, cd), _products_cpu.logistic_terms_reference(z, y, 2.5)):
        np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-300)
    rows, uu = np.empty(101, dtype=np.int64), np.empty(101)
    m = _products_cpu._squared_hinge_active(z, y, 2.5, rows, uu)
    ref_rows, ref_u = _products_cpu.squared_hinge_active_reference(z, y, 2.5)
    np.testing.assert_array_equal(rows[:m], ref_rows)
    np.testing.assert_allclose(uu[:m], ref_u, rtol=1e-15)


def test_vector_reductions_in_liblinear_order():
    rng = np.random.default_rng(5)
    for n in (0, 1, 4, 5, 6, 17):
        x, y, M = rng.standard_normal(n), rng.standard_normal(n), rng.random(n)
        expected, i = 0.0, 0
        while i < n - 4:  # ddot_: five products summed, then added
            expected += (x[i] * y[i] + x[i + 1] * y[i + 1] + x[i + 2] * y[i + 2] + x[i + 3] * y[i + 3]
                         + x[i + 4] * y[i + 4])
            i += 5
        for j in range(i, n):
            expected += x[j] * y[j]
        assert _products_cpu.ddot(x, y) == expected
        assert _products_cpu.seq_dot(x, y) == pytest.approx(float(x @ y), abs=1e-12)
        assert _products_cpu.uTMv(x, M, y) == pytest.approx(float(x @ (M * y)), abs=1e-12)
        assert _products_cpu.dnrm2(x) == pytest.approx(float(np.linalg.norm(x)), rel=1e-14)
    assert _products_cpu.dnrm2(np.array([1e200, 1e200])) == pytest.approx(np.sqrt(2) * 1e200)  # scaled: no overflow


def test_take_rows_and_block_views():
    rng = np.random.default_rng(6)
    X = _random_csr(rng, 30, 9, 0.3)
    order = rng.permutation(30)
    block = NumbaCsrRows(X, order)
    v = rng.standard_normal(9)
    np.testing.assert_allclose(block.matvec(v), X[order] @ v, rtol=1e-14)
    sub = block.restrict(np.array([2, 5, 11]))
    assert sub.n_rows == 3 and sub.nnz == X[order][[2, 5, 11]].nnz
    u = rng.standard_normal(3)
    np.testing.assert_allclose(sub.rmatvec(u), X[order][[2, 5, 11]].T @ u, rtol=1e-14, atol=1e-15)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def test_parallel_threshold(monkeypatch):
    monkeypatch.setattr(_products_cpu, "PARALLEL_MIN_WORK", 10)
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        assert _products_cpu.kernels(1_000) is _products_cpu.SERIAL
        if numba.config.NUMBA_NUM_THREADS > 1:
            numba.set_num_threads(2)
            assert _products_cpu.kernels(1_000) is _products_cpu.PARALLEL
            assert _products_cpu.kernels(5) is _products_cpu.SERIAL
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("variant", ["serial", "parallel"])
@pytest.mark.parametrize("reorder", [False, True])
def test_binary_matrices_read_no_values_and_give_the_same_bits(variant, reorder):
    """A matrix whose stored values are all 1.0 (a9a, w8a) keeps no ``data``; every product is bit for bit the
    product over explicit ones."""
    rng = np.random.default_rng(3)
    X = _random_csr(rng, 61, 17, 0.3)
    X.data[:] = 1.0
    order = rng.permutation(61).astype(np.int64) if reorder else None
    a = csr_arrays(X, order)
    ip, ix, empty = a["indptr"], a["indices"], a["data"]
    assert empty.shape == (0,)
    ones = np.ones(X.nnz)
    np.testing.assert_array_equal(_products_cpu.matvec_reference(ip, ix, ones, np.arange(61), np.ones(17)),
                                  np.diff(X.indptr)[order] if reorder else np.diff(X.indptr))
    k = _products_cpu.SERIAL if variant == "serial" else _products_cpu.PARALLEL
    rows = np.sort(rng.choice(61, 40, replace=False)).astype(np.int64)
    v, u, coef = rng.standard_normal(17), rng.standard_normal(40), rng.random(40)

    def run(data):
        z, out, out2 = np.empty(40), np.empty(17), np.empty(17)
        p, p2 = np.empty((2, 17)), np.empty((2, 17))
        k["_csr_matvec"](ip, ix, data, rows, v, z)
        got = [z.copy()]
        k["_csr_rmatvec"](ip, ix, data, rows, u, p, out)
        got.append(out.copy())
        k["_csr_hv"](ip, ix, data, rows, coef, v, p, out)
        got.append(out.copy())
        k["_csr_sq_rmatvec"](ip, ix, data, rows, 4.0, coef, 1.0, p, out)
        got.append(out.copy())
        k["_csr_rmatvec_sq"](ip, ix, data, rows, u, 4.0, coef, 1.0, p, out, p2, out2)
        return got + [out.copy(), out2.copy()]

    for with_values, without in zip(run(ones), run(empty)):
        np.testing.assert_array_equal(without, with_values)
    np.testing.assert_allclose(run(empty)[2], _products_cpu.hv_reference(ip, ix, ones, rows, coef, v), rtol=1e-12)


def test_fused_vector_updates_give_numpy_bits():
    """The solver's fused updates (trust-region CG step, ``y + a x``, the preconditioner) are bit for bit the
    numpy expressions they replace; ``y + (-a) x`` is ``y - a x``."""
    rng = np.random.default_rng(11)
    n = 1003
    d, Hd, s, r = (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5, n) for _ in range(4))
    M = rng.random(n) + 0.01
    alpha = 0.37 * rng.random()
    s_new, r_new, z_new = np.empty(n), np.empty(n), np.empty(n)
    zr, sMs = _products_cpu.tr_trial(alpha, d, Hd, s, r, M, s_new, r_new, z_new)
    ref_s, ref_r = s + alpha * d, r - alpha * Hd
    ref_z = ref_r / M
    for got, ref in ((s_new, ref_s), (r_new, ref_r), (z_new, ref_z)):
        assert got.tobytes() == ref.tobytes()
    assert zr == _products_cpu.ddot(ref_z, ref_r) and sMs == _products_cpu.uTMv(ref_s, M, ref_s)
    out = np.empty(n)
    _products_cpu.axpy(-alpha, d, s, out)
    assert out.tobytes() == (s - alpha * d).tobytes()
    _products_cpu.axpy(alpha, d, s, s)  # in place
    assert s.tobytes() == ref_s.tobytes()
    _products_cpu.affine(1 - 0.01, 0.01, M, out)
    assert out.tobytes() == ((1 - 0.01) + 0.01 * M).tobytes()

