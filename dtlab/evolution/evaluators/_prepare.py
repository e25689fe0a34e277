"""A batch's host-side preparation in one compiled call: validation, leaf bitmasks, rounded thresholds, salts.

:meth:`~dtlab.evolution.evaluators.base.BatchWork.prepare` runs before every
evaluation on every backend.  Done with NumPy (``PackedForest.validate``,
``forest_masks``, ``round_thresholds_down``, ``tree_salts``) it costs about
thirty small array operations, a quarter of a millisecond per generation:
as much as the whole evaluation of a population on 1,000 rows.  Here the same
results come from one numba call that touches every node a few times; the
NumPy functions stay the reference (``tests/evolution/test_prepare.py``
compares them) and still give the error message when a forest is malformed.
"""

from __future__ import annotations

import numba
import numpy as np

from ...trees.bitmask import MAX_MASK_LEAVES, fill_masks, leaf_layout
from ._fitness_cpu import _splitmix64

_NJIT = dict(cache=True, nogil=True)


@numba.njit(**_NJIT)
def forest_is_valid(node_offset, feature, threshold, left, right, n_features):
    """What :meth:`~dtlab.trees.PackedForest.validate` checks after the shapes, as one loop: True when it passes.

    The caller has checked that every node array has ``node_offset[-1]``
    entries (so nothing here reads out of bounds).
    """
    n_trees = node_offset.shape[0] - 1
    if n_trees < 1 or node_offset[0] != 0 or node_offset[n_trees] != feature.shape[0]:
        return False
    for t in range(n_trees):
        end = node_offset[t + 1]
        if end <= node_offset[t]:
            return False
        for node in range(node_offset[t], end):
            a, b = left[node], right[node]
            if (a == -1) != (b == -1):
                return False
            if a == -1:
                continue
            # children after the parent and inside its tree (rules out cycles), a real attribute, a number
            if a <= node or b <= node or a >= end or b >= end:
                return False
            if feature[node] < 0 or feature[node] >= n_features or np.isnan(threshold[node]):
                return False
    return True


@numba.njit(**_NJIT)
def round_down(threshold, like):
    """:func:`~dtlab.trees.bitmask.round_thresholds_down` to the dtype of array ``like``, compiled (same values).

    For float32, also beyond its range: thresholds above the largest float32 become it, below the smallest ``-inf``.
    """
    out = np.empty(threshold.shape[0], like.dtype)
    down = np.empty(1, like.dtype)
    down[0] = -np.inf
    for i in range(threshold.shape[0]):
        t = threshold[i]
        out[i] = t  # round to nearest; +-inf beyond the range, as NumPy's astype
        if np.float64(out[i]) > t:  # it went up: the next value down is the largest at or below t
            out[i] = np.nextafter(out[i], down[0])
    return out


@numba.njit(**_NJIT)
def _masks(node_offset, feature, left, right, rounded):
    n_leaves, first_leaf, tree_leaves = leaf_layout(node_offset, left, right)
    n_trees = tree_leaves.shape[0]
    masked = tree_leaves <= MAX_MASK_LEAVES
    test_offset = np.zeros(n_trees + 1, np.int64)
    leaf_offset = np.zeros(n_trees + 1, np.int64)
    for t in range(n_trees):
        test_offset[t + 1] = test_offset[t] + (tree_leaves[t] - 1 if masked[t] else 0)
        leaf_offset[t + 1] = leaf_offset[t] + (tree_leaves[t] if masked[t] else 0)
    test_node = np.empty(test_offset[n_trees], np.int64)
    test_mask = np.empty(test_offset[n_trees], np.uint64)
    leaf_node = np.empty(leaf_offset[n_trees], np.int32)
    fill_masks(node_offset, left, masked, n_leaves, first_leaf, test_offset, leaf_offset, test_node, test_mask,
                leaf_node)
    test_feature = np.empty(test_node.shape[0], np.int32)
    test_threshold = np.empty(test_node.shape[0], rounded.dtype)
    for k in range(test_node.shape[0]):
        test_feature[k] = feature[test_node[k]]
        test_threshold[k] = rounded[test_node[k]]
    return masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node


@numba.njit(**_NJIT)
def prepare(node_offset, feature, threshold, left, right, seed, like):
    """Thresholds rounded down to ``like``'s dtype, the :class:`~dtlab.trees.bitmask.ForestMasks` arrays, the salts."""
    rounded = round_down(threshold, like)
    return rounded, _masks(node_offset, feature, left, right, rounded), _salts(seed, node_offset.shape[0] - 1)


@numba.njit(**_NJIT)
def _salts(seed, n_trees):
    """:func:`~dtlab.evolution.evaluators.draws.tree_salts`, compiled."""
    out = np.empty(n_trees, np.uint64)
    for t in range(n_trees):
        out[t] = _splitmix64(seed ^ np.uint64(t + 1))
    return out
