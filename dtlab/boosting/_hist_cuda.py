"""The histogram split search on CUDA (numba.cuda kernels), tree for tree the CPU path's.

Three kernels per level, over the histograms kept on the device:

``build``  one thread per (node to build, feature): the node's rows summed in
           row order, then the sibling as parent minus it -- the CPU's order of
           additions, so the histograms are equal to the bit (no atomics);
``scan``   one thread per (node, feature): :func:`._hist_cpu._best_bin_split`, the
           same plain function (with the greedy trees' prefix ranking,
           :func:`dtlab.splits.rank_prefix`) compiled as a CUDA device
           function;
``reduce`` one block per node: the best feature by :func:`dtlab._cuda_blocks.block_argmax`
           (largest gain, the first feature on ties, as the CPU's ``argmax``).

The rows' partition between levels (:func:`._hist_cpu._split_rows`) and the grower
stay on the host, and the row order goes to the device once per level: this
path is written for correctness (identical trees, tested under numba's CUDA
simulator) before speed -- one thread per (node, feature) leaves most of a
GPU idle on small levels.  Imported only for ``backend="cuda"``.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from .._cuda_blocks import block_argmax
from .._jit import compile_functions, cuda_device
from ..splits import largest, rank_prefix
from ._exact_cpu import RT_EPS, _leaf_gain
from ._hist_cpu import _best_bin_split
from .hist import HistSearch

REDUCE_TPB = 32


@functools.lru_cache(maxsize=None)
def _kernels():
    dev = compile_functions([_leaf_gain.py_func, largest.py_func, rank_prefix.py_func, _best_bin_split.py_func],
                            cuda_device())
    best_bin_split = dev["_best_bin_split"]

    @cuda.jit
    def build(bins, order, nseg, build_nodes, parent, hg_parent, hh_parent, g, h, hg, hh):
        t = cuda.grid(1)
        d = bins.shape[1]
        if t >= build_nodes.shape[0] * d:
            return
        j = t // d
        f = t % d
        k = build_nodes[j]
        for b in range(hg.shape[2]):
            hg[k, f, b] = 0.0
            hh[k, f, b] = 0.0
        for i in range(nseg[k], nseg[k + 1]):
            r = order[i]
            b = bins[r, f]
            hg[k, f, b] += g[r]
            hh[k, f, b] += h[r]
        p = parent[j]
        if p >= 0:
            o = k ^ 1
            for b in range(hg.shape[2]):
                hg[o, f, b] = hg_parent[p, f, b] - hg[k, f, b]
                hh[o, f, b] = hh_parent[p, f, b] - hh[k, f, b]

    @cuda.jit
    def scan(hg, hh, n_bins, node_g, node_h, col_missing, lam, mcw, pos_bins, bufs, f_gain, f_bin, f_left):
        t = cuda.grid(1)
        n_nodes = hg.shape[0]
        d = hg.shape[1]
        if t >= n_nodes * d:
            return
        k = t // d
        f = t % d
        f_gain[f, k], f_bin[f, k], f_left[f, k] = best_bin_split(
            hg[k, f], hh[k, f], n_bins[f], node_g[k], node_h[k], col_missing[f], lam, mcw, pos_bins,
            bufs[0, t], bufs[1, t], bufs[2, t])

    @cuda.jit
    def reduce(f_gain, best_f, best):
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
            ok = value > RT_EPS
            best_f[k] = pos if ok else -1
            best[k] = value if ok else 0.0

    return build, scan, reduce


def _blocks(n: int, tpb: int = 64) -> tuple[int, int]:
    return max((n + tpb - 1) // tpb, 1), tpb


class HistCudaSearch(HistSearch):
    """:class:`.hist.HistSearch` with histograms, scans and the per-node reduction on the device.

    ``backend``: the resolved cuda Backend, whose array module holds the device arrays (cupy on a GPU, numpy
    under numba's simulator) and whose ``to_device`` / ``to_host`` move them.
    """

    def __init__(self, data, backend, max_bins: int):
        super().__init__(data, 1, max_bins)
        self.put, self.get, self.empty = backend.to_device, backend.to_host, backend.xp.empty
        self.d_bins = self.put(self.bins)
        self.d_n_bins = self.put(self.n_bins)
        self.d_col_missing = self.put(self.col_missing)
        self.d_pos_bins = self.put(self.pos_bins)

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        super().start_tree(g, h)
        self.d_g, self.d_h = self.put(g), self.put(h)

    def _alloc(self, shape):
        return self.empty(shape, np.float64)

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        build, scan, reduce = _kernels()
        d = self.bins.shape[1]
        order, nseg = self.put(self.order), self.put(self.nseg)
        build_nodes, parent = self.put(self.build), self.put(self.parent)
        build[_blocks(self.build.shape[0] * d)](self.d_bins, order, nseg, build_nodes, parent, self.hg_parent,
                                                self.hh_parent, self.d_g, self.d_h, self.hg, self.hh)
        f_gain = self.empty((d, n_nodes), np.float64)
        f_bin = self.empty((d, n_nodes), np.int64)
        f_left = self.empty((d, n_nodes), np.bool_)
        bufs = self.empty((3, n_nodes * d, self.n_bins_total), np.float64)
        scan[_blocks(n_nodes * d)](self.hg, self.hh, self.d_n_bins, self.put(node_g), self.put(node_h),
                                   self.d_col_missing, lam, mcw, self.d_pos_bins, bufs, f_gain, f_bin, f_left)
        d_best_f = self.empty(n_nodes, np.int64)
        d_best = self.empty(n_nodes, np.float64)
        reduce[n_nodes, REDUCE_TPB](f_gain, d_best_f, d_best)
        best_f, best = np.array(self.get(d_best_f)), np.array(self.get(d_best))
        fk = np.maximum(best_f, 0)
        k = np.arange(n_nodes)
        self.split_bin = self.get(f_bin)[fk, k]
        return best_f, best, self._thresholds(fk, self.split_bin), self.get(f_left)[fk, k]
