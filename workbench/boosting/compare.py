"""Checks against XGBoost's exact method: the same split of the training rows at every node, leaf values.

Splits are compared as partitions of each node's training rows: where two
candidates make the same partition (both missing directions when no row of
the node misses the feature; "missing left, present right" against "present
left, missing right", the same partition with the sides swapped) their gains
are equal and which one XGBoost keeps is float rounding.  Thresholds must be
equal whenever present values fall on both sides.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from dtlab.boosting.grower import BoostedTree


def tree_difference(tree: BoostedTree, xnode: dict, X: np.ndarray, node: int = 0, rows: np.ndarray | None = None,
                    rtol: float = 1e-5) -> str | None:
    """Where ``tree`` and an XGBoost tree (its JSON dump, a nested dict) first differ; None if nowhere.

    Parameters
    ----------
    tree : BoostedTree
    xnode : dict, ``json.loads(booster.get_dump(dump_format="json")[t])``
    X : float32 array (n_samples, n_features), the training rows (NaN = missing)
    rtol : float, tolerance of leaf values
    """
    rows = np.arange(X.shape[0]) if rows is None else rows
    if tree.left[node] == -1:
        if "leaf" not in xnode:
            return f"node {node} is a leaf here, a split in XGBoost"
        if not np.isclose(tree.value[node], xnode["leaf"], rtol=rtol, atol=1e-6):
            return f"leaf {node}: {tree.value[node]} against {xnode['leaf']}"
        return None
    if "split" not in xnode:
        return f"node {node} splits here, XGBoost has a leaf"
    f = int(tree.feature[node])
    if int(xnode["split"].lstrip("f")) != f:
        return f"node {node}: feature {f} against {xnode['split']}"
    x = X[rows, f]
    ours = np.where(np.isnan(x), tree.missing_left[node], x < tree.threshold[node])
    thr = np.float32(xnode["split_condition"])
    theirs = np.where(np.isnan(x), xnode["missing"] == xnode["yes"], x < thr)
    pres = ~np.isnan(x)
    if ours[pres].any() and not ours[pres].all() and thr != tree.threshold[node]:
        return f"node {node}: threshold {tree.threshold[node]} against {thr}"
    kids = {c["nodeid"]: c for c in xnode["children"]}
    if (ours == theirs).all():
        yes, no = kids[xnode["yes"]], kids[xnode["no"]]
    elif (ours == ~theirs).all():
        yes, no = kids[xnode["no"]], kids[xnode["yes"]]
    else:
        return f"node {node}: a different split of the rows"
    return (tree_difference(tree, yes, X, int(tree.left[node]), rows[ours], rtol)
            or tree_difference(tree, no, X, int(tree.right[node]), rows[~ours], rtol))


def xgboost_trees(booster) -> list[dict]:
    """An XGBoost booster's trees as nested dicts."""
    return [json.loads(t) for t in booster.get_dump(dump_format="json")]


def against_xgboost(model, peer, X: np.ndarray) -> dict[str, Any]:
    """Tree by tree agreement of a fitted GBDT estimator with the XGBoost model fitted on the same ``X``.

    Returns
    -------
    dict: ``n_trees``, ``same_trees`` (count), ``differences`` (first difference per differing tree),
    ``max_prediction_difference`` (of predict_proba or predict on X)
    """
    X = np.asarray(X, np.float32)
    diffs = {}
    for t, xtree in enumerate(xgboost_trees(peer.get_booster())):
        d = tree_difference(model.trees_[t], xtree, X)
        if d:
            diffs[t] = d
    pred = "predict_proba" if hasattr(model, "predict_proba") else "predict"
    gap = float(np.max(np.abs(getattr(model, pred)(X) - getattr(peer, pred)(X))))
    return dict(n_trees=len(model.trees_), same_trees=len(model.trees_) - len(diffs), differences=diffs,
                max_prediction_difference=gap)
