"""Weighted CUDA split scans of the greedy inducers (``sample_weight``): the kernels; the host loop is
:mod:`._grower_cuda`.

The weighted twins of :mod:`._scans_cuda`'s ``scan`` kernels, one block per feature
over the node's segment of that feature's presorted list, computing what the
CPU's weighted scans (:mod:`._weighted_scans_cpu`) compute:

- ``scan_mse_weighted``: block scans of ``w * y`` (``B``) and ``w`` (``W``) and
  the proxy ``B_L^2 / W_L + B_R^2 / W_R``;
- ``scan_gini_weighted`` / ``scan_entropy_weighted``: a block scan of the
  weights (``W_L``) and one per class of the weighted indicator, each side's
  squared counts (Gini) or ``-sum p log2 p`` (entropy) summed afresh per
  candidate, the right side's counts taken as total minus left, as
  scikit-learn's ``ClassificationCriterion`` and :func:`._weighted_scans_cpu.scan_classes_weighted`
  do; the node's weighted class counts and total weight come from the host.

A row's weight is read through the feature's row ids (``w[rows[f, i]]``), so
the presorted lists carry no weight list: the partition kernel and the
device memory of an unweighted fit are unchanged.  These are separate kernels
rather than the unweighted ones with an all-ones weight array, because that
would cost the unweighted MSE scan a second block scan per chunk and a
gathered read per row, and replace its exact row counts by float sums: the
unweighted path keeps its speed and its bits.

Rows of weight 0 never reach the device (the builder drops them, as
scikit-learn's splitter skips them), so every ``W_L``, ``W_R`` is positive.
``min_samples_leaf`` counts rows, as on the CPU.  With exact sums (integer or
dyadic weights and targets, class counts) the scores equal the CPU's to the
last bit and both backends grow the same tree; with other weights the block
scans add in another order than the CPU's loops, so two candidates whose
scores tie within rounding may be ranked the other way.
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from .._cuda_blocks import block_inclusive_scan
from .._jit import rebind
from ..gpu.kernels import declare_kernel
from ..gpu.model import Work
from ._scans_cuda import (
    THREADS_PER_BLOCK,
    _constant_feature,
    _entropy_proxy,
    _entropy_terms,
    _finish_scan,
    _gini_proxy,
    _gini_terms,
    _is_candidate,
    _mul,
    _root_scan,
)


@cuda.jit(device=True)
def _row_weight(rows, w, f, s, m, i):
    """The weight of the node's ``i``-th row in feature ``f``'s order (0 past its ``m`` rows)."""
    return w[rows[f, s + i]] if i < m else 0.0


@cuda.jit(device=True)
def _scan_weighted_chunk(rows, ylist, w, f, s, m, c0, g_buf, h_buf, tid, tpb):
    """Inclusive block scans of the node's ``w * y`` into ``g_buf`` and ``w`` into ``h_buf``, rows
    ``c0 .. c0 + tpb - 1`` (0 past its ``m`` rows).  ``w * y`` is rounded on its own, as the CPU's ``gs``."""
    i = c0 + tid
    wi = _row_weight(rows, w, f, s, m, i)
    g_buf[tid] = _mul(wi, ylist[f, s + i]) if i < m else 0.0
    h_buf[tid] = wi
    block_inclusive_scan(g_buf, tid, tpb)
    block_inclusive_scan(h_buf, tid, tpb)


def scan_classes_weighted(active, rows, vals, ylist, w, s, e, msl, thr, n_classes, totals, w_node, carry_cnt,
                          out):
    """A weighted classification criterion's scan (a kernel body: ``class_terms`` / ``class_proxy`` bound per
    criterion by :func:`dtlab._jit.rebind`, ``tpb`` by the factory).

    ``totals`` float64 (n_classes,): the node's weighted class counts; ``w_node``: their sum; ``carry_cnt``
    float64 (n_features, >= n_classes) scratch of the per-class carries between chunks.
    """
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
    w_carry = 0.0  # weight of the chunks before this one (every thread keeps it)
    for c0 in range(0, m, tpb):  # noqa: F821
        i = c0 + tid
        code = ylist[f, s + i] if i < m else -1
        wi = _row_weight(rows, w, f, s, m, i)
        nl = i + 1
        buf[tid] = wi
        block_inclusive_scan(buf, tid, tpb)  # noqa: F821
        fl = w_carry + buf[tid]
        fr = w_node - fl
        w_carry += buf[tpb - 1]  # noqa: F821
        cuda.syncthreads()
        acc_l = 0.0
        acc_r = 0.0
        for c in range(n_classes):
            buf[tid] = wi if code == c else 0.0
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
def weighted_kernels(tpb: int) -> dict:
    """The weighted scan kernels for ``tpb`` threads per block, by criterion name ("mse", "gini", "entropy")."""
    @cuda.jit
    def scan_mse_weighted(active, rows, vals, ylist, w, s, e, msl, thr, out):
        f = active[cuda.blockIdx.x]
        tid = cuda.threadIdx.x
        g_buf = cuda.shared.array(tpb, np.float64)
        h_buf = cuda.shared.array(tpb, np.float64)
        red_p = cuda.shared.array(tpb, np.float64)
        red_n = cuda.shared.array(tpb, np.int64)
        m = e - s
        if _constant_feature(vals, f, s, e, thr, tid, out):
            return
        # totals of the segment: the same chunked block scans as below, so the last prefix is the total
        g_total = 0.0
        h_total = 0.0
        for c0 in range(0, m, tpb):
            _scan_weighted_chunk(rows, ylist, w, f, s, m, c0, g_buf, h_buf, tid, tpb)
            g_total += g_buf[tpb - 1]
            h_total += h_buf[tpb - 1]
            cuda.syncthreads()
        best_p = -math.inf
        best_nl = -1
        g_carry = 0.0
        h_carry = 0.0
        for c0 in range(0, m, tpb):
            _scan_weighted_chunk(rows, ylist, w, f, s, m, c0, g_buf, h_buf, tid, tpb)
            nl = c0 + tid + 1
            if _is_candidate(vals, f, s, m, nl, msl, thr):
                gl = g_carry + g_buf[tid]
                hl = h_carry + h_buf[tid]
                gr = g_total - gl
                hr = h_total - hl
                p = _mul(gl, gl) / hl + _mul(gr, gr) / hr
                if p > best_p:
                    best_p = p
                    best_nl = nl
            g_carry += g_buf[tpb - 1]
            h_carry += h_buf[tpb - 1]
            cuda.syncthreads()
        _finish_scan(f, tid, tpb, best_p, best_nl, red_p, red_n, vals, s, out)

    kernels = {"mse": scan_mse_weighted}
    for name, terms, proxy in (("gini", _gini_terms, _gini_proxy), ("entropy", _entropy_terms, _entropy_proxy)):
        kernels[name] = cuda.jit(rebind(scan_classes_weighted, {"class_terms": terms, "class_proxy": proxy,
                                                                "tpb": tpb}, name))
    return kernels


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
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


_DEVICE = lambda name: (lambda: weighted_kernels(THREADS_PER_BLOCK)[name])  # noqa: E731 -- the kernels a device runs
SCAN_MSE_WEIGHTED = declare_kernel(
    "greedy.scan_mse_weighted", build=_DEVICE("mse"), blocks=(THREADS_PER_BLOCK,), model=_weighted_scan_work,
    summary="a block per feature: block scans of w*y and w over the node's presorted segment, weighted proxy",
    example=_root_scan_weighted,
    signatures=("void(int64[::1], int32[:, ::1], float32[:, ::1], float64[:, ::1], float64[::1], int64, int64, "
                "int64, float32, float64[:, ::1])",))
_CLASS_SIG = ("void(int64[::1], int32[:, ::1], float32[:, ::1], int32[:, ::1], float64[::1], int64, int64, int64, "
              "float32, int64, float64[::1], float64, float64[:, ::1], float64[:, ::1])",)
SCAN_GINI_WEIGHTED = declare_kernel(
    "greedy.scan_gini_weighted", build=_DEVICE("gini"), blocks=(THREADS_PER_BLOCK,), model=_weighted_scan_work,
    summary="a block per feature: block scans of the weights and of each class's weights, weighted Gini proxy",
    signatures=_CLASS_SIG)
SCAN_ENTROPY_WEIGHTED = declare_kernel(
    "greedy.scan_entropy_weighted", build=_DEVICE("entropy"), blocks=(THREADS_PER_BLOCK,),
    model=_weighted_scan_work, exact=False,
    summary="a block per feature: block scans of the weights and of each class's weights, weighted entropy "
            "proxy (libdevice log: not the CPU's bits)",
    signatures=_CLASS_SIG)
