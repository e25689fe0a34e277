"""Leaf bitmasks of small trees: find a row's leaf with branch-free, vectorisable AND operations.

The scheme of QuickScorer (Lucchese et al., SIGIR 2015).  Number the leaves of
a tree from left to right (in-order), at most 64 of them, and give every test
node a 64-bit mask with zeros at the leaves of its *left* subtree.  A row
starts with all bits set; for every test it fails (``x > threshold``, so it
goes right) the node's mask is ANDed in, removing leaves the row cannot reach.
The row's leaf is the leftmost leaf still set (the lowest set bit): every test
on the row's real path that goes right removed the leaves to the left of the
path, and the tests off the path only remove leaves that are not on it.

Why it is fast on a CPU: the tests of a tree are visited in a fixed order for
every row, so a block of rows is processed column by column with contiguous
loads, one compare and one AND per (test, row) and no data-dependent branch;
numba/LLVM turns the inner loop into SIMD code.  A pointer-chasing walk instead
pays a branch misprediction at most levels.  The work grows with the number of
tests rather than the depth, which suits the small trees that global induction
(GDT) evolves; larger trees keep the walk.

Comparisons are exact: a threshold is stored in the dtype of the data,
rounded *down* (:func:`round_thresholds_down`), and for a value ``x`` of that
dtype ``x <= t64`` holds exactly when ``x <= round_down(t64)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

#: Most leaves a tree may have to be handled with one 64-bit mask.
MAX_MASK_LEAVES = 64

#: Most leaves a tree may have to be handled with 32-bit masks (:func:`narrow_leaf_bits`): twice the rows per
#: SIMD instruction of the 64-bit ones; evolved GDT trees mostly have 5-20 leaves.
MAX_NARROW_LEAVES = 32


@intrinsic
def lowest_set_bit(typingctx, x):
    """Index of the lowest set bit of a uint64 (LLVM ``cttz``: one ``tzcnt`` instruction); 64 for zero."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


def round_thresholds_down(threshold: np.ndarray, dtype) -> np.ndarray:
    """The largest value of ``dtype`` at or below each float64 threshold.

    For ``x`` of ``dtype`` (float32 or float64), ``x <= threshold`` equals
    ``x <= rounded`` exactly, also beyond the float32 range (thresholds above
    the largest float32 become it; below the smallest, ``-inf``).

    Parameters
    ----------
    threshold : ndarray of float64
    dtype : numpy float dtype of the data

    Returns
    -------
    ndarray of ``dtype``, same shape
    """
    threshold = np.asarray(threshold, dtype=np.float64)
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return threshold.copy()
    if dtype != np.float32:
        raise ValueError(f"thresholds can be rounded to float32 or float64, not {dtype}")
    # beyond the float32 range astype gives +-inf and stepping down from -max gives -inf: both intended
    with np.errstate(over="ignore"):
        rounded = threshold.astype(np.float32)
        above = rounded.astype(np.float64) > threshold  # round-to-nearest went up: step one float32 down
        rounded[above] = np.nextafter(rounded[above], np.float32(-np.inf))
    return rounded


@dataclass(frozen=True)
class ForestMasks:
    """Leaf bitmasks of the trees of a packed forest that have at most 64 leaves.

    Trees are those of a :class:`~dtlab.trees.PackedForest`, in its node numbering.

    Attributes
    ----------
    masked : ndarray of shape (n_trees,), bool
        Whether the tree has masks; the other trees (over 64 leaves) are walked.
    test_offset : ndarray of shape (n_trees + 1,), int64
        Tree ``t``'s tests are entries ``test_offset[t]:test_offset[t+1]`` (none for unmasked trees).
    test_feature : ndarray of shape (n_tests,), int32
    test_threshold : ndarray of shape (n_tests,), dtype of the data
        Rounded down (:func:`round_thresholds_down`); ``x > test_threshold`` means "goes right".
    test_mask : ndarray of shape (n_tests,), uint64
        Zeros at the leaves of the test's left subtree, ones elsewhere.
    leaf_offset : ndarray of shape (n_trees + 1,), int64
    leaf_node : ndarray of shape (n_leaves_masked,), int32
        ``leaf_node[leaf_offset[t] + k]`` is the packed node index of tree ``t``'s k-th leaf from the left.
    """

    masked: np.ndarray
    test_offset: np.ndarray
    test_feature: np.ndarray
    test_threshold: np.ndarray
    test_mask: np.ndarray
    leaf_offset: np.ndarray
    leaf_node: np.ndarray


@numba.njit(nogil=True, cache=True)
def leaf_layout(node_offset, left, right):
    """Per node: leaves in its subtree and in-order number of its first leaf (tree-local); per tree: leaves."""
    n_nodes = left.shape[0]
    n_leaves = np.ones(n_nodes, np.int64)
    for node in range(n_nodes - 1, -1, -1):  # children come after parents: they are seen first
        if left[node] != -1:
            n_leaves[node] = n_leaves[left[node]] + n_leaves[right[node]]
    first_leaf = np.zeros(n_nodes, np.int64)
    for node in range(n_nodes):
        if left[node] != -1:
            first_leaf[left[node]] = first_leaf[node]
            first_leaf[right[node]] = first_leaf[node] + n_leaves[left[node]]
    tree_leaves = np.empty(node_offset.shape[0] - 1, np.int64)
    for t in range(tree_leaves.shape[0]):
        tree_leaves[t] = n_leaves[node_offset[t]]
    return n_leaves, first_leaf, tree_leaves


@numba.njit(nogil=True, cache=True)
def fill_masks(node_offset, left, masked, n_leaves, first_leaf, test_offset, leaf_offset,
                test_node, test_mask, leaf_node):
    for t in range(masked.shape[0]):
        if not masked[t]:
            continue
        k = test_offset[t]
        for node in range(node_offset[t], node_offset[t + 1]):
            if left[node] == -1:
                leaf_node[leaf_offset[t] + first_leaf[node]] = node
            else:
                width = np.uint64(n_leaves[left[node]])  # < 64: the right subtree has a leaf too
                span = ((np.uint64(1) << width) - np.uint64(1)) << np.uint64(first_leaf[node])
                test_node[k] = node
                test_mask[k] = ~span
                k += 1


def forest_masks(forest, dtype=np.float64) -> ForestMasks:
    """Build the :class:`ForestMasks` of a packed forest for data of ``dtype``.

    Parameters
    ----------
    forest : PackedForest
        Already valid (:meth:`~dtlab.trees.PackedForest.validate`): no checks here.
    dtype : float32 or float64, the dtype of the data the masks will be used on
    """
    node_offset, left = forest.node_offset, forest.left
    n_leaves, first_leaf, tree_leaves = leaf_layout(node_offset, left, forest.right)
    masked = tree_leaves <= MAX_MASK_LEAVES
    test_offset = np.zeros(masked.shape[0] + 1, np.int64)
    np.cumsum(np.where(masked, tree_leaves - 1, 0), out=test_offset[1:])
    leaf_offset = np.zeros(masked.shape[0] + 1, np.int64)
    np.cumsum(np.where(masked, tree_leaves, 0), out=leaf_offset[1:])
    test_node = np.empty(test_offset[-1], np.int64)
    test_mask = np.empty(test_offset[-1], np.uint64)
    leaf_node = np.empty(leaf_offset[-1], np.int32)
    fill_masks(node_offset, left, masked, n_leaves, first_leaf, test_offset, leaf_offset, test_node, test_mask,
                leaf_node)
    return ForestMasks(masked, test_offset, np.ascontiguousarray(forest.feature[test_node], np.int32),
                       round_thresholds_down(forest.threshold[test_node], dtype), test_mask, leaf_offset, leaf_node)


# inline="always": called per tree and chunk from the evaluation kernels.  Those are cached
# (cache=True); numba keys a cache on the caller's source file only, which is why the cache
# folder follows all of dtlab's sources (dtlab/_numba_cache.py).
@numba.njit(nogil=True, inline="always")
def masked_leaves(Xt, start, stop, t, test_offset, test_feature, test_threshold, test_mask,
                  leaf_offset, leaf_node, bits, out):
    """Leaves reached by rows ``start:stop`` (columns of ``Xt``) in masked tree ``t``, into ``out[:stop-start]``.

    ``Xt`` is the data transposed, shape (n_features, n_samples), C-contiguous,
    of the dtype the thresholds were rounded to; ``bits`` is scratch of at
    least ``stop - start`` uint64.
    """
    m = stop - start
    every = np.uint64(0xFFFFFFFFFFFFFFFF)
    for i in range(m):
        bits[i] = every
    for k in range(test_offset[t], test_offset[t + 1]):
        column = Xt[test_feature[k], start:stop]  # contiguous: the loop below becomes SIMD code
        th = test_threshold[k]
        mask = test_mask[k]
        for i in range(m):
            bits[i] &= mask if column[i] > th else every
    base = leaf_offset[t]
    for i in range(m):
        out[i] = leaf_node[base + lowest_set_bit(bits[i])]


@numba.njit(nogil=True, inline="always")
def narrow_leaf_bits(Xt, start, stop, t, test_offset, test_feature, test_threshold, test_mask, bits):
    """:func:`masked_leaves`' masks in 32 bits, for a masked tree of at most :data:`MAX_NARROW_LEAVES` leaves.

    Leaves ``bits[:stop-start]`` (uint32 scratch) with each row's leaf mask, whose lowest set bit
    is the leaf's rank (``leaf_node[leaf_offset[t] + lowest_set_bit(bits[i])]``); the caller reads the
    leaf from it in its own loop, so no leaf array is written and read back.  Its leaf masks
    fit in the low 32 bits (:func:`fill_masks` sets bit ``j`` for the tree's ``j``-th leaf).
    """
    m = stop - start
    every = np.uint32(0xFFFFFFFF)
    for i in range(m):
        bits[i] = every
    for k in range(test_offset[t], test_offset[t + 1]):
        column = Xt[test_feature[k], start:stop]  # contiguous: the loop below becomes SIMD code, 16 rows a step
        th = test_threshold[k]
        mask = np.uint32(test_mask[k] & np.uint64(0xFFFFFFFF))
        for i in range(m):
            bits[i] &= mask if column[i] > th else every
