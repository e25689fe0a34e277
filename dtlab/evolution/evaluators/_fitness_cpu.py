"""CPU kernels of GDT's fitness evaluation (numba): every tree of a batch over a range of rows, and merges.

The kernel (:func:`_evaluate_range`) uses the hash and the draw of
:mod:`.draws` but finds leaves its own way: for a chunk of rows at a time, each
tree with at most 64 leaves runs the branch-free leaf bitmasks of
:mod:`dtlab.trees.bitmask` over contiguous feature columns (SIMD code, no
branch mispredictions; 32-bit masks for trees of at most 32 leaves, 16 rows
per AVX-512 instruction), and only larger trees are walked: faster than the
row-by-row walk of :func:`~.draws.accumulate_row` on evolved populations, with
bit-identical statistics (the evaluator's measured speed:
``evolution_evaluator_throughput`` in ``figures/results.json``).  The plain
reference is :mod:`.reference` (NumPy, one tree at a time); the CUDA kernels
are :mod:`._fitness_cuda`.
"""

from __future__ import annotations

import numba
import numpy as np

from ...trees.bitmask import MAX_NARROW_LEAVES, lowest_set_bit, masked_leaves, narrow_leaf_bits
from ...trees.walk import cpu_walks
from .draws import EMPTY_HASH, compile_row_functions

# inline="always": the per-row functions take a dozen arrays each, and as real calls their
# argument passing costs as much as the walk itself
_compiled = compile_row_functions(numba.njit(cache=True, nogil=True, inline="always"))
_splitmix64 = _compiled["splitmix64"]
_insert_candidate = _compiled["insert_candidate"]
# a call, not inlined: only trees over 64 leaves are walked (their walks are long), and inlining the walk
# into the bitmask loop of _evaluate_range made that hot loop slower
_find_leaf_columns = cpu_walks(inline=False)["find_leaf_columns"]


@numba.njit(nogil=True, inline="always")
def _key_before(h, r, h2, r2):
    """:func:`~.draws.key_less` over scalars: ``(h, r)`` sorts before slot ``(h2, r2)`` (empty, ``r2 < 0``: last)."""
    return h < h2 or (h == h2 and (r2 < 0 or r < r2))


@numba.njit(nogil=True, inline="always")
def offer_candidate(h, r, h0, r0, h1, r1):
    """:func:`~.draws.insert_candidate` over scalars: the two slots ``(h0, r0, h1, r1)`` after offering ``(h, r)``.

    Scalars in and out, so the hot loops that call it keep their arrays out of
    the call (no reference counting per call).
    """
    if _key_before(h, r, h1, r1):
        if _key_before(h, r, h0, r0):
            return h, r, h0, r0
        return h0, r0, h, r
    return h0, r0, h1, r1


#: Rows a kernel thread takes at a time: all trees of the batch visit them while their
#: columns (features x ROW_CHUNK values) stay in the L1/L2 cache.
ROW_CHUNK = 1024


@numba.njit(nogil=True, inline="always")
def _rows_through_trees(Xt, y, start, stop, row_offset, seed, trees, node_offset, feature, threshold, left, right,
                        missing_left, tree_salt, masked, test_offset, test_feature, test_threshold, test_mask,
                        leaf_offset, leaf_node, counts, cand_hash, cand_row):
    """Rows ``start:stop`` of ``Xt`` through the trees listed in ``trees``, recorded in ``counts`` / ``cand_*``.

    :data:`ROW_CHUNK` rows at a time, every listed tree visiting them while
    their columns stay in the cache, so the data are read once per call.  A
    tree with at most 32 leaves finds its leaves with 32-bit leaf bitmasks
    (:func:`~dtlab.trees.bitmask.narrow_leaf_bits`) and records each row
    straight from its mask; one with at most 64 with the 64-bit ones
    (``masked[t]``); a larger one is walked.

    The recording loops index with unsigned integers: with signed ones numba
    adds a negative-index correction to every access, which made them a
    fifth slower.  The loop body is written out twice (narrow masks, leaf
    array): a call with the arrays counts references to them on every row,
    several times the cost of the work, and one loop choosing its leaf's
    source per row measured 15-30% slower (the choice stays in the loop).
    """
    bits = np.empty(ROW_CHUNK, np.uint64)
    narrow_bits = np.empty(ROW_CHUNK, np.uint32)
    leaves = np.empty(ROW_CHUNK, np.int32)
    row_hash = np.empty(ROW_CHUNK, np.uint64)
    one = np.uintp(1)
    zero = np.uintp(0)
    for chunk in range(start, stop, ROW_CHUNK):
        chunk_stop = min(chunk + ROW_CHUNK, stop)
        m = chunk_stop - chunk
        for i in range(m):
            row_hash[i] = _splitmix64(seed ^ np.uint64(row_offset + chunk + i))
        for t in trees:
            salt = tree_salt[t]
            first_leaf = np.uintp(leaf_offset[t])
            if masked[t] and leaf_offset[t + 1] - leaf_offset[t] <= MAX_NARROW_LEAVES:
                narrow_leaf_bits(Xt, chunk, chunk_stop, t, test_offset, test_feature, test_threshold, test_mask,
                                 narrow_bits)
                for i in range(m):
                    leaf = np.uintp(leaf_node[first_leaf + np.uintp(lowest_set_bit(np.uint64(narrow_bits[i])))])
                    c = np.uintp(y[chunk + i])
                    counts[leaf, c] += 1
                    h = row_hash[i] ^ salt
                    # cheap filter first: most rows lose to the slot's second-smallest hash (ties and
                    # empty slots, whose hash is EMPTY_HASH, pass on to the exact comparison)
                    if h <= cand_hash[leaf, c, one]:
                        # offer_candidate over scalars: called with the arrays, each call counted
                        # references to them (atomic operations), 20 times the cost of the comparisons
                        (cand_hash[leaf, c, zero], cand_row[leaf, c, zero], cand_hash[leaf, c, one],
                         cand_row[leaf, c, one]) = offer_candidate(h, np.int64(row_offset + chunk + i),
                                                                   cand_hash[leaf, c, zero], cand_row[leaf, c, zero],
                                                                   cand_hash[leaf, c, one], cand_row[leaf, c, one])
                continue
            if masked[t]:
                masked_leaves(Xt, chunk, chunk_stop, t, test_offset, test_feature, test_threshold, test_mask,
                              leaf_offset, leaf_node, bits, leaves)
            else:
                for i in range(m):
                    leaves[i] = _find_leaf_columns(Xt, chunk + i, node_offset[t], feature, threshold, left, right,
                                                   missing_left)
            for i in range(m):  # the loop above, with the leaf read from the array
                leaf = np.uintp(leaves[i])
                c = np.uintp(y[chunk + i])
                counts[leaf, c] += 1
                h = row_hash[i] ^ salt
                if h <= cand_hash[leaf, c, one]:
                    (cand_hash[leaf, c, zero], cand_row[leaf, c, zero], cand_hash[leaf, c, one],
                     cand_row[leaf, c, one]) = offer_candidate(h, np.int64(row_offset + chunk + i),
                                                               cand_hash[leaf, c, zero], cand_row[leaf, c, zero],
                                                               cand_hash[leaf, c, one], cand_row[leaf, c, one])


def _evaluate_range(Xt, y, start, stop, row_offset, seed, node_offset, feature, threshold, left, right, missing_left,
                    tree_salt, masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node,
                    n_blocks, counts, cand_hash, cand_row):
    """Batched evaluation of rows ``start:stop`` in ``n_blocks`` row blocks, then a reduction of their statistics.

    The rows are split into ``n_blocks`` blocks (numba threads with
    ``parallel=True``), each running every tree of the batch over its rows
    (:func:`_rows_through_trees`) into a private copy of the statistics, which
    are then reduced -- the paper's ``fitnesspre`` / ``fitnesspost`` split.
    One block writes the outputs directly.  For batches with fewer trees than
    threads; :func:`_evaluate_trees` splits the trees instead.

    Parameters
    ----------
    Xt : ndarray of shape (n_features, n_samples), float32 or float64, C-contiguous
        The data transposed: one contiguous column per feature.
    y : ndarray of shape (n_samples,), int32 class codes
    start, stop : int64
        Rows of ``Xt`` to evaluate.
    row_offset : int64
        Global id of ``Xt``'s first row: row ``i`` of ``Xt`` is hashed and recorded as
        ``row_offset + i`` (0 for the whole data set, the shard's start for a shard).
    seed : uint64
    node_offset, feature, threshold, left, right, missing_left :
        the :class:`~dtlab.trees.PackedForest` arrays.
    tree_salt : ndarray of shape (n_trees,), uint64, :func:`tree_salts` of the batch
    masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node :
        the batch's :class:`~dtlab.trees.bitmask.ForestMasks`.
    counts, cand_hash, cand_row :
        outputs, initialised by the caller (zeros, :data:`EMPTY_HASH`, -1) and
        accumulated into, so a caller may chain calls over row ranges.

    Compiled twice: ``parallel=True`` (one call over all threads) and
    ``parallel=False`` (one host thread per CPU worker of the device pool, each on its own shard).
    """
    n_rows = stop - start
    n_nodes = feature.shape[0]
    n_classes = counts.shape[1]
    trees = np.arange(node_offset.shape[0] - 1)
    if n_blocks == 1:
        _rows_through_trees(Xt, y, start, stop, row_offset, seed, trees, node_offset, feature, threshold, left, right,
                            missing_left, tree_salt, masked, test_offset, test_feature, test_threshold, test_mask,
                            leaf_offset, leaf_node, counts, cand_hash, cand_row)
        return
    block_counts = np.zeros((n_blocks, n_nodes, n_classes), dtype=np.int64)
    block_hash = np.full((n_blocks, n_nodes, n_classes, 2), EMPTY_HASH, dtype=np.uint64)
    block_row = np.full((n_blocks, n_nodes, n_classes, 2), -1, dtype=np.int64)
    for b in numba.prange(n_blocks):
        _rows_through_trees(Xt, y, start + (b * n_rows) // n_blocks, start + ((b + 1) * n_rows) // n_blocks,
                            row_offset, seed, trees, node_offset, feature, threshold, left, right, missing_left,
                            tree_salt, masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset,
                            leaf_node, block_counts[b], block_hash[b], block_row[b])
    # fitnesspost: reduce the blocks' copies of the statistics (paper, Listing 3)
    for node in numba.prange(n_nodes):
        for b in range(n_blocks):
            for c in range(n_classes):
                counts[node, c] += block_counts[b, node, c]
                for s in range(2):
                    if block_row[b, node, c, s] >= 0:
                        _insert_candidate(cand_hash, cand_row, node, c, block_hash[b, node, c, s],
                                          block_row[b, node, c, s])


@numba.njit(parallel=True, nogil=True, cache=True)
def _evaluate_trees(Xt, y, start, stop, row_offset, seed, node_offset, feature, threshold, left, right, missing_left,
                    tree_salt, masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node,
                    group_offset, group_trees, counts, cand_hash, cand_row):
    """:func:`_evaluate_range` with the trees split among threads instead of the rows.

    Thread ``g`` runs every row through the trees ``group_trees[group_offset[g]:group_offset[g + 1]]``; a
    tree's statistics are its own nodes', written by one thread only, so no private copies and no
    reduction are needed -- what makes a small batch on few rows cheap (the host loop's case).  Groups
    come from :func:`tree_groups`.
    """
    for g in numba.prange(group_offset.shape[0] - 1):
        _rows_through_trees(Xt, y, start, stop, row_offset, seed, group_trees[group_offset[g]:group_offset[g + 1]],
                            node_offset, feature, threshold, left, right, missing_left, tree_salt, masked,
                            test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node, counts,
                            cand_hash, cand_row)


def tree_groups(masks, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """``(group_offset, group_trees)``: the batch's trees dealt to ``n_groups`` threads with about equal work.

    A tree's work per row is its number of tests under the bitmasks, or a walk
    (about a third of a 64-leaf tree's tests); the largest first, each to the
    least loaded group, as longest-processing-time scheduling does.  Compiled
    (:func:`_tree_groups`): it runs before every evaluation.
    """
    return _tree_groups(masks.masked, masks.test_offset, np.int64(n_groups))


@numba.njit(nogil=True, cache=True)
def _tree_groups(masked, test_offset, n_groups):
    n_trees = masked.shape[0]
    work = np.empty(n_trees)
    for t in range(n_trees):
        work[t] = test_offset[t + 1] - test_offset[t] + 4 if masked[t] else 24
    load = np.zeros(n_groups)
    owner = np.empty(n_trees, np.int64)
    count = np.zeros(n_groups, np.int64)
    for t in np.argsort(-work, kind="mergesort"):
        g = np.argmin(load)
        owner[t] = g
        load[g] += work[t]
        count[g] += 1
    offset = np.zeros(n_groups + 1, np.int64)
    for g in range(n_groups):
        offset[g + 1] = offset[g] + count[g]
    order = np.argsort(owner, kind="mergesort")
    return offset, order.astype(np.int64)


_evaluate_range_parallel = numba.njit(_evaluate_range, parallel=True, nogil=True, cache=True)
_evaluate_range_serial = numba.njit(_evaluate_range, parallel=False, nogil=True, cache=True)


@numba.njit(nogil=True, cache=True)
def _merge_into(counts, cand_hash, cand_row, other_counts, other_hash, other_row):
    """Add another part's statistics into ``counts``/``cand_*`` (same node layout), in place."""
    n_nodes, n_classes = counts.shape
    for node in range(n_nodes):
        for c in range(n_classes):
            counts[node, c] += other_counts[node, c]
            for s in range(2):
                if other_row[node, c, s] >= 0:
                    _insert_candidate(cand_hash, cand_row, node, c, other_hash[node, c, s], other_row[node, c, s])

