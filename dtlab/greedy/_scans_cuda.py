"""CUDA split search of the vectorised greedy inducer: the kernels (numba.cuda); the host loop is :mod:`._grower_cuda`.

Imported lazily, only for ``backend="cuda"``, so the package imports without
numba.cuda; runs under numba's CUDA simulator too.  Device arrays are numba
device arrays (cupy is not needed).

The tree is grown depth first by the host, node by node in scikit-learn's
order (the feature draws that break ties need that order); per node:

1. ``scan`` -- one block per feature scans the node's segment of that
   feature's presorted list (:mod:`dtlab.splits.presort`): block-wide prefix
   sums of ``g = w y`` and ``h = w`` (regression) or of each class's weighted
   indicator and of ``h`` (classification) chunk by chunk, every thread scoring
   its candidate position, then a block-wide arg-max (first position on ties,
   as on the CPU); the block writes its feature's (constant?, score, position,
   threshold) into one result row;
2. the host copies the results (one copy) and the chosen feature's segment of
   targets (one copy), draws the features (:mod:`._draws`), computes the
   children's statistics (:mod:`._stats`, in the CPU's order of additions) and
   applies the CPU grower's rules (:mod:`._node_rules`);
3. unless neither child can split, ``mark`` flags the rows going left and
   ``partition`` -- one block per feature -- moves them first in every list,
   stably (block-wide scans of the flags give each row its destination;
   :mod:`._partition_cuda`).

The scans are written once (:func:`scan_mse`, :func:`scan_classes`, device
functions) for weighted and unweighted fits and compiled per variant of
:mod:`._weights` (with :data:`CUDA_VARIANTS`: a row's weight read through the
feature's row ids, ``w[rows[f, i]]``, and a chunk's prefix weights) by
:func:`dtlab._jit.compile_functions`.  Without weights a row weighs 1: no
weight is read, no weight scan runs, ``H`` is the exact row count and ``g`` is
``y`` itself, so the unweighted kernels do the work (and the arithmetic) of a
scan of y alone; the presorted lists carry no weight list, so the partition
kernel and an unweighted fit's device memory do not change with weights.  Each
variant keeps its kernel entry point (the declared signatures below: the
unweighted ones take no ``rows`` nor ``w``).  The children's statistics stay on
the host on purpose: the device's block-wide sums add in another order, so only
the host's sequential sums give the CPU's impurities bit for bit.  Rows of
weight 0 never reach the device (the builder drops them, as scikit-learn's
splitter skips them), so every side's weight is positive; ``min_samples_leaf``
counts rows, as on the CPU.

The block-wide scan and arg-max are :mod:`dtlab._cuda_blocks`'s.  With exact
sums (integer targets, class counts, integer or dyadic weights) the scores equal
the CPU's to the last bit, so both backends grow the same tree -- on a device
too for ``mse`` and ``gini``: their kernels do no fused multiply-add (the
products that feed a sum are ``dmul_rn``, which the compiler never contracts;
``make gpu-compile`` checks their PTX holds no ``fma``); with other weights the
block scans add in another order than the CPU's loops, so two candidates whose
scores tie within rounding may be ranked the other way.  ``entropy`` is the
exception: libdevice's ``log`` is not the CPU's (they may differ in the last
bit), so on a device an entropy tree may differ from the CPU's where two splits
tie within that bit.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from .._cuda_blocks import block_argmax, block_inclusive_scan
from .._jit import compile_functions, cuda_device, rebind
from ..backend import cuda_simulator_enabled
from ..gpu.kernels import declare_kernel
from ..gpu.model import Work
from ._node_rules import LN2
from ._weights import VARIANTS, compile_weights

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
    """Gini: the sums of squared class counts (summed afresh per candidate, in class order)."""
    return acc_l + _mul(cl, cl), acc_r + _mul(cr, cr)


@cuda.jit(device=True)
def _gini_proxy(fl, fr, acc_l, acc_r):
    """scikit-learn's ``-W_R I_R - W_L I_L`` for Gini, in the CPU's order of operations, no FMA."""
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


# ---- the variants' device-only functions: a row's weight through the row ids, a chunk's prefix weights
def unit_weight_at(rows, w, f, j):
    """Position ``j`` of feature ``f``'s list weighs 1 (``rows`` and ``w`` are not read)."""
    return 1.0


def gathered_weight_at(rows, w, f, j):
    """The weight of the row at position ``j`` of feature ``f``'s list."""
    return w[rows[f, j]]


def counted_chunk(h_buf, wi, tid, tpb, rows_left):
    """Weight of the chunk's first ``tid + 1`` rows and of the whole chunk (``rows_left`` rows of the node from
    its start on): row counts, without a block scan."""
    return float(tid + 1), float(min(tpb, rows_left))


def scanned_chunk(h_buf, wi, tid, tpb, rows_left):
    """The same, summed by a block scan of the threads' weights ``wi`` (0 past the node) in ``h_buf``."""
    h_buf[tid] = wi
    block_inclusive_scan(h_buf, tid, tpb)
    return h_buf[tid], h_buf[tpb - 1]


#: Name bound in the scans -> its plain function, per variant (with :data:`._weights.VARIANTS`).
CUDA_VARIANTS = {"unweighted": {"weight_at": unit_weight_at, "chunk_weights": counted_chunk},
                 "weighted": {"weight_at": gathered_weight_at, "chunk_weights": scanned_chunk}}

# The plain functions below call the variants' names, each other and (class_terms, class_proxy) the
# criterion's device functions by name; compile_functions binds them.
# ruff: noqa: F821


def load_chunk(rows, ylist, w, f, s, m, c0, g_buf, h_buf, tid, tpb):
    """Inclusive block scans of the node's ``g = w y`` into ``g_buf`` and of its weights, rows ``c0 .. c0 + tpb -
    1`` (0 past its ``m`` rows); returns this thread's prefix weight and the chunk's.  ``w y`` is rounded on
    its own (``dmul_rn``), as the CPU's."""
    i = c0 + tid
    wi = weight_at(rows, w, f, s + i) if i < m else 0.0
    g_buf[tid] = weighted(wi, ylist[f, s + i]) if i < m else 0.0
    block_inclusive_scan(g_buf, tid, tpb)
    return chunk_weights(h_buf, wi, tid, tpb, m - c0)


def scan_mse(f, tid, tpb, rows, vals, ylist, w, s, e, msl, thr, out, g_buf, h_buf, red_p, red_n):
    """Feature ``f``'s variance-reduction scan of the node ``[s, e)`` by one block: the proxy
    ``G_L^2 / H_L + G_R^2 / H_R`` at every position (``rows``, ``w``: read by the weighted variant only)."""
    m = e - s
    if _constant_feature(vals, f, s, e, thr, tid, out):
        return
    # totals of the segment: the same chunked block scans as below, so the last prefix is the total
    g_total = 0.0
    h_total = 0.0
    for c0 in range(0, m, tpb):
        h_prefix, h_chunk = load_chunk(rows, ylist, w, f, s, m, c0, g_buf, h_buf, tid, tpb)
        g_total += g_buf[tpb - 1]
        h_total += h_chunk
        cuda.syncthreads()
    best_p = -math.inf
    best_nl = -1
    g_carry = 0.0
    h_carry = 0.0
    for c0 in range(0, m, tpb):
        h_prefix, h_chunk = load_chunk(rows, ylist, w, f, s, m, c0, g_buf, h_buf, tid, tpb)
        nl = c0 + tid + 1  # rows 0..c0 + tid on the left
        if _is_candidate(vals, f, s, m, nl, msl, thr):
            gl = g_carry + g_buf[tid]
            hl = h_carry + h_prefix
            gr = g_total - gl
            hr = h_total - hl
            p = _mul(gl, gl) / hl + _mul(gr, gr) / hr
            if p > best_p:
                best_p = p
                best_nl = nl
        g_carry += g_buf[tpb - 1]
        h_carry += h_chunk
        cuda.syncthreads()
    _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out)


def scan_classes(f, tid, tpb, rows, vals, ylist, w, s, e, msl, thr, n_classes, totals, w_node, carry_cnt, out, buf,
                 red_p, red_n):
    """Feature ``f``'s classification scan of the node ``[s, e)`` by one block: a block scan of the weights
    (``W_L``) and one per class of the weighted indicator, each side's terms summed afresh per candidate and the
    right side's counts taken as total minus left, as scikit-learn's ``ClassificationCriterion`` does.

    ``totals`` float64 (n_classes,): the node's (weighted) class counts; ``w_node``: their sum; ``carry_cnt``
    float64 (n_features, >= n_classes) scratch of the per-class carries between chunks.
    """
    m = e - s
    if _constant_feature(vals, f, s, e, thr, tid, out):
        return
    if tid == 0:
        for c in range(n_classes):
            carry_cnt[f, c] = 0.0
    cuda.syncthreads()
    best_p = -math.inf
    best_nl = -1
    w_carry = 0.0  # weight of the chunks before this one (every thread keeps it)
    for c0 in range(0, m, tpb):
        i = c0 + tid
        code = ylist[f, s + i] if i < m else -1
        wi = weight_at(rows, w, f, s + i) if i < m else 0.0
        nl = i + 1
        w_prefix, w_chunk = chunk_weights(buf, wi, tid, tpb, m - c0)
        fl = w_carry + w_prefix
        fr = w_node - fl
        w_carry += w_chunk
        cuda.syncthreads()
        acc_l = 0.0
        acc_r = 0.0
        for c in range(n_classes):
            buf[tid] = wi if code == c else 0.0
            block_inclusive_scan(buf, tid, tpb)
            cl = carry_cnt[f, c] + buf[tid]
            cr = totals[c] - cl
            if nl < m:
                acc_l, acc_r = class_terms(cl, cr, fl, fr, acc_l, acc_r)
            cuda.syncthreads()
            if tid == tpb - 1:
                carry_cnt[f, c] += buf[tpb - 1]
            cuda.syncthreads()
        if _is_candidate(vals, f, s, m, nl, msl, thr):
            p = class_proxy(fl, fr, acc_l, acc_r)
            if p > best_p:
                best_p = p
                best_nl = nl
    _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out)


# ---- the kernels: each variant's entry point (its declared signature) declares the shared arrays (``tpb``
# entries, bound per block size) and runs the scan; the unweighted ones pass ``vals`` where the scan takes the
# row ids and weights it never reads
def mse_kernel(active, vals, ylist, s, e, msl, thr, out):
    g_buf = cuda.shared.array(tpb, np.float64)
    red_p = cuda.shared.array(tpb, np.float64)
    red_n = cuda.shared.array(tpb, np.int64)
    scan_mse(active[cuda.blockIdx.x], cuda.threadIdx.x, tpb, vals, vals, ylist, vals, s, e, msl, thr, out, g_buf,
             g_buf, red_p, red_n)


def mse_weighted_kernel(active, rows, vals, ylist, w, s, e, msl, thr, out):
    g_buf = cuda.shared.array(tpb, np.float64)
    h_buf = cuda.shared.array(tpb, np.float64)
    red_p = cuda.shared.array(tpb, np.float64)
    red_n = cuda.shared.array(tpb, np.int64)
    scan_mse(active[cuda.blockIdx.x], cuda.threadIdx.x, tpb, rows, vals, ylist, w, s, e, msl, thr, out, g_buf,
             h_buf, red_p, red_n)


def classes_kernel(active, vals, ylist, s, e, msl, thr, n_classes, totals, carry_cnt, out):
    buf = cuda.shared.array(tpb, np.float64)
    red_p = cuda.shared.array(tpb, np.float64)
    red_n = cuda.shared.array(tpb, np.int64)
    scan_classes(active[cuda.blockIdx.x], cuda.threadIdx.x, tpb, vals, vals, ylist, vals, s, e, msl, thr, n_classes,
                 totals, float(e - s), carry_cnt, out, buf, red_p, red_n)


def classes_weighted_kernel(active, rows, vals, ylist, w, s, e, msl, thr, n_classes, totals, w_node, carry_cnt, out):
    buf = cuda.shared.array(tpb, np.float64)
    red_p = cuda.shared.array(tpb, np.float64)
    red_n = cuda.shared.array(tpb, np.int64)
    scan_classes(active[cuda.blockIdx.x], cuda.threadIdx.x, tpb, rows, vals, ylist, w, s, e, msl, thr, n_classes,
                 totals, w_node, carry_cnt, out, buf, red_p, red_n)


ENTRY_POINTS = {"unweighted": (mse_kernel, classes_kernel), "weighted": (mse_weighted_kernel, classes_weighted_kernel)}
CRITERIA = {"gini": (_gini_terms, _gini_proxy), "entropy": (_entropy_terms, _entropy_proxy)}


def _scan_kernels(tpb: int) -> dict:
    """The scan kernels for ``tpb`` threads per block: "mse", "gini", "entropy" and their "_weighted" twins."""
    device = cuda_device()
    kernels = {}
    for variant in VARIANTS:
        names = {**compile_weights(variant, device, _mul),
                 **{name: device(fn) for name, fn in CUDA_VARIANTS[variant].items()}}
        suffix = "" if variant == "unweighted" else "_weighted"
        mse, classes = ENTRY_POINTS[variant]
        body = compile_functions([load_chunk, scan_mse], device, names, variant)["scan_mse"]
        kernels["mse" + suffix] = cuda.jit(rebind(mse, {"tpb": tpb, "scan_mse": body}, variant))
        for criterion, (terms, proxy) in CRITERIA.items():
            body = compile_functions([scan_classes], device, {**names, "class_terms": terms, "class_proxy": proxy},
                                     f"{variant}_{criterion}")["scan_classes"]
            kernels[criterion + suffix] = cuda.jit(rebind(classes, {"tpb": tpb, "scan_classes": body},
                                                          f"{variant}_{criterion}"))
    return kernels


@functools.lru_cache(maxsize=4)
def _kernels(tpb: int) -> dict:
    """The scan kernels for ``tpb`` threads per block (:func:`_scan_kernels`), compiled once per block size; the
    rows' partition after a split is :mod:`._partition_cuda`'s."""
    return _scan_kernels(tpb)


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
def _scan_work(launch) -> Work:
    """Per feature block: the segment's targets read twice (total, then the scan) and each position scored."""
    features = launch.grid[0]
    m = launch.shapes[4] - launch.shapes[3]
    classes = launch.shapes[7] if len(launch.shapes) > 9 else 1
    return Work(bytes=features * m * (8 + 8 + 4), flops64=features * m * (6 + 6 * classes),
                ops=features * m * (12 + 10 * classes))


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


def _weighted_scan_work(launch) -> Work:
    """Per feature block: the segment read twice (totals, then the scan), a row id and a weight more per row
    than the unweighted scan, and the weights' block scan."""
    features = launch.grid[0]
    m = launch.shapes[6] - launch.shapes[5]
    classes = launch.shapes[9] if len(launch.shapes) > 10 else 1
    return Work(bytes=features * m * (8 + 8 + 4 + 4 + 8) * 2, flops64=features * m * (10 + 8 * classes),
                ops=features * m * (20 + 10 * classes))


def _root_scan_weighted(n: int, d: int):
    grid, block, (active, vals, ylist, s, e, msl, thr, out) = _root_scan(n, d)
    rows = np.tile(np.arange(n, dtype=np.int32), (d, 1))
    return grid, block, (active, rows, vals, ylist, np.ones(n), s, e, msl, thr, out)


SCAN_MSE_WEIGHTED = declare_kernel(
    "greedy.scan_mse_weighted", build=_DEVICE("mse_weighted"), blocks=(THREADS_PER_BLOCK,),
    model=_weighted_scan_work,
    summary="a block per feature: block scans of w*y and w over the node's presorted segment, weighted proxy",
    example=_root_scan_weighted,
    signatures=("void(int64[::1], int32[:, ::1], float32[:, ::1], float64[:, ::1], float64[::1], int64, int64, "
                "int64, float32, float64[:, ::1])",))
_WEIGHTED_CLASS_SIG = ("void(int64[::1], int32[:, ::1], float32[:, ::1], int32[:, ::1], float64[::1], int64, int64, "
                       "int64, float32, int64, float64[::1], float64, float64[:, ::1], float64[:, ::1])",)
SCAN_GINI_WEIGHTED = declare_kernel(
    "greedy.scan_gini_weighted", build=_DEVICE("gini_weighted"), blocks=(THREADS_PER_BLOCK,),
    model=_weighted_scan_work,
    summary="a block per feature: block scans of the weights and of each class's weights, weighted Gini proxy",
    signatures=_WEIGHTED_CLASS_SIG)
SCAN_ENTROPY_WEIGHTED = declare_kernel(
    "greedy.scan_entropy_weighted", build=_DEVICE("entropy_weighted"), blocks=(THREADS_PER_BLOCK,),
    model=_weighted_scan_work, exact=False,
    summary="a block per feature: block scans of the weights and of each class's weights, weighted entropy "
            "proxy (libdevice log: not the CPU's bits)",
    signatures=_WEIGHTED_CLASS_SIG)
