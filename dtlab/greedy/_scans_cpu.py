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

Three ways of finding the best regression split, after the "SIMD decision
tree" university project (a C regression tree with variance reduction, trained
on the Kaggle diabetes prediction data):

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
not depend on the split, the scans rank candidates by scikit-learn's proxy
``B_L^2 / W_L + B_R^2 / W_R``; the incremental and vectorised scans accumulate
B in the same (value, row) order, so they agree bit for bit.  The
classification scan (:func:`scan_classes`) moves class counts one row at a
time (Gini, entropy, C4.5's gain ratio).  ``min_samples_leaf`` counts rows, with
weights too, as in scikit-learn.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT, compile_functions
from ..splits import gather_feature, rank_prefix, split_proxy
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
from ._weights import VARIANTS, compile_weights, multiply

# The plain functions below call the names of ._weights (weight_of, weighted, side_weight, keep, hessians,
# move_row, candidate_squares) and each other by name; compile_functions binds them per variant.
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
