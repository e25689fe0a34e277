"""Split scans: the best split of one node on one feature, from the node's rows in sorted order.

Every scan is written once, for weighted and unweighted fits alike, as a scan of
``g = w y`` and ``h = w`` (scikit-learn's weighted criteria: a side's ``B = sum w y``
and ``W = sum w``; unweighted, ``h = 1`` and ``W`` is the row count), and
compiled per variant of :mod:`._weights` by :func:`dtlab._jit.compile_functions`
(``SCANS["unweighted"]``, ``SCANS["weighted"]``): without weights the variant
reads, stores and sums no weight and divides by exact row counts (the work of a
scan of y alone), and the two variants agree bit for bit on unit weights.  Every
scan handles missing values (:mod:`._missing_cpu`): a node's rows come sorted
with the missing ones last, ``m_present`` present.

The regression scans (naive, incremental, vectorized) are in
:mod:`._regression_scans_cpu`; this module holds the classification scan
(:func:`scan_classes`: class counts moved one row at a time; Gini, entropy,
C4.5's gain ratio), the per-feature dispatch (:func:`scan_feature`,
:func:`scan_features_parallel`) and their compilation (:data:`SCANS`).
``min_samples_leaf`` counts rows, with weights too, as in scikit-learn.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT, compile_functions
from ..splits import gather_feature
from ._missing_cpu import ALL_PRESENT_LEFT, candidate_range, is_tie, n_present, present_first_order
from ._node_rules import (
    GAIN_RATIO,
    GINI,
    INCREMENTAL,
    MSE,
    NAIVE,
    VECTORIZED,
    c45_gain_ratio,
    entropy_term,
    split_threshold,
)
from ._regression_scans_cpu import (
    naive_pass,
    prefix_sums,
    rank_positions,
    scan_incremental,
    scan_naive,
    scan_vectorized,
)
from ._weights import VARIANTS, compile_weights, multiply

# The plain functions below call the names of ._weights (weight_of, weighted, side_weight, keep, hessians,
# move_row, candidate_squares) and each other by name; compile_functions binds them per variant.
# ruff: noqa: F821


def class_pass(xs, ys, ws, s, m_present, m, msl, thr, criterion, cnt_l, cnt_r, cnt_tot, w_node, missing_left, best):
    """One pass of :func:`scan_classes`: the missing rows on the left (``missing_left``, a constant per call site)
    or on the right.  Returns the best proxy above ``best`` (else ``best``), its ``k`` (-1: none above) and the
    candidates counted."""
    n_classes = cnt_l.shape[0]
    w_left = 0.0
    for c in range(n_classes):
        cnt_l[c] = 0.0
    if missing_left:
        for i in range(s + m_present, s + m):
            wi = weight_of(ws, i)
            cnt_l[int(ys[i])] += wi
            w_left += wi
    sq_l = 0.0
    sq_r = 0.0
    for c in range(n_classes):
        cnt_r[c] = cnt_tot[c] - cnt_l[c]
        sq_l += cnt_l[c] * cnt_l[c]
        sq_r += cnt_r[c] * cnt_r[c]
    shift = m - m_present if missing_left else 0
    lo, hi = candidate_range(m_present, m, missing_left, msl)
    best_k = -1
    n_candidates = 0
    for k in range(1, hi + 1):
        wi = weight_of(ws, s + k - 1)
        sq_l, sq_r = move_row(cnt_l, cnt_r, cnt_tot, int(ys[s + k - 1]), wi, sq_l, sq_r)
        w_left += wi
        if k < lo or is_tie(xs, s, k, m_present, thr):
            continue
        nl = k + shift
        n_candidates += 1
        fl = side_weight(w_left, nl)
        fr = side_weight(w_node - w_left, m - nl)
        if criterion == GINI:
            sq_l, sq_r = candidate_squares(sq_l, sq_r, cnt_l, cnt_r)
            proxy = -fr * (1.0 - sq_r / (fr * fr)) - fl * (1.0 - sq_l / (fl * fl))
        else:
            h_l = 0.0
            h_r = 0.0
            for q in range(n_classes):
                h_l -= entropy_term(cnt_l[q], fl)
                h_r -= entropy_term(cnt_r[q], fr)
            proxy = -fr * h_r - fl * h_l
        if proxy > best:
            best = proxy
            best_k = k
    return best, best_k, n_candidates


def scan_classes(xs, ys, ws, s, m_present, e, msl, thr, criterion, cnt_l, cnt_r, cnt_tot):
    """Best Gini / entropy / gain-ratio split of the sorted segment ``[s, e)`` (missing rows last), scikit-learn's
    arithmetic: class counts (weighted: sums of weights) move one row at a time, the right side's weighted counts
    taken as total minus left; scores are the proxies ``-W_R I_R - W_L I_L``.

    ``ys`` int class codes; ``cnt_l``, ``cnt_r``, ``cnt_tot`` float64 scratch of length n_classes.  Without
    weights Gini's sums of squared counts run with the rows (exact integers, so the score equals scikit-learn's
    to the last bit); with weights they are summed afresh per candidate (``move_row``, ``candidate_squares``).
    ``GAIN_RATIO`` ranks thresholds by the entropy proxy, then gives the best one's C4.5 gain and ratio
    (:func:`._node_rules.c45_gain_ratio`: with weights, C4.5's fractional cases); it takes no missing rows.

    Returns
    -------
    best, k, missing_left : as :func:`scan_vectorized`
    gain, ratio : float64, the best split's MDL-corrected gain and gain ratio (``GAIN_RATIO``; else 0)
    """
    m = e - s
    for c in range(cnt_tot.shape[0]):
        cnt_tot[c] = 0.0
    w_node = 0.0
    for i in range(s, e):
        wi = weight_of(ws, i)
        cnt_tot[int(ys[i])] += wi
        w_node += wi
    best, best_k, n_candidates = class_pass(xs, ys, ws, s, m_present, m, msl, thr, criterion, cnt_l, cnt_r,
                                            cnt_tot, w_node, False, -np.inf)
    best_left = False
    if m_present < m:
        best_2, k_2, n_2 = class_pass(xs, ys, ws, s, m_present, m, msl, thr, criterion, cnt_l, cnt_r, cnt_tot,
                                      w_node, True, best)
        n_candidates += n_2
        if k_2 >= 0:
            best = best_2
            best_k = k_2
            best_left = True
    gain = 0.0
    ratio = 0.0
    if criterion == GAIN_RATIO and best_k > 0:
        gain, ratio = gain_ratio(ys, ws, s, best_k, m, w_node, n_candidates, cnt_l, cnt_r, cnt_tot)
    return best, best_k, best_left, gain, ratio


def gain_ratio(ys, ws, s, k, m, w_node, n_candidates, cnt_l, cnt_r, cnt_tot):
    """C4.5's gain and gain ratio (:func:`._node_rules.c45_gain_ratio`) of the split after the first ``k`` rows of
    the segment at ``s`` (no missing rows), from the (weighted) class counts: the left ones summed again in the
    scan's order, so that they are the scan's to the bit."""
    w_left = 0.0
    for c in range(cnt_l.shape[0]):
        cnt_l[c] = 0.0
    for i in range(s, s + k):
        wi = weight_of(ws, i)
        cnt_l[int(ys[i])] += wi
        w_left += wi
    w_left = side_weight(w_left, k)
    w_right = side_weight(w_node - w_left, m - k)
    w_all = side_weight(w_node, m)
    h_node = 0.0
    h_left = 0.0
    h_right = 0.0
    for c in range(cnt_l.shape[0]):
        cnt_r[c] = cnt_tot[c] - cnt_l[c]
        h_node -= entropy_term(cnt_tot[c], w_all)
        h_left -= entropy_term(cnt_l[c], w_left)
        h_right -= entropy_term(cnt_r[c], w_right)
    return c45_gain_ratio(h_node, h_left, h_right, w_left, w_right, w_all, n_candidates)


def record_split(f, best, k, missing_left, n_miss, xs, s, m_present, f_score, f_pos, f_thr, f_miss_left, f_n_miss):
    """Write a scan's result into feature ``f``'s entries: score, left size (every row counted; -1: none),
    threshold, where the missing rows go and how many there are."""
    f_score[f] = best
    f_n_miss[f] = n_miss
    f_miss_left[f] = 1 if missing_left else 0
    if k < 0:
        f_pos[f] = -1
        return
    f_pos[f] = k + n_miss if missing_left else k
    f_thr[f] = ALL_PRESENT_LEFT if k == m_present else split_threshold(xs[s + k - 1], xs[s + k])


def scan_feature(f, slot, method, criterion, XT, y, w, samples, rows, vals, ylist, s, e, msl, thr, xbuf, ybuf, wbuf,
                 gbuf, hbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left, f_n_miss):
    """Best split of feature ``f`` on the node ``[s, e)`` (every method, every criterion).

    Parameters
    ----------
    f, slot : int
        The feature, and the row of the scratch arrays this worker uses.
    method, criterion : int
    XT : float32 array (n_features, n_samples), NaN for missing values (naive / incremental)
    y : float64 targets or int32 class codes (n_samples,)
    w : float64 (n_samples,) sample weights (weighted only)
    samples : int64 array (n_samples,), the node's rows on ``[s, e)`` (naive / incremental)
    rows, vals, ylist : presorted lists (n_features, n_samples), NaN values last in each node (vectorized)
    s, e, msl : int
    thr : float32
    xbuf, ybuf : scratch (1, >= e - s) of float32 and y's dtype: a node's sorted values and targets
    wbuf : float64 scratch (n_slots, > e): the node's weights, at the positions of its values (weighted only)
    gbuf, hbuf : float64 scratch (n_slots, >= e - s), prefix sums (vectorized regression)
    cnt : float64 scratch (n_slots, 3, n_classes)
    f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left, f_n_miss : arrays (n_features,)
        Entry ``f`` receives: constant in the node (uint8), best score, left size (-1: no valid split),
        threshold, for ``GAIN_RATIO`` the MDL-corrected gain and the gain ratio, whether the missing rows go
        left (uint8) and how many rows of the node miss the feature.
    """
    m = e - s
    ws = wbuf[slot]
    if method == VECTORIZED:  # the node is a segment of the presorted lists
        xs = vals[f]
        ys = ylist[f]
        at = s
        m_present = n_present(xs, s, e)
        for i in range(s, e):
            keep(ws, i, weight_of(w, rows[f, i]))
    else:  # sort the node's rows: stable, (value, row) order with the missing rows last, as the presorted lists
        order, m_present = present_first_order(gather_feature(XT, f, samples, s, e))
        xs = xbuf[0]
        ys = ybuf[0]
        at = 0
        for i in range(m):
            r = samples[s + order[i]]
            xs[i] = XT[f, r]
            ys[i] = y[r]
            keep(ws, i, weight_of(w, r))
    # no present value, or every value equal and none missing: constant (present against missing is a split)
    constant = m_present == 0 or (m_present == m and xs[at + m - 1] <= xs[at] + thr)
    f_const[f] = 1 if constant else 0
    if constant:
        f_n_miss[f] = m - m_present
        return
    gain = 0.0
    ratio = 0.0
    if criterion != MSE:
        best, k, left, gain, ratio = scan_classes(xs, ys, ws, at, m_present, at + m, msl, thr, criterion,
                                                  cnt[slot, 0], cnt[slot, 1], cnt[slot, 2])
    elif method == NAIVE:
        best, k, left = scan_naive(xs, XT[f], y, w, samples, s, e, m_present, msl, thr)
    elif method == INCREMENTAL:
        best, k, left = scan_incremental(xs, ys, ws, m_present, m, msl, thr)
    else:
        best, k, left = scan_vectorized(xs, ys, ws, s, m_present, e, msl, thr, gbuf[slot], hbuf[slot])
    f_gain[f] = gain
    f_ratio[f] = ratio
    record_split(f, best, k, left, m - m_present, xs, at, m_present, f_score, f_pos, f_thr, f_miss_left, f_n_miss)


def scan_features_parallel(active, n_active, method, criterion, XT, y, w, samples, rows, vals, ylist, s, e, msl,
                           thr, xbuf, ybuf, wbuf, gbuf, hbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio,
                           f_miss_left, f_n_miss):
    """:func:`scan_feature` of the features ``active[:n_active]`` in parallel, worker ``k`` in slot ``k``
    (vectorized: the other methods share one sorting scratch)."""
    for k in numba.prange(n_active):
        scan_feature(active[k], k, method, criterion, XT, y, w, samples, rows, vals, ylist, s, e, msl, thr, xbuf,
                     ybuf, wbuf, gbuf, hbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left,
                     f_n_miss)


#: Callees first, as compile_functions compiles them, each group with its options: the small helpers and the
#: per-feature dispatch are inlined into their callers (numba's ``inline="always"``), since a numba call passes
#: every array argument as its several fields and a tree of many small nodes makes millions of these calls.
SCAN_FUNCTIONS = (((scan_incremental, naive_pass, class_pass, gain_ratio), {}),
                  ((prefix_sums, rank_positions, scan_vectorized, scan_naive, scan_classes, record_split, scan_feature),
                   dict(inline="always")),
                  ((scan_features_parallel,), dict(parallel=True)))


def _compile(variant: str) -> dict:
    jit = numba.njit(**NJIT)
    scans = compile_weights(variant, jit, jit(multiply))
    for functions, options in SCAN_FUNCTIONS:
        scans = compile_functions(functions, numba.njit(**options, **NJIT), scans, variant)
    return scans


#: variant ("unweighted", "weighted") -> {name: compiled scan}, the variant's weight functions included.
SCANS = {variant: _compile(variant) for variant in VARIANTS}
