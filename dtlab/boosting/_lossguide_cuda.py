"""The node-wise histogram finder with its histograms and scans on the GPU (:class:`LossguideCudaSearch`).

Leaf-wise growth and categorical splits with ``backend="cuda"``: the batch's
histograms are built on the device, one thread per (node, feature) adding its
rows in row order -- the CPU kernels' order, so the same float64 sums -- and
the sibling is the parent's minus it; the numeric scan (:func:`._hist_cpu._best_bin_split`)
and the categorical partition search (:func:`._categorical_splits.categorical_split`)
run as device functions, one thread per (feature, node).  The choice of
split, the row partition and the tree stay on the host
(:class:`.lossguide.LossguideSearch`), so the CPU and CUDA paths grow the same
trees.  A correctness path first: one thread per (node, feature) serialises a
large node's rows (the level-wise CUDA finder, :mod:`._hist_cuda`, is the fast
one for plain depthwise trees).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from .._jit import compile_functions, cuda_device
from ..gpu.kernels import declare_kernel
from ..gpu.launch import grid_for, launch
from ..splits import largest, rank_prefix
from ._categorical_splits import categorical_split
from ._gain import _leaf_gain
from ._hist_cpu import _best_bin_split
from .lossguide import LossguideSearch

THREADS_PER_BLOCK = 64


@functools.lru_cache(maxsize=1)
def _kernels():
    dev = compile_functions([_leaf_gain.py_func, largest.py_func, rank_prefix.py_func, _best_bin_split.py_func,
                             categorical_split], cuda_device())
    best_bin_split, cat_split = dev["_best_bin_split"], dev["categorical_split"]

    @cuda.jit
    def build(bins, order, nseg, build_nodes, parent, hg_parent, hh_parent, g, h, hg, hh):
        i = cuda.grid(1)
        d = bins.shape[1]
        if i < build_nodes.shape[0] * d:
            j, f = i // d, i % d
            k = build_nodes[j]
            for b in range(hg.shape[2]):
                hg[k, f, b] = 0.0
                hh[k, f, b] = 0.0
            for s in range(nseg[k], nseg[k + 1]):  # row order: the CPU kernel's sums
                r = order[s]
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
        i = cuda.grid(1)
        n_nodes = hg.shape[0]
        if i < n_nodes * hg.shape[1]:
            f, k = i // n_nodes, i % n_nodes
            f_gain[f, k], f_bin[f, k], f_left[f, k] = best_bin_split(
                hg[k, f], hh[k, f], n_bins[f], node_g[k], node_h[k], col_missing[f], lam, mcw, pos_bins,
                bufs[0, i], bufs[1, i], bufs[2, i])

    @cuda.jit
    def categorical(features, hg, hh, n_bins, node_g, node_h, col_missing, lam, mcw, max_onehot, order, ratio,
                    f_gain, f_left):
        i = cuda.grid(1)
        n_nodes = hg.shape[0]
        if i < features.shape[0] * n_nodes:
            f, k = features[i // n_nodes], i % n_nodes
            gain, n_left, miss_left, onehot = cat_split(hg[k, f], hh[k, f], n_bins[f], node_g[k], node_h[k],
                                                        col_missing[f], lam, mcw, max_onehot, order[i], ratio[i])
            f_gain[f, k] = gain
            f_left[f, k] = miss_left

    return build, scan, categorical


class LossguideCudaSearch(LossguideSearch):
    """:class:`.lossguide.LossguideSearch` with the histograms and scans on the device (a
    :class:`.protocols.NodeWiseSplitFinder`, as its base).

    Parameters
    ----------
    data, max_bins, categorical, max_cat_to_onehot : as :class:`.lossguide.LossguideSearch`
    backend : Backend, resolved, ``is_cuda`` (cupy arrays on a GPU, numpy under numba's simulator)
    """

    def __init__(self, data, backend, max_bins: int, categorical: np.ndarray, max_cat_to_onehot: int):
        super().__init__(data, 1, max_bins, categorical, max_cat_to_onehot)
        self.put, self.get, self.empty = backend.to_device, backend.to_host, backend.xp.empty
        hs = self.hist
        self.d_bins, self.d_n_bins = self.put(hs.bins), self.put(hs.n_bins)
        self.d_col_missing, self.d_pos_bins = self.put(hs.col_missing), self.put(hs.pos_bins)
        self.d_cat_features = self.put(self.cat_features)

    def start_tree(self, g: np.ndarray, h: np.ndarray):
        self.d_g = self.put(np.ascontiguousarray(g, np.float32))
        self.d_h = self.put(np.ascontiguousarray(h, np.float32))
        return super().start_tree(g, h)

    def _scan(self, order, nseg, build, parent, hg_parent, hh_parent, hg, hh, node_g, node_h, lam, mcw):
        build_k, scan_k, categorical_k = _kernels()
        d, n_nodes, n_total = hg.shape[1], hg.shape[0], hg.shape[2]
        lam, mcw = float(lam), float(mcw)
        d_hg, d_hh = self.put(hg), self.put(hh)
        parents = (self.put(hg_parent), self.put(hh_parent)) if parent[0] >= 0 else (d_hg, d_hh)
        launch(build_k, grid_for(build.shape[0] * d, THREADS_PER_BLOCK), THREADS_PER_BLOCK, self.d_bins,
               self.put(np.ascontiguousarray(order, np.int32)), self.put(np.ascontiguousarray(nseg, np.int64)),
               self.put(np.ascontiguousarray(build, np.int64)), self.put(np.ascontiguousarray(parent, np.int64)),
               *parents, self.d_g, self.d_h, d_hg, d_hh)
        f_gain = self.empty((d, n_nodes), np.float64)
        f_bin = self.empty((d, n_nodes), np.int64)
        f_left = self.empty((d, n_nodes), np.bool_)
        d_g = self.put(np.ascontiguousarray(node_g, np.float64))
        d_h = self.put(np.ascontiguousarray(node_h, np.float64))
        bufs = self.empty((3, n_nodes * d, n_total), np.float64)
        launch(scan_k, grid_for(n_nodes * d, THREADS_PER_BLOCK), THREADS_PER_BLOCK, d_hg, d_hh, self.d_n_bins, d_g,
               d_h, self.d_col_missing, lam, mcw, self.d_pos_bins, bufs, f_gain, f_bin, f_left)
        if self.cat_features.size:
            n_threads = self.cat_features.shape[0] * n_nodes
            launch(categorical_k, grid_for(n_threads, THREADS_PER_BLOCK), THREADS_PER_BLOCK, self.d_cat_features,
                   d_hg, d_hh, self.d_n_bins, d_g, d_h, self.d_col_missing, lam, mcw, int(self.max_onehot),
                   self.empty((n_threads, n_total), np.int64), self.empty((n_threads, n_total), np.float64), f_gain,
                   f_left)
        hg[...], hh[...] = self.get(d_hg), self.get(d_hh)  # the host keeps them for the siblings to come
        return np.array(self.get(f_gain)), np.array(self.get(f_bin)), np.array(self.get(f_left))


# ---- declarations (dtlab.gpu.kernels): the argument types of every launch, the block size on a device ----
_H3 = "float64[:, :, ::1]"
LOSSGUIDE_BUILD = declare_kernel(
    "boosting.lossguide_build", build=lambda: _kernels()[0], blocks=(THREADS_PER_BLOCK,),
    summary="a thread per (node built, feature): its rows added in row order (the CPU's sums), the sibling by "
    "subtraction",
    signatures=(f"void(uint8[:, ::1], int32[::1], int64[::1], int64[::1], int64[::1], {_H3}, {_H3}, float32[::1], "
                f"float32[::1], {_H3}, {_H3})",))
LOSSGUIDE_SCAN = declare_kernel(
    "boosting.lossguide_scan", build=lambda: _kernels()[1], blocks=(THREADS_PER_BLOCK,),
    summary="a thread per (feature, node): the numeric bin scan of the level-wise finder",
    signatures=(f"void({_H3}, {_H3}, int64[::1], float64[::1], float64[::1], bool[::1], float64, float64, "
                f"float32[::1], {_H3}, float64[:, ::1], int64[:, ::1], bool[:, ::1])",))
LOSSGUIDE_CATEGORICAL = declare_kernel(
    "boosting.lossguide_categorical", build=lambda: _kernels()[2], blocks=(THREADS_PER_BLOCK,),
    summary="a thread per (categorical feature, node): categories by G/H, the best prefix (or one-hot)",
    signatures=(f"void(int64[::1], {_H3}, {_H3}, int64[::1], float64[::1], float64[::1], bool[::1], float64, "
                "float64, int64, int64[:, ::1], float64[:, ::1], float64[:, ::1], bool[:, ::1])",))
