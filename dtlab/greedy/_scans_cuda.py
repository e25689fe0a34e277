"""CUDA split search of the vectorised greedy inducer: the kernels (numba.cuda); the host loop is :mod:`._grower_cuda`.

Imported lazily, only for ``backend="cuda"``, so the package imports without
numba.cuda; runs under numba's CUDA simulator too.  Device arrays are numba
device arrays (cupy is not needed).

The tree is grown depth first by the host, node by node in scikit-learn's
order (the feature draws that break ties need that order); per node:

1. ``scan`` -- one block per feature scans the node's segment of that
   feature's presorted list (:mod:`dtlab.splits.presort`): a block-wide prefix sum (of y
   for regression, of each class's indicator for classification) chunk by
   chunk, every thread scoring its candidate position, then a block-wide
   arg-max (first position on ties, as on the CPU); the block writes its
   feature's (constant?, score, position, threshold) into one result row;
2. the host copies the results (one copy) and the chosen feature's segment of
   targets (one copy), draws the features (:mod:`._draws`), computes the
   children's statistics (:mod:`._grower_cpu`'s node statistics, in the CPU's
   order of additions) and applies the CPU grower's rules (:mod:`._node_rules`);
3. unless neither child can split, ``mark`` flags the rows going left and
   ``partition`` -- one block per feature -- moves them first in every list,
   stably (block-wide scans of the flags give each row its destination).

Two blocking copies, one small upload (the node's features, with the class
totals) and three launches per node: the earlier grower made about seven
blocking copies (one per result array, the totals, the features to partition).
The children's statistics stay on the host on purpose: the device's block-wide
sums add in another order, so only the host's sequential sums give the CPU's
impurities bit for bit.

The block-wide scan and arg-max are :mod:`dtlab._cuda_blocks`'s.  With exact
sums (integer targets, class counts) the scores equal the CPU's to the last
bit, so both backends grow the same tree -- on a device too for ``mse`` and
``gini``: their kernels do no fused multiply-add (the products that feed a sum
are ``dmul_rn``, which the compiler never contracts; ``make gpu-compile``
checks their PTX holds no ``fma``).  ``entropy`` is the exception: libdevice's
``log`` is not the CPU's (they may differ in the last bit), so on a device an
entropy tree may differ from the CPU's where two splits tie within that bit.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from .._cuda_blocks import block_argmax, block_inclusive_scan
from .._jit import rebind
from ..backend import cuda_simulator_enabled
from ..gpu.kernels import declare_kernel, variants
from ..gpu.model import Work
from ._node_rules import (
    LN2,
)

#: Threads per block on a GPU (the simulator's grower uses fewer: :mod:`._grower_cuda`).
THREADS_PER_BLOCK = 128
#: Rows of the per-node result table: constant feature (1/0), best score, rows on the left, threshold.
CONST, SCORE, POS, THR = range(4)

if cuda_simulator_enabled():  # the simulator computes in Python, which never fuses a product into a sum
    def _mul_rn(a, b):
        return a * b
else:
    from numba.cuda import libdevice

    def _mul_rn(a, b):
        """``a * b`` rounded on its own: NVVM contracts ``x * y + z`` into an FMA, never ``dmul_rn``."""
        return libdevice.dmul_rn(a, b)

_mul = cuda.jit(device=True)(_mul_rn)


@cuda.jit(device=True)
def _split_threshold(value_left, value_right):
    """:func:`._node_rules.split_threshold` (``a / 2 + b / 2``) as the device must compute it: NVVM turns the
    halvings into ``* 0.5`` and fuses one into the sum (``make gpu-compile`` found the FMA).  ``x / 2`` and
    ``x * 0.5`` are the same number, and ``dmul_rn`` is never fused: the CPU's threshold, bit for bit."""
    return _mul(np.float64(value_left), 0.5) + _mul(np.float64(value_right), 0.5)


@cuda.jit(device=True)
def _constant_feature(vals, f, s, e, thr, tid, out):
    """Whether feature ``f`` has one value (within ``thr``) on the node ``[s, e)``; thread 0 records it."""
    constant = vals[f, e - 1] <= vals[f, s] + thr
    if tid == 0:
        out[CONST, f] = 1.0 if constant else 0.0
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
def _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out):
    """Block-wide arg-max of the threads' best candidates; thread 0 writes feature ``f``'s result column."""
    best_p, best_nl = block_argmax(best_p, best_nl, red_p, red_n, tid, tpb)
    if tid == 0:
        out[SCORE, f] = best_p
        out[POS, f] = best_nl
        if best_nl > 0:
            out[THR, f] = _split_threshold(vals[f, s + best_nl - 1], vals[f, s + best_nl])


@cuda.jit(device=True)
def _gini_terms(cl, cr, fl, fr, acc_l, acc_r):
    """Gini: the sums of squared class counts (exact integers)."""
    return acc_l + _mul(cl, cl), acc_r + _mul(cr, cr)


@cuda.jit(device=True)
def _gini_proxy(fl, fr, acc_l, acc_r):
    """scikit-learn's ``-n_R I_R - n_L I_L`` for Gini, in the CPU's order of operations, no FMA."""
    return _mul(-fr, 1.0 - acc_r / _mul(fr, fr)) - _mul(fl, 1.0 - acc_l / _mul(fl, fl))


@cuda.jit(device=True)
def _entropy_terms(cl, cr, fl, fr, acc_l, acc_r):
    """Entropy: ``-sum p log2 p`` of each side (libdevice's log: not the CPU's to the bit)."""
    if cl > 0.0:
        acc_l -= (cl / fl) * (math.log(cl / fl) / LN2)
    if cr > 0.0:
        acc_r -= (cr / fr) * (math.log(cr / fr) / LN2)
    return acc_l, acc_r


@cuda.jit(device=True)
def _entropy_proxy(fl, fr, acc_l, acc_r):
    return -fr * acc_r - fl * acc_l


def scan_classes(active, vals, ylist, s, e, msl, thr, n_classes, totals, carry_cnt, out):
    """A classification criterion's scan (a kernel body: ``class_terms`` / ``class_proxy`` are bound per
    criterion by :func:`dtlab._jit.rebind`, ``tpb`` by the factory)."""
    f = active[cuda.blockIdx.x]
    tid = cuda.threadIdx.x
    buf = cuda.shared.array(tpb, np.float64)  # noqa: F821 -- bound per block size
    red_p = cuda.shared.array(tpb, np.float64)  # noqa: F821
    red_n = cuda.shared.array(tpb, np.int64)  # noqa: F821
    m = e - s
    if _constant_feature(vals, f, s, e, thr, tid, out):
        return
    if tid == 0:
        for c in range(n_classes):
            carry_cnt[f, c] = 0.0
    cuda.syncthreads()
    best_p = -math.inf
    best_nl = -1
    for c0 in range(0, m, tpb):  # noqa: F821
        i = c0 + tid
        code = ylist[f, s + i] if i < m else -1
        nl = i + 1
        fl = float(nl)
        fr = float(m - nl)
        acc_l = 0.0
        acc_r = 0.0
        for c in range(n_classes):
            buf[tid] = 1.0 if code == c else 0.0
            block_inclusive_scan(buf, tid, tpb)  # noqa: F821
            cl = carry_cnt[f, c] + buf[tid]
            cr = totals[c] - cl
            if nl < m:
                acc_l, acc_r = class_terms(cl, cr, fl, fr, acc_l, acc_r)  # noqa: F821
            cuda.syncthreads()
            if tid == tpb - 1:  # noqa: F821
                carry_cnt[f, c] += buf[tpb - 1]  # noqa: F821
            cuda.syncthreads()
        if _is_candidate(vals, f, s, m, nl, msl, thr):
            p = class_proxy(fl, fr, acc_l, acc_r)  # noqa: F821
            if p > best_p:
                best_p = p
                best_nl = nl
    _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out)  # noqa: F821


@functools.lru_cache(maxsize=4)
def _kernels(tpb: int):
    """Compile the kernels for ``tpb`` threads per block.

    A shared array's size is a compile-time constant, so each kernel declares
    its own (``tpb`` entries) and passes them to the device functions.
    """
    @cuda.jit
    def scan_mse(active, vals, ylist, s, e, msl, thr, out):
        f = active[cuda.blockIdx.x]
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.float64)
        red_p = cuda.shared.array(tpb, np.float64)
        red_n = cuda.shared.array(tpb, np.int64)
        m = e - s
        if _constant_feature(vals, f, s, e, thr, tid, out):
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
                p = _mul(sl, sl) / nl + _mul(sr, sr) / (m - nl)
                if p > best_p:
                    best_p = p
                    best_nl = nl
            carry += buf[tpb - 1]
            cuda.syncthreads()
        _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out)

    classes = {}
    for name, terms, proxy in (("gini", _gini_terms, _gini_proxy), ("entropy", _entropy_terms, _entropy_proxy)):
        classes[name] = cuda.jit(rebind(scan_classes, {"class_terms": terms, "class_proxy": proxy, "tpb": tpb},
                                        name))

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

    return {"mse": scan_mse, "gini": classes["gini"], "entropy": classes["entropy"], "mark": mark,
            "partition": partition}


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
def _scan_work(launch) -> Work:
    """Per feature block: the segment's targets read twice (total, then the scan) and each position scored."""
    features = launch.grid[0]
    m = launch.shapes[4] - launch.shapes[3]
    classes = launch.shapes[7] if len(launch.shapes) > 9 else 1
    return Work(bytes=features * m * (8 + 8 + 4), flops64=features * m * (6 + 6 * classes),
                ops=features * m * (12 + 10 * classes))


def _partition_work(launch) -> Work:
    features = launch.grid[0]
    m = launch.shapes[5] - launch.shapes[4]
    return Work(bytes=features * m * (4 + 4 + 8) * 3 + features * m, ops=features * m * 20)


def _mark_work(launch) -> Work:
    m = launch.shapes[3] - launch.shapes[2]
    return Work(bytes=m * 5, ops=m * 4)


def _root_scan(n: int, d: int):
    """The root's scan of every feature for ``n`` rows (a block per feature)."""
    from ._node_rules import FEATURE_THRESHOLD

    return (d, THREADS_PER_BLOCK, (np.arange(d, dtype=np.int64), np.zeros((d, n), np.float32), np.zeros((d, n)), 0, n,
                                   1, FEATURE_THRESHOLD, np.zeros((4, d))))


_DEVICE = lambda name: (lambda: _kernels(THREADS_PER_BLOCK)[name])  # noqa: E731 -- the kernels a device runs
SCAN_MSE = declare_kernel(
    "greedy.scan_mse", build=_DEVICE("mse"), blocks=(THREADS_PER_BLOCK,), model=_scan_work,
    summary="a block per feature: block scans of y over the node's presorted segment, arg-max of the proxy",
    example=_root_scan,
    signatures=("void(int64[::1], float32[:, ::1], float64[:, ::1], int64, int64, int64, float32, "
                "float64[:, ::1])",))
_CLASS_SIG = ("void(int64[::1], float32[:, ::1], int32[:, ::1], int64, int64, int64, float32, int64, float64[::1], "
              "float64[:, ::1], float64[:, ::1])",)
SCAN_GINI = declare_kernel(
    "greedy.scan_gini", build=_DEVICE("gini"), blocks=(THREADS_PER_BLOCK,), model=_scan_work,
    summary="a block per feature: a block scan per class, Gini proxy (no FMA: the CPU's bits)",
    signatures=_CLASS_SIG)
SCAN_ENTROPY = declare_kernel(
    "greedy.scan_entropy", build=_DEVICE("entropy"), blocks=(THREADS_PER_BLOCK,), model=_scan_work, exact=False,
    summary="a block per feature: a block scan per class, entropy proxy (libdevice log: not the CPU's bits)",
    signatures=_CLASS_SIG)
MARK = declare_kernel(
    "greedy.mark", build=_DEVICE("mark"), blocks=(THREADS_PER_BLOCK,), model=_mark_work,
    summary="a thread per row of the node: left or right of the chosen split",
    signatures=("void(int32[:, ::1], int64, int64, int64, int64, uint8[::1])",))
PARTITION = declare_kernel(
    "greedy.partition", build=_DEVICE("partition"), blocks=(THREADS_PER_BLOCK,), model=_partition_work,
    summary="a block per feature: stable partition of the node's segment by block scans of the flags",
    signatures=variants("void(int64[::1], int32[:, ::1], float32[:, ::1], {Y}[:, ::1], int64, int64, int64, "
                        "uint8[::1], int32[:, ::1], float32[:, ::1], {Y}[:, ::1])", Y=("float64", "int32")))
