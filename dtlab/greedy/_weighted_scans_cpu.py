"""Split scans and node statistics with sample weights, scikit-learn's weighted criteria.

A fit with ``sample_weight`` grows the tree scikit-learn grows with the same
weights: rows of weight 0 are left out before growing (scikit-learn's splitter
skips them too, so they count nowhere, not even in ``n_node_samples``), every
other row adds its weight ``w`` where an unweighted fit adds 1:

- regression: a side's ``B = sum w y`` and ``W = sum w``; candidates rank by
  ``B_L^2 / W_L + B_R^2 / W_R``, the leaf value is ``B / W`` and the impurity
  ``sum w y^2 / W - (B / W)^2``;
- classification: weighted class counts; Gini ``1 - sum c^2 / W^2`` and the
  proxy ``-W_R I_R - W_L I_L``, each side's squared counts summed afresh per
  candidate and the right side's counts taken as total minus left, as
  scikit-learn's ``ClassificationCriterion`` does (the unweighted scan's running
  sum of squares is exact only for integer counts);
- C4.5's gain ratio as Quinlan's C4.5 weighs cases (fractional cases): the
  entropies, the sides' shares in the gain and the split information, and the
  MDL correction's ``log2(tries) / W`` all from weighted counts
  (:func:`._node_rules.c45_gain_ratio`, shared with the unweighted scan);
- ``min_samples_leaf`` and ``min_samples_split`` still count rows, as in
  scikit-learn (its ``min_weight_fraction_leaf`` is not a parameter here).

Every scan takes one node's rows as a segment ``[0, m)`` sorted by value with
the missing rows last (``m_present`` present ones) -- the presorted lists'
order, or the order the naive and incremental searches sort a node into -- and
returns ``(best, k, missing_left)`` as :func:`._missing_scans_cpu.scan_mse_missing`: a node
without missing values is the case ``m_present == m``.  The vectorised search
without missing values ranks its candidates with the shared prefix-sum scan
(:func:`dtlab.splits.scan_prefix`, the weights as hessians); the incremental
search and the vectorised one on a node with missing rows move one row at a
time, the naive search sums both sides afresh per candidate: these two are the
unweighted missing-value scans of :mod:`._missing_scans_cpu` given the weights
(``ws=None`` compiles their unweighted specialisation, which divides by exact
row counts as before).  The classification scan stays separate from the
unweighted ones (:func:`._scans_cpu._scan_classes`,
:func:`._missing_scans_cpu.scan_classes_missing`): those update a running sum of squared
counts in O(1) per row, exact for integer counts only, where a weighted scan
must sum the squares afresh per candidate (O(n_classes)), as scikit-learn does;
one function for both would cost the unweighted scan that loop or its bits.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from ..splits import gather_feature, scan_prefix
from ._missing_scans_cpu import (
    _class_proxy,
    _left_size,
    n_present,
    present_first_order,
    scan_mse_incremental_missing,
    scan_mse_naive_missing,
)
from ._node_rules import GAIN_RATIO, INCREMENTAL, MSE, NAIVE, VECTORIZED, c45_gain_ratio, entropy_term
from ._scans_cpu import _record_missing_split
from ._stats import class_counts_weighted


@numba.njit(**NJIT)
def scan_classes_weighted(xs, ys, ws, m_present, m, msl, thr, criterion, cnt_l, cnt_r, cnt_tot):
    """Best weighted Gini / entropy / gain-ratio split of a node's segment (missing rows last), scikit-learn's
    arithmetic.

    ``ys`` int class codes and ``ws`` weights in the order of ``xs``; ``cnt_l``, ``cnt_r``, ``cnt_tot``
    float64 scratch of length n_classes.  ``GAIN_RATIO`` ranks thresholds by the entropy proxy, then
    (:func:`_gain_ratio_weighted`) gives the best one's C4.5 gain and ratio from weighted counts; it takes
    no missing rows (the builder refuses them).

    Returns
    -------
    best, k, missing_left : as :func:`._missing_scans_cpu.scan_mse_missing`
    gain, ratio : float64, the best split's MDL-corrected gain and gain ratio (``GAIN_RATIO``; else 0)
    """
    n_classes = cnt_l.shape[0]
    w_node = class_counts_weighted(ys, ws, 0, m, cnt_tot)
    best = -np.inf
    best_k = -1
    best_left = False
    n_candidates = 0
    for missing_left in (False, True):
        if missing_left and m_present == m:
            break
        w_left = 0.0
        for c in range(n_classes):
            cnt_l[c] = 0.0
        if missing_left:
            for i in range(m_present, m):
                cnt_l[int(ys[i])] += ws[i]
                w_left += ws[i]
        shift = m - m_present if missing_left else 0
        last = m_present - 1 if missing_left else m_present
        for k in range(1, last + 1):
            cnt_l[int(ys[k - 1])] += ws[k - 1]
            w_left += ws[k - 1]
            if _left_size(xs, 0, k, m_present, m, shift, msl, thr) < 0:
                continue
            n_candidates += 1
            sq_l = 0.0
            sq_r = 0.0
            for c in range(n_classes):
                cnt_r[c] = cnt_tot[c] - cnt_l[c]
                sq_l += cnt_l[c] * cnt_l[c]
                sq_r += cnt_r[c] * cnt_r[c]
            proxy = _class_proxy(cnt_l, cnt_r, sq_l, sq_r, w_left, w_node - w_left, criterion)
            if proxy > best:
                best = proxy
                best_k = k
                best_left = missing_left
    gain = 0.0
    ratio = 0.0
    if criterion == GAIN_RATIO and best_k > 0:
        gain, ratio = _gain_ratio_weighted(ys, ws, best_k, w_node, n_candidates, cnt_l, cnt_r, cnt_tot)
    return best, best_k, best_left, gain, ratio


@numba.njit(**NJIT)
def _gain_ratio_weighted(ys, ws, k, w_node, n_candidates, cnt_l, cnt_r, cnt_tot):
    """C4.5's gain and gain ratio (:func:`._node_rules.c45_gain_ratio`) of the split after the first ``k`` rows, from
    weighted class counts (``cnt_tot``: the node's); the left counts summed again in the scan's order, so
    that they are the scan's to the bit."""
    w_left = 0.0
    for c in range(cnt_l.shape[0]):
        cnt_l[c] = 0.0
    for i in range(k):
        cnt_l[int(ys[i])] += ws[i]
        w_left += ws[i]
    w_right = w_node - w_left
    h_node = 0.0
    h_left = 0.0
    h_right = 0.0
    for c in range(cnt_l.shape[0]):
        cnt_r[c] = cnt_tot[c] - cnt_l[c]
        h_node -= entropy_term(cnt_tot[c], w_node)
        h_left -= entropy_term(cnt_l[c], w_left)
        h_right -= entropy_term(cnt_r[c], w_right)
    return c45_gain_ratio(h_node, h_left, h_right, w_left, w_right, w_node, n_candidates)


@numba.njit(**NJIT)
def node_segment_weighted(method, f, XT, y, w, samples, rows, vals, ylist, s, e, xs, ys, gs, ws):
    """One node's rows of feature ``f`` in (value, row) order, missing last: values into ``xs``, targets into
    ``ys``, ``w * y`` into ``gs`` (regression) and weights into ``ws`` (each >= e - s long); returns the
    number of present values.  From the presorted lists (``VECTORIZED``) or by sorting the rows
    ``samples[s:e]`` (naive / incremental)."""
    m = e - s
    if method == VECTORIZED:
        for i in range(m):
            r = rows[f, s + i]
            xs[i] = vals[f, s + i]
            ys[i] = ylist[f, s + i]
            ws[i] = w[r]
            gs[i] = w[r] * ylist[f, s + i]
        return n_present(xs, 0, m)
    order, m_present = present_first_order(gather_feature(XT, f, samples, s, e))
    for i in range(m):
        r = samples[s + order[i]]
        xs[i] = XT[f, r]
        ys[i] = y[r]
        ws[i] = w[r]
        gs[i] = w[r] * y[r]
    return m_present


@numba.njit(**NJIT)
def scan_feature_weighted(f, slot, method, criterion, XT, y, w, samples, rows, vals, ylist, s, e, msl, thr,
                          xbuf, ybuf, wbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left,
                          f_n_miss):
    """Best weighted split of feature ``f`` on the node ``[s, e)``; writes entry ``f`` of the per-feature arrays
    as :func:`._scans_cpu._scan_presorted_feature` does (every method, every criterion).

    Parameters
    ----------
    slot : int
        Scratch row of this worker: ``xbuf`` float32 (n_slots, >= e - s), ``ybuf`` of y's dtype
        (n_slots, >= e - s), ``wbuf`` float64 (n_slots, 4, >= e - s), ``cnt`` float64 (n_slots, 3, n_classes).
    """
    m = e - s
    xs = xbuf[slot]
    ys = ybuf[slot]
    gs = wbuf[slot, 0]
    ws = wbuf[slot, 1]
    m_present = node_segment_weighted(method, f, XT, y, w, samples, rows, vals, ylist, s, e, xs, ys, gs, ws)
    f_gain[f] = 0.0
    f_ratio[f] = 0.0
    # no present value, or every value equal and none missing: constant (present against missing is a split)
    constant = m_present == 0 or (m_present == m and xs[m - 1] <= xs[0] + thr)
    f_const[f] = 1 if constant else 0
    if constant:
        f_n_miss[f] = m - m_present
        return
    if criterion != MSE:
        best, k, left, gain, ratio = scan_classes_weighted(xs, ys, ws, m_present, m, msl, thr, criterion,
                                                           cnt[slot, 0], cnt[slot, 1], cnt[slot, 2])
        f_gain[f] = gain
        f_ratio[f] = ratio
    elif method == NAIVE:
        best, k, left = scan_mse_naive_missing(xs, XT[f], y, w, samples, s, e, m_present, msl, thr)
    elif method == INCREMENTAL or m_present < m:
        best, k, left = scan_mse_incremental_missing(xs, gs, ws, m_present, m, msl, thr)
    else:  # vectorised, no missing value: the shared prefix-sum scan with the weights as hessians
        best, k = scan_prefix(xs, gs, ws, 0, m, msl, 0.0, thr, wbuf[slot, 2], wbuf[slot, 3], 0.0, 0.0, False, 0.0,
                              False)
        left = False
    _record_missing_split(f, best, k, left, m - m_present, xs, 0, m_present, f_score, f_pos, f_thr, f_miss_left,
                          f_n_miss)


@numba.njit(parallel=True, **NJIT)
def scan_features_weighted_parallel(active, n_active, method, criterion, XT, y, w, samples, rows, vals, ylist, s,
                                    e, msl, thr, xbuf, ybuf, wbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain,
                                    f_ratio, f_miss_left, f_n_miss):
    """:func:`scan_feature_weighted` of the features ``active[:n_active]`` in parallel, worker ``k`` in slot ``k``."""
    for k in numba.prange(n_active):
        scan_feature_weighted(active[k], k, method, criterion, XT, y, w, samples, rows, vals, ylist, s, e, msl, thr,
                              xbuf, ybuf, wbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio, f_miss_left,
                              f_n_miss)
