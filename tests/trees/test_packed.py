"""PackedForest: packing FlatTrees (any node order), validation before kernels."""

import dataclasses

import numpy as np
import pytest

from dtlab.testing import random_data, random_sklearn_trees
from dtlab.trees import FlatTree, PackedForest, apply_reference


def _shuffled(tree: FlatTree, rng) -> FlatTree:
    """The same tree with its non-root nodes renumbered at random (children may come before parents)."""
    perm = np.concatenate([[0], 1 + rng.permutation(tree.n_nodes - 1)])
    new_of = np.empty_like(perm)
    new_of[perm] = np.arange(tree.n_nodes)
    relabel = lambda a: np.where(a[perm] != -1, new_of[np.maximum(a[perm], 0)], -1)  # noqa: E731
    return FlatTree(feature=tree.feature[perm], threshold=tree.threshold[perm], left=relabel(tree.left),
                    right=relabel(tree.right), value=tree.value[perm], n_features=tree.n_features,
                    missing_left=tree.missing_left[perm])


def test_from_trees_keeps_every_tree_and_its_leaves():
    rng = np.random.default_rng(0)
    X, y = random_data(rng, 400, 3, 2, dtype=np.float64, levels=7)
    trees = [FlatTree.from_sklearn(e) for e in random_sklearn_trees(rng, X, y, 5)]
    trees[2] = _shuffled(trees[2], rng)
    forest = PackedForest.from_trees(trees)
    forest.validate(3)
    assert forest.n_trees == 5 and forest.n_nodes == sum(t.n_nodes for t in trees)
    assert forest.value.shape == (forest.n_nodes, 2)
    for t, tree in enumerate(trees):
        a, b = forest.node_offset[t], forest.node_offset[t + 1]
        local = FlatTree(feature=forest.feature[a:b], threshold=forest.threshold[a:b],
                         left=np.where(forest.left[a:b] != -1, forest.left[a:b] - a, -1),
                         right=np.where(forest.right[a:b] != -1, forest.right[a:b] - a, -1),
                         value=forest.value[a:b], n_features=3, missing_left=forest.missing_left[a:b])
        assert np.array_equal(local.predict_value(X), tree.predict_value(X))
        assert np.array_equal(apply_reference(local, X) >= 0, np.ones(len(X), bool))


def test_from_arrays_offsets_children():
    forest = PackedForest.from_arrays([3, 1], feature=[0, -1, -1, -1], threshold=[0.5, 0, 0, 0],
                                      left=[1, -1, -1, -1], right=[2, -1, -1, -1])
    assert forest.node_offset.tolist() == [0, 3, 4]
    assert forest.left.tolist() == [1, -1, -1, -1] and forest.right.tolist() == [2, -1, -1, -1]
    assert forest.missing_left.all() and forest.value is None
    forest.validate(1)


def test_validate_refuses_malformed_forests():
    good = PackedForest.from_arrays([3, 3], feature=[0, -1, -1, 1, -1, -1], threshold=[0.5, 0, 0, 0.2, 0, 0],
                                    left=[1, -1, -1, 1, -1, -1], right=[2, -1, -1, 2, -1, -1])
    good.validate(2)
    cases = {
        "feature indices": dataclasses.replace(good, feature=np.array([0, -1, -1, 2, -1, -1], np.int32)),
        "NaN": dataclasses.replace(good, threshold=np.array([np.nan, 0, 0, 0.2, 0, 0])),
        "point forward": dataclasses.replace(good, left=np.array([1, -1, -1, 1, -1, -1], np.int32)),
        "node_offset": dataclasses.replace(good, node_offset=np.array([0, 6], np.int64)[:1]),
        "two children": dataclasses.replace(good, right=np.array([-1, -1, -1, 5, -1, -1], np.int32)),
        "missing_left must have shape": dataclasses.replace(good, missing_left=np.ones(5, bool)),
    }
    for match, forest in cases.items():
        with pytest.raises(ValueError, match=match):
            forest.validate(2)


def test_from_trees_needs_a_tree():
    with pytest.raises(ValueError, match="at least one tree"):
        PackedForest.from_trees([])
