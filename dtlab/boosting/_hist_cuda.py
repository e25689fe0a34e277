"""The histogram split search on CUDA (numba.cuda kernels), tree for tree the CPU path's.

The binned data, the rows (grouped by node, :mod:`._rows_cuda`) and the
histograms stay on the device for the whole fit; per level the host sends a
plan of a few integers per part of a node and receives, per node, the best
split (one copy).  Three kernels per level:

``build``       row-chunk blocks: one block per (part of a node to build,
                group of :data:`FEATURES_PER_BLOCK` features).  The block
                stages its part's rows (row id, bins of its features, g, h)
                in shared memory, coalesced, and each thread owns one bin: it
                adds, in row order, the rows that fall in its bin, in
                registers.  No atomics: the sums are the CPU's sequential sums
                of the part, the same on every run;
``merge_scan``  one block per (node to build, feature): the parts' sums added
                in part order into the node's histogram, the sibling's as
                parent minus it (the subtraction trick), both kept on the
                device for the next level, then each scanned by
                :func:`._hist_cpu._best_bin_split` -- the CPU's plain function
                compiled as a device function -- with its scratch in shared
                memory (two threads, one per node, the rest of the block
                having merged the bins);
``reduce``      one block per node: the best feature by
                :func:`dtlab._cuda_blocks.block_argmax` (largest gain, the
                first feature on ties, as the CPU's ``argmax``), packed with
                its bin and missing side for the one copy to the host.

Why not one float64 ``atomicAdd`` per (row, feature) into a shared histogram,
the common GPU design: atomics add in scheduling order, so the histograms --
and the trees, where two gains nearly tie -- would change from run to run and
differ from the CPU's.  Here a node of one part gets the CPU's sums to the bit;
a larger node's parts are added in part order, which equals the CPU's
row-by-row sum whenever the float64 sums of the float32 gradients are exact
(the exact search's condition, :mod:`._exact_cuda`; the tests' data meet it).
The price is a compare per (row, bin) in the block; the model
(:mod:`dtlab.gpu.model`) counts it.

The earlier kernels this replaces: one thread per (node, feature) over all of
the node's rows with a float64 read-modify-write in global memory (``d``
threads at the root), a scan with per-thread scratch rows in global memory
(uncoalesced) and fresh buffers of 3 x nodes x features x bins every level,
and the rows' order sent every level with the partition on the host.
Imported only for ``backend="cuda"``.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float64, uint8

from .._cuda_blocks import block_argmax
from .._jit import compile_functions, cuda_device
from ..gpu.kernels import declare_kernel
from ..gpu.launch import chunks, launch, limits
from ..gpu.model import SECTOR, Work
from ..splits import largest, rank_prefix
from ._gain import RT_EPS, _leaf_gain
from ._hist_cpu import _best_bin_split
from ._rows_cuda import HI, LO, NODE, DeviceRows
from .hist import HistSearch
from .sampling import gate_gains

REDUCE_TPB = 32
#: Features a build block takes (its rows' bins of these features are adjacent in a row of ``bins``).
FEATURES_PER_BLOCK = 4
#: Rows a build block stages in shared memory at a time.
STAGE = 256
#: Threads of the build and merge blocks on a device: one per bin (max_bins <= 256).
BIN_THREADS = 256
#: Rows of the packed per-node result: best feature, its gain, its bin (or threshold), missing left.
BEST_F, BEST, ARG, LEFT = range(4)


def bin_threads(n_bins_total: int) -> int:
    """Threads of a build / merge block: a warp multiple >= the bins, at least two warps (two scans)."""
    return max(64, -(-n_bins_total // 32) * 32)


@functools.lru_cache(maxsize=None)
def _kernels(tpb: int):
    dev = compile_functions([_leaf_gain.py_func, largest.py_func, rank_prefix.py_func, _best_bin_split.py_func],
                            cuda_device())
    best_bin_split = dev["_best_bin_split"]

    @cuda.jit
    def build(order, plan, bins, g, h, f0, part_g, part_h):
        p = cuda.blockIdx.x
        fg = f0 + cuda.blockIdx.y * FEATURES_PER_BLOCK
        b = cuda.threadIdx.x
        d = bins.shape[1]
        sh_bin = cuda.shared.array((STAGE, FEATURES_PER_BLOCK), uint8)
        sh_g = cuda.shared.array(STAGE, np.float32)
        sh_h = cuda.shared.array(STAGE, np.float32)
        acc_g = cuda.local.array(FEATURES_PER_BLOCK, float64)
        acc_h = cuda.local.array(FEATURES_PER_BLOCK, float64)
        for q in range(FEATURES_PER_BLOCK):
            acc_g[q] = 0.0
            acc_h[q] = 0.0
        lo = plan[LO, p]
        hi = plan[HI, p]
        for c0 in range(lo, hi, STAGE):
            for i in range(b, STAGE, tpb):  # stage: thread i loads row i of the chunk
                if c0 + i < hi:
                    r = order[c0 + i]
                    sh_g[i] = g[r]
                    sh_h[i] = h[r]
                    for q in range(FEATURES_PER_BLOCK):
                        sh_bin[i, q] = bins[r, fg + q] if fg + q < d else 0
            cuda.syncthreads()
            for i in range(min(STAGE, hi - c0)):  # in row order: the CPU's order of additions per bin
                for q in range(FEATURES_PER_BLOCK):
                    if sh_bin[i, q] == b:
                        acc_g[q] += np.float64(sh_g[i])
                        acc_h[q] += np.float64(sh_h[i])
            cuda.syncthreads()
        if b < part_g.shape[2]:
            for q in range(FEATURES_PER_BLOCK):
                if fg + q < d:
                    part_g[p, fg + q, b] = acc_g[q]
                    part_h[p, fg + q, b] = acc_h[q]

    @cuda.jit
    def merge_scan(parts, build_nodes, parent, f0, part_g, part_h, hg_parent, hh_parent, hg, hh, n_bins, node_g,
                   node_h, col_missing, lam, mcw, pos_bins, f_gain, f_bin, f_left):
        j = cuda.blockIdx.x
        f = f0 + cuda.blockIdx.y
        b = cuda.threadIdx.x
        n_total = hg.shape[2]
        hist = cuda.shared.array((2, 2, tpb), float64)  # (built node / sibling, g / h, bin)
        scratch = cuda.shared.array((2, 3, tpb), float64)
        k = build_nodes[j]
        p = parent[j]
        if b < n_total:
            sg = 0.0
            sh = 0.0
            for q in range(parts[0, j], parts[0, j] + parts[1, j]):  # in part order
                sg += part_g[q, f, b]
                sh += part_h[q, f, b]
            hg[k, f, b] = sg
            hh[k, f, b] = sh
            hist[0, 0, b] = sg
            hist[0, 1, b] = sh
            if p >= 0:  # the sibling: the parent's histogram minus this one (the CPU's subtraction)
                og = hg_parent[p, f, b] - sg
                oh = hh_parent[p, f, b] - sh
                hg[k ^ 1, f, b] = og
                hh[k ^ 1, f, b] = oh
                hist[1, 0, b] = og
                hist[1, 1, b] = oh
        cuda.syncthreads()
        if b == 0 or (b == 32 and p >= 0):  # two warps scan the two nodes at once
            w = 0 if b == 0 else 1
            node = k if w == 0 else k ^ 1
            gain, best_b, left = best_bin_split(hist[w, 0, :n_total], hist[w, 1, :n_total], n_bins[f], node_g[node],
                                                node_h[node], col_missing[f], lam, mcw, pos_bins, scratch[w, 0],
                                                scratch[w, 1], scratch[w, 2])
            f_gain[f, node] = gain
            f_bin[f, node] = best_b
            f_left[f, node] = left

    return build, merge_scan


@cuda.jit
def reduce_best(f_gain, f_arg, f_left, min_gain, best):
    """Per node (a block): the feature of the largest gain above ``min_gain`` (the first on ties; -1 if none),
    its gain (0 if none), its ``f_arg`` and missing side, packed as ``best[:, k]``."""
    k = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    red_value = cuda.shared.array(REDUCE_TPB, np.float64)
    red_pos = cuda.shared.array(REDUCE_TPB, np.int64)
    value = -np.inf
    pos = -1
    for f in range(tid, f_gain.shape[0], REDUCE_TPB):  # ascending: the first of equal gains stays
        if f_gain[f, k] > value:
            value = f_gain[f, k]
            pos = f
    value, pos = block_argmax(value, pos, red_value, red_pos, tid, REDUCE_TPB)
    if tid == 0:
        ok = value > min_gain
        fk = pos if pos >= 0 else 0
        best[BEST_F, k] = pos if ok else -1
        best[BEST, k] = value if ok else 0.0
        best[ARG, k] = f_arg[fk, k]
        best[LEFT, k] = 1.0 if f_left[fk, k] else 0.0


@cuda.jit
def mark(order, plan, bins, split_f, split_bin, split_left, miss_bin, side):
    """One block per part of a splitting node: each row's side by its bin of the split feature."""
    p = cuda.blockIdx.x
    j = plan[NODE, p]
    f = split_f[j]
    sb = split_bin[j]
    ml = 1 if split_left[j] else 0
    for i in range(plan[LO, p] + cuda.threadIdx.x, plan[HI, p], cuda.blockDim.x):
        r = order[i]
        v = bins[r, f]
        side[r] = ml if v == miss_bin else (1 if v <= sb else 0)


class _Buffer:
    """A device array reused across levels, grown when a level needs more (allocations are slow)."""

    def __init__(self, dtype):
        self.dtype, self.array = dtype, None

    def get(self, *shape):
        size = int(np.prod(shape))
        if self.array is None or self.array.shape[0] < size:
            self.array = cuda.device_array(max(size, 1), self.dtype)
        return self.array[:size].reshape(shape)


class HistCudaSearch(HistSearch):
    """:class:`.hist.HistSearch` with the rows, histograms, scans and reductions on the device.

    A :class:`.protocols.RowStateFinder`: its rows' state is a :class:`._rows_cuda.DeviceRows`.

    ``backend``: the resolved cuda Backend; the device is numba's current one, where the bins, gradients, rows
    and histograms stay as numba device arrays for the whole fit.
    """

    def __init__(self, data, backend, max_bins: int):
        super().__init__(data, 1, max_bins)
        from ..backend import cuda_simulator_enabled

        self.simulated = cuda_simulator_enabled()
        self.tpb = bin_threads(self.n_bins_total)
        self.d_bins = cuda.to_device(self.bins)
        self.d_n_bins = cuda.to_device(self.n_bins)
        self.d_col_missing = cuda.to_device(self.col_missing)
        self.d_pos_bins = cuda.to_device(self.pos_bins)
        self._bufs = {name: _Buffer(dt) for name, dt in (("part_g", np.float64), ("part_h", np.float64),
                                                          ("f_gain", np.float64), ("f_bin", np.int64),
                                                          ("f_left", np.bool_), ("best", np.float64))}
        self._hists = [_Buffer(np.float64) for _ in range(4)]  # (g, h) of a level and of its parent, in turn

    def row_state(self, g: np.ndarray, h: np.ndarray) -> DeviceRows:
        """The grower's rows, on the device (:mod:`._rows_cuda`), made by :meth:`start_tree`."""
        return self.rows

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        """This round's gradients (to the device, once per tree); the root's histogram is built first."""
        self.d_g = cuda.to_device(np.ascontiguousarray(g, np.float32))
        self.d_h = cuda.to_device(np.ascontiguousarray(h, np.float32))
        self.rows = DeviceRows(self.d_g, self.d_h, self.simulated)
        self._turn = 0
        self._pending = None  # the last split's nodes: the parents of the next level's pairs
        self.hg_parent = self.hh_parent = None

    def _hist(self, n_nodes):
        d = self.bins.shape[1]
        pair = self._hists[self._turn:self._turn + 2]
        self._turn = 2 - self._turn
        return [buf.get(n_nodes, d, self.n_bins_total) for buf in pair]

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        build, merge_scan = _kernels(self.tpb)
        rows = self.rows
        d = self.bins.shape[1]
        sizes = np.diff(rows.nseg)
        if self._pending is None:  # the root: built from its rows, nothing to subtract
            build_nodes, parent = np.zeros(1, np.int64), np.full(1, -1, np.int64)
        else:  # the smaller child of each pair is built, the larger is its parent minus it
            pairs = 2 * np.arange(n_nodes // 2)
            build_nodes = np.where(sizes[0::2] <= sizes[1::2], pairs, pairs + 1).astype(np.int64)
            parent = self._pending.astype(np.int64)
        hg, hh = self._hist(n_nodes)
        plan, d_plan = rows.plan(build_nodes)
        n_parts = plan.shape[1]
        part_g = self._bufs["part_g"].get(max(n_parts, 1), d, self.n_bins_total)
        part_h = self._bufs["part_h"].get(max(n_parts, 1), d, self.n_bins_total)
        groups = -(-d // FEATURES_PER_BLOCK)
        if n_parts:
            for g0, count in chunks(groups, limits().max_grid[1]):
                launch(build, (n_parts, count), self.tpb, rows.order, d_plan, self.d_bins, rows.g, rows.h,
                       g0 * FEATURES_PER_BLOCK, part_g, part_h)
        first = np.searchsorted(plan[NODE], np.arange(build_nodes.shape[0]))
        parts = np.stack([first, np.bincount(plan[NODE], minlength=build_nodes.shape[0])]).astype(np.int64)
        f_gain = self._bufs["f_gain"].get(d, n_nodes)
        f_bin = self._bufs["f_bin"].get(d, n_nodes)
        f_left = self._bufs["f_left"].get(d, n_nodes)
        hg_parent = hg if self.hg_parent is None else self.hg_parent  # unread at the root (parent -1)
        hh_parent = hh if self.hh_parent is None else self.hh_parent
        d_build, d_parent = cuda.to_device(build_nodes), cuda.to_device(parent)
        for f0, count in chunks(d, limits().max_grid[1]):
            launch(merge_scan, (build_nodes.shape[0], count), self.tpb, cuda.to_device(parts), d_build, d_parent, f0,
                   part_g, part_h, hg_parent, hh_parent, hg, hh, self.d_n_bins,
                   cuda.to_device(np.ascontiguousarray(node_g, np.float64)),
                   cuda.to_device(np.ascontiguousarray(node_h, np.float64)), self.d_col_missing, float(lam),
                   float(mcw), self.d_pos_bins, f_gain, f_bin, f_left)
        self.hg_parent, self.hh_parent = hg, hh
        best = self._bufs["best"].get(4, n_nodes)
        gate_gains(f_gain, self.allowed)  # the level's column sample (sampling.py)
        launch(reduce_best, n_nodes, REDUCE_TPB, f_gain, f_bin, f_left, float(RT_EPS), best)
        packed = best.copy_to_host()  # the level's one copy to the host
        best_f = packed[BEST_F].astype(np.int64)
        fk = np.maximum(best_f, 0)
        self.split_bin = packed[ARG].astype(np.int64)
        return best_f, packed[BEST].copy(), self._thresholds(fk, self.split_bin), packed[LEFT] != 0

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """Each row's side, on the device (the rows move to the children in the grower's ``rows.advance``)."""
        rows = self.rows
        plan, d_plan = rows.plan(np.asarray(split_k, np.int64))
        if plan.shape[1]:
            launch(mark, plan.shape[1], rows.tpb, rows.order, d_plan, self.d_bins,
                   cuda.to_device(np.ascontiguousarray(split_f, np.int64)),
                   cuda.to_device(np.ascontiguousarray(self.split_bin[split_k], np.int64)),
                   cuda.to_device(np.ascontiguousarray(split_left, np.bool_)), int(self.miss_bin), rows.side)
        self._pending = None if last else np.asarray(split_k, np.int64)


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
def _build_work(launch) -> Work:
    from ..backend import to_host

    plan = to_host(launch.args[1]) if launch.args else None
    rows = float((plan[HI] - plan[LO]).sum()) if plan is not None else launch.grid[0] * 4096.0
    features = launch.grid[1] * FEATURES_PER_BLOCK
    # per row and feature group: the gathered row (a sector of bins, g, h); per (row, feature, bin thread): a
    # compare in shared memory (the bins' threads), one add of the two statistics in the row's bin
    return Work(bytes=rows * launch.grid[1] * (3 * SECTOR) + launch.shapes[-1][0] * features * 256 * 16,
                flops64=rows * features * 2, ops=rows * features * launch.block[0] * 2)


def _merge_scan_work(launch) -> Work:
    n_build, features = launch.grid[0], launch.grid[1]
    bins = launch.shapes[9][2]
    parts = launch.shapes[4][0]
    return Work(bytes=(parts * features * bins + n_build * features * bins * 6) * 8,
                flops64=n_build * features * bins * 30, ops=n_build * features * bins * 60)


def _reduce_work(launch) -> Work:
    d, n = launch.shapes[0]
    return Work(bytes=d * n * 17 + n * 32, ops=d * n * 4 + n * 40)


def _mark_work(launch) -> Work:
    from ..backend import to_host

    plan = to_host(launch.args[1]) if launch.args else None
    rows = float((plan[HI] - plan[LO]).sum()) if plan is not None else launch.grid[0] * 4096.0
    return Work(bytes=rows * (4 + 2 * SECTOR), ops=rows * 8)


def _root_build(n: int, d: int):
    """The root's histogram launch for ``n`` rows and ``d`` features (every row in parts of PART_ROWS)."""
    from ._rows_cuda import PART_ROWS, plan_parts

    plan = plan_parts(np.array([0, n], np.int64), np.zeros(1, np.int64), PART_ROWS)
    part = np.zeros((plan.shape[1], d, BIN_THREADS))
    return ((plan.shape[1], -(-d // FEATURES_PER_BLOCK)), BIN_THREADS,
            (np.arange(n, dtype=np.int32), plan, np.zeros((n, d), np.uint8), np.zeros(n, np.float32),
             np.zeros(n, np.float32), 0, part, part))


def _root_merge_scan(n: int, d: int):
    """The root's merge and scan: its parts into one histogram per feature, each feature scanned."""
    from ._rows_cuda import PART_ROWS

    n_parts = -(-n // PART_ROWS)
    part = np.zeros((n_parts, d, BIN_THREADS))
    hist = np.zeros((1, d, BIN_THREADS))
    out = np.zeros((d, 1))
    return ((1, d), BIN_THREADS, (np.array([[0], [n_parts]], np.int64), np.zeros(1, np.int64),
                                  np.full(1, -1, np.int64), 0, part, part, hist, hist, hist, hist,
                                  np.full(d, BIN_THREADS, np.int64), np.zeros(1), np.ones(1), np.zeros(d, np.bool_),
                                  1.0, 0.0, np.arange(BIN_THREADS, dtype=np.float32), out,
                                  np.zeros((d, 1), np.int64), np.zeros((d, 1), np.bool_)))


_DEVICE = lambda i: (lambda: _kernels(BIN_THREADS)[i])  # noqa: E731 -- the kernels a device runs (256 bins)
BUILD = declare_kernel(
    "boosting.hist_build", build=_DEVICE(0), blocks=(BIN_THREADS, 64), model=_build_work,
    summary="a block per (part of a node, 4 features): rows staged in shared memory, a thread per bin sums its "
    "rows in order, no atomics", example=_root_build,
    signatures=("void(int32[::1], int64[:, ::1], uint8[:, ::1], float32[::1], float32[::1], int64, "
                "float64[:, :, ::1], float64[:, :, ::1])",))
MERGE_SCAN = declare_kernel(
    "boosting.hist_merge_scan", build=_DEVICE(1), blocks=(BIN_THREADS, 64), model=_merge_scan_work,
    summary="a block per (node built, feature): parts merged, sibling by subtraction, both scanned with "
    "shared-memory scratch", example=_root_merge_scan,
    signatures=("void(int64[:, ::1], int64[::1], int64[::1], int64, float64[:, :, ::1], float64[:, :, ::1], "
                "float64[:, :, ::1], float64[:, :, ::1], float64[:, :, ::1], float64[:, :, ::1], int64[::1], "
                "float64[::1], float64[::1], bool[::1], float64, float64, float32[::1], float64[:, ::1], "
                "int64[:, ::1], bool[:, ::1])",))
REDUCE_BEST = declare_kernel(
    "boosting.reduce_best", build=lambda: reduce_best, blocks=(REDUCE_TPB,), model=_reduce_work,
    summary="a block per node: the best feature (block arg-max), packed for one copy",
    signatures=("void(float64[:, ::1], int64[:, ::1], bool[:, ::1], float64, float64[:, ::1])",
                "void(float64[:, ::1], float32[:, ::1], bool[:, ::1], float64, float64[:, ::1])"))
MARK = declare_kernel(
    "boosting.hist_mark", build=lambda: mark, blocks=(128, 8), model=_mark_work,
    summary="a block per part of a splitting node: each row's side from its bin",
    signatures=("void(int32[::1], int64[:, ::1], uint8[:, ::1], int64[::1], int64[::1], bool[::1], int64, "
                "uint8[::1])",))
