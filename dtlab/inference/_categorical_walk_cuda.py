"""The CUDA kernels of :mod:`.categorical_walk`: one thread per row walks every tree with the categorical set test
(:func:`dtlab.trees.categorical.descend_categorical` as a device function), trees in order -- the CPU's sums."""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from ..gpu.kernels import declare_kernel, variants
from ..gpu.launch import grid_for, launch
from ..trees.categorical import cuda_functions

THREADS_PER_BLOCK = 128


@functools.lru_cache(maxsize=1)
def _cuda_kernels():
    """The two kernels (built once: the launch helper knows a kernel by its code)."""
    descend = cuda_functions()["descend_categorical"]

    @cuda.jit
    def sum_kernel(X, node_offset, feature, threshold, left, right, missing_left, cat_index, cat_offset, cat_words,
                   cat_out_left, value, tree_column, out):
        row = cuda.grid(1)
        if row < X.shape[0]:
            for t in range(node_offset.shape[0] - 1):
                leaf = descend(X, row, node_offset[t], feature, threshold, left, right, missing_left, cat_index,
                               cat_offset, cat_words, cat_out_left)
                for v in range(value.shape[1]):
                    out[row, tree_column[t] + v] += value[leaf, v]

    @cuda.jit
    def leaf_kernel(X, node_offset, feature, threshold, left, right, missing_left, cat_index, cat_offset, cat_words,
                    cat_out_left, out):
        row = cuda.grid(1)
        if row < X.shape[0]:
            for t in range(node_offset.shape[0] - 1):
                root = node_offset[t]
                out[row, t] = descend(X, row, root, feature, threshold, left, right, missing_left, cat_index,
                                      cat_offset, cat_words, cat_out_left) - root

    return sum_kernel, leaf_kernel


def on_device(ensemble, tables: tuple, X: np.ndarray, backend, what: str) -> np.ndarray:
    """The sums (``what="sum"``, float64 (n_samples, n_outputs)) or leaves (int32 (n_samples, n_trees)) of
    :mod:`.categorical_walk` on the device, one thread per row; host result."""
    backend.check_fits(X.nbytes, "the rows to predict")
    xp = backend.xp
    sum_kernel, leaf_kernel = _cuda_kernels()
    arrays = [xp.asarray(a) for a in tables]
    d_X = xp.asarray(np.ascontiguousarray(X))
    grid = grid_for(X.shape[0], THREADS_PER_BLOCK)
    if what == "sum":
        out = xp.zeros((X.shape[0], ensemble.n_outputs), np.float64)
        if X.shape[0]:
            launch(sum_kernel, grid, THREADS_PER_BLOCK, d_X, *arrays, xp.asarray(ensemble.forest.value),
                   xp.asarray(np.ascontiguousarray(ensemble.tree_column, np.int64)), out)
    else:
        out = xp.empty((X.shape[0], ensemble.forest.n_trees), np.int32)
        if X.shape[0]:
            launch(leaf_kernel, grid, THREADS_PER_BLOCK, d_X, *arrays, out)
    return backend.to_host(out)


# ---- declarations (dtlab.gpu.kernels): the argument types of every launch, the block size on a device ----
_TABLES = ("{X}[:, ::1], int64[::1], int32[::1], float64[::1], int32[::1], int32[::1], bool[::1], int32[::1], "
           "int64[::1], uint32[::1], bool[::1]")
CATEGORICAL_SUM = declare_kernel(
    "inference.categorical_sum", build=lambda: _cuda_kernels()[0], blocks=(THREADS_PER_BLOCK,),
    summary="a thread per row: every tree walked with the categorical set test, its leaf values added in tree order",
    signatures=variants("void(" + _TABLES + ", float64[:, ::1], int64[::1], float64[:, ::1])",
                        X=("float32", "float64")))
CATEGORICAL_LEAVES = declare_kernel(
    "inference.categorical_leaves", build=lambda: _cuda_kernels()[1], blocks=(THREADS_PER_BLOCK,),
    summary="a thread per row: the leaf reached in every tree (Forest.apply), with the categorical set test",
    signatures=variants("void(" + _TABLES + ", int32[:, ::1])", X=("float32", "float64")))
