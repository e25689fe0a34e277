"""CUDA split search of the vectorised greedy inducer (numba.cuda kernels).

Imported lazily, only for ``backend="cuda"``, so the package imports without
numba.cuda; runs under numba's CUDA simulator too.  Device arrays are numba
device arrays (cupy is not needed).

The tree is grown depth first by the host, node by node in scikit-learn's
order (the feature draws that break ties need that order); per node:

1. ``scan`` -- one block per feature scans the node's segment of that
   feature's presorted list (:mod:`dtlab.splits.presort`): a block-wide prefix sum (of y
   for regression, of each class's indicator for classification) chunk by
   chunk, every thread scoring its candidate position, then a block-wide
   arg-max (first position on ties, as on the CPU);
2. the host draws the features (:mod:`._draws`), computes the children's
   statistics from the chosen feature's segment (:mod:`._cpu`'s node
   statistics) and applies the CPU grower's rules (:mod:`._rules`);
3. unless neither child can split, ``mark`` flags the rows going left and
   ``partition`` -- one block per feature -- moves them first in every list,
   stably (block-wide scans of the flags give each row its destination).

The block-wide scan and arg-max are :mod:`dtlab._cuda_blocks`'s.  With exact
sums (integer targets, class counts) the scores equal the CPU's to the last
bit, so both backends grow the same tree.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from .._cuda_blocks import block_argmax, block_inclusive_scan
from ..splits import attribute_lists
from ._cpu import _class_stats, _reg_stats
from ._draws import _select_feature
from ._rules import (
    FEATURE_THRESHOLD,
    GAIN_RATIO,
    GINI,
    LN2,
    MSE,
    child_can_split,
    is_leaf,
    keeps_split,
    min_split,
    split_threshold,
)

#: Threads per block on a GPU; the simulator runs a thread per Python thread, so it gets fewer.
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS_PER_BLOCK = 16

# the CPU's threshold rule, compiled for the device from the same source
_split_threshold = cuda.jit(device=True)(split_threshold.py_func)


@cuda.jit(device=True)
def _constant_feature(vals, f, s, e, thr, tid, out_const):
    """Whether feature ``f`` has one value (within ``thr``) on the node ``[s, e)``; thread 0 records it."""
    constant = vals[f, e - 1] <= vals[f, s] + thr
    if tid == 0:
        out_const[f] = 1 if constant else 0
    return constant


@cuda.jit(device=True)
def _is_candidate(vals, f, s, m, nl, msl, thr):
    """Whether ``nl`` rows on the left is a valid split of the node: ``msl`` rows a side, and distinct values."""
    return nl >= msl and m - nl >= msl and nl < m and vals[f, s + nl] > vals[f, s + nl - 1] + thr


@cuda.jit(device=True)
def _scan_chunk(ylist, f, s, m, c0, buf, tid, tpb):
    """Inclusive block scan of the node's targets ``c0 .. c0 + tpb - 1`` (0 past its ``m`` rows) into ``buf``."""
    i = c0 + tid
    buf[tid] = ylist[f, s + i] if i < m else 0.0
    block_inclusive_scan(buf, tid, tpb)


@cuda.jit(device=True)
def _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out_score, out_pos, out_thr):
    """Block-wide arg-max of the threads' best candidates; thread 0 writes feature ``f``'s result."""
    best_p, best_nl = block_argmax(best_p, best_nl, red_p, red_n, tid, tpb)
    if tid == 0:
        out_score[f] = best_p
        out_pos[f] = best_nl
        if best_nl > 0:
            out_thr[f] = _split_threshold(vals[f, s + best_nl - 1], vals[f, s + best_nl])


@functools.lru_cache(maxsize=4)
def _kernels(tpb: int):
    """Compile the kernels for ``tpb`` threads per block.

    A shared array's size is a compile-time constant, so each kernel declares
    its own (``tpb`` entries) and passes them to the device functions.
    """
    @cuda.jit
    def scan_mse(active, vals, ylist, s, e, msl, thr, out_const, out_score, out_pos, out_thr):
        f = active[cuda.blockIdx.x]
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.float64)
        red_p = cuda.shared.array(tpb, np.float64)
        red_n = cuda.shared.array(tpb, np.int64)
        m = e - s
        if _constant_feature(vals, f, s, e, thr, tid, out_const):
            return
        # total of the segment: a chunked block scan, the same sums as below
        total = 0.0
        for c0 in range(0, m, tpb):
            _scan_chunk(ylist, f, s, m, c0, buf, tid, tpb)
            total += buf[tpb - 1]
            cuda.syncthreads()
        best_p = -math.inf
        best_nl = -1
        carry = 0.0
        for c0 in range(0, m, tpb):
            _scan_chunk(ylist, f, s, m, c0, buf, tid, tpb)
            nl = c0 + tid + 1  # rows 0..c0 + tid on the left
            if _is_candidate(vals, f, s, m, nl, msl, thr):
                sl = carry + buf[tid]
                sr = total - sl
                p = sl * sl / nl + sr * sr / (m - nl)
                if p > best_p:
                    best_p = p
                    best_nl = nl
            carry += buf[tpb - 1]
            cuda.syncthreads()
        _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out_score, out_pos, out_thr)

    @cuda.jit
    def scan_classes(active, vals, ylist, s, e, msl, thr, criterion, n_classes, totals, carry_cnt,
                     out_const, out_score, out_pos, out_thr):
        f = active[cuda.blockIdx.x]
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.float64)
        red_p = cuda.shared.array(tpb, np.float64)
        red_n = cuda.shared.array(tpb, np.int64)
        m = e - s
        if _constant_feature(vals, f, s, e, thr, tid, out_const):
            return
        if tid == 0:
            for c in range(n_classes):
                carry_cnt[f, c] = 0.0
        cuda.syncthreads()
        best_p = -math.inf
        best_nl = -1
        for c0 in range(0, m, tpb):
            i = c0 + tid
            code = ylist[f, s + i] if i < m else -1
            nl = i + 1
            fl = float(nl)
            fr = float(m - nl)
            sq_l = 0.0
            sq_r = 0.0
            h_l = 0.0
            h_r = 0.0
            for c in range(n_classes):
                buf[tid] = 1.0 if code == c else 0.0
                block_inclusive_scan(buf, tid, tpb)
                cl = carry_cnt[f, c] + buf[tid]
                cr = totals[c] - cl
                sq_l += cl * cl
                sq_r += cr * cr
                if criterion != GINI and nl < m:
                    if cl > 0.0:
                        h_l -= (cl / fl) * (math.log(cl / fl) / LN2)
                    if cr > 0.0:
                        h_r -= (cr / fr) * (math.log(cr / fr) / LN2)
                cuda.syncthreads()
                if tid == tpb - 1:
                    carry_cnt[f, c] += buf[tpb - 1]
                cuda.syncthreads()
            if _is_candidate(vals, f, s, m, nl, msl, thr):
                if criterion == GINI:
                    p = -fr * (1.0 - sq_r / (fr * fr)) - fl * (1.0 - sq_l / (fl * fl))
                else:
                    p = -fr * h_r - fl * h_l
                if p > best_p:
                    best_p = p
                    best_nl = nl
        _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out_score, out_pos, out_thr)

    @cuda.jit
    def mark(rows, f, s, e, mid, goes_left):
        i = s + cuda.grid(1)
        if i < e:
            goes_left[rows[f, i]] = 1 if i < mid else 0

    @cuda.jit
    def partition(active, rows, vals, ylist, s, e, n_left, goes_left, tmp_rows, tmp_vals, tmp_y):
        g = active[cuda.blockIdx.x]
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.int64)
        m = e - s
        carry = 0  # left rows placed so far
        for c0 in range(0, m, tpb):
            i = c0 + tid
            flag = 0
            if i < m:
                flag = goes_left[rows[g, s + i]]
            buf[tid] = flag
            block_inclusive_scan(buf, tid, tpb)
            if i < m:
                left_rank = carry + buf[tid] - flag  # exclusive: left rows before this one
                dest = left_rank if flag else n_left + (i - left_rank)
                tmp_rows[g, s + dest] = rows[g, s + i]
                tmp_vals[g, s + dest] = vals[g, s + i]
                tmp_y[g, s + dest] = ylist[g, s + i]
            carry += buf[tpb - 1]
            cuda.syncthreads()
        cuda.syncthreads()
        for c0 in range(0, m, tpb):
            i = c0 + tid
            if i < m:
                rows[g, s + i] = tmp_rows[g, s + i]
                vals[g, s + i] = tmp_vals[g, s + i]
                ylist[g, s + i] = tmp_y[g, s + i]

    return scan_mse, scan_classes, mark, partition


def grow_cuda(XT: np.ndarray, y: np.ndarray, criterion: int, n_outputs: int, max_depth: int,
              min_samples_split: int, min_samples_leaf: int, seed: int, backend) -> tuple:
    """Grow a tree with the split search on the GPU; same outputs as :func:`._cpu._grow`.

    Parameters
    ----------
    XT : float32 (n_features, n_samples)
    y : float64 targets or int32 class codes (n_samples,)
    criterion : int, MSE / GINI / ENTROPY (``GAIN_RATIO`` runs on the CPU only)
    n_outputs, max_depth, min_samples_split, min_samples_leaf, seed : as for the CPU grower
    backend : Backend (cuda)
    """

    if criterion == GAIN_RATIO:
        raise ValueError("criterion='gain_ratio' runs on the CPU only; use backend='cpu'")
    tpb = SIMULATOR_THREADS_PER_BLOCK if backend.simulated else THREADS_PER_BLOCK
    scan_mse, scan_classes, mark, partition = _kernels(tpb)
    F, n = XT.shape
    rows, vals, ylist = attribute_lists(XT, y)
    backend.check_fits(2 * (rows.nbytes + vals.nbytes + ylist.nbytes) + n, "the presorted lists")
    d_rows, d_vals, d_y = cuda.to_device(rows), cuda.to_device(vals), cuda.to_device(ylist)
    d_tmp_rows = cuda.device_array_like(rows)
    d_tmp_vals = cuda.device_array_like(vals)
    d_tmp_y = cuda.device_array_like(ylist)
    d_goes_left = cuda.device_array(n, dtype=np.uint8)
    d_const = cuda.device_array(F, dtype=np.uint8)
    d_score = cuda.device_array(F, dtype=np.float64)
    d_pos = cuda.device_array(F, dtype=np.int64)
    d_thr = cuda.device_array(F, dtype=np.float64)
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

    def stats(ys):
        if is_reg:
            b, imp = _reg_stats(ys, 0, len(ys))
            return np.array([b / len(ys)]), imp
        imp = _class_stats(ys, 0, len(ys), criterion, counts)
        return counts.copy(), imp

    value, imp = stats(y)
    stack = [(0, n, 0, -1, 0, 0, imp, value)]
    while stack:
        start, end, depth, parent, is_left, n_known, imp, value = stack.pop()
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
        if is_leaf(depth, m, imp, max_depth, mss, min_samples_leaf):
            continue
        active = features[n_known:].copy()
        d_active = cuda.to_device(active)
        if is_reg:
            scan_mse[len(active), tpb](d_active, d_vals, d_y, start, end, min_samples_leaf, thr,
                                       d_const, d_score, d_pos, d_thr)
        else:
            totals = cuda.to_device(value.astype(np.float64))
            scan_classes[len(active), tpb](d_active, d_vals, d_y, start, end, min_samples_leaf, thr, criterion,
                                           n_outputs, totals, d_carry, d_const, d_score, d_pos, d_thr)
        h_const, h_score, h_pos, h_thr = (d_const.copy_to_host(), d_score.copy_to_host(),
                                          d_pos.copy_to_host(), d_thr.copy_to_host())
        f_const[active] = h_const[active]
        f_score[active] = h_score[active]
        f_pos[active] = np.where(h_const[active] == 1, -1, h_pos[active])
        f_thr[active] = h_thr[active]
        best_f, n_total = _select_feature(features, constant_features, n_known, state, f_const, f_score, f_pos,
                                          f_zero, f_zero, criterion, visit)
        if best_f < 0:
            continue
        nl = int(f_pos[best_f])
        nr = m - nl
        mid = start + nl
        segment = d_y[best_f, start:end].copy_to_host()
        value_l, imp_l = stats(segment[:nl])
        value_r, imp_r = stats(segment[nl:])
        if not keeps_split(n, m, nl, imp, imp_l, imp_r):
            continue
        out_feature[node] = int(best_f)
        out_threshold[node] = float(f_thr[best_f])
        out_missing[node] = 1 if nl > nr else 0
        # as on the CPU: the lists below a leaf are never read again
        part = np.array([f for f in features[n_total:] if f != best_f], dtype=np.int64)
        if len(part) and child_can_split(depth, nl, nr, imp_l, imp_r, max_depth, mss, min_samples_leaf):
            mark[(m + tpb - 1) // tpb, tpb](d_rows, int(best_f), start, end, mid, d_goes_left)
            partition[len(part), tpb](cuda.to_device(part), d_rows, d_vals, d_y, start, end, nl, d_goes_left,
                                      d_tmp_rows, d_tmp_vals, d_tmp_y)
        stack.append((mid, end, depth + 1, node, 0, n_total, imp_r, value_r))
        stack.append((start, mid, depth + 1, node, 1, n_total, imp_l, value_l))
    return (np.asarray(out_feature, dtype=np.int32), np.asarray(out_threshold, dtype=np.float64),
            np.asarray(out_left, dtype=np.int32), np.asarray(out_right, dtype=np.int32),
            np.asarray(out_value, dtype=np.float64).reshape(len(out_feature), n_outputs),
            np.asarray(out_impurity, dtype=np.float64), np.asarray(out_n, dtype=np.int64),
            np.asarray(out_missing, dtype=np.uint8))
