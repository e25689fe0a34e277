"""Shared data and the XGBoost comparison helpers of the boosting tests."""

import json

import numpy as np
import pytest


def tie_free(rng, n=600, d=5, missing=0.0, task="regression"):
    """Distinct float32 values in every column (no ties), optionally NaN-holed; a smooth target."""
    X = rng.permuted(np.tile(np.arange(n, dtype=np.float32), (d, 1)), axis=1).T.copy()
    X = X / n * 4 - 2 + rng.uniform(0, 1e-3, size=(n, d)).astype(np.float32)
    z = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    y = z.astype(np.float32) if task == "regression" else (z > 0).astype(np.int32)
    if missing:
        X[rng.random((n, d)) < missing] = np.nan
    return X.astype(np.float32), y


def xgb_tree_nodes(booster, t):
    """Tree ``t`` of an XGBoost booster as nested dicts (its JSON dump)."""
    return json.loads(booster.get_dump(dump_format="json")[t])


def assert_same_tree(tree, xnode, X, node=0, rows=None, rtol=1e-5):
    """Recursively: the same split of the training rows at every node (feature, threshold, missing side);
    leaves within ``rtol``.

    Splits are compared as partitions of the node's training rows ``X[rows]``:
    where two candidates make the same partition (both missing directions
    when no row of the node misses the feature; "missing left, present right"
    against "present left, missing right", the same partition with the sides
    swapped) their gains are equal and which one XGBoost keeps is float
    rounding.  Thresholds must be equal whenever present values fall on both
    sides.
    """
    rows = np.arange(X.shape[0]) if rows is None else rows
    if tree.left[node] == -1:
        assert "leaf" in xnode, f"node {node} is a leaf here, a split in XGBoost"
        assert tree.value[node] == pytest.approx(xnode["leaf"], rel=rtol, abs=1e-6)
        return
    assert "split" in xnode, f"node {node} splits here, XGBoost has a leaf"
    f = tree.feature[node]
    assert int(xnode["split"][1:]) == f
    x = X[rows, f]
    ours = np.where(np.isnan(x), tree.missing_left[node], x < tree.threshold[node])
    thr = np.float32(xnode["split_condition"])
    theirs = np.where(np.isnan(x), xnode["missing"] == xnode["yes"], x < thr)
    pres = ~np.isnan(x)
    if ours[pres].any() and not ours[pres].all():
        assert thr == tree.threshold[node]
    kids = {c["nodeid"]: c for c in xnode["children"]}
    if (ours == theirs).all():
        yes, no = kids[xnode["yes"]], kids[xnode["no"]]
    else:
        assert (ours == ~theirs).all(), f"node {node}: a different split of the rows"
        yes, no = kids[xnode["no"]], kids[xnode["yes"]]
    assert_same_tree(tree, yes, X, tree.left[node], rows[ours], rtol)
    assert_same_tree(tree, no, X, tree.right[node], rows[~ours], rtol)
