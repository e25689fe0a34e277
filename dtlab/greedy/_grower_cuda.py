"""The CUDA grower of the greedy inducers: the host loop over nodes around the kernels of :mod:`._scans_cuda`.

Imported lazily, only for ``backend="cuda"``; the algorithm, its copies and
launches per node, and what is bit for bit the CPU's are described in
:mod:`._scans_cuda`.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..gpu.launch import launch
from ..splits import attribute_lists
from ._draws import _select_feature
from ._node_rules import (
    ENTROPY,
    FEATURE_THRESHOLD,
    GAIN_RATIO,
    GINI,
    MSE,
    child_can_split,
    is_leaf,
    keeps_split,
    min_split,
)
from ._partition_cuda import partition_kernels
from ._scans_cuda import CONST, POS, SCORE, THR, THREADS_PER_BLOCK, _kernels
from ._stats import STATS

#: The simulator runs a thread per Python thread, so it gets fewer threads per block than a GPU.
SIMULATOR_THREADS_PER_BLOCK = 16


_SCAN_OF = {MSE: "mse", GINI: "gini", ENTROPY: "entropy"}


def grow_cuda(XT: np.ndarray, y: np.ndarray, criterion: int, n_outputs: int, max_depth: int,
              min_samples_split: int, min_samples_leaf: int, seed: int, backend, w: np.ndarray | None = None) -> tuple:
    """Grow a tree with the split search on the GPU; same outputs as :func:`._grower_cpu._grow`.

    Parameters
    ----------
    XT : float32 (n_features, n_samples)
    y : float64 targets or int32 class codes (n_samples,)
    criterion : int, MSE / GINI / ENTROPY (``GAIN_RATIO`` runs on the CPU only)
    n_outputs, max_depth, min_samples_split, min_samples_leaf, seed : as for the CPU grower
    backend : Backend (cuda)
    w : float64 (n_samples,), positive sample weights, or None (every weight 1)
        Weighted fits run the scans' weighted variant (:mod:`._scans_cuda`); the node statistics are the CPU's
        (:func:`._stats.node_stats` of the same variant) over the same rows in the same order.
    """

    if criterion == GAIN_RATIO:
        raise ValueError("criterion='gain_ratio' runs on the CPU only; use backend='cpu'")
    tpb = SIMULATOR_THREADS_PER_BLOCK if backend.simulated else THREADS_PER_BLOCK
    weighted = w is not None
    k = {**_kernels(tpb), **partition_kernels(tpb)}
    scan = k[_SCAN_OF[criterion] + ("_weighted" if weighted else "")]
    mark, partition = k["mark"], k["partition"]
    node_stats = STATS["weighted" if weighted else "unweighted"]["node_stats"]
    F, n = XT.shape
    rows, vals, ylist = attribute_lists(XT, y)
    backend.check_fits(2 * (rows.nbytes + vals.nbytes + ylist.nbytes) + n + (w.nbytes if weighted else 0),
                       "the presorted lists")
    d_rows, d_vals, d_y = cuda.to_device(rows), cuda.to_device(vals), cuda.to_device(ylist)
    d_w = cuda.to_device(w) if weighted else None
    d_tmp_rows = cuda.device_array_like(rows)
    d_tmp_vals = cuda.device_array_like(vals)
    d_tmp_y = cuda.device_array_like(ylist)
    d_goes_left = cuda.device_array(n, dtype=np.uint8)
    d_out = cuda.device_array((4, F), dtype=np.float64)
    d_carry = cuda.device_array((F, max(n_outputs, 1)), dtype=np.float64)
    f_const = np.zeros(F, dtype=np.uint8)
    f_score = np.full(F, -np.inf)
    f_pos = np.full(F, -1, dtype=np.int64)
    f_thr = np.zeros(F)
    f_zero = np.zeros(F)
    features = np.arange(F, dtype=np.int64)
    constant_features = np.empty(F, dtype=np.int64)
    visit = np.empty(F, dtype=np.int64)
    state = np.array([seed], dtype=np.int64)
    thr = FEATURE_THRESHOLD
    is_reg = criterion == MSE
    mss = min_split(min_samples_split, min_samples_leaf)
    counts = np.empty(n_outputs)

    out_feature, out_threshold, out_left, out_right = [], [], [], []
    out_value, out_impurity, out_n, out_missing = [], [], [], []

    def stats(ys, ws):
        """Value, impurity and weight of a node's targets (and weights, in their order; None without), as the
        CPU computes them."""
        value = np.empty(n_outputs)
        imp, wt = node_stats(criterion, ys, ws, 0, len(ys), value, counts)
        return value, imp, wt

    value, imp, w_total = stats(y, w)  # the root in row order, as the CPU's
    stack = [(0, n, 0, -1, 0, 0, imp, value, w_total)]
    out_wn = []
    while stack:
        start, end, depth, parent, is_left, n_known, imp, value, w_node = stack.pop()
        node = len(out_feature)
        if parent >= 0:
            (out_left if is_left else out_right)[parent] = node
        m = end - start
        out_feature.append(-1)
        out_threshold.append(0.0)
        out_left.append(-1)
        out_right.append(-1)
        out_value.append(value)
        out_impurity.append(imp)
        out_n.append(m)
        out_missing.append(1)
        out_wn.append(w_node)
        if is_leaf(depth, m, imp, max_depth, mss, min_samples_leaf):
            continue
        active = features[n_known:].copy()
        if weighted and is_reg:
            launch(scan, len(active), tpb, cuda.to_device(active), d_rows, d_vals, d_y, d_w, start, end,
                   min_samples_leaf, thr, d_out)
        elif weighted:
            launch(scan, len(active), tpb, cuda.to_device(active), d_rows, d_vals, d_y, d_w, start, end,
                   min_samples_leaf, thr, n_outputs, cuda.to_device(value.astype(np.float64)), float(w_node),
                   d_carry, d_out)
        elif is_reg:
            launch(scan, len(active), tpb, cuda.to_device(active), d_vals, d_y, start, end, min_samples_leaf, thr,
                   d_out)
        else:
            launch(scan, len(active), tpb, cuda.to_device(active), d_vals, d_y, start, end, min_samples_leaf, thr,
                   n_outputs, cuda.to_device(value.astype(np.float64)), d_carry, d_out)
        h_out = d_out.copy_to_host()  # one copy: constant flags, scores, positions, thresholds
        f_const[active] = h_out[CONST, active]
        f_score[active] = h_out[SCORE, active]
        f_pos[active] = np.where(f_const[active] == 1, -1, h_out[POS, active]).astype(np.int64)
        f_thr[active] = h_out[THR, active]
        best_f, n_total = _select_feature(features, constant_features, n_known, state, f_const, f_score, f_pos,
                                          f_zero, f_zero, criterion, visit)
        if best_f < 0:
            continue
        nl = int(f_pos[best_f])
        nr = m - nl
        mid = start + nl
        if weighted:  # the row ids (one copy): targets and weights in the chosen feature's order
            seg_rows = d_rows[best_f, start:end].copy_to_host()
            segment, seg_w = y[seg_rows], w[seg_rows]
        else:
            segment, seg_w = d_y[best_f, start:end].copy_to_host(), None
        value_l, imp_l, w_l = stats(segment[:nl], None if seg_w is None else seg_w[:nl])
        value_r, imp_r, w_r = stats(segment[nl:], None if seg_w is None else seg_w[nl:])
        if not keeps_split(w_total, w_node, w_l, imp, imp_l, imp_r):
            continue
        out_feature[node] = int(best_f)
        out_threshold[node] = float(f_thr[best_f])
        out_missing[node] = 1 if nl > nr else 0
        # as on the CPU: the lists below a leaf are never read again
        part = np.array([f for f in features[n_total:] if f != best_f], dtype=np.int64)
        if len(part) and child_can_split(depth, nl, nr, imp_l, imp_r, max_depth, mss, min_samples_leaf):
            launch(mark, (m + tpb - 1) // tpb, tpb, d_rows, int(best_f), start, end, mid, d_goes_left)
            launch(partition, len(part), tpb, cuda.to_device(part), d_rows, d_vals, d_y, start, end, nl,
                   d_goes_left, d_tmp_rows, d_tmp_vals, d_tmp_y)
        stack.append((mid, end, depth + 1, node, 0, n_total, imp_r, value_r, w_r))
        stack.append((start, mid, depth + 1, node, 1, n_total, imp_l, value_l, w_l))
    return (np.asarray(out_feature, dtype=np.int32), np.asarray(out_threshold, dtype=np.float64),
            np.asarray(out_left, dtype=np.int32), np.asarray(out_right, dtype=np.int32),
            np.asarray(out_value, dtype=np.float64).reshape(len(out_feature), n_outputs),
            np.asarray(out_impurity, dtype=np.float64), np.asarray(out_n, dtype=np.int64),
            np.asarray(out_missing, dtype=np.uint8), np.asarray(out_wn, dtype=np.float64))
