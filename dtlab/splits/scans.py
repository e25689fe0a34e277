"""Prefix-sum split scans over (g, h) statistics: every candidate position of a sorted segment at once.

The scan both the greedy regression tree and gradient boosting rank their
candidates with.  A node's rows are a sorted segment of a feature's list
(:mod:`dtlab.splits.presort`); the prefix sums of their gradients ``g`` and
hessians ``h`` give ``G_L, H_L`` at every position, and a candidate is ranked
by the proxy ``G_L^2 / (H_L + lam) + G_R^2 / (H_R + lam)``:

- with ``h=None`` (every hessian 1, so H is the row count) and ``lam = 0`` it
  is scikit-learn's variance-reduction proxy ``B_L^2 / n_L + B_R^2 / n_R``
  (``SSE_L + SSE_R = A_S - B_L^2 / n_L - B_R^2 / n_R`` and ``A_S`` does not
  depend on the split), what :func:`scan_prefix` computes for the greedy
  regressor;
- with gradients and hessians it is exact gradient boosting's gain
  (XGBoost's ``SplitEvaluator::CalcSplitGain`` without its constant terms).

:func:`scan_prefix` forms the prefix sums and ranks them; its ranking half,
:func:`rank_prefix`, takes prefix sums however they were made (gradient
boosting gathers them through row ids, the histogram search sums bins) and
the missing rows' statistics; :func:`split_proxy` scores one candidate and is
compiled as a CUDA device function by the CUDA searches, so that every target
ranks with the same arithmetic; :func:`largest` is the ranking's reduction
(the best proxy), a plain loop compiled for the CPU and, called from a scan
compiled as a CUDA device function, for CUDA.  Branch-free loops that LLVM
turns into SIMD code.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT


@numba.njit(**NJIT)
def scan_prefix(xs, g, h, s, e, msl, lam, thr, buf, hbuf, g_miss, h_miss, miss_left, mcw, last_on_ties):
    """Vectorised scan of one sorted segment: prefix sums, then every position at once.

    Parameters
    ----------
    xs : float32 array (n_samples,), sorted on ``[s, e)``
    g : float64 array (n_samples,)
        Gradients (the targets, for the regressor) in the order of ``xs``.
    h : float64 array (n_samples,) or None
        Hessians in the same order, positive unless ``lam > 0`` (no side's
        ``H + lam`` may be 0); ``None``: every hessian is 1 and ``H`` is the
        row count.  ``None`` compiles a separate specialisation (numba prunes
        the branches on ``h is None``), so the regressor reads no array of
        ones and keeps its exact proxy.
    s, e : int
        The segment.
    msl : int, min_samples_leaf
    lam : float
        L2 regularisation of the leaf values (0 for the regressor).
    thr : float32, FEATURE_THRESHOLD
    buf : float64 scratch (>= e - s)
    hbuf : float64 scratch (>= e - s), or None with ``h=None``
    g_miss, h_miss, miss_left, mcw, last_on_ties :
        As for :func:`rank_prefix` (0.0, 0.0, False, 0.0, False for the greedy trees).

    Returns
    -------
    best : float64
        The best proxy ``G_L^2/(H_L+lam) + G_R^2/(H_R+lam)`` (-inf if none).
    n_left : int
        Left size of the best split, the first on ties unless ``last_on_ties`` (-1 if none).
    """
    m = e - s
    acc = 0.0
    for i in range(m):  # G of every prefix: the running sum as one scan
        acc += g[s + i]
        buf[i] = acc
    g_total = acc
    h_total = np.float64(m)
    if h is not None:
        acc = 0.0
        for i in range(m):
            acc += h[s + i]
            hbuf[i] = acc
        h_total = acc
    return rank_prefix(xs, s, m, buf, hbuf, g_total, h_total, msl, lam, thr, g_miss, h_miss, miss_left, mcw,
                        last_on_ties, buf, None)


@numba.njit(**NJIT)
def split_proxy(g_left, h_left, g_right, h_right, lam, f32):
    """The proxy ``G_L^2/(H_L+lam) + G_R^2/(H_R+lam)`` of one candidate (see :func:`rank_prefix`'s ``f32``).

    Called per position by :func:`rank_prefix`; :mod:`dtlab.boosting._exact_cuda` compiles
    its ``py_func`` as a CUDA device function, so both rank with the same arithmetic.
    """
    if f32 is None:
        return g_left * g_left / (h_left + lam) + g_right * g_right / (h_right + lam)
    return np.float64(np.float32(g_left * g_left) / np.float32(h_left + lam)
                      + np.float32(g_right * g_right) / np.float32(h_right + lam))


@numba.njit(**NJIT)
def largest(values, count):
    """The largest of ``values[:count]`` (NaN ignored; -inf if none): eight independent running maxima, so
    the comparisons overlap instead of each waiting for the one before."""
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = -np.inf
    k = 0
    while k + 8 <= count:
        v0, v1, v2, v3 = values[k], values[k + 1], values[k + 2], values[k + 3]
        v4, v5, v6, v7 = values[k + 4], values[k + 5], values[k + 6], values[k + 7]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
        k += 8
    while k < count:
        v0 = values[k]
        m0 = v0 if v0 > m0 else m0
        k += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0


@numba.njit(**NJIT)
def rank_prefix(xs, s, m, gbuf, hbuf, g_total, h_total, msl, lam, thr, g_miss, h_miss, miss_left, mcw,
                 last_on_ties, out, f32):
    """Every candidate position of a sorted segment at once, from the prefix sums of its statistics.

    Parameters
    ----------
    xs : float32 array, sorted on ``[s, s + m)``
    s, m : int
        Start and length of the segment.
    gbuf : float64 array (>= m)
        ``gbuf[i]``: G of the first ``i + 1`` rows of the segment.
    hbuf : float64 array (>= m) or None
        The same for H; None: every hessian is 1 (H is the row count).
    g_total, h_total : float64
        G and H of the whole segment.
    msl : int, min_samples_leaf (of the segment's rows)
    lam : float
    thr : float32, values closer than this are ties (no threshold between them)
    g_miss, h_miss : float
        Gradient and hessian sums of the node's rows that are *not* in the
        segment (missing values; gradient boosting): they join the left side
        when ``miss_left`` and the right side otherwise.  0.0, 0.0 for the
        greedy trees (every row present).
    miss_left : bool
    mcw : float
        min_child_weight: a side whose ``H`` is below it is no candidate (0.0:
        no constraint).
    last_on_ties : bool
        Among equal best proxies keep the last position instead of the first
        (XGBoost enumerates its "missing left" candidates from the largest
        value down and keeps the first of equal gains).
    out : float64 scratch (>= m)
        Receives the proxies; may be ``gbuf`` itself (then overwritten in
        place, position ``nl`` reading ``gbuf[nl - 1]`` before writing it).
    f32 : None or any float32
        None: the proxy in float64.  Otherwise XGBoost's arithmetic (its
        ``SplitEvaluator::CalcSplitGain``): each side's ``G^2`` and ``H +
        lam`` rounded to float32, divided in float32, the two sides added in
        float32 -- so that candidates equal in float32 tie as they do there.
        (A compile-time switch: numba prunes the branches on ``f32 is None``.)

    Returns
    -------
    best : float64, the best proxy ``G_L^2/(H_L+lam) + G_R^2/(H_R+lam)`` (-inf if none)
    n_left : int, rows of the segment on the left of the best split (-1 if none)
    """
    g_total = g_total + g_miss
    h_total = h_total + h_miss
    g_shift = g_miss if miss_left else 0.0  # the missing rows' share of the left side
    h_shift = h_miss if miss_left else 0.0
    lo = max(msl, 1)
    hi = m - msl
    if lo > hi:
        return -np.inf, -1
    # every position at once.  Views that start at index 0 and no branches (ties get -inf through a
    # select; the branches on hbuf are resolved at compile time) let LLVM vectorise the loop, divisions
    # included.
    count = hi - lo + 1
    left_g = gbuf[lo - 1: hi]
    if hbuf is not None:
        left_h = hbuf[lo - 1: hi]
    proxies = out[lo - 1: hi]
    x_before = xs[s + lo - 1: s + hi]
    x_after = xs[s + lo: s + hi + 1]
    for k in range(count):
        if hbuf is None:
            h_left = np.float64(lo + k) + h_shift
        else:
            h_left = left_h[k] + h_shift
        g_left = left_g[k] + g_shift
        g_right = g_total - g_left
        h_right = h_total - h_left
        proxy = split_proxy(g_left, h_left, g_right, h_right, lam, f32)
        ok = (x_after[k] > x_before[k] + thr) & (h_left >= mcw) & (h_right >= mcw)
        proxies[k] = proxy if ok else -np.inf
    best = largest(proxies, count)
    if best == -np.inf:
        return -np.inf, -1
    # then the first (or last) position of the largest: one "k better than the best so far" chain over every
    # position was the slowest part of the scan
    if last_on_ties:
        best_k = count - 1
        while proxies[best_k] != best:
            best_k -= 1
    else:
        best_k = 0
        while proxies[best_k] != best:
            best_k += 1
    return best, lo + best_k
