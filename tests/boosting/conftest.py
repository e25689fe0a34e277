"""Shared data and the XGBoost comparison helpers of the boosting tests."""

import json

import numpy as np

from workbench.boosting.compare import tree_difference


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


def assert_same_tree(tree, xnode, X):
    """The same split of the training rows at every node, leaves within 1e-5 (see workbench.boosting.compare)."""
    difference = tree_difference(tree, xnode, X)
    assert difference is None, difference
