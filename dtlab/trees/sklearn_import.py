"""Import fitted scikit-learn trees as FlatTree."""

from __future__ import annotations

from typing import Any

import numpy as np


def from_sklearn(cls: type, estimator: Any):
    """Convert a fitted ``DecisionTreeClassifier`` / ``DecisionTreeRegressor`` (or ExtraTree*).

    Parameters
    ----------
    cls : type
        FlatTree (passed in to avoid a circular import).
    estimator : fitted scikit-learn single-output tree estimator

    Returns
    -------
    FlatTree
    """
    tree = getattr(estimator, "tree_", None)
    if tree is None or not hasattr(tree, "children_left"):
        raise TypeError(f"expected a fitted scikit-learn decision tree, got {type(estimator).__name__} "
                        "(fit it first; ensembles: pass one of estimator.estimators_)")
    if tree.n_outputs != 1:
        raise ValueError(f"only single-output trees are supported, this one has {tree.n_outputs} outputs")
    is_classifier = hasattr(estimator, "classes_")
    left = tree.children_left.astype(np.int32)
    right = tree.children_right.astype(np.int32)
    leaf = left == -1
    feature = np.where(leaf, -1, tree.feature).astype(np.int32)
    threshold = np.where(leaf, 0.0, tree.threshold)
    missing = getattr(tree, "missing_go_to_left", None)
    missing_left = np.ones(len(left), bool) if missing is None else missing.astype(bool)
    if is_classifier:
        fractions = tree.value[:, 0, :]
        # scikit-learn >= 1.4 stores class fractions; earlier versions stored weighted counts.
        sums = fractions.sum(axis=1)
        if np.allclose(sums, 1.0):
            value = fractions * tree.weighted_n_node_samples[:, None]
        else:
            value = fractions
        return cls(feature=feature, threshold=threshold, left=left, right=right, value=value,
                   n_features=int(tree.n_features), task="classification",
                   classes=np.asarray(estimator.classes_), missing_left=missing_left,
                   metadata={"source": f"sklearn.{type(estimator).__name__}"})
    return cls(feature=feature, threshold=threshold, left=left, right=right, value=tree.value[:, 0, :1],
               n_features=int(tree.n_features), task="regression", missing_left=missing_left,
               metadata={"source": f"sklearn.{type(estimator).__name__}"})

