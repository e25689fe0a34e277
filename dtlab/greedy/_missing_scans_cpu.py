"""Split scans of a node whose rows include missing values (NaN), scikit-learn's rules (>= 1.3).

A node's rows of one feature come sorted with the missing ones last: the
presorted lists put NaN after every number (:func:`dtlab.splits.sorted_row_ids`)
and stable partitions keep it so; the naive and incremental searches order a
node's rows the same way (:func:`present_first_order`).  scikit-learn's
``node_split_best`` then tries, in this order, and keeps the first of equal
scores:

1. every threshold between two present values with the missing rows on the
   right, then every present value on the left and the missing rows alone on
   the right (threshold inf: dtlab stores :data:`ALL_PRESENT_LEFT`, the largest
   float32, the same test for every finite float32 value);
2. every threshold with the missing rows on the left.

``min_samples_leaf`` counts the missing rows on their side.  A feature with no
present value in the node is constant; one whose present values are all equal
is not when some are missing (present against missing is its one candidate).
A split of a node without missing rows sends NaN at predict time to the child
that got more training rows.  The scans return the present rows on the left
(``k``) and whether the missing ones go left; the grower moves the missing rows
next to the left present ones before it partitions (:func:`rotate_missing_left`).
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from ..splits import rank_prefix, split_proxy
from ._node_rules import GINI, entropy_term

#: Threshold of the split "every present value left, the missing ones right" (scikit-learn: inf).
ALL_PRESENT_LEFT = float(np.finfo(np.float32).max)


@numba.njit(**NJIT)
def n_present(xs, s, e):
    """Rows of ``[s, e)`` whose value is not NaN; ``xs`` sorted there with NaN last (binary search, O(1) without)."""
    if not np.isnan(xs[e - 1]):
        return e - s
    lo = s
    hi = e - 1  # xs[hi] is NaN
    while lo < hi:
        mid = (lo + hi) // 2
        if np.isnan(xs[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo - s


@numba.njit(**NJIT)
def _prefix_sums(ys, s, m, buf):
    acc = 0.0
    for i in range(m):
        acc += ys[s + i]
        buf[i] = acc
    return acc


@numba.njit(**NJIT)
def scan_mse_missing(xs, ys, s, m_present, e, msl, thr, buf):
    """Best variance-reduction split of a sorted segment ``[s, e)`` whose last ``e - s - m_present`` rows are missing.

    Parameters
    ----------
    xs : float32 array, sorted on ``[s, s + m_present)``, NaN after
    ys : float64 array, the targets in the order of ``xs``
    s, m_present, e : int
    msl : int, min_samples_leaf
    thr : float32, FEATURE_THRESHOLD
    buf : float64 scratch (>= m_present)

    Returns
    -------
    best : float64, the proxy ``B_L^2/n_L + B_R^2/n_R`` (-inf if no candidate)
    k : int, present rows on the left (``m_present``: all of them; -1 if none)
    missing_left : bool
    """
    m = e - s
    n_miss = m - m_present
    g_miss = 0.0
    for i in range(s + m_present, e):
        g_miss += ys[i]
    # 1. missing right: rank_prefix with the missing rows' sums on the right; min_samples_leaf counts every row
    # of a side, so it is checked on the sides' row counts (mcw) instead of positions in the segment
    g_present = _prefix_sums(ys, s, m_present, buf)
    best, k = rank_prefix(xs, s, m_present, buf, None, g_present, np.float64(m_present), 1, 0.0, thr, g_miss,
                          np.float64(n_miss), False, np.float64(msl), False, buf, None)
    left = False
    if m_present >= msl and n_miss >= msl:  # every present row left, the missing ones right
        g_total = g_present + g_miss
        proxy = split_proxy(g_present, np.float64(m_present), g_total - g_present, np.float64(n_miss), 0.0, None)
        if proxy > best:
            best = proxy
            k = m_present
    # 2. missing left (the prefix sums again: the first ranking wrote its proxies over them)
    _prefix_sums(ys, s, m_present, buf)
    best_left, k_left = rank_prefix(xs, s, m_present, buf, None, g_present, np.float64(m_present), 1, 0.0, thr,
                                    g_miss, np.float64(n_miss), True, np.float64(msl), False, buf, None)
    if best_left > best:
        best = best_left
        k = k_left
        left = True
    return best, k, left


@numba.njit(**NJIT)
def _left_size(xs, s, k, m_present, m, shift, msl, thr):
    """Rows on the left of candidate ``k`` (present rows ``s .. s + k - 1`` left, plus ``shift`` missing ones), or
    -1 where it is no candidate: no threshold between equal values, or a side under ``min_samples_leaf``."""
    if k < m_present and xs[s + k] <= xs[s + k - 1] + thr:
        return -1
    nl = k + shift
    if nl < msl or m - nl < msl:
        return -1
    return nl


@numba.njit(**NJIT)
def _class_proxy(cnt_l, cnt_r, sq_l, sq_r, fl, fr, criterion):
    """scikit-learn's proxy ``-n_R I_R - n_L I_L`` of class counts (Gini from the sums of squared counts)."""
    if criterion == GINI:
        return -fr * (1.0 - sq_r / (fr * fr)) - fl * (1.0 - sq_l / (fl * fl))
    h_l = 0.0
    h_r = 0.0
    for c in range(cnt_l.shape[0]):
        h_l -= entropy_term(cnt_l[c], fl)
        h_r -= entropy_term(cnt_r[c], fr)
    return -fr * h_r - fl * h_l


@numba.njit(**NJIT)
def scan_classes_missing(xs, ys, s, m_present, e, msl, thr, criterion, cnt_l, cnt_r, cnt_miss):
    """Best Gini / entropy split of a sorted segment ``[s, e)`` whose last ``e - s - m_present`` rows are missing.

    Class counts move one row at a time, as in :func:`._scans_cpu._scan_classes`, starting from the missing rows'
    counts on the right (pass 1) or the left (pass 2); ``cnt_l``, ``cnt_r``, ``cnt_miss`` are float64 scratch
    of length n_classes.  Returns ``(best, k, missing_left)`` as :func:`scan_mse_missing`.
    """
    m = e - s
    n_miss = m - m_present
    n_classes = cnt_l.shape[0]
    for c in range(n_classes):
        cnt_miss[c] = 0.0
    for i in range(s + m_present, e):
        cnt_miss[int(ys[i])] += 1.0
    best = -np.inf
    best_k = -1
    best_left = False
    for missing_left in (False, True):
        sq_l = 0.0
        sq_r = 0.0
        for c in range(n_classes):
            cnt_l[c] = cnt_miss[c] if missing_left else 0.0
            cnt_r[c] = 0.0 if missing_left else cnt_miss[c]
        for i in range(s, s + m_present):
            cnt_r[int(ys[i])] += 1.0
        for c in range(n_classes):
            sq_l += cnt_l[c] * cnt_l[c]
            sq_r += cnt_r[c] * cnt_r[c]
        shift = n_miss if missing_left else 0
        last = m_present - 1 if missing_left else m_present  # k = m_present: the missing rows alone on the right
        for k in range(1, last + 1):
            c = int(ys[s + k - 1])
            sq_l += 2.0 * cnt_l[c] + 1.0
            cnt_l[c] += 1.0
            sq_r -= 2.0 * cnt_r[c] - 1.0
            cnt_r[c] -= 1.0
            nl = _left_size(xs, s, k, m_present, m, shift, msl, thr)
            if nl < 0:
                continue
            proxy = _class_proxy(cnt_l, cnt_r, sq_l, sq_r, float(nl), float(m - nl), criterion)
            if proxy > best:
                best = proxy
                best_k = k
                best_left = missing_left
    return best, best_k, best_left


@numba.njit(**NJIT)
def scan_mse_incremental_missing(xs, gs, ws, m_present, m, msl, thr):
    """:func:`scan_mse_missing` one row at a time, as the incremental search moves rows (the same sums in the
    same order, so the same result to the bit); with sample weights too.

    Parameters
    ----------
    xs : float32 array (>= m), the node's values sorted on ``[0, m_present)``, NaN after
    gs : float64 array (>= m), the targets in that order (with weights: ``w * y``)
    ws : float64 array (>= m) of the weights in that order, or None (every weight 1)
        ``None`` compiles a separate specialisation (numba prunes the branches on ``ws is None``): the
        unweighted scan divides by its exact row counts and reads no array of ones.  A side's weight
        ranks it where an unweighted scan has its row count: ``B_L^2 / W_L + B_R^2 / W_R``.
    m_present, m : int
    msl : int, min_samples_leaf (rows, with or without weights)
    thr : float32, FEATURE_THRESHOLD

    Returns
    -------
    best, k, missing_left : as :func:`scan_mse_missing`; nodes without missing rows (``m_present == m``)
        are scanned once.
    """
    g_miss = 0.0
    h_miss = np.float64(m - m_present)
    if ws is not None:
        h_miss = 0.0
        for i in range(m_present, m):
            h_miss += ws[i]
    for i in range(m_present, m):
        g_miss += gs[i]
    g_present = 0.0
    h_present = np.float64(m_present)
    if ws is not None:
        h_present = 0.0
        for i in range(m_present):
            h_present += ws[i]
    for i in range(m_present):
        g_present += gs[i]
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
        last = m_present - 1 if missing_left else m_present
        g_run = 0.0
        h_run = 0.0
        for k in range(1, last + 1):
            g_run += gs[k - 1]
            if ws is not None:
                h_run += ws[k - 1]
            nl = _left_size(xs, 0, k, m_present, m, shift, msl, thr)
            if nl < 0:
                continue
            g_left = g_run + g_shift
            g_right = g_total - g_left
            if ws is None:
                proxy = g_left * g_left / nl + g_right * g_right / (m - nl)
            else:
                h_left = h_run + h_shift
                proxy = g_left * g_left / h_left + g_right * g_right / (h_total - h_left)
            if proxy > best:
                best = proxy
                best_k = k
                best_left = missing_left
    return best, best_k, best_left


@numba.njit(**NJIT)
def scan_mse_naive_missing(xs, X_f, y, w, samples, s, e, m_present, msl, thr):
    """The naive search with missing rows: every candidate's sides summed again from the node's rows (in row
    order), a NaN row on the candidate's missing side; ``xs`` the node's values, present ones sorted first;
    ``w`` the sample weights (indexed by row) or None, as in :func:`scan_mse_incremental_missing`.  Returns as
    :func:`scan_mse_missing`; nodes without missing rows are scanned once."""
    m = e - s
    best = -np.inf
    best_k = -1
    best_left = False
    for missing_left in (False, True):
        if missing_left and m_present == m:
            break
        last = m_present - 1 if missing_left else m_present
        for k in range(1, last + 1):
            # the sides' sizes are counted below, from the rows themselves
            if _left_size(xs, 0, k, m_present, m, 0, 0, thr) < 0:
                continue
            cut = xs[k - 1] if k < m_present else np.inf
            n_l = 0
            b_l = 0.0
            b_r = 0.0
            h_l = 0.0
            h_r = 0.0
            for i in range(s, e):
                r = samples[i]
                x = X_f[r]
                if x <= cut or (missing_left and x != x):
                    n_l += 1
                    if w is None:
                        b_l += y[r]
                    else:
                        b_l += w[r] * y[r]
                        h_l += w[r]
                elif w is None:
                    b_r += y[r]
                else:
                    b_r += w[r] * y[r]
                    h_r += w[r]
            n_r = m - n_l
            if n_l < msl or n_r < msl:
                continue
            if w is None:
                proxy = b_l * b_l / n_l + b_r * b_r / n_r
            else:
                proxy = b_l * b_l / h_l + b_r * b_r / h_r
            if proxy > best:
                best = proxy
                best_k = k
                best_left = missing_left
    return best, best_k, best_left


@numba.njit(**NJIT)
def present_first_order(xb):
    """Positions of ``xb`` (float32) sorted stably by value, the NaN ones last in their order: the presorted
    lists' order of a node's rows."""
    m = xb.shape[0]
    present = np.empty(m, dtype=np.int64)
    missing = np.empty(m, dtype=np.int64)
    n_p = 0
    n_m = 0
    for i in range(m):
        if np.isnan(xb[i]):
            missing[n_m] = i
            n_m += 1
        else:
            present[n_p] = i
            n_p += 1
    order = np.empty(m, dtype=np.int64)
    if n_p:
        values = np.empty(n_p, dtype=np.float32)
        for i in range(n_p):
            values[i] = xb[present[i]]
        by_value = np.argsort(values, kind="mergesort")
        for i in range(n_p):
            order[i] = present[by_value[i]]
    for i in range(n_m):
        order[n_p + i] = missing[i]
    return order, n_p


@numba.njit(**NJIT)
def rotate_missing_left(lists, f, p, q, e, tmp):
    """Segment ``[p, e)`` of ``lists[f]`` from (right present ``[p, q)``, missing ``[q, e)``) to missing first.

    After a split that sends the missing rows left, the chosen feature's list holds the left present rows, the
    right present rows, then the missing ones; moving the missing rows before the right present ones makes the
    left child a prefix again (present rows sorted, then missing: the order every list keeps).  ``tmp`` is a
    1-D scratch of ``lists``' dtype (>= q - p).
    """
    n_b = q - p
    for i in range(n_b):
        tmp[i] = lists[f, p + i]
    for i in range(e - q):
        lists[f, p + i] = lists[f, q + i]
    for i in range(n_b):
        lists[f, p + e - q + i] = tmp[i]
