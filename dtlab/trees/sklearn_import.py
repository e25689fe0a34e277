"""Import fitted scikit-learn trees: one tree as a FlatTree, a tree or forest as an Ensemble."""

from __future__ import annotations

from typing import Any

import numpy as np

from .ensemble import Ensemble, pack

#: scikit-learn estimators :func:`ensemble_from_sklearn` reads.
SKLEARN_SUPPORTED = ("DecisionTreeClassifier", "DecisionTreeRegressor", "ExtraTreeClassifier",
                     "ExtraTreeRegressor", "RandomForestClassifier", "RandomForestRegressor",
                     "ExtraTreesClassifier", "ExtraTreesRegressor")


def _structure(tree: Any) -> dict[str, np.ndarray]:
    """The node arrays of a scikit-learn ``Tree`` (single output): feature -1 and threshold 0 at leaves.

    A split trained on missing values may send every present value left and the missing ones right with the
    threshold inf; it becomes the largest float32, the same test for every value scikit-learn predicts on
    (float32, finite), so that the FlatTree keeps finite thresholds.
    """
    if tree.n_outputs != 1:
        raise ValueError(f"only single-output trees are supported, this one has {tree.n_outputs} outputs")
    left = tree.children_left.astype(np.int32)
    leaf = left == -1
    missing = getattr(tree, "missing_go_to_left", None)
    threshold = np.where(np.isposinf(tree.threshold), float(np.finfo(np.float32).max), tree.threshold)
    return {"feature": np.where(leaf, -1, tree.feature).astype(np.int32),
            "threshold": np.where(leaf, 0.0, threshold), "left": left,
            "right": tree.children_right.astype(np.int32),
            "missing_left": np.ones(len(left), bool) if missing is None else missing.astype(bool)}


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
    arrays = _structure(tree)
    source = {"source": f"sklearn.{type(estimator).__name__}"}
    if hasattr(estimator, "classes_"):
        fractions = tree.value[:, 0, :]
        # scikit-learn >= 1.4 stores class fractions; earlier versions stored weighted counts.
        sums = fractions.sum(axis=1)
        if np.allclose(sums, 1.0):
            value = fractions * tree.weighted_n_node_samples[:, None]
        else:
            value = fractions
        return cls(**arrays, value=value, n_features=int(tree.n_features), task="classification",
                   classes=np.asarray(estimator.classes_), metadata=source)
    return cls(**arrays, value=tree.value[:, 0, :1], n_features=int(tree.n_features), task="regression",
               metadata=source)


def ensemble_from_sklearn(estimator: Any) -> Ensemble:
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
        arrays = _structure(member.tree_)
        value = member.tree_.value[:, 0, :].astype(np.float64)
        if hasattr(estimator, "classes_"):
            total = value.sum(axis=1, keepdims=True)
            with np.errstate(invalid="ignore"):  # a non-finite value stays non-finite, for validate to name
                value = value / np.where(total == 0, 1.0, total)  # predict_proba's normalisation
        n_values = value.shape[1]
        trees.append({**arrays, "value": value})
    forest = pack(trees)
    ens = Ensemble(forest, int(estimator.n_features_in_), n_values, np.zeros(len(trees), np.int64),
                   np.zeros(n_values), 1.0 / len(trees), np.float32, source=f"sklearn.{name}",
                   feature_names=list(getattr(estimator, "feature_names_in_", [])) or None)
    # scikit-learn's +inf thresholds are float32's largest above: an inf left is a corrupted tree
    ens.validate({"value": "tree_.value", "threshold": "tree_.threshold"}, inf_thresholds=False)
    return ens
