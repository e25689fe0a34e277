"""The order-independent draw of GDT's fitness evaluation: row hashes and the two smallest keys per leaf.

Every training row walks every tree of a batch to its leaf, adds one to that
leaf's count of its class, and takes part in a draw of two objects per (leaf,
class) -- the paper's ``fitnesspre`` / ``fitnesspost`` pair (Jurczuk,
Czajkowski, Kretowski, Applied Intelligence 2021, section 3.3).

Order independence.  A row's draw key is ``(hash, row id)`` with
``hash = splitmix64(seed ^ global_row) ^ tree_salt[t]``; each (leaf, class)
keeps the two rows with the smallest keys.  The smallest keys of a union are
the smallest of the parts' smallest keys, so any split of the rows into blocks,
shards or devices, in any order, gives the same two rows.

The per-row functions here (:func:`key_less`, :func:`insert_candidate`,
:func:`accumulate_row`, with the hash :func:`dtlab._hashing.splitmix64` and the
tree walk of :mod:`dtlab.trees.walk`) are plain functions that keep the rules of
:mod:`dtlab._jit`: the CPU kernels (:mod:`._fitness_cpu`) compile them with
``numba.njit`` and the CUDA kernels (:mod:`._fitness_cuda`) with
``numba.cuda.jit(device=True)`` (:func:`compile_row_functions`; tested under the
CUDA simulator).  They update their accumulators without atomics, so a GPU
kernel must hand each caller accumulators that no other thread writes at the
same time (e.g. one copy per thread for a chunk of rows) and reduce the copies
afterwards, as the paper's ``fitnesspost`` reduces its per-block copies.
Nothing here is compiled at import.
"""

from __future__ import annotations

import numpy as np

from ..._hashing import splitmix64
from ..._jit import compile_functions
from ...trees.walk import compile_walks

#: Hash value of an empty candidate slot (its row is -1).
EMPTY_HASH = np.uint64(0xFFFFFFFFFFFFFFFF)


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

