"""The CPU grower of the greedy inducers.

The whole tree is grown depth first inside one numba function (:func:`grow`) so that a
deep tree (the unlimited-depth regression tree on the 100,000-row diabetes
data has ~150,000 nodes) costs no Python per node.  The grower mirrors
scikit-learn's ``DepthFirstTreeBuilder`` + ``BestSplitter`` step by step --
node order, the rules of :mod:`._node_rules` (stopping, improvement, thresholds),
the impurity formulas and the xorshift feature permutation of :mod:`._draws`
that breaks ties -- so that the same ``random_state`` grows the same tree (bit
for bit whenever the sums involved are exact, e.g. integer targets or class
counts).  Per node it scans every feature (:mod:`._scans_cpu`), draws the best one
and partitions the rows (:mod:`dtlab.splits.presort`) when a child can split.

Like the scans and the node statistics (:mod:`._stats`, shared with the CUDA host
grower), the grower is written once and compiled per variant of :mod:`._weights`
(``GROW["unweighted"]``, ``GROW["weighted"]``): a fit with sample weights runs
the weighted scans, one without the unweighted ones, nothing more.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT, compile_functions
from ..splits import gather_feature, partition_lists, partition_samples
from ._draws import _select_feature
from ._missing_cpu import present_first_order, rotate_missing_left
from ._node_rules import (
    FEATURE_THRESHOLD,
    MSE,
    VECTORIZED,
    child_can_split,
    is_leaf,
    keeps_split,
    min_split,
)
from ._scans_cpu import SCANS
from ._stats import STATS
from ._weights import VARIANTS

# grow calls the names of ._weights (weight_of, keep), the scans and node_stats, bound per variant.
# ruff: noqa: F821


@numba.njit(**NJIT)
def _grow_1d(a, size):
    """A copy of 1-D ``a`` in a larger array of length ``size`` (the tail uninitialised)."""
    b = np.empty(size, dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(**NJIT)
def _grow_2d(a, size):
    """A copy of 2-D ``a`` in a larger array of ``size`` rows (the tail uninitialised)."""
    b = np.empty((size, a.shape[1]), dtype=a.dtype)
    b[: a.shape[0]] = a
    return b


@numba.njit(inline="always", **NJIT)
def _push_node(st_int, st_imp, slot, start, end, depth, parent, is_left, n_known, impurity):
    """Write a pending node into stack slot ``slot``: its rows ``start:end``, depth, parent,
    side, known-constant feature count and impurity (read back in this order by the grower)."""
    st_int[slot, 0] = start
    st_int[slot, 1] = end
    st_int[slot, 2] = depth
    st_int[slot, 3] = parent
    st_int[slot, 4] = is_left
    st_int[slot, 5] = n_known
    st_imp[slot] = impurity


def grow(method, criterion, n_features, n_outputs, XT, y, w, rows, vals, ylist, max_depth,
         min_samples_split, min_samples_leaf, seed, parallel_min_work):
    """Grow a tree depth first, node by node as scikit-learn does.

    Parameters
    ----------
    method : int, NAIVE / INCREMENTAL / VECTORIZED
    criterion : int, MSE / GINI / ENTROPY / GAIN_RATIO
    n_features : int
    n_outputs : int, 1 (regression) or n_classes
    XT : float32 array (n_features, n_samples), the features one per row
        (naive / incremental; unused by VECTORIZED)
    y : float64 (regression) or int32 class codes (classification), (n_samples,)
    w : float64 (n_samples,), positive sample weights (the weighted variant), or None (unweighted)
    rows : int32 (n_features, n_samples); vals : float32; ylist : like y
        Presorted attribute lists, partitioned in place (VECTORIZED; empty otherwise).
    max_depth, min_samples_split, min_samples_leaf : int
    seed : int, initial state of scikit-learn's xorshift generator
    parallel_min_work : int, see :data:`._node_rules.PARALLEL_MIN_WORK`

    Returns
    -------
    feature, left, right : int32 (n_nodes,)
    threshold : float64 (n_nodes,)
    value : float64 (n_nodes, n_outputs), mean (regression) or class counts
    impurity : float64 (n_nodes,)
    n_node_samples : int64 (n_nodes,)
    missing_left : uint8 (n_nodes,)
    weighted_n_node_samples : float64 (n_nodes,)
    """
    n = y.shape[0]
    F = n_features
    thr = FEATURE_THRESHOLD
    msl = min_samples_leaf
    mss = min_split(min_samples_split, msl)
    state = np.empty(1, dtype=np.int64)
    state[0] = seed
    features = np.arange(F).astype(np.int64)
    constant_features = np.empty(F, dtype=np.int64)
    visit = np.empty(F, dtype=np.int64)
    active = np.empty(F, dtype=np.int64)
    f_const = np.zeros(F, dtype=np.uint8)
    f_score = np.empty(F, dtype=np.float64)
    f_pos = np.empty(F, dtype=np.int64)
    f_thr = np.empty(F, dtype=np.float64)
    f_gain = np.zeros(F, dtype=np.float64)
    f_ratio = np.zeros(F, dtype=np.float64)
    f_miss_left = np.zeros(F, dtype=np.uint8)
    f_n_miss = np.zeros(F, dtype=np.int64)
    is_reg = criterion == MSE
    presorted = method == VECTORIZED
    # scratch rows: one per feature for parallel scans, row 0 otherwise (rows, and arrays, that are never
    # written -- the weights' and hessians' without weights -- are never touched, so they cost no memory)
    m_buf = n + 1
    n_slots = F if presorted else 1
    gbuf = np.empty((F if presorted and is_reg else 1, m_buf if presorted and is_reg else 1), dtype=np.float64)
    hbuf = np.empty_like(gbuf)
    wbuf = np.empty((n_slots, m_buf), dtype=np.float64)
    cnt = np.zeros((F if presorted and not is_reg else 1, 3, n_outputs), dtype=np.float64)
    xbuf = np.empty((1, m_buf if not presorted else 1), dtype=np.float32)
    ybuf = np.empty((1, m_buf if not presorted else 1), dtype=y.dtype)
    goes_left = np.zeros(n, dtype=np.uint8)
    tmp_rows = np.empty((n_slots, m_buf), dtype=rows.dtype)
    tmp_vals = np.empty((n_slots, m_buf), dtype=vals.dtype)
    tmp_y = np.empty((n_slots, m_buf), dtype=ylist.dtype)
    samples = np.arange(n).astype(np.int64) if not presorted else np.empty(1, dtype=np.int64)
    samp_tmp = np.empty(n if not presorted else 1, dtype=np.int64)
    child_counts = np.empty(n_outputs, dtype=np.float64)

    # output arrays, grown by doubling
    cap = 1023
    o_feature = np.empty(cap, dtype=np.int32)
    o_threshold = np.empty(cap, dtype=np.float64)
    o_left = np.empty(cap, dtype=np.int32)
    o_right = np.empty(cap, dtype=np.int32)
    o_value = np.empty((cap, n_outputs), dtype=np.float64)
    o_impurity = np.empty(cap, dtype=np.float64)
    o_n = np.empty(cap, dtype=np.int64)
    o_missing = np.empty(cap, dtype=np.uint8)
    o_wn = np.empty(cap, dtype=np.float64)

    # stack of pending nodes: start, end, depth, parent, is_left, n_constant_features
    s_cap = 64
    st_int = np.empty((s_cap, 6), dtype=np.int64)
    st_imp = np.empty(s_cap, dtype=np.float64)
    st_val = np.empty((s_cap, n_outputs), dtype=np.float64)
    st_w = np.empty(s_cap, dtype=np.float64)  # the node's weight (its row count without weights)

    # root statistics, rows in row order (as scikit-learn's first node_impurity)
    imp, w_total = node_stats(criterion, y, w, 0, n, st_val[0], child_counts)
    st_w[0] = w_total
    _push_node(st_int, st_imp, 0, 0, n, 0, -1, 0, 0, imp)
    sp = 1
    n_nodes = 0
    while sp > 0:
        sp -= 1
        start = st_int[sp, 0]
        end = st_int[sp, 1]
        depth = st_int[sp, 2]
        parent = st_int[sp, 3]
        is_left = st_int[sp, 4]
        n_known = st_int[sp, 5]
        imp = st_imp[sp]
        w_node = st_w[sp]
        m = end - start
        if n_nodes == cap:
            cap = 2 * cap + 1
            o_feature = _grow_1d(o_feature, cap)
            o_threshold = _grow_1d(o_threshold, cap)
            o_left = _grow_1d(o_left, cap)
            o_right = _grow_1d(o_right, cap)
            o_value = _grow_2d(o_value, cap)
            o_impurity = _grow_1d(o_impurity, cap)
            o_n = _grow_1d(o_n, cap)
            o_missing = _grow_1d(o_missing, cap)
            o_wn = _grow_1d(o_wn, cap)
        node = n_nodes
        n_nodes += 1
        if parent >= 0:
            if is_left:
                o_left[parent] = node
            else:
                o_right[parent] = node
        o_value[node] = st_val[sp]
        o_impurity[node] = imp
        o_n[node] = m
        o_wn[node] = w_node
        o_feature[node] = -1
        o_threshold[node] = 0.0
        o_left[node] = -1
        o_right[node] = -1
        o_missing[node] = 1

        if is_leaf(depth, m, imp, max_depth, mss, msl):
            continue

        # ---- per-feature best splits, for every feature not known to be constant
        n_active = F - n_known
        for k in range(n_active):
            active[k] = features[n_known + k]
        if presorted and m * n_active >= parallel_min_work and n_active > 1:
            scan_features_parallel(active, n_active, method, criterion, XT, y, w, samples, rows, vals, ylist, start,
                                   end, msl, thr, xbuf, ybuf, wbuf, gbuf, hbuf, cnt, f_const, f_score, f_pos, f_thr,
                                   f_gain, f_ratio, f_miss_left, f_n_miss)
        else:
            for k in range(n_active):
                scan_feature(active[k], 0, method, criterion, XT, y, w, samples, rows, vals, ylist, start, end, msl,
                             thr, xbuf, ybuf, wbuf, gbuf, hbuf, cnt, f_const, f_score, f_pos, f_thr, f_gain, f_ratio,
                             f_miss_left, f_n_miss)

        best_f, n_total = _select_feature(features, constant_features, n_known, state, f_const, f_score,
                                          f_pos, f_gain, f_ratio, criterion, visit)
        if best_f < 0:
            continue
        nl = f_pos[best_f]
        nr = m - nl
        mid = start + nl
        n_miss = f_n_miss[best_f]  # rows of the node missing the chosen feature
        missing_left = n_miss > 0 and f_miss_left[best_f] == 1

        # ---- children statistics, from the chosen feature in (value, row) order, the missing rows last; when
        # they go left, moved after the left present rows so that the left child is a prefix again
        ws_sorted = wbuf[0]  # the weights at the positions of ys_sorted (weighted only)
        if presorted:
            if missing_left:
                p, q = start + nl - n_miss, end - n_miss
                rotate_missing_left(rows, best_f, p, q, end, tmp_rows[0])
                rotate_missing_left(vals, best_f, p, q, end, tmp_vals[0])
                rotate_missing_left(ylist, best_f, p, q, end, tmp_y[0])
            ys_sorted = ylist[best_f]
            c0 = start
            for i in range(start, end):
                keep(ws_sorted, i, weight_of(w, rows[best_f, i]))
        else:
            order, _ = present_first_order(gather_feature(XT, best_f, samples, start, end))
            if missing_left:
                rotate_missing_left(order.reshape((1, m)), 0, nl - n_miss, m - n_miss, m, samp_tmp)
            ys_sorted = ybuf[0]
            c0 = 0
            for i in range(m):
                r = samples[start + order[i]]
                ys_sorted[i] = y[r]
                keep(ws_sorted, i, weight_of(w, r))
        if sp + 2 > s_cap:
            s_cap = 2 * s_cap
            st_int = _grow_2d(st_int, s_cap)
            st_imp = _grow_1d(st_imp, s_cap)
            st_val = _grow_2d(st_val, s_cap)
            st_w = _grow_1d(st_w, s_cap)
        # right child goes below the left on the stack: the left is grown first
        r_slot = sp
        l_slot = sp + 1
        imp_l, w_l = node_stats(criterion, ys_sorted, ws_sorted, c0, c0 + nl, st_val[l_slot], child_counts)
        imp_r, w_r = node_stats(criterion, ys_sorted, ws_sorted, c0 + nl, c0 + m, st_val[r_slot], child_counts)
        if not keeps_split(w_total, w_node, w_l, imp, imp_l, imp_r):
            continue

        o_feature[node] = best_f
        o_threshold[node] = f_thr[best_f]
        # NaN at predict time: where the training rows missing the feature went, else to the larger child
        o_missing[node] = (1 if missing_left else 0) if n_miss > 0 else (1 if nl > nr else 0)

        # ---- partition the node's rows: left rows first in every list, unless
        # neither child can split (the lists below a leaf are never read again)
        child_splits = child_can_split(depth, nl, nr, imp_l, imp_r, max_depth, mss, msl)
        if presorted and child_splits:
            # the chosen feature's list is split already; constant features are never scanned again
            n_part = 0
            for k in range(n_total, F):
                if features[k] != best_f:
                    active[n_part] = features[k]
                    n_part += 1
            partition_lists(rows, vals, ylist, best_f, active, n_part, start, mid, end, goes_left,
                             tmp_rows, tmp_vals, tmp_y, parallel_min_work)
        elif not presorted and child_splits:
            partition_samples(XT, best_f, f_thr[best_f], missing_left, samples, start, end, samp_tmp)

        _push_node(st_int, st_imp, r_slot, mid, end, depth + 1, node, 0, n_total, imp_r)
        _push_node(st_int, st_imp, l_slot, start, mid, depth + 1, node, 1, n_total, imp_l)
        st_w[r_slot] = w_r
        st_w[l_slot] = w_l
        sp += 2

    return (o_feature[:n_nodes].copy(), o_threshold[:n_nodes].copy(), o_left[:n_nodes].copy(),
            o_right[:n_nodes].copy(), o_value[:n_nodes].copy(), o_impurity[:n_nodes].copy(),
            o_n[:n_nodes].copy(), o_missing[:n_nodes].copy(), o_wn[:n_nodes].copy())


def _compile(variant: str) -> dict:
    return compile_functions([grow], numba.njit(**NJIT), {**SCANS[variant], **STATS[variant]}, variant)


#: variant ("unweighted", "weighted") -> the compiled grower; :func:`grow`'s ``w`` is None without weights.
GROW = {variant: _compile(variant)["grow"] for variant in VARIANTS}


def _grow(method, criterion, n_features, n_outputs, XT, y, w, *rest):
    """:func:`grow` compiled for the fit: the weighted variant when ``w`` is given, else the unweighted one."""
    return GROW["unweighted" if w is None else "weighted"](method, criterion, n_features, n_outputs, XT, y, w, *rest)
