"""Prediction and leaf indices of forests with categorical splits, on the CPU and CUDA.

A tree with categorical nodes (:mod:`dtlab.trees.categorical`) is walked by
:func:`~dtlab.trees.categorical.descend_categorical`, the one walk with the
set-membership test, compiled for the CPU (inlined into a ``prange`` loop over
rows) and as a CUDA device function (one thread per row).  These kernels also
serve :meth:`dtlab.inference.Forest.apply` for any forest (a forest without
categorical nodes has none to test).
"""

from __future__ import annotations

import numba
import numpy as np

from ..trees.categorical import CategoricalSplits, cpu_functions

_descend = cpu_functions()["descend_categorical"]

THREADS_PER_BLOCK = 128


@numba.njit(parallel=True, nogil=True, cache=True)
def _sum_leaves(X, node_offset, feature, threshold, left, right, missing_left, cat_index, cat_offset, cat_words,
                cat_out_left, value, tree_column, out):
    """``out[row, tree_column[t] + v] += value[leaf_t(row), v]`` for every tree ``t``, trees in order."""
    n_values = value.shape[1]
    for row in numba.prange(X.shape[0]):
        for t in range(node_offset.shape[0] - 1):
            leaf = _descend(X, row, node_offset[t], feature, threshold, left, right, missing_left, cat_index,
                            cat_offset, cat_words, cat_out_left)
            c = tree_column[t]
            for v in range(n_values):
                out[row, c + v] += value[leaf, v]


@numba.njit(parallel=True, nogil=True, cache=True)
def _leaves(X, node_offset, feature, threshold, left, right, missing_left, cat_index, cat_offset, cat_words,
            cat_out_left, out):
    """``out[row, t]``: the tree-local index of the leaf row ``row`` reaches in tree ``t``."""
    for row in numba.prange(X.shape[0]):
        for t in range(node_offset.shape[0] - 1):
            root = node_offset[t]
            out[row, t] = _descend(X, row, root, feature, threshold, left, right, missing_left, cat_index,
                                   cat_offset, cat_words, cat_out_left) - root


def _tables(ensemble) -> tuple:
    """The forest's node arrays and its categorical tables (empty ones where it has no categorical node)."""
    f = ensemble.forest
    cat = ensemble.categorical
    if cat is None:
        cat = CategoricalSplits(np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.uint32),
                                np.zeros(0, bool))
    return (f.node_offset, f.feature, f.threshold, f.left, f.right, f.missing_left, cat.node_table(f.n_nodes),
            cat.offset, cat.words, cat.out_left)


def raw_sum(ensemble, X: np.ndarray) -> np.ndarray:
    """Sum of the leaf values per row and output column on the CPU, shape (n_samples, n_outputs), float64."""
    out = np.zeros((X.shape[0], ensemble.n_outputs))
    if X.shape[0]:
        _sum_leaves(X, *_tables(ensemble), ensemble.forest.value, ensemble.tree_column, out)
    return out


def leaves(ensemble, X: np.ndarray) -> np.ndarray:
    """Tree-local leaf index of every row in every tree on the CPU, shape (n_samples, n_trees), int32."""
    out = np.empty((X.shape[0], ensemble.forest.n_trees), np.int32)
    if X.shape[0]:
        _leaves(X, *_tables(ensemble), out)
    return out


def raw_sum_cuda(ensemble, X: np.ndarray, backend) -> np.ndarray:
    """:func:`raw_sum` on the GPU (one thread per row, trees in order: the same sums); host result."""
    from ._categorical_walk_cuda import on_device

    return on_device(ensemble, _tables(ensemble), X, backend, "sum")


def leaves_cuda(ensemble, X: np.ndarray, backend) -> np.ndarray:
    """:func:`leaves` on the GPU; host result."""
    from ._categorical_walk_cuda import on_device

    return on_device(ensemble, _tables(ensemble), X, backend, "leaves")
