"""The exact split search on CUDA (numba.cuda kernels), tree for tree the CPU path's (:mod:`._exact_cpu`).

The presorted lists (:func:`dtlab.splits.presort_columns`, present
values only) live on the device with a second buffer; per level, every node is
one contiguous segment of every list, as on the CPU.  Three kernels:

``scan``       one block per (feature, node) pair of the level: the node's
               segment of the feature's list read chunk by chunk, a block-wide
               prefix sum (:func:`dtlab._cuda_blocks.block_inclusive_scan`) of
               g and of h per chunk, every thread scoring its candidate position
               for both missing directions with the CPU's proxy
               (:func:`dtlab.splits.split_proxy`, the same plain function
               compiled for the device), then one block-wide arg-max per
               direction (:func:`dtlab._cuda_blocks.block_argmax`): "missing
               right" keeps the first of equal proxies, "missing left" the last,
               as :func:`dtlab.splits.rank_prefix` does; thread 0 then
               combines both with the "all present values on one side"
               candidates in XGBoost's order and float32 arithmetic
               (:func:`._exact_cpu._choose_candidate`, shared with the CPU);
``mark``       each row of a splitting node starts on its default side
               (:meth:`._rows_cuda.DeviceRows.fill_side`), then the split
               feature's segment overwrites its present rows by ``x < thr``;
``partition``  one block per (splitting node, feature): a block-wide scan of the
               "goes left" flags gives every entry its slot, left child first,
               stably (no re-sorting), into the other buffer.

A block per node picks its feature (:func:`._hist_cuda.reduce_best`: the
largest loss change above 0, the smallest feature on ties, as
:func:`._exact_cpu._reduce_splits`) and the host gets one packed copy per level;
the rows (node, side, leaf) stay on the device (:mod:`._rows_cuda`), where the
earlier search sent every row's node and side down and the sides back up every
level.  Identical trees:
the thresholds are the same float32 midpoints, the proxies the same float32
arithmetic, and the prefix sums of float32 gradients in float64 are exact (so
independent of the order of additions) whenever the gradients' exponents span
fewer than ``53 - 24 - log2(n)`` binades -- the case for the tests' data; beyond
it the block scan may differ from the CPU's sequential sum in the last float64
bit, which changes a float32 gain only if it straddles a float32 rounding
boundary.  Imported only for ``backend="cuda"``.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .. import splits
from .._cuda_blocks import block_argmax, block_inclusive_scan
from .._jit import compile_functions, cuda_device
from ..gpu.kernels import declare_kernel
from ..gpu.launch import launch
from ..gpu.model import SECTOR, Work
from ._exact_cpu import _choose_candidate, _midpoint
from ._gain import _leaf_gain32
from ._hist_cuda import ARG, BEST, BEST_F, LEFT, REDUCE_TPB, reduce_best
from ._rows_cuda import DeviceRows
from .sampling import gate_gains

#: Threads per block on a GPU; the simulator runs a thread per Python thread, so it gets fewer.
THREADS_PER_BLOCK = 128
SIMULATOR_THREADS_PER_BLOCK = 8


@functools.lru_cache(maxsize=4)
def _kernels(tpb: int):
    """Compile the kernels for ``tpb`` threads per block (a power of two: the shared arrays' size)."""
    dev = compile_functions([splits.split_proxy.py_func, _leaf_gain32.py_func, _midpoint.py_func, _choose_candidate],
                            cuda_device())
    split_proxy, leaf_gain32, choose = dev["split_proxy"], dev["_leaf_gain32"], dev["_choose_candidate"]

    @cuda.jit(device=True)
    def load_scan(rows, g, h, s, m, c0, buf_g, buf_h, tid):
        """Inclusive block scans of g and h over the entries ``c0 .. c0 + tpb - 1`` of the segment (0 past it)."""
        i = c0 + tid
        r = rows[s + i] if i < m else 0
        buf_g[tid] = np.float64(g[r]) if i < m else 0.0
        buf_h[tid] = np.float64(h[r]) if i < m else 0.0
        block_inclusive_scan(buf_g, tid, tpb)
        block_inclusive_scan(buf_h, tid, tpb)

    @cuda.jit
    def scan(seg, n_nodes, vals, rows, g, h, node_g, node_h, node_n, col_missing, lam, mcw, f_gain, f_thr,
             f_left):
        f = cuda.blockIdx.x // n_nodes
        k = cuda.blockIdx.x % n_nodes
        tid = cuda.threadIdx.x
        buf_g = cuda.shared.array(tpb, np.float64)
        buf_h = cuda.shared.array(tpb, np.float64)
        red_v1 = cuda.shared.array(tpb, np.float64)
        red_p1 = cuda.shared.array(tpb, np.int64)
        red_v2 = cuda.shared.array(tpb, np.float64)
        red_p2 = cuda.shared.array(tpb, np.int64)
        s = seg[f, k]
        e = seg[f, k + 1]
        m = e - s
        if m == 0:  # the same for every thread of the block
            if tid == 0:
                f_gain[f, k] = 0.0
                f_thr[f, k] = np.float32(0.0)
                f_left[f, k] = True
            return
        g_pres = 0.0  # the segment's sums: chunk totals (exact sums, see the module's notes)
        h_pres = 0.0
        for c0 in range(0, m, tpb):
            load_scan(rows, g, h, s, m, c0, buf_g, buf_h, tid)
            g_pres += buf_g[tpb - 1]
            h_pres += buf_h[tpb - 1]
            cuda.syncthreads()
        has_miss = m < node_n[k]
        g_miss = node_g[k] - g_pres if has_miss else 0.0
        h_miss = node_h[k] - h_pres if has_miss else 0.0
        g_total = g_pres + g_miss  # as rank_prefix
        h_total = h_pres + h_miss
        f32 = np.float32(0.0)
        mr_v = -math.inf
        mr_nl = -1
        ml_v = -math.inf
        ml_nl = -1
        carry_g = 0.0
        carry_h = 0.0
        for c0 in range(0, m, tpb):
            load_scan(rows, g, h, s, m, c0, buf_g, buf_h, tid)
            nl = c0 + tid + 1  # entries 0 .. c0 + tid of the segment on the left
            if nl < m and vals[s + nl] > vals[s + nl - 1] + f32:
                gl = carry_g + buf_g[tid]
                hl = carry_h + buf_h[tid]
                if col_missing[f]:  # missing rows right
                    g_left = gl + 0.0
                    h_left = hl + 0.0
                    h_right = h_total - h_left
                    if h_left >= mcw and h_right >= mcw:
                        p = split_proxy(g_left, h_left, g_total - g_left, h_right, lam, f32)
                        if p > mr_v:  # ascending positions: the first of equal proxies stays
                            mr_v = p
                            mr_nl = nl
                g_left = gl + g_miss  # missing rows left
                h_left = hl + h_miss
                h_right = h_total - h_left
                if h_left >= mcw and h_right >= mcw:
                    p = split_proxy(g_left, h_left, g_total - g_left, h_right, lam, f32)
                    if p >= ml_v and p > -math.inf:  # the last of equal proxies, as XGBoost's downward scan
                        ml_v = p
                        ml_nl = nl
            carry_g += buf_g[tpb - 1]
            carry_h += buf_h[tpb - 1]
            cuda.syncthreads()
        mr_v, mr_nl = block_argmax(mr_v, mr_nl, red_v1, red_p1, tid, tpb)
        # block_argmax keeps the smallest position among ties: rank "missing left" by m - nl for the last
        ml_v, ml_key = block_argmax(ml_v, m - ml_nl if ml_nl > 0 else -1, red_v2, red_p2, tid, tpb)
        if tid == 0:
            root = leaf_gain32(node_g[k], node_h[k], lam)
            best, thr, left = choose(vals, s, e, mr_v, mr_nl, ml_v, m - ml_key if ml_key >= 0 else -1, g_pres,
                                     h_pres, g_miss, h_miss, has_miss, col_missing[f], root, mcw, lam)
            f_gain[f, k] = best
            f_thr[f, k] = thr
            f_left[f, k] = left

    @cuda.jit
    def mark_present(seg, rows, vals, split_k, split_f, split_thr, side):
        j = cuda.blockIdx.x
        f = split_f[j]
        k = split_k[j]
        t = split_thr[j]
        for i in range(seg[f, k] + cuda.threadIdx.x, seg[f, k + 1], cuda.blockDim.x):
            side[rows[i]] = 1 if vals[i] < t else 0

    @cuda.jit
    def partition(seg, split_k, side, rows, vals, rows_out, vals_out, new_seg):
        d = seg.shape[0]
        j = cuda.blockIdx.x // d
        f = cuda.blockIdx.x % d
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.int64)
        s = seg[f, split_k[j]]
        m = seg[f, split_k[j] + 1] - s
        base = new_seg[f, 2 * j]
        n_left = 0
        for c0 in range(0, m, tpb):  # the left entries of the segment: the right child's start
            i = c0 + tid
            buf[tid] = side[rows[s + i]] if i < m else 0
            block_inclusive_scan(buf, tid, tpb)
            n_left += buf[tpb - 1]
            cuda.syncthreads()
        if tid == 0:
            new_seg[f, 2 * j + 1] = base + n_left
        carry = 0  # left entries placed so far
        for c0 in range(0, m, tpb):
            i = c0 + tid
            flag = side[rows[s + i]] if i < m else 0
            buf[tid] = flag
            block_inclusive_scan(buf, tid, tpb)
            if i < m:
                left_rank = carry + buf[tid] - flag  # left entries before this one
                dest = base + (left_rank if flag else n_left + i - left_rank)
                rows_out[dest] = rows[s + i]
                vals_out[dest] = vals[s + i]
            carry += buf[tpb - 1]
            cuda.syncthreads()

    return scan, mark_present, partition


class ExactCudaSearch:
    """The exact split finder of one fit on the device: the sorted lists and their double buffers there.

    A :class:`.protocols.RowStateFinder`: its rows' state is a :class:`._rows_cuda.DeviceRows`.

    Parameters
    ----------
    data : :class:`dtlab.boosting.grower.ColumnData`
    backend : Backend, resolved, ``is_cuda``: the device is numba's current one; the lists, gradients and
        rows stay there as numba device arrays for the whole fit (one copy of the level's best splits back)
    """

    #: The level's column sample (:attr:`.protocols.SplitFinder.allowed`), set by the grower; None: every feature.
    allowed: np.ndarray | None = None

    def __init__(self, data, backend):
        self.simulated = bool(numba.config.ENABLE_CUDASIM)
        self.tpb = SIMULATOR_THREADS_PER_BLOCK if self.simulated else THREADS_PER_BLOCK
        self.indptr = data.indptr
        rows0, vals0 = splits.presort_columns(data.indptr, data.indices, data.values,
                                              splits.SORTS[splits.DEFAULT_SORT])
        self.col_missing = np.diff(data.indptr) < data.n_samples
        self.d_rows0, self.d_vals0 = cuda.to_device(rows0), cuda.to_device(vals0)
        self.d_col_missing = cuda.to_device(self.col_missing)
        self.buffers = [(cuda.device_array_like(rows0), cuda.device_array_like(vals0)) for _ in range(2)]
        #: Entries scanned, ranked and partitioned over the fit, as :class:`.exact.ExactSearch` counts them.
        self.work = {"scanned": 0, "ranked": 0, "partitioned": 0}

    def row_state(self, g: np.ndarray, h: np.ndarray) -> DeviceRows:
        """The grower's rows, on the device (:mod:`._rows_cuda`), made by :meth:`start_tree`."""
        return self.rows

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        """This round's gradients (to the device, once per tree); the root is each whole list."""
        self.d_g = cuda.to_device(np.ascontiguousarray(g, np.float32))
        self.d_h = cuda.to_device(np.ascontiguousarray(h, np.float32))
        self.rows = DeviceRows(self.d_g, self.d_h, self.simulated)
        self.lists = (self.d_rows0, self.d_vals0)
        self.seg = np.stack([self.indptr[:-1], self.indptr[1:]], axis=1).astype(np.int64)
        self.flip = 0

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        """Best split of each node of the level: ``(feature, loss_chg, threshold, missing_left)`` arrays."""
        scan = _kernels(self.tpb)[0]
        d = self.seg.shape[0]
        lengths = self.seg[:, n_nodes] - self.seg[:, 0]
        self.work["scanned"] += int(lengths.sum())
        self.work["ranked"] += int((lengths * np.where(self.col_missing, 2, 1)).sum())
        f_gain = cuda.device_array((d, n_nodes))
        f_thr = cuda.device_array((d, n_nodes), np.float32)
        f_left = cuda.device_array((d, n_nodes), np.bool_)
        rows, vals = self.lists
        launch(scan, d * n_nodes, self.tpb, cuda.to_device(self.seg), n_nodes, vals, rows, self.d_g, self.d_h,
               cuda.to_device(np.ascontiguousarray(node_g, np.float64)),
               cuda.to_device(np.ascontiguousarray(node_h, np.float64)),
               cuda.to_device(np.ascontiguousarray(node_n, np.int64)), self.d_col_missing, float(lam), float(mcw),
               f_gain, f_thr, f_left)
        best = cuda.device_array((4, n_nodes))
        gate_gains(f_gain, self.allowed)  # the level's column sample (sampling.py)
        launch(reduce_best, n_nodes, REDUCE_TPB, f_gain, f_thr, f_left, 0.0, best)  # > 0, as _reduce_splits
        packed = best.copy_to_host()  # the level's one copy to the host
        return (packed[BEST_F].astype(np.int64), packed[BEST].copy(), packed[ARG].astype(np.float32),
                packed[LEFT] != 0)

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """Mark each row's side on the device (its default, then the present values), then partition the lists
        stably into the children's segments (not when the children are the ``last`` level)."""
        _, mark_present, partition = _kernels(self.tpb)
        rows, vals = self.lists
        n_split = split_k.shape[0]
        self.rows.fill_side(np.asarray(split_k, np.int64), np.asarray(split_left, np.uint8))
        d_seg, d_split_k = cuda.to_device(self.seg), cuda.to_device(np.ascontiguousarray(split_k, np.int64))
        launch(mark_present, n_split, self.tpb, d_seg, rows, vals, d_split_k,
               cuda.to_device(np.ascontiguousarray(split_f, np.int64)),
               cuda.to_device(np.ascontiguousarray(split_thr, np.float32)), self.rows.side)
        if last:
            return
        out = self.buffers[self.flip]
        self.flip ^= 1
        sizes = self.seg[:, split_k + 1] - self.seg[:, split_k]  # (d, n_split)
        self.work["partitioned"] += int(sizes.sum())
        new_seg = np.empty((self.seg.shape[0], 2 * n_split + 1), np.int64)
        starts = self.indptr[:-1, None] + np.concatenate([np.zeros((sizes.shape[0], 1), np.int64),
                                                          np.cumsum(sizes, axis=1)], axis=1)
        new_seg[:, 0::2] = starts  # each splitting node's first slot, and the end; the kernel fills the middle
        d_new_seg = cuda.to_device(new_seg)
        launch(partition, n_split * self.seg.shape[0], self.tpb, d_seg, d_split_k, self.rows.side, rows, vals, *out,
               d_new_seg)
        self.lists = out
        self.seg = d_new_seg.copy_to_host()


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
def _scan_work(launch) -> Work:
    entries = launch.shapes[2][0]  # every present entry of the level's segments, about
    return Work(bytes=entries * (4 + 4 + 2 * SECTOR) * 2, flops64=entries * 30, flops32=entries * 12,
                ops=entries * 60)


def _mark_present_work(launch) -> Work:
    entries = launch.shapes[1][0] / max(launch.shapes[0][0], 1) * launch.grid[0]
    return Work(bytes=entries * (8 + SECTOR), ops=entries * 6)


def _partition_work(launch) -> Work:
    entries = launch.shapes[3][0]
    return Work(bytes=entries * (8 + SECTOR + 8) * 2, ops=entries * 40)


_DEVICE = lambda i: (lambda: _kernels(THREADS_PER_BLOCK)[i])  # noqa: E731 -- the kernels a device runs
SCAN = declare_kernel(
    "boosting.exact_scan", build=_DEVICE(0), blocks=(THREADS_PER_BLOCK,), model=_scan_work,
    summary="a block per (feature, node): block scans of g and h over the sorted segment, XGBoost's float32 "
    "proxies, arg-max per missing direction",
    signatures=("void(int64[:, ::1], int64, float32[::1], int32[::1], float32[::1], float32[::1], float64[::1], "
                "float64[::1], int64[::1], bool[::1], float64, float64, float64[:, ::1], float32[:, ::1], "
                "bool[:, ::1])",))
MARK_PRESENT = declare_kernel(
    "boosting.exact_mark", build=_DEVICE(1), blocks=(THREADS_PER_BLOCK,), model=_mark_present_work,
    summary="a block per splitting node: its present rows' side by x < threshold",
    signatures=("void(int64[:, ::1], int32[::1], float32[::1], int64[::1], int64[::1], float32[::1], "
                "uint8[::1])",))
PARTITION = declare_kernel(
    "boosting.exact_partition", build=_DEVICE(2), blocks=(THREADS_PER_BLOCK,), model=_partition_work,
    summary="a block per (splitting node, feature): stable partition of the sorted segment by block scans",
    signatures=("void(int64[:, ::1], int64[::1], uint8[::1], int32[::1], float32[::1], int32[::1], float32[::1], "
                "int64[:, ::1])",))
