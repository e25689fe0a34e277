"""CPU kernel of GDT's fitness evaluation on CSR data (numba): every tree of a batch over a range of rows.

The statistics are those of :mod:`._cpu` on the dense matrix, bit for bit:
the same leaf for every row (implicit entries are 0.0; a stored float32 value
compares with the float64 threshold as the dense walk compares it), the same
draw hash of the same global row id, the same two smallest ``(hash, row)`` keys.

How a row's values are read while its trees are walked (``scatter``):

* ``scatter=True``: the row's stored entries are written into a dense buffer of
  ``n_features`` values owned by the thread (zeros elsewhere), every tree of
  the batch is walked over that buffer with the dense walk, and the entries are
  zeroed again -- ``2 * nnz(row)`` writes per row, then each test is one read;
* ``scatter=False``: every test binary-searches the row's sorted ``indices``
  (:func:`dtlab.evolution._sparse.csr_value`) -- no buffer, ``log2(nnz(row))``
  reads per test.

A population evaluates tens of trees of several tests on each row, so the
scatter's cost is shared by all of them; the evaluator uses it (measured:
see the report of ``tests/evolution/test_gdt_sparse.py``'s timing in the
module docstring of :mod:`.sparse`).  The CUDA kernel searches (a GPU thread
has no room for a buffer of ``n_features`` values).
"""

from __future__ import annotations

import numba
import numpy as np

from ...trees.walk import cpu_walks
from .._sparse import _csr_find_leaf
from ._cpu import _merge_into, _splitmix64, offer_candidate
from .draws import EMPTY_HASH

_find_leaf = cpu_walks()["find_leaf"]


@numba.njit(nogil=True, inline="always")
def _csr_rows_through_trees(X, y, start, stop, row_offset, seed, scatter, buf, node_offset, feature, threshold, left,
                            right, missing_left, tree_salt, counts, cand_hash, cand_row):
    """Rows ``start:stop`` of CSR ``X = (indptr, indices, data)`` through every tree, recorded in the statistics.

    ``buf`` : float array of shape (1, n_features), zeros; used (and left zeros) when ``scatter``.
    """
    indptr, indices, data = X
    n_trees = node_offset.shape[0] - 1
    for row in range(start, stop):
        if scatter:
            for k in range(indptr[row], indptr[row + 1]):
                buf[0, indices[k]] = data[k]
        row_hash = _splitmix64(seed ^ np.uint64(row_offset + row))
        c = y[row]
        for t in range(n_trees):
            if scatter:
                leaf = _find_leaf(buf, 0, node_offset[t], feature, threshold, left, right, missing_left)
            else:
                leaf = _csr_find_leaf(X, row, node_offset[t], feature, threshold, left, right, missing_left)
            counts[leaf, c] += 1
            h = row_hash ^ tree_salt[t]
            if h <= cand_hash[leaf, c, 1]:  # most rows lose to the slot's second-smallest hash
                (cand_hash[leaf, c, 0], cand_row[leaf, c, 0], cand_hash[leaf, c, 1],
                 cand_row[leaf, c, 1]) = offer_candidate(h, np.int64(row_offset + row), cand_hash[leaf, c, 0],
                                                         cand_row[leaf, c, 0], cand_hash[leaf, c, 1],
                                                         cand_row[leaf, c, 1])
        if scatter:
            for k in range(indptr[row], indptr[row + 1]):
                buf[0, indices[k]] = 0


def _evaluate_csr(X, y, start, stop, row_offset, seed, scatter, n_features, node_offset, feature, threshold, left,
                  right, missing_left, tree_salt, n_blocks, counts, cand_hash, cand_row):
    """Batched evaluation of CSR rows ``start:stop`` in ``n_blocks`` row blocks, then a merge of their statistics.

    Parameters
    ----------
    X : tuple (indptr int64 (n_rows + 1,), indices int32 (nnz,), data float32/float64 (nnz,))
        Canonical CSR (sorted indices per row, no duplicates).
    y : ndarray of shape (n_rows,), int32
    start, stop, row_offset : int64
        Rows evaluated; the global id of row 0 of ``X``.
    seed : uint64
    scatter : bool
        Read values from a per-block dense row buffer (True) or by binary search (False).
    n_features : int64
    node_offset, feature, threshold, left, right, missing_left : the PackedForest arrays
    tree_salt : ndarray of shape (n_trees,), uint64
    n_blocks : int64
        Row blocks (threads with ``parallel=True``); 1 writes the outputs directly.
    counts, cand_hash, cand_row :
        outputs, initialised by the caller and accumulated into.
    """
    data = X[2]
    if n_blocks == 1:
        buf = np.zeros((1, n_features if scatter else 1), data.dtype)
        _csr_rows_through_trees(X, y, start, stop, row_offset, seed, scatter, buf, node_offset, feature, threshold,
                                left, right, missing_left, tree_salt, counts, cand_hash, cand_row)
        return
    n_rows = stop - start
    n_nodes, n_classes = counts.shape
    block_counts = np.zeros((n_blocks, n_nodes, n_classes), np.int64)
    block_hash = np.full((n_blocks, n_nodes, n_classes, 2), EMPTY_HASH, np.uint64)
    block_row = np.full((n_blocks, n_nodes, n_classes, 2), -1, np.int64)
    for b in numba.prange(n_blocks):
        buf = np.zeros((1, n_features if scatter else 1), data.dtype)
        _csr_rows_through_trees(X, y, start + (b * n_rows) // n_blocks, start + ((b + 1) * n_rows) // n_blocks,
                                row_offset, seed, scatter, buf, node_offset, feature, threshold, left, right,
                                missing_left, tree_salt, block_counts[b], block_hash[b], block_row[b])
    for b in range(n_blocks):
        _merge_into(counts, cand_hash, cand_row, block_counts[b], block_hash[b], block_row[b])


_evaluate_csr_parallel = numba.njit(_evaluate_csr, parallel=True, nogil=True, cache=True)
_evaluate_csr_serial = numba.njit(_evaluate_csr, parallel=False, nogil=True, cache=True)
