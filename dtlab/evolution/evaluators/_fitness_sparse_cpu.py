"""CPU kernel of GDT's fitness evaluation on CSR data (numba): every tree of a batch over a range of rows.

The statistics are those of :mod:`._fitness_cpu` on the dense matrix, bit for bit:
the same leaf for every row (implicit entries are 0.0; a stored float32 value
compares with the float64 threshold as the dense walk compares it), the same
draw hash of the same global row id, the same two smallest ``(hash, row)`` keys.

How the rows' values are read while the trees are walked (``scatter``):

* ``scatter=True`` (the evaluator's choice): a thread writes the stored
  entries of up to :data:`~._fitness_cpu.ROW_CHUNK` rows into its transposed dense
  block (n_features x rows, zeros elsewhere; fewer rows where there are many
  features, :func:`block_rows`), runs the block through the dense kernel's
  :func:`~._fitness_cpu._rows_through_trees` (leaf bitmasks in SIMD code for trees of
  at most 64 leaves, walks for larger ones), and zeroes the written entries
  again: ``2 * nnz`` writes per chunk, never ``n_features`` per row, and the
  block is as large as the dense kernel's chunk, so it stays in the cache;
* ``scatter=False``: every row walks every tree, each test binary-searching
  the row's sorted ``indices`` (:func:`dtlab.evolution._sparse.csr_value`):
  no buffer, ``log2(nnz(row))`` reads per test.

Chosen by measurement (20,000 rows of Chess3x3 with 98 noise attributes at
5% density, 50 random trees of depth up to 5, one thread, medians of 7):
binary search 0.31 s, a per-row dense buffer walked tree by tree 0.14 s,
the dense blocks 0.0111 s (0.0102-0.0114), the dense evaluator on
``X.toarray()`` 0.0109 s (0.0100-0.0112).  The CUDA kernel searches (a GPU thread has no room for a dense row).
"""

from __future__ import annotations

import numba
import numpy as np

from .._sparse import _csr_find_leaf
from ._fitness_cpu import ROW_CHUNK, _merge_into, _rows_through_trees, _splitmix64, offer_candidate
from .draws import EMPTY_HASH

#: Values of one thread's dense block (float32: 1 MiB): ROW_CHUNK rows up to 256 features, fewer rows beyond.
BLOCK_VALUES = 256 * 1024


def block_rows(n_features: int) -> int:
    """Rows of a thread's dense block: :data:`~._fitness_cpu.ROW_CHUNK`, fewer where ``n_features`` is large."""
    return max(1, min(ROW_CHUNK, BLOCK_VALUES // max(int(n_features), 1)))


@numba.njit(nogil=True, inline="always")
def _csr_rows_through_trees(X, y, start, stop, row_offset, seed, scatter, buf, trees, node_offset, feature, threshold,
                            left, right, missing_left, tree_salt, masked, test_offset, test_feature, test_threshold,
                            test_mask, leaf_offset, leaf_node, counts, cand_hash, cand_row):
    """Rows ``start:stop`` of CSR ``X = (indptr, indices, data)`` through every tree, recorded in the statistics.

    ``scatter``: ``buf.shape[1]`` rows at a time are written into the transposed dense block ``buf`` (shape
    (n_features, rows), zeros elsewhere) and run through the dense kernel's
    :func:`~._fitness_cpu._rows_through_trees`; then only the written entries are zeroed again.  Else each row
    walks each tree, binary-searching its values.
    """
    indptr, indices, data = X
    if scatter:
        chunk_rows = buf.shape[1]
        for chunk in range(start, stop, chunk_rows):
            end = min(chunk + chunk_rows, stop)
            for row in range(chunk, end):
                for k in range(indptr[row], indptr[row + 1]):
                    buf[indices[k], row - chunk] = data[k]
            _rows_through_trees(buf, y[chunk:end], 0, end - chunk, row_offset + chunk, seed, trees, node_offset,
                                feature, threshold, left, right, missing_left, tree_salt, masked, test_offset,
                                test_feature, test_threshold, test_mask, leaf_offset, leaf_node, counts, cand_hash,
                                cand_row)
            for row in range(chunk, end):
                for k in range(indptr[row], indptr[row + 1]):
                    buf[indices[k], row - chunk] = 0
        return
    for row in range(start, stop):
        row_hash = _splitmix64(seed ^ np.uint64(row_offset + row))
        c = y[row]
        for t in trees:
            leaf = _csr_find_leaf(X, row, node_offset[t], feature, threshold, left, right, missing_left)
            counts[leaf, c] += 1
            h = row_hash ^ tree_salt[t]
            if h <= cand_hash[leaf, c, 1]:  # most rows lose to the slot's second-smallest hash
                (cand_hash[leaf, c, 0], cand_row[leaf, c, 0], cand_hash[leaf, c, 1],
                 cand_row[leaf, c, 1]) = offer_candidate(h, np.int64(row_offset + row), cand_hash[leaf, c, 0],
                                                         cand_row[leaf, c, 0], cand_hash[leaf, c, 1],
                                                         cand_row[leaf, c, 1])


def _evaluate_csr(X, y, start, stop, row_offset, seed, scatter, n_features, rows_per_block, node_offset, feature,
                  threshold, left, right, missing_left, tree_salt, masked, test_offset, test_feature, test_threshold,
                  test_mask, leaf_offset, leaf_node, n_blocks, counts, cand_hash, cand_row):
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
        Dense blocks through the dense kernel (True) or binary-search walks (False), see the module docstring.
    n_features, rows_per_block : int64
        The dense blocks' shape (n_features, rows_per_block) with ``scatter`` (:func:`block_rows`).
    node_offset, feature, threshold, left, right, missing_left : the PackedForest arrays
    tree_salt : ndarray of shape (n_trees,), uint64
    masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node :
        the batch's :class:`~dtlab.trees.bitmask.ForestMasks` (thresholds rounded to the data's dtype).
    n_blocks : int64
        Row blocks (threads with ``parallel=True``); 1 writes the outputs directly.
    counts, cand_hash, cand_row :
        outputs, initialised by the caller and accumulated into.
    """
    data = X[2]
    trees = np.arange(node_offset.shape[0] - 1)
    shape = (n_features, rows_per_block) if scatter else (1, 1)
    if n_blocks == 1:
        _csr_rows_through_trees(X, y, start, stop, row_offset, seed, scatter, np.zeros(shape, data.dtype), trees,
                                node_offset, feature, threshold, left, right, missing_left, tree_salt, masked,
                                test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node, counts,
                                cand_hash, cand_row)
        return
    n_rows = stop - start
    n_nodes, n_classes = counts.shape
    block_counts = np.zeros((n_blocks, n_nodes, n_classes), np.int64)
    block_hash = np.full((n_blocks, n_nodes, n_classes, 2), EMPTY_HASH, np.uint64)
    block_row = np.full((n_blocks, n_nodes, n_classes, 2), -1, np.int64)
    for b in numba.prange(n_blocks):
        _csr_rows_through_trees(X, y, start + (b * n_rows) // n_blocks, start + ((b + 1) * n_rows) // n_blocks,
                                row_offset, seed, scatter, np.zeros(shape, data.dtype), trees, node_offset, feature,
                                threshold, left, right, missing_left, tree_salt, masked, test_offset, test_feature,
                                test_threshold, test_mask, leaf_offset, leaf_node, block_counts[b], block_hash[b],
                                block_row[b])
    for b in range(n_blocks):
        _merge_into(counts, cand_hash, cand_row, block_counts[b], block_hash[b], block_row[b])


_evaluate_csr_parallel = numba.njit(_evaluate_csr, parallel=True, nogil=True, cache=True)
_evaluate_csr_serial = numba.njit(_evaluate_csr, parallel=False, nogil=True, cache=True)
