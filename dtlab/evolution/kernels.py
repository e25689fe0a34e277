"""Fitness-evaluation kernels of GDT: per-row tree walks, leaf statistics, dipole draws.

The work is the paper's ``fitnesspre`` / ``fitnesspost`` pair (Jurczuk,
Czajkowski, Kretowski, Applied Intelligence 2021, section 3.3): every training
row walks every tree of a batch to its leaf, adds one to that leaf's count of
its class, and takes part in an order-independent draw of two objects per
(leaf, class); then the partial results of blocks of rows are merged.

Order independence.  A row's draw key is ``(hash, row id)`` with
``hash = splitmix64(seed ^ global_row) ^ tree_salt[t]``; each (leaf, class)
keeps the two rows with the smallest keys.  The smallest keys of a union are
the smallest of the parts' smallest keys, so any split of the rows into blocks,
shards or devices, in any order, gives the same two rows.

The per-row functions below (:func:`splitmix64`, :func:`key_less`,
:func:`insert_candidate`, :func:`accumulate_row`, with the tree walk of
:mod:`dtlab.trees.walk`) keep the rules of :mod:`dtlab._jit`, so they compile
with ``numba.njit`` here and unchanged with ``numba.cuda.jit(device=True)`` for
a GPU evaluator (:func:`compile_row_functions`; tested under the CUDA
simulator).  They update their accumulators without atomics, so a GPU kernel
must hand each caller accumulators that no other thread writes at the same
time (e.g. one copy per thread for a chunk of rows) and reduce the copies
afterwards, as the paper's ``fitnesspost`` reduces its per-block copies.

The CPU kernel (:func:`_evaluate_range`) uses the same hash and draw but
finds leaves differently: for a chunk of rows at a time, each tree with at
most 64 leaves runs the branch-free leaf bitmasks of
:mod:`dtlab.trees.bitmask` over contiguous feature columns (SIMD code, no
branch mispredictions), and only larger trees are walked: faster than the
row-by-row walk of :func:`accumulate_row` on evolved populations, with
bit-identical statistics (the evaluator's measured speed:
``evolution_evaluator_throughput`` in ``figures/results.json``).
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import compile_functions
from ..trees.bitmask import masked_leaves
from ..trees.walk import compile_walks, cpu_walks

#: Hash value of an empty candidate slot (its row is -1).
EMPTY_HASH = np.uint64(0xFFFFFFFFFFFFFFFF)

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


def splitmix64(x):
    """SplitMix64 finaliser: a bijective 64-bit mix (Steele et al., 2014).

    Works on a numba ``uint64`` scalar and, vectorised, on a numpy ``uint64``
    array (numpy wraps array arithmetic modulo 2**64 like C).

    Parameters
    ----------
    x : uint64 scalar or ndarray of uint64

    Returns
    -------
    uint64 scalar or ndarray of uint64
    """
    z = x + _GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


_INV_MIX1 = np.uint64(pow(0xBF58476D1CE4E5B9, -1, 2**64))
_INV_MIX2 = np.uint64(pow(0x94D049BB133111EB, -1, 2**64))
_S60 = np.uint64(60)
_S54 = np.uint64(54)
_S62 = np.uint64(62)


def unsplitmix64(z):
    """The inverse of :func:`splitmix64`: ``unsplitmix64(splitmix64(x)) == x`` for every uint64 ``x``.

    A draw hash is ``splitmix64(seed ^ row) ^ salt``, a bijection of the row id,
    so a kernel that keeps only the smallest hashes of a leaf (with atomic
    minima, as the CUDA evaluator does) recovers their rows exactly:
    ``row = unsplitmix64(hash ^ salt) ^ seed``.  Scalar (numba) or ndarray of uint64.
    """
    z = z ^ (z >> _S31) ^ (z >> _S62)  # x ^= x >> s is undone by x ^ (x >> s) ^ (x >> 2s) ^ ... (s >= 22)
    z = z * _INV_MIX2
    z = z ^ (z >> _S27) ^ (z >> _S54)
    z = z * _INV_MIX1
    z = z ^ (z >> _S30) ^ (z >> _S60)
    return z - _GOLDEN


def key_less(h, r, h2, r2):
    """Whether draw key ``(h, r)`` sorts before slot ``(h2, r2)``; an empty slot (``r2 < 0``) sorts last."""
    # hash first: the common case (h far from h2) decides in one comparison; an empty slot
    # has hash EMPTY_HASH, so only a real hash equal to it reaches the row test
    if h != h2:
        return h < h2
    if r2 < 0:
        return True
    return r < r2


def insert_candidate(cand_hash, cand_row, node, c, h, r):
    """Offer row ``r`` with hash ``h`` to the two-smallest slots of ``(node, c)``.

    Parameters
    ----------
    cand_hash : ndarray of shape (n_nodes, n_classes, 2), uint64
    cand_row : ndarray of shape (n_nodes, n_classes, 2), int64
        Slot 0 holds the smallest key, slot 1 the second; modified in place.
    """
    if key_less(h, r, cand_hash[node, c, 1], cand_row[node, c, 1]):
        if key_less(h, r, cand_hash[node, c, 0], cand_row[node, c, 0]):
            cand_hash[node, c, 1] = cand_hash[node, c, 0]
            cand_row[node, c, 1] = cand_row[node, c, 0]
            cand_hash[node, c, 0] = h
            cand_row[node, c, 0] = r
        else:
            cand_hash[node, c, 1] = h
            cand_row[node, c, 1] = r


def tree_salts(seed, n_trees: int) -> np.ndarray:
    """Per-tree salts of the draw for a batch evaluated with ``seed``: uint64 array of shape (n_trees,).

    Salting each tree makes different trees draw different objects from the same region.
    """
    return splitmix64(np.uint64(seed) ^ (np.arange(n_trees, dtype=np.uint64) + np.uint64(1)))


def accumulate_row(X, y, row, global_row, row_hash, node_offset, feature, threshold, left, right,
                   missing_left, tree_salt, counts, cand_hash, cand_row):
    """Walk row ``row`` through every tree of a packed batch and record it in the reached leaves.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features), float32 or float64
    y : ndarray of shape (n_rows,), int32 class codes
    row : int
        Local row index in ``X``.
    global_row : int64
        Row id in the whole data set (shard start + row): what the draw hashes
        and what is recorded.
    row_hash : uint64
        ``splitmix64(seed ^ global_row)``, computed once per row.
    node_offset : ndarray of shape (n_trees + 1,), int64
        Tree ``t`` occupies packed nodes ``node_offset[t]:node_offset[t+1]``, root first.
    feature, left, right, threshold, missing_left :
        The :class:`~dtlab.trees.PackedForest` arrays.
    tree_salt : ndarray of shape (n_trees,), uint64
        :func:`tree_salts` of the batch.
    counts : ndarray of shape (n_nodes_total, n_classes), int64, accumulated in place
    cand_hash, cand_row : ndarrays of shape (n_nodes_total, n_classes, 2), updated in place
    """
    c = y[row]
    for t in range(node_offset.shape[0] - 1):
        leaf = find_leaf(X, row, node_offset[t], feature, threshold, left, right, missing_left)  # noqa: F821
        counts[leaf, c] += 1
        h = row_hash ^ tree_salt[t]
        # cheap filter first: most rows lose to the slot's second-smallest hash (ties and empty
        # slots, whose hash is EMPTY_HASH, pass on to the exact comparison)
        if h <= cand_hash[leaf, c, 1]:
            insert_candidate(cand_hash, cand_row, leaf, c, h, global_row)


def compile_row_functions(jit) -> dict:
    """Compile the per-row functions, and the tree walk they call, with decorator ``jit``.

    ``jit`` is e.g. ``numba.njit(cache=True)`` here, or
    ``numba.cuda.jit(device=True)`` in a GPU evaluator (see :mod:`dtlab._jit`).

    Returns
    -------
    dict mapping ``"splitmix64"``, ``"key_less"``, ``"insert_candidate"``,
    ``"find_leaf"`` and ``"accumulate_row"`` to compiled functions.
    """
    walk = {"find_leaf": compile_walks(jit)["find_leaf"]}
    return compile_functions((splitmix64, key_less, insert_candidate, accumulate_row), jit, walk)


# inline="always": the per-row functions take a dozen arrays each, and as real calls their
# argument passing costs as much as the walk itself
_compiled = compile_row_functions(numba.njit(cache=True, nogil=True, inline="always"))
_splitmix64 = _compiled["splitmix64"]
_insert_candidate = _compiled["insert_candidate"]
# a call, not inlined: only trees over 64 leaves are walked (their walks are long), and inlining the walk
# into the bitmask loop of _evaluate_range made that hot loop slower
_find_leaf_columns = cpu_walks(inline=False)["find_leaf_columns"]
_record_margins = cpu_walks()["record_margins"]


#: Rows a kernel thread takes at a time: all trees of the batch visit them while their
#: columns (features x ROW_CHUNK values) stay in the L1/L2 cache.
ROW_CHUNK = 1024


def _evaluate_range(Xt, y, start, stop, row_offset, seed, node_offset, feature, threshold, left, right, missing_left,
                    tree_salt, masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node,
                    n_blocks, counts, cand_hash, cand_row):
    """Batched evaluation of rows ``start:stop``, then a reduction of the blocks' private statistics.

    The rows are split into ``n_blocks`` blocks (numba threads with
    ``parallel=True``); a block takes :data:`ROW_CHUNK` rows at a time and
    runs every tree of the batch over them, so the data are read once per
    batch.  A tree with at most 64 leaves finds its leaves with the
    branch-free leaf bitmasks of :mod:`dtlab.trees.bitmask` (``masked[t]``,
    the ``test_*``/``leaf_*`` arrays of a
    :class:`~dtlab.trees.bitmask.ForestMasks`); a larger one is walked.

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
    counts, cand_hash, cand_row :
        outputs, initialised by the caller (zeros, :data:`EMPTY_HASH`, -1) and
        accumulated into, so a caller may chain calls over row ranges.

    Compiled twice: ``parallel=True`` (one call over all threads) and
    ``parallel=False`` (one host thread per CPU worker of the device pool, each on its own shard).
    """
    n_rows = stop - start
    n_nodes = feature.shape[0]
    n_classes = counts.shape[1]
    n_trees = node_offset.shape[0] - 1
    block_counts = np.zeros((n_blocks, n_nodes, n_classes), dtype=np.int64)
    block_hash = np.full((n_blocks, n_nodes, n_classes, 2), EMPTY_HASH, dtype=np.uint64)
    block_row = np.full((n_blocks, n_nodes, n_classes, 2), -1, dtype=np.int64)
    for b in numba.prange(n_blocks):
        block_start = start + (b * n_rows) // n_blocks
        block_stop = start + ((b + 1) * n_rows) // n_blocks
        bc = block_counts[b]
        bh = block_hash[b]
        br = block_row[b]
        bits = np.empty(ROW_CHUNK, np.uint64)
        leaves = np.empty(ROW_CHUNK, np.int32)
        row_hash = np.empty(ROW_CHUNK, np.uint64)
        for chunk in range(block_start, block_stop, ROW_CHUNK):
            chunk_stop = min(chunk + ROW_CHUNK, block_stop)
            for i in range(chunk_stop - chunk):
                row_hash[i] = _splitmix64(seed ^ np.uint64(row_offset + chunk + i))
            for t in range(n_trees):
                if masked[t]:
                    masked_leaves(Xt, chunk, chunk_stop, t, test_offset, test_feature, test_threshold, test_mask,
                                  leaf_offset, leaf_node, bits, leaves)
                else:
                    for i in range(chunk_stop - chunk):
                        leaves[i] = _find_leaf_columns(Xt, chunk + i, node_offset[t], feature, threshold, left, right,
                                                       missing_left)
                salt = tree_salt[t]
                for i in range(chunk_stop - chunk):
                    leaf = leaves[i]
                    c = y[chunk + i]
                    bc[leaf, c] += 1
                    h = row_hash[i] ^ salt
                    # cheap filter first: most rows lose to the slot's second-smallest hash (ties and
                    # empty slots, whose hash is EMPTY_HASH, pass on to the exact comparison)
                    if h <= bh[leaf, c, 1]:
                        _insert_candidate(bh, br, leaf, c, h, np.int64(row_offset + chunk + i))
    # fitnesspost: reduce the blocks' copies of the statistics (paper, Listing 3)
    for node in numba.prange(n_nodes):
        for b in range(n_blocks):
            for c in range(n_classes):
                counts[node, c] += block_counts[b, node, c]
                for s in range(2):
                    if block_row[b, node, c, s] >= 0:
                        _insert_candidate(cand_hash, cand_row, node, c, block_hash[b, node, c, s],
                                          block_row[b, node, c, s])


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


@numba.njit(nogil=True, cache=True)
def _propagate_up(left, right, counts, cand_hash, cand_row):
    """Fill internal nodes' statistics from their children (paper, section 3.2: leaves toward the root).

    Requires every child to come after its parent in the packed order (the
    breadth-first layout of :class:`~dtlab.evolution.individual.Individual`),
    so one reverse sweep sees children before parents.  Internal nodes get the
    summed class counts and the two smallest-key rows of each class in their
    subtree (exactly what a draw over the node's objects would give).
    """
    n_nodes, n_classes = counts.shape
    for node in range(n_nodes - 1, -1, -1):
        a = left[node]
        if a == -1:
            continue
        b = right[node]
        for c in range(n_classes):
            counts[node, c] = counts[a, c] + counts[b, c]
            cand_hash[node, c, 0] = EMPTY_HASH
            cand_hash[node, c, 1] = EMPTY_HASH
            cand_row[node, c, 0] = -1
            cand_row[node, c, 1] = -1
            for child in (a, b):
                for s in range(2):
                    if cand_row[child, c, s] >= 0:
                        _insert_candidate(cand_hash, cand_row, node, c, cand_hash[child, c, s],
                                          cand_row[child, c, s])


@numba.njit(nogil=True, cache=True)
def _margins(X, feature, threshold, left, right, missing_left, below, above):
    """Per test of one tree, the largest training value sent left and the smallest sent right (in place)."""
    for row in range(X.shape[0]):
        _record_margins(X, row, feature, threshold, left, right, missing_left, below, above)
