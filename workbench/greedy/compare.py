"""Checks against scikit-learn: same tree, and why a tree differs where it does.

:func:`same_tree` compares two FlatTrees node by node (both builders number
nodes in depth-first preorder).  :func:`tie_report` walks two regression trees
grown on the same data side by side and, at every node where they stop
agreeing, computes the gain of both choices in exact rational arithmetic (on
the targets' decimal values, as written in the data file): when every such
gain pair is exactly equal, the trees differ only by how splits of exactly
equal gain were ranked -- which depends on floating-point rounding (summation
order), not on the method.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np

from dtlab.greedy.builder import as_float32_features
from dtlab.trees import FlatTree


def same_tree(a: FlatTree, b: FlatTree, *, value_rtol: float = 1e-9) -> bool:
    """True when ``a`` and ``b`` have the same nodes, tests and (nearly) the same values.

    Parameters
    ----------
    a, b : FlatTree
        Nodes in the same order (both in depth-first preorder).
    value_rtol : float
        Relative tolerance on node values (means or class counts).
    """
    if a.n_nodes != b.n_nodes or a.task != b.task:
        return False
    for name in ("feature", "left", "right", "threshold"):
        if not np.array_equal(getattr(a, name), getattr(b, name)):
            return False
    return bool(np.allclose(a.value, b.value, rtol=value_rtol, atol=value_rtol))


def sklearn_twin(estimator: Any):
    """An unfitted scikit-learn tree with the parameters of a dtlab greedy estimator."""
    from sklearn import tree as sk

    params = dict(max_depth=estimator.max_depth, min_samples_split=estimator.min_samples_split,
                  min_samples_leaf=estimator.min_samples_leaf, random_state=estimator.random_state)
    if hasattr(estimator, "criterion"):
        if estimator.criterion == "gain_ratio":
            raise ValueError("scikit-learn has no gain-ratio criterion")
        return sk.DecisionTreeClassifier(criterion=estimator.criterion, **params)
    return sk.DecisionTreeRegressor(**params)


def compare_with_sklearn(estimator: Any, X: Any, y: Any, sample_weight: Any = None) -> dict[str, Any]:
    """Fit ``estimator`` and its scikit-learn twin on ``(X, y)`` (with ``sample_weight``) and compare the trees.

    Returns
    -------
    dict
        ``n_nodes``, ``n_nodes_sklearn``, ``same_tree``, ``max_abs_prediction_diff``,
        and ``train_mse`` / ``train_mse_sklearn`` (regression) or
        ``train_accuracy`` / ``train_accuracy_sklearn`` (classification).
    """
    ours = estimator.fit(X, y, sample_weight=sample_weight)
    theirs = sklearn_twin(estimator).fit(X, y, sample_weight=sample_weight)
    a, b = ours.tree_, FlatTree.from_sklearn(theirs)
    out: dict[str, Any] = {"n_nodes": a.n_nodes, "n_nodes_sklearn": b.n_nodes, "same_tree": same_tree(a, b)}
    if a.task == "regression":
        pa, pb = ours.predict(X), theirs.predict(X)
        y = np.asarray(y, dtype=np.float64)
        out.update(train_mse=float(np.mean((pa - y) ** 2)), train_mse_sklearn=float(np.mean((pb - y) ** 2)),
                   max_abs_prediction_diff=float(np.max(np.abs(pa - pb))))
    else:
        pa, pb = ours.predict(X), theirs.predict(X)
        out.update(train_accuracy=float(np.mean(pa == y)), train_accuracy_sklearn=float(np.mean(pb == y)),
                   max_abs_prediction_diff=float(np.max(np.abs(ours.predict_proba(X) - theirs.predict_proba(X)))))
    return out


def exact_gain(y: np.ndarray, goes_left: np.ndarray | None, values: str = "decimal") -> Fraction:
    """Reduction of the squared error by a split, in exact rational arithmetic.

    Parameters
    ----------
    y : float64 array (n_node,), the node's targets
    goes_left : bool array (n_node,), or None for "no split" (gain 0)
    values : {"decimal", "binary"}
        ``"decimal"`` takes each target as the shortest decimal that prints as
        it -- the value written in a data file (an age of ``1.88`` is 47/25);
        ``"binary"`` takes the float64 value itself (1.88 is then
        0.0000000000000000888... off, and two splits of equal gain on the
        data's values can differ by such crumbs).

    Returns
    -------
    Fraction
        ``B_L^2/n_L + B_R^2/n_R - B^2/n``.
    """
    if goes_left is None:
        return Fraction(0)
    if values not in ("decimal", "binary"):
        raise ValueError(f"values must be 'decimal' or 'binary', got {values!r}")
    ys = [Fraction(repr(float(v))) if values == "decimal" else Fraction(float(v)) for v in y]
    b_l = sum((v for v, g in zip(ys, goes_left) if g), Fraction(0))
    b = sum(ys, Fraction(0))
    n_l = int(np.count_nonzero(goes_left))
    n = len(ys)
    b_r = b - b_l
    return b_l * b_l / n_l + b_r * b_r / (n - n_l) - b * b / n


def _describe(tree: FlatTree, node: int, names: list[str] | None) -> str:
    if tree.left[node] == -1:
        return "leaf"
    f = int(tree.feature[node])
    return f"{names[f] if names else f'x{f}'} <= {tree.threshold[node]:.6g}"


def tie_report(ours: FlatTree, theirs: FlatTree, X: Any, y: Any, feature_names: list[str] | None = None,
               values: str = "decimal"):
    """Where two regression trees grown on the same data diverge, and the exact gains there.

    The trees are walked side by side from the root.  Nodes with the same test
    are followed into both children.  Nodes whose tests differ but split the
    rows identically (two features separating the same rows) are recorded and
    followed too.  Anywhere else the subtrees go separate ways: the node is
    recorded with the exact gain of each tree's choice (0 for a leaf) and not
    followed further.

    Parameters
    ----------
    ours, theirs : FlatTree, regression
    X : array-like (n_samples, n_features), the training features
    y : array-like (n_samples,), the training targets
    feature_names : list of str, optional
    values : {"decimal", "binary"}
        How targets are taken in the exact arithmetic, see :func:`exact_gain`.

    Returns
    -------
    pandas.DataFrame
        One row per divergence: ``node``, ``node_other`` (ids in each tree),
        ``depth``, ``n_samples``, ``kind`` ("same partition", "equal gain",
        "pure node" (a split of a node whose targets are all equal -- gain
        exactly 0, the same as no split) or "different gain"), ``ours``,
        ``theirs`` (the tests), ``gain``, ``gain_other`` (float of the exact
        gains) and ``exactly_equal``.  Empty when the trees are the same.
    """
    import pandas as pd

    X32 = as_float32_features(np.asarray(X, dtype=np.float64))
    y = np.asarray(y, dtype=np.float64)
    rows_out = []
    stack = [(0, 0, np.arange(X32.shape[0]), 0)]
    while stack:
        a, b, rows, depth = stack.pop()
        a_leaf, b_leaf = ours.left[a] == -1, theirs.left[b] == -1
        if a_leaf and b_leaf:
            continue
        left_a = None if a_leaf else X32[rows, ours.feature[a]] <= ours.threshold[a]
        left_b = None if b_leaf else X32[rows, theirs.feature[b]] <= theirs.threshold[b]
        same_test = (not a_leaf and not b_leaf and ours.feature[a] == theirs.feature[b]
                     and ours.threshold[a] == theirs.threshold[b])
        same_partition = left_a is not None and left_b is not None and np.array_equal(left_a, left_b)
        if not same_test:
            gain_a, gain_b = exact_gain(y[rows], left_a, values), exact_gain(y[rows], left_b, values)
            if same_partition:
                kind = "same partition"
            elif gain_a == gain_b:
                kind = "pure node" if np.ptp(y[rows]) == 0 else "equal gain"
            else:
                kind = "different gain"
            rows_out.append(dict(node=a, node_other=b, depth=depth, n_samples=len(rows), kind=kind,
                                 ours=_describe(ours, a, feature_names), theirs=_describe(theirs, b, feature_names),
                                 gain=float(gain_a), gain_other=float(gain_b), exactly_equal=gain_a == gain_b))
        if same_test or same_partition:
            stack.append((int(ours.right[a]), int(theirs.right[b]), rows[~left_a], depth + 1))
            stack.append((int(ours.left[a]), int(theirs.left[b]), rows[left_a], depth + 1))
    columns = ["node", "node_other", "depth", "n_samples", "kind", "ours", "theirs", "gain", "gain_other",
               "exactly_equal"]
    report = pd.DataFrame(rows_out, columns=columns).sort_values(["depth", "node"], ignore_index=True)
    return report.astype({"exactly_equal": bool})
