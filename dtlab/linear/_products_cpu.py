"""CPU kernels of TRON: multithreaded CSR matrix-vector products (numba), each with a plain reference beside it.

scipy's sparse products run on one thread; these run on ``numba.get_num_threads()``
threads (set per fit by the estimators).  ``X @ v`` is parallel over rows.
``X.T @ u`` and the Hessian-vector product ``X.T @ (c * (X @ s))`` scatter
into the output, so each thread accumulates into its own row of a
``partial`` buffer of shape (n_chunks, n_features) and the rows are summed at
the end: no atomics, and with one chunk the sum is in row order, as
LIBLINEAR's loop is (the results then agree with LIBLINEAR bit for bit).

The Hessian-vector product is fused as in LIBLINEAR: for each row the dot
product ``x_i . s`` is followed at once by ``out += c_i (x_i . s) x_i``, so the
row's non-zeros are read from cache the second time and the data is streamed
from memory once per product instead of twice.

Rows are visited in order, or through an index array ``rows`` (an empty
``rows`` means all rows in order, which skips the indirection): the L2-SVM
active set ``I``.  The CPU reads ``X_I`` in place by random row access, which
shared memory does well (the paper's reason to leave ``X_I`` to CPU threads in
its mixed solver), instead of copying the sub-matrix.

The row-wise loss terms (logistic and squared hinge) are fused kernels too:
one parallel pass from ``z = X w`` to the loss sum, and one to the gradient
weights and Hessian diagonal, so numpy temporaries over the rows are avoided.

Arrays: ``indptr`` uint64 (n_rows + 1,), ``indices`` uint32 (nnz,), ``data``
float64 (nnz,) -- or empty for a binary matrix, whose stored values are all
1.0 (LIBSVM's a9a and w8a): the products then read 4 bytes per non-zero
instead of 12 and give the same bits (``1.0 * v == v``) --, ``rows`` int64,
vectors float64.  Unsigned indices matter:
numba wraps negative indices around, and with signed ones it must test every
``v[indices[k]]`` for a sign it cannot rule out -- that test alone made the
products slower than scipy's C++ loops.  Kernels allocate nothing but
what they return; outputs are passed in.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import scipy.sparse
from numba import prange

from .._jit import NJIT, rebind


@numba.njit(**NJIT)
def _reduce_partials(partial, out):
    """``out[f] = sum_c partial[c, f]`` (callers pass ``out`` itself, viewed as one chunk, when there is one).

    Serial: n_features additions per chunk cost little, and a second parallel
    region per product would cost a wake-up of every thread.
    """
    n_chunks, n_features = partial.shape
    if n_chunks == 1:
        if partial.ctypes.data != out.ctypes.data:
            out[:] = partial[0]
        return
    for f in range(n_features):
        acc = 0.0
        for c in range(n_chunks):
            acc += partial[c, f]
        out[f] = acc


@numba.njit(inline="always")
def _value(data, k):
    """The ``k``-th stored value; an empty ``data`` means every stored value is 1.0 (a binary matrix)."""
    return 1.0 if data.shape[0] == 0 else data[k]


def _csr_take_rows(indptr, indices, data, order, out_indptr, out_indices, out_data):
    """Copy rows ``order`` of a CSR matrix (any integer index types) into ``out_*`` (``out_indptr`` filled; an
    empty ``out_data`` takes no values: a binary matrix)."""
    values = out_data.shape[0] > 0
    for j in prange(order.shape[0]):
        i = order[j]
        src = np.int64(indptr[i])  # signed throughout: numba turns uint64 - int64 into float64
        dst = np.int64(out_indptr[j]) - src
        for k in range(src, np.int64(indptr[i + 1])):
            out_indices[k + dst] = indices[k]
            if values:
                out_data[k + dst] = data[k]


def _csr_matvec(indptr, indices, data, rows, v, out):
    """``out = X[rows] @ v``: out (n_rows,), v (n_features,)."""
    full = rows.shape[0] == 0
    for j in prange(out.shape[0]):
        i = np.int64(j) if full else rows[j]
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += _value(data, k) * v[indices[k]]
        out[j] = acc


def _csr_rmatvec(indptr, indices, data, rows, u, partial, out):
    """``out = X[rows].T @ u``: u (n_rows,) weights row ``rows[j]`` by ``u[j]``; out (n_features,)."""
    n_chunks = partial.shape[0]
    m = u.shape[0]
    full = rows.shape[0] == 0
    for c in prange(n_chunks):
        p = partial[c]
        p[:] = 0.0
        for j in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            i = np.int64(j) if full else rows[j]
            a = u[j]
            for k in range(indptr[i], indptr[i + 1]):
                p[indices[k]] += a * _value(data, k)
    _reduce_partials(partial, out)


def _csr_rmatvec_sq(indptr, indices, data, rows, u, scale, coef, init, partial, out, partial2, out2):
    """:func:`_csr_rmatvec` and :func:`_csr_sq_rmatvec` in one pass over the rows.

    TRON always asks for the Hessian diagonal right after the gradient, at the
    same point; reading each row once for both saves a pass over X per
    iteration.  Each output still adds its terms in row order.
    """
    n_chunks = partial.shape[0]
    m = u.shape[0]
    full = rows.shape[0] == 0
    for c in prange(n_chunks):
        p = partial[c]
        p[:] = 0.0
        q = partial2[c]
        q[:] = init if c == 0 else 0.0
        for j in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            i = np.int64(j) if full else rows[j]
            a = u[j]
            b = coef[j]
            for k in range(indptr[i], indptr[i + 1]):
                x = _value(data, k)
                f = indices[k]
                p[f] += a * x
                q[f] += x * x * scale * b
    _reduce_partials(partial, out)
    _reduce_partials(partial2, out2)


def _csr_hv(indptr, indices, data, rows, coef, s, partial, out):
    """``out = X[rows].T @ (coef * (X[rows] @ s))`` in one pass over the rows (LIBLINEAR's fused loop)."""
    n_chunks = partial.shape[0]
    m = coef.shape[0]
    full = rows.shape[0] == 0
    for c in prange(n_chunks):
        p = partial[c]
        p[:] = 0.0
        for j in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            i = np.int64(j) if full else rows[j]
            lo, hi = indptr[i], indptr[i + 1]
            acc = 0.0
            for k in range(lo, hi):
                acc += _value(data, k) * s[indices[k]]
            acc *= coef[j]
            for k in range(lo, hi):
                p[indices[k]] += acc * _value(data, k)
    _reduce_partials(partial, out)


def _csr_sq_rmatvec(indptr, indices, data, rows, scale, coef, init, partial, out):
    """``out = init + (X[rows] ** 2).T @ (scale * coef)``: the Hessian diagonal of the preconditioner.

    Each term is ``x * x * scale * coef_j`` and the sum starts from ``init``, in
    LIBLINEAR's order (``M = 1; M += x * x * C * D``).
    """
    n_chunks = partial.shape[0]
    m = coef.shape[0]
    full = rows.shape[0] == 0
    for c in prange(n_chunks):
        p = partial[c]
        p[:] = init if c == 0 else 0.0
        for j in range(m * c // n_chunks, m * (c + 1) // n_chunks):
            i = np.int64(j) if full else rows[j]
            a = coef[j]
            for k in range(indptr[i], indptr[i + 1]):
                x = _value(data, k)
                p[indices[k]] += x * x * scale * a
    _reduce_partials(partial, out)


# ------------------------------------------------------------------ row-wise loss terms
# Loss sums run over ``n_chunks`` contiguous chunks, chunk 0 starting from ``init``: with one
# chunk the sum is LIBLINEAR's sequential ``f += C * loss_i`` from the same start (2.30 starts
# from w.w / 2, 2.40+ from 0), so a one-thread fit retraces LIBLINEAR's iterates exactly.
@numba.njit(**NJIT)
def _logistic_term(t):
    if t >= 0:
        return math.log(1.0 + math.exp(-t))
    return -t + math.log(1.0 + math.exp(t))


def _loss_value(z, zs, alpha, y, C, init, kind, n_chunks):
    """``init + sum_i C loss(y_i (z_i + alpha zs_i))``; kind 0 logistic, 1 squared hinge; zs unused if alpha == 0."""
    n = z.shape[0]
    sums = np.empty(n_chunks)
    for c in prange(n_chunks):
        acc = init if c == 0 else 0.0
        for i in range(n * c // n_chunks, n * (c + 1) // n_chunks):
            zi = z[i] if alpha == 0.0 else zs[i] * alpha + z[i]
            t = zi * y[i]
            if kind == 0:
                acc += C * _logistic_term(t)
            else:
                d = 1.0 - t
                if d > 0:
                    acc += C * d * d
        sums[c] = acc
    total = sums[0]
    for c in range(1, n_chunks):
        total += sums[c]
    return total


def _logistic_terms(z, y, C, u, D, cd):
    """Gradient weights ``u = C (sigma - 1) y``, ``D = sigma (1 - sigma)`` and ``cd = C D``, sigma = sigma(y z)."""
    for i in prange(z.shape[0]):
        sig = 1.0 / (1.0 + math.exp(-y[i] * z[i]))
        D[i] = sig * (1.0 - sig)
        cd[i] = C * D[i]
        u[i] = C * (sig - 1.0) * y[i]


@numba.njit(**NJIT)
def _squared_hinge_active(z, y, C, rows, u):
    """Active set ``I = {i : y_i z_i < 1}`` into ``rows[:m]`` and ``u[:m] = C y_i (y_i z_i - 1)``; returns m.

    Sequential: the compaction keeps the rows in order (as LIBLINEAR's loop),
    and it is one cheap pass over the rows, not over the non-zeros.
    """
    m = 0
    for i in range(z.shape[0]):
        t = z[i] * y[i]
        if t < 1.0:
            rows[m] = i
            u[m] = C * y[i] * (t - 1.0)
            m += 1
    return m


# ------------------------------------------------------------------ compiled twice: parallel and serial
#: A product over fewer non-zeros (or a row loop over less work) than this runs serially: waking the
#: threads of a parallel region costs microseconds on an idle machine, about what 50,000 non-zeros take
#: on one core, and a fit asked to use several threads (n_jobs) expects them to share products of a9a's
#: and w8a's size (0.45 and 0.58 million non-zeros), which a threshold of a million kept serial.  On a
#: busy machine a wake-up can cost a scheduler time slice; a user who shares the cores sets n_jobs=1.
PARALLEL_MIN_WORK = 50_000

_PARALLEL_KERNELS = (_csr_take_rows, _csr_matvec, _csr_rmatvec, _csr_rmatvec_sq, _csr_hv, _csr_sq_rmatvec,
                     _loss_value, _logistic_terms)
PARALLEL = {fn.__name__: numba.njit(parallel=True, **NJIT)(fn) for fn in _PARALLEL_KERNELS}
# A serial twin needs its own qualified name: numba's on-disk cache is keyed by it.
SERIAL = {fn.__name__: numba.njit(**NJIT)(rebind(fn, {}, "serial")) for fn in _PARALLEL_KERNELS}


def kernels(work: int) -> dict:
    """The parallel kernels when there are threads to use and ``work`` (non-zeros or rows) is large, else serial."""
    return PARALLEL if work >= PARALLEL_MIN_WORK and numba.get_num_threads() > 1 else SERIAL


# ------------------------------------------------------------------ vector reductions in LIBLINEAR's order
# n_features-long, so sequential; the order of the additions is that of LIBLINEAR's bundled BLAS
# (ddot and tron.cpp's uTMv add five products at a time, dnrm2 scales), to retrace its iterates.
@numba.njit(**NJIT)
def ddot(x, y):
    """LIBLINEAR's ``ddot_``: ``x . y`` summed five products at a time."""
    n = x.shape[0]
    acc = 0.0
    i = 0
    while i < n - 4:
        acc += x[i] * y[i] + x[i + 1] * y[i + 1] + x[i + 2] * y[i + 2] + x[i + 3] * y[i + 3] + x[i + 4] * y[i + 4]
        i += 5
    while i < n:
        acc += x[i] * y[i]
        i += 1
    return acc


@numba.njit(**NJIT)
def uTMv(u, M, v):
    """tron.cpp's ``uTMv``: ``sum u_i M_i v_i`` five terms at a time."""
    n = u.shape[0]
    acc = 0.0
    i = 0
    while i < n - 4:
        acc += (u[i] * M[i] * v[i] + u[i + 1] * M[i + 1] * v[i + 1] + u[i + 2] * M[i + 2] * v[i + 2]
                + u[i + 3] * M[i + 3] * v[i + 3] + u[i + 4] * M[i + 4] * v[i + 4])
        i += 5
    while i < n:
        acc += u[i] * M[i] * v[i]
        i += 1
    return acc


# The CG loop's vector updates (tron._pcg's), fused: each pass writes into given vectors (no temporaries)
# and reduces with ddot, so every value is the one the array expressions give.
@numba.njit(**NJIT)
def cg_start(g, M, s, r, z, d):
    """``s = 0``, ``r = -g``, ``z = d = r / M`` in one pass; returns ``ddot(z, r)``."""
    for i in range(g.shape[0]):
        s[i] = 0.0
        r[i] = -g[i]
        z[i] = r[i] / M[i]
        d[i] = z[i]
    return ddot(z, r)


@numba.njit(**NJIT)
def cg_trial(alpha, d, Hd, s, r, g, M, s_new, r_new, z_new):
    """``s_new = s + alpha d``, ``r_new = r - alpha Hd``, ``z_new = r_new / M``; returns the quadratic model
    ``-(s_new.r_new - s_new.g) / 2`` and ``z_new.r_new`` (ddot)."""
    for i in range(s.shape[0]):
        s_new[i] = s[i] + alpha * d[i]
        r_new[i] = r[i] - alpha * Hd[i]
        z_new[i] = r_new[i] / M[i]
    return -0.5 * (ddot(s_new, r_new) - ddot(s_new, g)), ddot(z_new, r_new)


@numba.njit(**NJIT)
def tr_trial(alpha, d, Hd, s, r, M, s_new, r_new, z_new):
    """The trust-region CG's step: ``s_new = s + alpha d``, ``r_new = r - alpha Hd``, ``z_new = r_new / M``;
    returns ``ddot(z_new, r_new)`` and ``uTMv(s_new, M, s_new)``."""
    for i in range(s.shape[0]):
        s_new[i] = s[i] + alpha * d[i]
        r_new[i] = r[i] - alpha * Hd[i]
        z_new[i] = r_new[i] / M[i]
    return ddot(z_new, r_new), uTMv(s_new, M, s_new)


@numba.njit(**NJIT)
def axpy(a, x, y, out):
    """``out = y + a x`` (``out`` may be ``y``): numpy's ``y + a * x``, the product rounded first."""
    for i in range(y.shape[0]):
        out[i] = y[i] + a * x[i]


@numba.njit(**NJIT)
def affine(c, a, x, out):
    """``out = c + a x``: numpy's ``c + a * x`` (the preconditioner ``(1 - a) + a diag(H)``)."""
    for i in range(x.shape[0]):
        out[i] = c + a * x[i]


@numba.njit(**NJIT)
def cg_direction(beta, d, z):
    """``d = beta d + z`` in place."""
    for i in range(d.shape[0]):
        d[i] = beta * d[i] + z[i]


@numba.njit(**NJIT)
def seq_dot(x, y):
    """``x . y`` summed in index order (linear.cpp's own loops)."""
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * y[i]
    return acc


@numba.njit(**NJIT)
def dnrm2(x):
    """LIBLINEAR's ``dnrm2_``: the Euclidean norm with scaling, visiting x from the end."""
    n = x.shape[0]
    if n == 0:
        return 0.0
    if n == 1:
        return abs(x[0])
    scale, ssq = 0.0, 1.0
    for ix in range(n - 1, -1, -1):
        if x[ix] != 0.0:
            a = abs(x[ix])
            if scale < a:
                t = scale / a
                ssq = ssq * (t * t) + 1.0
                scale = a
            else:
                t = a / scale
                ssq += t * t
    return scale * math.sqrt(ssq)


# ------------------------------------------------------------------ plain references
def _as_csr(indptr, indices, data, n_features):
    return scipy.sparse.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, n_features))


def matvec_reference(indptr, indices, data, rows, v):
    """Plain ``X[rows] @ v`` (scipy), the reference of :func:`_csr_matvec`."""
    return _as_csr(indptr, indices, data, len(v))[rows] @ v


def rmatvec_reference(indptr, indices, data, rows, u, n_features):
    """Plain ``X[rows].T @ u``, the reference of :func:`_csr_rmatvec`."""
    return _as_csr(indptr, indices, data, n_features)[rows].T @ u


def hv_reference(indptr, indices, data, rows, coef, s):
    """Plain ``X[rows].T @ (coef * (X[rows] @ s))``, the reference of :func:`_csr_hv`."""
    Xr = _as_csr(indptr, indices, data, len(s))[rows]
    return Xr.T @ (coef * (Xr @ s))


def sq_rmatvec_reference(indptr, indices, data, rows, scale, coef, init, n_features):
    """Plain ``init + (X[rows] ** 2).T @ (scale * coef)``, the reference of :func:`_csr_sq_rmatvec`."""
    Xr = _as_csr(indptr, indices, data, n_features)[rows]
    return init + Xr.multiply(Xr).T @ (scale * coef)


def loss_value_reference(z, zs, alpha, y, C, init, kind):
    """Plain ``init + sum C loss(y (z + alpha zs))``, the reference of :func:`_loss_value`."""
    t = y * (z + alpha * zs)
    terms = np.logaddexp(0.0, -t) if kind == 0 else np.maximum(0.0, 1.0 - t) ** 2
    return init + C * float(np.sum(terms))


def logistic_terms_reference(z, y, C):
    """Plain ``(u, D, C D)``, the reference of :func:`_logistic_terms`."""
    sig = 1.0 / (1.0 + np.exp(-y * z))
    D = sig * (1.0 - sig)
    return C * (sig - 1.0) * y, D, C * D


def squared_hinge_active_reference(z, y, C):
    rows = np.flatnonzero(y * z < 1.0)
    return rows, C * y[rows] * (y[rows] * z[rows] - 1.0)
