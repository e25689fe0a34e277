"""Leaf bitmasks (QuickScorer scheme) against a plain walk and scikit-learn's apply."""

import dataclasses

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier

from dtlab.trees import FlatTree, PackedForest
from dtlab.trees.bitmask import MAX_MASK_LEAVES, forest_masks, lowest_set_bit, masked_leaves, round_thresholds_down


@numba.njit
def _lowest(values):
    out = np.empty(values.shape[0], np.int64)
    for i in range(values.shape[0]):
        out[i] = lowest_set_bit(values[i])
    return out


@numba.njit
def _all_masked_leaves(Xt, chunk, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node,
                       masked):
    """Leaf of every row in every masked tree, in chunks of ``chunk`` rows (-1 for unmasked trees)."""
    n_trees = masked.shape[0]
    n = Xt.shape[1]
    out = np.full((n_trees, n), -1, np.int64)
    bits = np.empty(chunk, np.uint64)
    leaves = np.empty(chunk, np.int32)
    for t in range(n_trees):
        if not masked[t]:
            continue
        for start in range(0, n, chunk):
            stop = min(start + chunk, n)
            masked_leaves(Xt, start, stop, t, test_offset, test_feature, test_threshold, test_mask, leaf_offset,
                          leaf_node, bits, leaves)
            for i in range(stop - start):
                out[t, start + i] = leaves[i]
    return out


def walk(X, root, feature, threshold, left, right):
    """Plain per-row walk: ``x <= threshold`` (compared in float64) goes left."""
    out = []
    for row in X.astype(np.float64):
        node = root
        while left[node] != -1:
            node = left[node] if row[feature[node]] <= threshold[node] else right[node]
        out.append(node)
    return np.array(out)


def pack_sklearn(estimators) -> PackedForest:
    """Fitted scikit-learn trees (nodes in preorder, children after parents) as one packed forest."""
    return PackedForest.from_trees([FlatTree.from_sklearn(e) for e in estimators])


def test_lowest_set_bit():
    values = np.array([1, 2, 3, 8, 1 << 40, 1 << 63, (1 << 64) - 1, 0b101000], dtype=np.uint64)
    assert _lowest(values).tolist() == [0, 1, 0, 3, 40, 63, 0, 3]
    assert _lowest(np.array([0], np.uint64)).tolist() == [64]


float32_values = st.floats(width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=300, deadline=None)
@given(x=float32_values, base=float32_values,
       how=st.sampled_from(["same", "up64", "down64", "mid32", "huge", "-huge", "inf", "-inf"]))
def test_rounding_thresholds_down_keeps_every_comparison(x, base, how):
    base32 = np.float32(base)
    with np.errstate(over="ignore"):  # neighbours of the largest float32 may be inf: still a fine test value
        neighbours = (np.nextafter(base32, np.float32(np.inf)), np.nextafter(base32, np.float32(-np.inf)))
        mid32 = (float(base32) + float(neighbours[0])) / 2
    threshold = {"same": float(base32), "up64": np.nextafter(float(base32), np.inf),
                 "down64": np.nextafter(float(base32), -np.inf),
                 "mid32": mid32,
                 "huge": 1e300, "-huge": -1e300, "inf": np.inf, "-inf": -np.inf}[how]
    rounded = round_thresholds_down(np.array([threshold]), np.float32)
    assert rounded.dtype == np.float32
    for value in (np.float32(x), base32, *neighbours):
        assert (float(value) <= threshold) == bool(value <= rounded[0])
    assert np.array_equal(round_thresholds_down(np.array([threshold]), np.float64), [threshold])


def test_rounding_refuses_other_dtypes():
    with pytest.raises(ValueError, match="float32 or float64"):
        round_thresholds_down(np.array([0.5]), np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_masked_leaves_equal_sklearn_apply(dtype):
    rng = np.random.default_rng(0)
    X = rng.random((3000, 4)).astype(dtype)
    y = (rng.random(3000) < 0.5).astype(int)  # random labels: trees grow as large as allowed
    estimators = [DecisionTreeClassifier(max_leaf_nodes=leaves, random_state=leaves).fit(X, y)
                  for leaves in (2, 3, 17, 63, 64, 65, 200)]
    estimators.insert(0, DecisionTreeClassifier(max_depth=1).fit(X, np.zeros(3000, int)))  # a single leaf
    forest = pack_sklearn(estimators)
    offset = forest.node_offset
    masks = forest_masks(forest, dtype)
    n_leaves = [e.get_n_leaves() for e in estimators]
    assert masks.masked.tolist() == [n <= MAX_MASK_LEAVES for n in n_leaves]
    got = _all_masked_leaves(np.ascontiguousarray(X.T), 1000, masks.test_offset, masks.test_feature,
                             masks.test_threshold, masks.test_mask, masks.leaf_offset, masks.leaf_node, masks.masked)
    for t, estimator in enumerate(estimators):
        if masks.masked[t]:
            assert np.array_equal(got[t], estimator.apply(X.astype(np.float32)) + offset[t])


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_rows=st.integers(1, 300), chunk=st.sampled_from([1, 7, 64, 512]),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_masked_leaves_equal_a_plain_walk_with_thresholds_on_data_values(seed, n_rows, chunk, dtype):
    """Ties everywhere: integer data and thresholds on, just above and just below data values."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n_rows, 3)).astype(dtype)
    y = rng.integers(0, 2, size=n_rows)
    estimators = [DecisionTreeClassifier(max_leaf_nodes=int(rng.integers(2, 40)), random_state=0).fit(X, y)
                  for _ in range(3)] if len(np.unique(y)) > 1 and n_rows > 2 else []
    if not estimators:
        return
    forest = pack_sklearn(estimators)
    offset, feature, left, right = forest.node_offset, forest.feature, forest.left, forest.right
    inner = left != -1
    values = rng.integers(0, 5, size=forest.threshold.shape).astype(np.float64)
    shift = rng.choice([0.0, 1e-12, -1e-12, 0.5, 1e-9], size=forest.threshold.shape)
    threshold = np.where(inner, values + shift, forest.threshold)
    masks = forest_masks(dataclasses.replace(forest, threshold=threshold), dtype)
    got = _all_masked_leaves(np.ascontiguousarray(X.T), chunk, masks.test_offset, masks.test_feature,
                             masks.test_threshold, masks.test_mask, masks.leaf_offset, masks.leaf_node, masks.masked)
    for t in range(len(estimators)):
        assert np.array_equal(got[t], walk(X, offset[t], feature, threshold, left, right))
