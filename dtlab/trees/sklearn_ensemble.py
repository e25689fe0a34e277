"""Import fitted scikit-learn trees and forests as an :class:`~dtlab.trees.ensemble.Ensemble`."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ensemble import Ensemble, pack

#: scikit-learn estimators :func:`ensemble_from_sklearn` reads.
SKLEARN_SUPPORTED = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier",
                     "ExtraTreeRegressor", "RandomForestClassifier", "RandomForestRegressor",
                     "ExtraTreesClassifier", "ExtraTreesRegressor")


def ensemble_from_sklearn(estimator: Any):
    """A fitted scikit-learn tree or forest as an :class:`~dtlab.trees.ensemble.Ensemble`.

    Its raw prediction is ``predict_proba`` for classifiers (class fractions of
    the leaf, averaged over the trees of a forest) and ``predict`` for
    regressors, on X converted to float32 as scikit-learn does.

    Raises
    ------
    TypeError
        Not one of :data:`SKLEARN_SUPPORTED`, or not fitted.
    """
    name = type(estimator).__name__
    if name not in SKLEARN_SUPPORTED:
        raise TypeError(f"scikit-learn {name} is not supported; supported: {', '.join(SKLEARN_SUPPORTED)}")
    members = getattr(estimator, "estimators_", None) if "Forest" in name or "Trees" in name else [estimator]
    if members is None or any(getattr(m, "tree_", None) is None for m in members):
        raise TypeError(f"{name} is not fitted; call fit first")
    trees, n_values = [], None
    for member in members:
        tree = member.tree_
        if tree.n_outputs != 1:
            raise ValueError(f"only single-output trees are supported, this one has {tree.n_outputs} outputs")
        value = tree.value[:, 0, :].astype(np.float64)
        if hasattr(estimator, "classes_"):
            total = value.sum(axis=1, keepdims=True)
            value = value / np.where(total == 0, 1.0, total)  # predict_proba's normalisation
        left = tree.children_left.astype(np.int32)
        leaf = left == -1
        missing = getattr(tree, "missing_go_to_left", None)
        n_values = value.shape[1]
        trees.append({"feature": np.where(leaf, -1, tree.feature).astype(np.int32),
                      "threshold": np.where(leaf, 0.0, tree.threshold),
                      "left": left, "right": tree.children_right.astype(np.int32),
                      "missing_left": np.ones(len(left), bool) if missing is None else missing.astype(bool),
                      "value": value})
    forest = pack(trees)
    ens = Ensemble(forest, int(estimator.n_features_in_), n_values, np.zeros(len(trees), np.int64),
                   np.zeros(n_values), 1.0 / len(trees), np.float32, source=f"sklearn.{name}",
                   feature_names=list(getattr(estimator, "feature_names_in_", [])) or None)
    ens.validate()
    return ens
