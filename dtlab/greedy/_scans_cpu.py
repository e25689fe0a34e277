"""Split scans: the best split of one node on one feature, from the node's rows in sorted order.

Three ways of finding the best split of a node on one feature, after the
"SIMD decision tree" university project (a C regression tree with variance
reduction, trained on the Kaggle diabetes prediction data):

``NAIVE`` (:func:`_scan_mse_naive`)
    sort the node's values, then for every candidate threshold recompute both
    sides' squared error from scratch with a pass over the node (O(n^2)).
``INCREMENTAL`` (:func:`_scan_mse_incremental`)
    sort the node's values, then move one row at a time from the right side to
    the left and update the running sums B (of y) and A (of y^2), the project's
    ``B_S`` and ``A_S``: each side's squared error ``A - B^2 / n`` is O(1),
    so a feature costs O(n log n) for the sort plus O(n) for the scan.
``VECTORIZED`` (:func:`dtlab.splits.scan_prefix`)
    scan a segment of the presorted lists (:mod:`dtlab.splits.presort`) and
    evaluate all candidate positions at once from prefix sums -- branch-free
    loops that LLVM turns into SIMD code -- in parallel over features
    (``prange``) for large nodes.

Because ``SSE_L + SSE_R = A_S - B_L^2 / n_L - B_R^2 / n_R`` and ``A_S`` does
not depend on the split, the scans rank candidates by scikit-learn's proxy
``B_L^2 / n_L + B_R^2 / n_R``; the incremental and vectorised scans accumulate
B in the same (value, row) order, so they agree bit for bit.  The prefix-sum
scan is shared with gradient boosting and lives in the foundation
(:mod:`dtlab.splits.scans`); the scans here are the greedy trees' own.  The
classification scan (:func:`_scan_classes`) moves class counts one row at a
time (Gini, entropy, C4.5's gain ratio).
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from ..splits import gather_feature, gather_in_order, scan_prefix
from ._missing_scans_cpu import (
    ALL_PRESENT_LEFT,
    n_present,
    present_first_order,
    scan_classes_missing,
    scan_mse_incremental_missing,
    scan_mse_missing,
    scan_mse_naive_missing,
)
from ._node_rules import GAIN_RATIO, GINI, INCREMENTAL, MSE, c45_gain_ratio, entropy_term, split_threshold


@numba.njit(**NJIT)
def _scan_mse_incremental(xs, ys, s, e, msl, thr):
    """One row at a time: update the left side's sum B as each row moves to it.

    Same result as :func:`scan_prefix` with unit hessians and ``lam = 0``, bit
    for bit (same sums in the same order), written as the project wrote it: a
    loop with a branch per row.
    """
    m = e - s
    total = 0.0
    for i in range(m):
        total += ys[s + i]
    b_left = 0.0
    best = -np.inf
    best_nl = -1
    for nl in range(1, m):
        y = ys[s + nl - 1]
        b_left += y
        if nl < msl:
            continue
        if m - nl < msl:
            break
        if xs[s + nl] <= xs[s + nl - 1] + thr:
            continue  # a tie: no threshold between equal values
        b_right = total - b_left
        # SSE_L + SSE_R = A_S - (B_L^2/n_L + B_R^2/n_R) with A_S = sum y^2 the same for
        # every split, so the largest bracket is the smallest squared error: the
        # project's running A_S is not needed to rank candidates.
        proxy = b_left * b_left / nl + b_right * b_right / (m - nl)
        if proxy > best:
            best = proxy
            best_nl = nl
    return best, best_nl


@numba.njit(**NJIT)
def _scan_mse_naive(xs, X_f, y, samples, s, e, msl, thr):
    """Recompute both sides' sums for every candidate threshold (O(n^2)).

    ``xs`` holds the node's sorted values of the feature.  For each candidate
    the node's rows are walked in row order and split by value, and both sides'
    ``n`` and ``B = sum y`` are recomputed from scratch.  Candidates are ranked
    by ``B_L^2/n_L + B_R^2/n_R`` (``SSE_L + SSE_R = A_S`` minus it, and
    ``A_S = sum y^2`` is the same for every split), the quantity the other
    scans rank by, so that all three agree whenever the sums are exact.
    """
    m = e - s
    best = -np.inf
    best_nl = -1
    for nl in range(max(msl, 1), m - msl + 1):
        if xs[nl] <= xs[nl - 1] + thr:
            continue
        cut = xs[nl - 1]
        n_l = 0
        b_l = 0.0
        b_r = 0.0
        for i in range(s, e):
            r = samples[i]
            v = y[r]
            if X_f[r] <= cut:
                n_l += 1
                b_l += v
            else:
                b_r += v
        n_r = m - n_l
        # the split with the smallest n_l var_l + n_r var_r = A_S - (b_l^2/n_l + b_r^2/n_r) wins
        proxy = b_l * b_l / n_l + b_r * b_r / n_r
        if proxy > best:
            best = proxy
            best_nl = nl
    return best, best_nl


@numba.njit(**NJIT)
def _scan_classes(xs, ys, s, e, msl, thr, criterion, cnt_l, cnt_r):
    """Scan one sorted segment for a classification criterion.

    Class counts move one row at a time; the Gini score uses the running sums of
    squared counts (exact integers, so the score equals scikit-learn's to the
    last bit).  Scores are scikit-learn's proxies ``-n_L I_L - n_R I_R``.

    Returns
    -------
    best : float64
    n_left : int (-1 if no valid split)
    gain : float64
        MDL-corrected information gain (bits) of the best split (``GAIN_RATIO``).
    ratio : float64
        Its gain ratio (``GAIN_RATIO``).
    """
    m = e - s
    n_classes = cnt_l.shape[0]
    for c in range(n_classes):
        cnt_l[c] = 0.0
        cnt_r[c] = 0.0
    for i in range(s, e):
        cnt_r[int(ys[i])] += 1.0
    sq_l = 0.0
    sq_r = 0.0
    h_node = 0.0
    for c in range(n_classes):
        sq_r += cnt_r[c] * cnt_r[c]
        h_node -= entropy_term(cnt_r[c], float(m))
    best = -np.inf
    best_nl = -1
    best_hl = 0.0
    best_hr = 0.0
    n_candidates = 0
    for nl in range(1, m):
        c = int(ys[s + nl - 1])
        sq_l += 2.0 * cnt_l[c] + 1.0
        cnt_l[c] += 1.0
        sq_r -= 2.0 * cnt_r[c] - 1.0
        cnt_r[c] -= 1.0
        if nl < msl:
            continue
        if m - nl < msl:
            break
        if xs[s + nl] <= xs[s + nl - 1] + thr:
            continue
        n_candidates += 1
        fl = float(nl)
        fr = float(m - nl)
        if criterion == GINI:
            proxy = -fr * (1.0 - sq_r / (fr * fr)) - fl * (1.0 - sq_l / (fl * fl))
            if proxy > best:
                best = proxy
                best_nl = nl
        else:
            h_l = 0.0
            h_r = 0.0
            for k in range(n_classes):
                h_l -= entropy_term(cnt_l[k], fl)
                h_r -= entropy_term(cnt_r[k], fr)
            proxy = -fr * h_r - fl * h_l
            if proxy > best:
                best = proxy
                best_nl = nl
                best_hl = h_l
                best_hr = h_r
    gain = 0.0
    ratio = 0.0
    if criterion == GAIN_RATIO and best_nl > 0:
        gain, ratio = c45_gain_ratio(h_node, best_hl, best_hr, float(best_nl), float(m - best_nl), float(m),
                                     n_candidates)
    return best, best_nl, gain, ratio


@numba.njit(**NJIT)
def _record_missing_split(f, best, k, missing_left, n_miss, xs, s, m_present, f_score, f_pos, f_thr, f_miss_left,
                          f_n_miss):
    """Write a missing-value scan's result (:mod:`._missing_scans_cpu`) into feature ``f``'s entries."""
    f_score[f] = best
    f_n_miss[f] = n_miss
    f_miss_left[f] = 1 if missing_left else 0
    if k < 0:
        f_pos[f] = -1
        return
    f_pos[f] = k + n_miss if missing_left else k  # left size, every row counted
    f_thr[f] = ALL_PRESENT_LEFT if k == m_present else split_threshold(xs[s + k - 1], xs[s + k])


@numba.njit(**NJIT)
def _scan_presorted_missing(f, slot, criterion, vals, ylist, s, e, msl, thr, buf, cnt, f_const, f_score, f_pos,
                            f_thr, f_gain, f_ratio, f_miss_left, f_n_miss):
    """:func:`_scan_presorted_feature` of a feature some rows of the node miss (:mod:`._missing_scans_cpu`)."""
    m_present = n_present(vals[f], s, e)
    f_const[f] = 1 if m_present == 0 else 0
    if m_present == 0:
        return
    if criterion == MSE:
        best, k, left = scan_mse_missing(vals[f], ylist[f], s, m_present, e, msl, thr, buf[slot])
    else:
        best, k, left = scan_classes_missing(vals[f], ylist[f], s, m_present, e, msl, thr, criterion,
                                             cnt[slot, 0], cnt[slot, 1], cnt[slot, 2])
    f_gain[f] = 0.0
    f_ratio[f] = 0.0
    _record_missing_split(f, best, k, left, e - s - m_present, vals[f], s, m_present, f_score, f_pos, f_thr,
                          f_miss_left, f_n_miss)


@numba.njit(**NJIT)
def _scan_presorted_feature(f, slot, criterion, vals, ylist, s, e, msl, thr, buf, cnt,
                            f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left, f_n_miss):
    """Best split of feature ``f`` on the node ``[s, e)`` of the presorted lists.

    Parameters
    ----------
    f : int
    slot : int
        Row of the scratch ``buf`` (float64, (n_slots, >= e - s)) or ``cnt``
        (float64, (n_slots, 3, n_classes)) to use.
    criterion : int
    vals, ylist : arrays (n_features, n_samples), float32 and targets; NaN values last in each node
    s, e, msl : int
    thr : float32
    f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left, f_n_miss : arrays (n_features,)
        Entry ``f`` receives: constant in the node (uint8), best score, left
        size (-1: no valid split), threshold, for ``GAIN_RATIO`` the
        MDL-corrected gain and the gain ratio, whether the missing rows go
        left (uint8) and how many rows of the node miss the feature.
    """
    if np.isnan(vals[f, e - 1]):  # NaN sorts last: some rows of the node miss the feature
        _scan_presorted_missing(f, slot, criterion, vals, ylist, s, e, msl, thr, buf, cnt, f_const, f_score, f_pos,
                                f_thr, f_gain, f_ratio, f_miss_left, f_n_miss)
        return
    f_n_miss[f] = 0
    if vals[f, e - 1] <= vals[f, s] + thr:
        f_const[f] = 1
        return
    f_const[f] = 0
    gain = 0.0
    ratio = 0.0
    if criterion == MSE:
        best, nl = scan_prefix(vals[f], ylist[f], None, s, e, msl, 0.0, thr, buf[slot], None, 0.0, 0.0, False, 0.0,
                               False)
    else:
        best, nl, gain, ratio = _scan_classes(vals[f], ylist[f], s, e, msl, thr, criterion,
                                              cnt[slot, 0], cnt[slot, 1])
    f_score[f] = best
    f_pos[f] = nl
    f_gain[f] = gain
    f_ratio[f] = ratio
    if nl > 0:
        f_thr[f] = split_threshold(vals[f, s + nl - 1], vals[f, s + nl])


@numba.njit(parallel=True, **NJIT)
def _scan_presorted_parallel(active, n_active, criterion, vals, ylist, s, e, msl, thr, buf, cnt,
                             f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left, f_n_miss):
    """:func:`_scan_presorted_feature` of the features ``active[:n_active]`` in parallel, worker ``k`` in slot ``k``."""
    for k in numba.prange(n_active):
        _scan_presorted_feature(active[k], k, criterion, vals, ylist, s, e, msl, thr, buf, cnt,
                                f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left, f_n_miss)


@numba.njit(**NJIT)
def _scan_sorting_feature(f, method, XT, y, samples, s, e, msl, thr, f_const, f_score, f_pos, f_thr, f_miss_left,
                          f_n_miss):
    """Naive / incremental: best split of feature ``f`` on the rows ``samples[s:e]``, sorting them.

    Parameters
    ----------
    f, method : int
    XT : float32 array (n_features, n_samples), NaN for missing values
    y : float64 array (n_samples,)
    samples : int64 array (n_samples,), the node's rows on ``[s, e)``
    s, e, msl : int
    thr : float32
    f_const, f_score, f_pos, f_thr, f_miss_left, f_n_miss : arrays (n_features,), as for
        :func:`_scan_presorted_feature`
    """
    m = e - s
    xb = gather_feature(XT, f, samples, s, e)
    # stable sort, rows kept in row order: (value, row) order with the missing rows last, as the presorted lists
    order, m_present = present_first_order(xb)
    xs = np.empty(m, dtype=np.float32)
    for i in range(m):
        xs[i] = xb[order[i]]
    if m_present < m:
        f_const[f] = 1 if m_present == 0 else 0
        if m_present == 0:
            return
        if method == INCREMENTAL:
            ys = np.empty(m, dtype=np.float64)
            gather_in_order(y, samples, s, order, ys)
            best, k, left = scan_mse_incremental_missing(xs, ys, None, m_present, m, msl, thr)
        else:
            best, k, left = scan_mse_naive_missing(xs, XT[f], y, None, samples, s, e, m_present, msl, thr)
        _record_missing_split(f, best, k, left, m - m_present, xs, 0, m_present, f_score, f_pos, f_thr, f_miss_left,
                              f_n_miss)
        return
    f_n_miss[f] = 0
    if xs[m - 1] <= xs[0] + thr:
        f_const[f] = 1
        return
    f_const[f] = 0
    if method == INCREMENTAL:
        ys = np.empty(m, dtype=np.float64)
        gather_in_order(y, samples, s, order, ys)
        best, nl = _scan_mse_incremental(xs, ys, 0, m, msl, thr)
    else:
        best, nl = _scan_mse_naive(xs, XT[f], y, samples, s, e, msl, thr)
    f_score[f] = best
    f_pos[f] = nl
    if nl > 0:
        f_thr[f] = split_threshold(xs[nl - 1], xs[nl])
