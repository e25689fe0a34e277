"""The node layouts the inference kernels read, built once per forest and input dtype.

The traversal, level and QuickScorer layouts number the leaves of a tree from
left to right (in-order), so a leaf's bit is the same in the patent's
identifiers and in QuickScorer's masks, and store the leaf values in that
order (``leaf_value[leaf_offset[t] + k]``).

* :class:`TraversalLayout` -- nodes renumbered level by level with the two
  children of a node side by side (right = left + 1) and every leaf pointing
  to itself behind a test that never goes right: a walk of ``depth[t]`` steps
  ``node = child[node] + goes_right`` reaches the leaf of every row with no
  data-dependent branch, so a block of rows can be walked in lock step.
* :class:`LevelLayout` -- the patent's tables: per tree and level the decision
  nodes with the identifiers (leaf bit sets, ``n_words`` uint64 words) of
  their two children, and per level the *base* identifier: the leaves at a
  depth <= that level.  Those leaves have no ancestor on the level; without
  their bits the level's OR would be 0 at them and the AND would erase a leaf
  reached above the deepest level of an unbalanced tree.  With them, a leaf
  ``l`` keeps its bit at every level (its ancestor selects towards it, or it
  is in the base), and any other leaf ``m`` loses it at the level of the
  lowest common ancestor of ``l`` and ``m``, whose other child holds ``m`` and
  where ``m`` is not in the base (it lies deeper).
* :class:`QuickScorerLayout` -- per feature, the tests of every tree sorted by
  threshold, each with the in-order leaf range of its left subtree (the leaves
  a "false" test, one that goes right, rules out).  :class:`TreeRunsLayout`
  holds the same tests grouped by tree, then feature (the CUDA kernel's order).

Thresholds are rounded down to the input dtype
(:func:`dtlab.trees.bitmask.round_thresholds_down`): for data of that dtype
``x > t_rounded`` is exactly ``not (x <= t)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..trees.bitmask import leaf_layout, round_thresholds_down


@dataclass(frozen=True)
class Shape:
    """Per tree ``depth``, ``n_leaves``; per node ``node_depth``, ``first_leaf`` (in-order), ``n_below``."""

    depth: np.ndarray
    n_leaves: np.ndarray
    node_depth: np.ndarray
    first_leaf: np.ndarray
    n_below: np.ndarray
    leaf_offset: np.ndarray
    n_words: int


def tree_shape(forest) -> Shape:
    """Depths, leaf counts and in-order leaf numbers of every tree of a PackedForest."""
    left, right = forest.left, forest.right
    n_below, first_leaf, tree_leaves = leaf_layout(forest.node_offset, left, right)
    node_depth = np.zeros(forest.n_nodes, np.int64)
    internal = np.flatnonzero(left != -1)
    for node in internal:  # parents come before children
        node_depth[left[node]] = node_depth[right[node]] = node_depth[node] + 1
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.node_offset))
    depth = np.zeros(forest.n_trees, np.int64)
    np.maximum.at(depth, tree_of, node_depth)
    leaf_offset = np.zeros(forest.n_trees + 1, np.int64)
    np.cumsum(tree_leaves, out=leaf_offset[1:])
    return Shape(depth, tree_leaves, node_depth, first_leaf, n_below, leaf_offset,
                 int((tree_leaves.max() + 63) // 64))


def leaf_values(forest, shape: Shape) -> np.ndarray:
    """Leaf values in in-order, shape (n_leaves_total, n_values), float64."""
    leaves = np.flatnonzero(forest.left == -1)
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.node_offset))[leaves]
    out = np.empty((leaves.shape[0], forest.value.shape[1]), np.float64)
    out[shape.leaf_offset[tree_of] + shape.first_leaf[leaves]] = forest.value[leaves]
    return out


@dataclass(frozen=True)
class TraversalLayout:
    root: np.ndarray        # (n_trees,) int64
    depth: np.ndarray       # (n_trees,) int64
    child: np.ndarray       # (n_nodes,) uint32: left child (right = child + 1); a leaf: itself
    feature: np.ndarray     # (n_nodes,) int32
    threshold: np.ndarray   # (n_nodes,) input dtype; +inf at leaves
    nan_right: np.ndarray   # (n_nodes,) uint8
    value: np.ndarray       # (n_nodes, n_values) float64, read at leaves


def traversal_layout(forest, dtype) -> TraversalLayout:
    """Level-order renumbering with adjacent siblings and self-looping leaves (see module docstring)."""
    order, new_child, roots = [], [], []
    for t in range(forest.n_trees):
        root = int(forest.node_offset[t])
        roots.append(len(order))
        queue = [root]
        order.append(root)
        head = 0
        while head < len(queue):
            node = queue[head]
            head += 1
            if forest.left[node] != -1:
                new_child.append((node, len(order)))
                for c in (forest.left[node], forest.right[node]):
                    queue.append(int(c))
                    order.append(int(c))
    order = np.asarray(order, np.int64)
    new_index = np.empty(forest.n_nodes, np.int64)
    new_index[order] = np.arange(order.shape[0])
    child = np.arange(order.shape[0], dtype=np.uint32)  # leaves point at themselves
    for node, first in new_child:
        child[new_index[node]] = first
    leaf = forest.left[order] == -1
    threshold = round_thresholds_down(forest.threshold[order], dtype)
    threshold[leaf] = np.inf
    return TraversalLayout(np.asarray(roots, np.int64), tree_shape(forest).depth,
                           child, np.where(leaf, 0, forest.feature[order]).astype(np.int32),
                           np.ascontiguousarray(threshold), (~forest.missing_left[order] & ~leaf).astype(np.uint8),
                           np.ascontiguousarray(forest.value[order]))


def _bits(first: np.ndarray, count: np.ndarray, n_words: int) -> np.ndarray:
    """Rows of words with bits ``first[r] .. first[r]+count[r]-1`` set, shape (len(first), n_words) uint64."""
    first = np.asarray(first, np.int64)
    stop = first + np.asarray(count, np.int64)
    out = np.zeros((first.shape[0], n_words), np.uint64)
    for w in range(n_words):  # bit k of word w is leaf 64 w + k
        lo = np.clip(first - 64 * w, 0, 64)
        width = np.clip(stop - 64 * w, 0, 64) - lo
        ones = np.where(width >= 64, np.uint64(0xFFFFFFFFFFFFFFFF),
                        (np.uint64(1) << np.minimum(width, 63).astype(np.uint64)) - np.uint64(1))
        out[:, w] = np.where(width > 0, ones << lo.astype(np.uint64), np.uint64(0))
    return out


@dataclass(frozen=True)
class LevelLayout:
    n_words: int
    tree_level: np.ndarray   # (n_trees + 1,) int64: tree t's levels are tree_level[t]:tree_level[t+1]
    level_node: np.ndarray   # (n_levels + 1,) int64: level l's nodes are level_node[l]:level_node[l+1]
    base: np.ndarray         # (n_levels, n_words) uint64: leaves at depth <= level
    feature: np.ndarray      # (n_tests,) int32
    threshold: np.ndarray    # (n_tests,) input dtype
    nan_right: np.ndarray    # (n_tests,) uint8
    id_left: np.ndarray      # (n_tests, n_words) uint64: identifier of the left child
    id_right: np.ndarray     # (n_tests, n_words) uint64
    leaf_offset: np.ndarray  # (n_trees + 1,) int64
    leaf_value: np.ndarray   # (n_leaves, n_values) float64, in-order


def level_layout(forest, dtype) -> LevelLayout:
    """The patent's identifiers, grouped by tree and level (see module docstring)."""
    s = tree_shape(forest)
    W = s.n_words
    tree_level = np.zeros(forest.n_trees + 1, np.int64)
    np.cumsum(np.maximum(s.depth, 1), out=tree_level[1:])  # a lone leaf still gets one (empty) level
    n_levels = int(tree_level[-1])
    base = np.zeros((n_levels, W), np.uint64)
    per_level: list[list[int]] = [[] for _ in range(n_levels)]
    for t in range(forest.n_trees):
        lo, hi = forest.node_offset[t], forest.node_offset[t + 1]
        for node in range(lo, hi):
            d = int(s.node_depth[node])
            if forest.left[node] != -1:
                per_level[tree_level[t] + d].append(node)
            else:  # a leaf at depth d belongs to the base of every level >= d
                bit = int(s.first_leaf[node])
                for level in range(d, tree_level[t + 1] - tree_level[t]):
                    base[tree_level[t] + level, bit >> 6] |= np.uint64(1) << np.uint64(bit & 63)
    nodes = np.asarray([n for level in per_level for n in level], np.int64)
    level_node = np.zeros(n_levels + 1, np.int64)
    np.cumsum([len(level) for level in per_level], out=level_node[1:])
    a, b = forest.left[nodes], forest.right[nodes]
    id_left = _bits(s.first_leaf[a], s.n_below[a], W)
    id_right = _bits(s.first_leaf[b], s.n_below[b], W)
    return LevelLayout(W, tree_level, level_node, base, forest.feature[nodes].astype(np.int32),
                       round_thresholds_down(forest.threshold[nodes], dtype),
                       (~forest.missing_left[nodes]).astype(np.uint8), id_left, id_right, s.leaf_offset,
                       leaf_values(forest, s))


@dataclass(frozen=True)
class QuickScorerLayout:
    n_words: int
    feature_offset: np.ndarray  # (n_features + 1,) int64 into the sorted tests
    threshold: np.ndarray       # (n_tests,) input dtype, ascending within a feature
    tree: np.ndarray            # (n_tests,) int32
    lo: np.ndarray              # (n_tests,) int32: first in-order leaf of the left subtree
    count: np.ndarray           # (n_tests,) int32: leaves of the left subtree
    nan_offset: np.ndarray      # (n_features + 1,) int64 into the nan_* tests: those sending NaN right
    nan_tree: np.ndarray
    nan_lo: np.ndarray
    nan_count: np.ndarray
    leaf_offset: np.ndarray
    leaf_value: np.ndarray
    mask: np.ndarray            # (n_tests,) uint64 when n_words == 1: ~(left subtree's bits), else empty
    nan_mask: np.ndarray


def _tests(forest, dtype):
    """Every decision node's tree, feature, rounded threshold and left subtree's in-order leaf range."""
    s = tree_shape(forest)
    nodes = np.flatnonzero(forest.left != -1)
    tree_of = np.repeat(np.arange(forest.n_trees), np.diff(forest.node_offset))[nodes].astype(np.int32)
    thr = round_thresholds_down(forest.threshold[nodes], dtype)
    lo = s.first_leaf[forest.left[nodes]].astype(np.int32)
    count = s.n_below[forest.left[nodes]].astype(np.int32)
    return s, tree_of, forest.feature[nodes], thr, lo, count, ~forest.missing_left[nodes]


def quickscorer_layout(forest, dtype, n_features: int) -> QuickScorerLayout:
    """Per-feature sorted tests with their false-node leaf ranges."""
    s, tree_of, feat, thr, lo, count, nan_right = _tests(forest, dtype)
    order = np.lexsort((thr, feat))
    offset = np.searchsorted(feat[order], np.arange(n_features + 1)).astype(np.int64)
    nan_order = np.flatnonzero(nan_right)[np.argsort(feat[nan_right], kind="stable")]
    nan_offset = np.searchsorted(feat[nan_order], np.arange(n_features + 1)).astype(np.int64)
    def masks(sel):  # one word per test: AND it in, one instruction, when every tree has <= 64 leaves
        if s.n_words != 1:
            return np.zeros(0, np.uint64)
        return np.ascontiguousarray(~_bits(lo[sel], count[sel], 1)[:, 0])

    return QuickScorerLayout(s.n_words, offset, np.ascontiguousarray(thr[order]), tree_of[order], lo[order],
                             count[order], nan_offset, tree_of[nan_order], lo[nan_order], count[nan_order],
                             s.leaf_offset, leaf_values(forest, s), masks(order), masks(nan_order))


@dataclass(frozen=True)
class TreeRunsLayout:
    """QuickScorer's tests grouped by tree (the CUDA kernel's order): sorted by (tree, feature, threshold).

    Tree ``t``'s runs are ``tree_run[t]:tree_run[t+1]``; run ``r`` holds the
    tests of one feature ``run_feature[r]``, ``run_test[r]:run_test[r+1]``,
    thresholds ascending, so a row scans a run while ``x > t`` (QuickScorer's
    early exit) with one tree's bit vector in registers / local memory.
    """

    n_words: int                # words of the largest tree's bit vector
    tree_run: np.ndarray        # (n_trees + 1,) int64 into the runs
    run_feature: np.ndarray     # (n_runs,) int32
    run_test: np.ndarray        # (n_runs + 1,) int64 into the tests
    threshold: np.ndarray       # (n_tests,) input dtype, ascending within a run
    nan_right: np.ndarray       # (n_tests,) uint8: the test sends NaN right (clears its range for NaN)
    lo: np.ndarray              # (n_tests,) int32: first in-order leaf of the left subtree
    count: np.ndarray           # (n_tests,) int32: leaves of the left subtree
    leaf_offset: np.ndarray     # (n_trees + 1,) int64
    leaf_value: np.ndarray      # (n_leaves, n_values) float64, in-order


def tree_runs_layout(forest, dtype) -> TreeRunsLayout:
    """QuickScorer's tests sorted by (tree, feature, threshold), with offsets per tree and per run."""
    s, tree_of, feat, thr, lo, count, nan_right = _tests(forest, dtype)
    order = np.lexsort((thr, feat, tree_of))
    tree_s, feat_s = tree_of[order], feat[order]
    starts = np.flatnonzero(np.r_[True, (tree_s[1:] != tree_s[:-1]) | (feat_s[1:] != feat_s[:-1])])
    starts = starts[:0] if order.size == 0 else starts  # no decision node: no runs
    run_test = np.r_[starts, order.size].astype(np.int64)
    tree_run = np.searchsorted(tree_s[starts], np.arange(forest.n_trees + 1)).astype(np.int64)
    return TreeRunsLayout(s.n_words, tree_run, feat_s[starts].astype(np.int32), run_test,
                          np.ascontiguousarray(thr[order]), nan_right[order].astype(np.uint8), lo[order],
                          count[order], s.leaf_offset, leaf_values(forest, s))


#: Deepest tree the heap layout pads to complete (2^depth leaves per tree); deeper forests use the child arrays.
HEAP_MAX_DEPTH = 12


@dataclass(frozen=True)
class HeapLayout:
    """Each tree padded to a complete tree of its depth, in heap order: children of ``k`` at ``2k+1``, ``2k+2``.

    The walk needs no child array (``k = 2k + 1 + goes_right``): two loads per
    step (feature, threshold) instead of four.  A leaf above the last level is
    pushed down the left spine of its padded subtree by tests that never go
    right (threshold +inf, NaN left), and its value sits at the spine's bottom.
    """

    node_offset: np.ndarray  # (n_trees + 1,) int64 into feature/threshold/nan_right (2^depth - 1 per tree)
    depth: np.ndarray        # (n_trees,) int64
    feature: np.ndarray      # uint32
    threshold: np.ndarray    # input dtype
    nan_right: np.ndarray    # uint8
    leaf_offset: np.ndarray  # (n_trees + 1,) int64 into value (2^depth per tree)
    value: np.ndarray        # (n_heap_leaves, n_values) float64


def heap_layout(forest, dtype) -> HeapLayout:
    """Pad and renumber every tree into heap order (see :class:`HeapLayout`)."""
    s = tree_shape(forest)
    sizes = (1 << s.depth) - 1
    node_offset = np.zeros(forest.n_trees + 1, np.int64)
    np.cumsum(sizes, out=node_offset[1:])
    leaf_offset = np.zeros(forest.n_trees + 1, np.int64)
    np.cumsum(sizes + 1, out=leaf_offset[1:])
    feature = np.zeros(node_offset[-1], np.uint32)
    threshold = np.full(node_offset[-1], np.inf)
    nan_right = np.zeros(node_offset[-1], np.uint8)
    value = np.zeros((leaf_offset[-1], forest.value.shape[1]))
    for t in range(forest.n_trees):
        n_internal = int(sizes[t])
        o = int(node_offset[t])
        stack = [(int(forest.node_offset[t]), 0)]
        while stack:
            node, h = stack.pop()
            if forest.left[node] != -1:
                feature[o + h] = forest.feature[node]
                threshold[o + h] = forest.threshold[node]
                nan_right[o + h] = not forest.missing_left[node]
                stack.append((int(forest.left[node]), 2 * h + 1))
                stack.append((int(forest.right[node]), 2 * h + 2))
            else:
                while h < n_internal:  # the padding: +inf thresholds already send everything left
                    h = 2 * h + 1
                value[leaf_offset[t] + h - n_internal] = forest.value[node]
    return HeapLayout(node_offset, s.depth.copy(), feature, round_thresholds_down(threshold, dtype), nan_right,
                      leaf_offset, value)
