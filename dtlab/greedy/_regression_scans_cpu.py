"""The regression scans: the best split of one node on one feature by the proxy ``B_L^2 / W_L + B_R^2 / W_R``.

Plain functions, compiled per variant of :mod:`._weights` with the other scans by
:mod:`._scans_cpu` (which holds the per-feature dispatch and :data:`._scans_cpu.SCANS`);
they call the variant's names (``weight_of``, ``weighted``, ``side_weight``, ``keep``,
``hessians``) and each other by name.  Three ways of finding the best regression split,
after the "SIMD decision tree" university project (a C regression tree with variance
reduction, trained on the Kaggle diabetes prediction data):

``NAIVE`` (:func:`scan_naive`)
    sort the node's values, then for every candidate threshold recompute both
    sides' sums from scratch with a pass over the node (O(n^2)).
``INCREMENTAL`` (:func:`scan_incremental`)
    sort the node's values, then move one row at a time from the right side to
    the left and update the running sums B (of y) and W (the project's ``B_S``;
    its ``A_S``, the sum of y^2, is not needed to rank): each side's squared
    error ``A - B^2 / W`` is O(1), so a feature costs O(n log n) for the sort
    plus O(n) for the scan.
``VECTORIZED`` (:func:`scan_vectorized`)
    scan a segment of the presorted lists (:mod:`dtlab.splits.presort`): prefix
    sums of ``g`` and ``h``, then every candidate position at once by the
    foundation's ranking (:func:`dtlab.splits.rank_prefix`, shared with
    gradient boosting) -- branch-free loops that LLVM turns into SIMD code -- in
    parallel over features (``prange``) for large nodes.

Because ``SSE_L + SSE_R = A_S - B_L^2 / W_L - B_R^2 / W_R`` and ``A_S`` does
not depend on the split, the scans rank candidates by scikit-learn's proxy; the
incremental and vectorised scans accumulate B in the same (value, row) order, so
they agree bit for bit.
"""

from __future__ import annotations

import numpy as np

from ..splits import rank_prefix, split_proxy
from ._missing_cpu import candidate_range, is_tie

# The variant's names of ._weights and each other, by name: compile_functions binds them.
# ruff: noqa: F821


def prefix_sums(ys, ws, s, m, gbuf, hbuf):
    """Prefix sums of ``g = w y`` into ``gbuf[:m]`` and of ``h = w`` into ``hbuf[:m]`` (weighted only) over the
    positions ``s .. s + m - 1``; returns their totals ``G, H`` (``H = m`` without weights)."""
    g = 0.0
    h = 0.0
    for i in range(m):
        wi = weight_of(ws, s + i)
        g += weighted(wi, ys[s + i])
        h += wi
        gbuf[i] = g
        keep(hbuf, i, h)
    return g, side_weight(h, m)


def rank_positions(xs, s, lo, hi, gbuf, hb, g_total, h_total, thr, g_miss, h_miss, miss_left):
    """:func:`dtlab.splits.rank_prefix` over the candidate positions ``lo .. hi`` (``lo >= 1``) of the segment at
    ``s`` (its bounds are ``max(msl, 1)`` and ``m - msl``: ``msl = lo``, ``m = hi + lo``)."""
    return rank_prefix(xs, s, hi + lo, gbuf, hb, g_total, h_total, lo, 0.0, thr, g_miss, h_miss, miss_left, 0.0,
                       False, gbuf, None)


def scan_vectorized(xs, ys, ws, s, m_present, e, msl, thr, gbuf, hbuf):
    """Best variance-reduction split of the sorted segment ``[s, e)``, its last ``e - s - m_present`` rows
    missing: prefix sums, then every position at once (:func:`rank_positions`), once per side of the missing
    rows (:mod:`._missing_cpu`'s order of candidates).

    Parameters
    ----------
    xs : float32 array, sorted on ``[s, s + m_present)``, NaN after
    ys : float64 array, the targets in the order of ``xs``
    ws : float64 array, the weights at the same positions (weighted only)
    s, m_present, e : int
    msl : int, min_samples_leaf
    thr : float32, FEATURE_THRESHOLD
    gbuf, hbuf : float64 scratch (>= m_present; ``hbuf`` weighted only)

    Returns
    -------
    best : float64, the proxy ``B_L^2/W_L + B_R^2/W_R`` (-inf if no candidate)
    k : int, present rows on the left (``m_present``: all of them; -1 if none)
    missing_left : bool
    """
    m = e - s
    n_miss = m - m_present
    g_miss = 0.0
    h_miss = 0.0
    for i in range(s + m_present, e):
        wi = weight_of(ws, i)
        g_miss += weighted(wi, ys[i])
        h_miss += wi
    h_miss = side_weight(h_miss, n_miss)
    # 1. missing right (every present row left, k = m_present, is scored apart below)
    g_present, h_present = prefix_sums(ys, ws, s, m_present, gbuf, hbuf)
    lo, hi = candidate_range(m_present, m, False, msl)
    best, k = rank_positions(xs, s, lo, min(hi, m_present - 1), gbuf, hessians(hbuf), g_present, h_present, thr,
                             g_miss, h_miss, False)
    left = False
    if hi == m_present and m_present >= lo:  # every present row left, the missing ones right
        proxy = split_proxy(g_present, h_present, (g_present + g_miss) - g_present,
                            (h_present + h_miss) - h_present, 0.0, None)
        if proxy > best:
            best = proxy
            k = m_present
    if n_miss > 0:  # 2. missing left (the prefix sums again: the first ranking wrote its proxies over them)
        prefix_sums(ys, ws, s, m_present, gbuf, hbuf)
        lo, hi = candidate_range(m_present, m, True, msl)
        best_left, k_left = rank_positions(xs, s, lo, hi, gbuf, hessians(hbuf), g_present, h_present, thr, g_miss,
                                           h_miss, True)
        if best_left > best:
            best = best_left
            k = k_left
            left = True
    return best, k, left


def scan_incremental(xs, ys, ws, m_present, m, msl, thr):
    """:func:`scan_vectorized` one row at a time, as the incremental search moves rows (the same sums in the
    same order, so the same result to the bit), on a node's rows sorted into ``[0, m)``."""
    g_miss = 0.0
    h_miss = 0.0
    for i in range(m_present, m):
        wi = weight_of(ws, i)
        g_miss += weighted(wi, ys[i])
        h_miss += wi
    g_present = 0.0
    h_present = 0.0
    for i in range(m_present):
        wi = weight_of(ws, i)
        g_present += weighted(wi, ys[i])
        h_present += wi
    g_total = g_present + g_miss
    h_total = h_present + h_miss
    best = -np.inf
    best_k = -1
    best_left = False
    for missing_left in (False, True):
        if missing_left and m_present == m:
            break  # no missing row: the second pass would repeat the first
        shift = m - m_present if missing_left else 0
        g_shift = g_miss if missing_left else 0.0
        h_shift = h_miss if missing_left else 0.0
        lo, hi = candidate_range(m_present, m, missing_left, msl)
        g_run = 0.0
        h_run = 0.0
        for k in range(1, hi + 1):
            wi = weight_of(ws, k - 1)
            g_run += weighted(wi, ys[k - 1])
            h_run += wi
            if k < lo or is_tie(xs, 0, k, m_present, thr):
                continue
            nl = k + shift
            g_left = g_run + g_shift
            g_right = g_total - g_left
            h_left = h_run + h_shift
            proxy = (g_left * g_left / side_weight(h_left, nl)
                     + g_right * g_right / side_weight(h_total - h_left, m - nl))
            if proxy > best:
                best = proxy
                best_k = k
                best_left = missing_left
    return best, best_k, best_left


def naive_pass(xs, X_f, y, w, samples, s, e, m_present, msl, thr, missing_left, best):
    """One pass of :func:`scan_naive`: the missing rows on the left (``missing_left``, a constant per call site, so
    that each compiled copy tests one comparison per row) or on the right.  Returns the best proxy above
    ``best`` (else ``best``) and its ``k`` (-1: none above)."""
    m = e - s
    lo, hi = candidate_range(m_present, m, missing_left, msl)
    best_k = -1
    for k in range(lo, hi + 1):
        if is_tie(xs, 0, k, m_present, thr):
            continue
        cut = xs[k - 1] if k < m_present else np.float32(np.inf)
        n_l = 0
        b_l = 0.0
        b_r = 0.0
        h_l = 0.0
        h_r = 0.0
        for i in range(s, e):
            r = samples[i]
            x = X_f[r]
            wi = weight_of(w, r)
            v = weighted(wi, y[r])
            if x <= cut or (missing_left and x != x):
                n_l += 1
                b_l += v
                h_l += wi
            else:
                b_r += v
                h_r += wi
        proxy = b_l * b_l / side_weight(h_l, n_l) + b_r * b_r / side_weight(h_r, m - n_l)
        if proxy > best:
            best = proxy
            best_k = k
    return best, best_k


def scan_naive(xs, X_f, y, w, samples, s, e, m_present, msl, thr):
    """The naive search: every candidate's sides summed again from the node's rows ``samples[s:e]`` (in row
    order: values ``X_f``, targets ``y`` and weights ``w`` indexed by row), a NaN row on the candidate's missing
    side; ``xs`` the node's values sorted into ``[0, e - s)``, present ones first.  Returns as
    :func:`scan_vectorized`."""
    best, k = naive_pass(xs, X_f, y, w, samples, s, e, m_present, msl, thr, False, -np.inf)
    left = False
    if m_present < e - s:
        best_left, k_left = naive_pass(xs, X_f, y, w, samples, s, e, m_present, msl, thr, True, best)
        if k_left >= 0:
            best = best_left
            k = k_left
            left = True
    return best, k, left
