"""Import scikit-learn's gradient boosting: ``GradientBoosting*`` and ``HistGradientBoosting*`` as an Ensemble.

The raw prediction is what scikit-learn's ``decision_function`` (classifiers) and ``predict`` (regressors)
return before any link: ``raw = init + sum over stages of the leaf values``.

``GradientBoosting*``
    ``estimators_[stage, k]`` is a ``DecisionTreeRegressor`` adding ``learning_rate * value`` into output
    ``k``; the start is the ``init_`` estimator's raw prediction, a constant for the default (prior or
    mean, ``DummyClassifier`` / ``DummyRegressor``) and for ``init="zero"``.  Trees test float32 X, as
    scikit-learn's trees do.
``HistGradientBoosting*``
    ``_predictors[iteration][k]`` hold the nodes (``x <= num_threshold`` on float64 X, NaN to
    ``missing_go_to_left``; the leaves already shrunk), the start is ``_baseline_prediction``.  Categorical
    splits (``categorical_features``) become :class:`~dtlab.trees.categorical.CategoricalSplits`: the
    encoder's categories are read back to the input's values (non-negative integers), and a value the
    encoder did not see in training follows the missing side, as in scikit-learn.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .categorical import CategoricalSplits
from .ensemble import Ensemble, pack

#: scikit-learn gradient boosting estimators this module reads.
SKLEARN_BOOSTING = ("GradientBoostingClassifier", "GradientBoostingRegressor", "HistGradientBoostingClassifier",
                    "HistGradientBoostingRegressor")


def _names(est: Any) -> list | None:
    names = getattr(est, "feature_names_in_", None)
    return None if names is None else [str(n) for n in names]


def from_gradient_boosting(est: Any) -> Ensemble:
    """A fitted ``GradientBoostingClassifier`` / ``Regressor``: raw = ``decision_function`` / ``predict``."""
    stages = getattr(est, "estimators_", None)
    if stages is None:
        raise TypeError(f"{type(est).__name__} is not fitted; call fit first")
    init = est.init_
    if isinstance(init, str) and init == "zero":
        base = np.zeros(stages.shape[1])
    elif type(init).__name__ in ("DummyClassifier", "DummyRegressor"):
        # a constant start (the class prior's log-odds, the mean or a quantile): its raw value on any row
        base = np.asarray(est._raw_predict_init(np.zeros((1, est.n_features_in_), np.float32)),
                          np.float64).reshape(-1)
    else:
        raise TypeError(f"{type(est).__name__} with init={type(init).__name__}: the start of its raw prediction "
                        "depends on X; only the default init (a constant) and init='zero' can be read")
    rate = float(est.learning_rate)
    trees = []
    for stage in stages:
        for member in stage:
            t = member.tree_
            left = t.children_left.astype(np.int32)
            leaf = left == -1
            missing = getattr(t, "missing_go_to_left", None)
            trees.append({"feature": np.where(leaf, -1, t.feature).astype(np.int32),
                          "threshold": np.where(leaf, 0.0, t.threshold), "left": left,
                          "right": t.children_right.astype(np.int32),
                          "missing_left": np.ones(len(left), bool) if missing is None else missing.astype(bool),
                          # scikit-learn adds learning_rate * value per stage: the same products here
                          "value": (rate * t.value[:, 0, :1]).astype(np.float64)})
    k = stages.shape[1]
    ens = Ensemble(pack(trees), int(est.n_features_in_), k, np.tile(np.arange(k, dtype=np.int64), stages.shape[0]),
                   base, 1.0, np.float32, source=f"sklearn.{type(est).__name__}", feature_names=_names(est))
    ens.validate({"value": "learning_rate * tree_.value", "threshold": "tree_.threshold",
                  "base": "init_'s raw prediction"})
    return ens


def _input_columns(est: Any) -> np.ndarray:
    """Input column of each column the predictors read: scikit-learn's encoder puts the categorical
    features first (``_preprocessor``'s output), the others after, each group in input order."""
    is_cat = getattr(est, "is_categorical_", None)
    if getattr(est, "_preprocessor", None) is None or is_cat is None:
        return np.arange(est.n_features_in_)
    return np.concatenate([np.flatnonzero(is_cat), np.flatnonzero(~is_cat)]).astype(np.int64)


def _category_values(est: Any) -> list:
    """Per predictor column of a categorical feature, the input value of each code (the encoder's
    categories, NaN removed), checked to be non-negative integers."""
    encoder = est._preprocessor.named_transformers_["encoder"]
    values = []
    for f, cats in zip(np.flatnonzero(est.is_categorical_), encoder.categories_):
        cats = np.asarray([c for c in cats if not (isinstance(c, float) and np.isnan(c))], dtype=object)
        try:
            numeric = cats.astype(np.float64)
        except (TypeError, ValueError):
            numeric = None
        if numeric is None or (numeric < 0).any() or (numeric != np.round(numeric)).any() or (numeric > 2**24).any():
            raise TypeError(f"{type(est).__name__}: categorical feature {f} has categories that are not "
                            "non-negative integers; dtlab reads X as numbers (encode the categories as codes "
                            "0, 1, ... and fit on them)")
        values.append(numeric.astype(np.int64))
    return values


def from_hist_gradient_boosting(est: Any) -> Ensemble:
    """A fitted ``HistGradientBoostingClassifier`` / ``Regressor``: raw = ``decision_function`` / ``predict``
    (scikit-learn's ``_raw_predict``)."""
    predictors = getattr(est, "_predictors", None)
    if predictors is None:
        raise TypeError(f"{type(est).__name__} is not fitted; call fit first")
    columns = _input_columns(est)
    has_cat = getattr(est, "is_categorical_", None) is not None and bool(np.any(est.is_categorical_))
    cat_values = _category_values(est) if has_cat else []
    trees, cat_nodes, cat_sets, cat_out, offset = [], [], [], [], 0
    for iteration in predictors:
        for predictor in iteration:
            nodes = predictor.nodes
            leaf = nodes["is_leaf"].astype(bool)
            missing_left = nodes["missing_go_to_left"].astype(bool)
            for i in np.flatnonzero(nodes["is_categorical"].astype(bool) & ~leaf):
                words = predictor.raw_left_cat_bitsets[nodes["bitset_idx"][i]]
                codes = np.flatnonzero(np.unpackbits(words.view(np.uint8), bitorder="little"))
                values = cat_values[int(nodes["feature_idx"][i])]
                cat_nodes.append(offset + i)
                cat_sets.append(values[codes[codes < values.shape[0]]])
                # values the encoder never saw (and negative ones) are missing to scikit-learn: the missing side
                cat_out.append(missing_left[i])
            trees.append({"feature": np.where(leaf, -1, columns[nodes["feature_idx"]]).astype(np.int32),
                          "threshold": np.where(leaf, 0.0, nodes["num_threshold"]).astype(np.float64),
                          "left": np.where(leaf, -1, nodes["left"]).astype(np.int32),
                          "right": np.where(leaf, -1, nodes["right"]).astype(np.int32),
                          "missing_left": missing_left, "value": nodes["value"].astype(np.float64)[:, None]})
            offset += nodes.shape[0]
    k = int(est.n_trees_per_iteration_)
    categorical = None
    if cat_nodes:
        # a category value seen in training but in no left set goes right; one never seen goes the missing way
        known = {int(f): v for f, v in zip(np.flatnonzero(est.is_categorical_), cat_values)}
        forest_feature = np.concatenate([t["feature"] for t in trees])
        categorical = CategoricalSplits.from_sets(
            np.asarray(cat_nodes, np.int64), cat_sets, np.asarray(cat_out, bool),
            known=[known[int(forest_feature[n])] for n in cat_nodes], exact_features=sorted(known))
    ens = Ensemble(pack(trees), int(est.n_features_in_), k, np.tile(np.arange(k, dtype=np.int64), len(predictors)),
                   np.asarray(est._baseline_prediction, np.float64).reshape(-1), 1.0, np.float64,
                   source=f"sklearn.{type(est).__name__}", feature_names=_names(est), categorical=categorical)
    # num_threshold +inf is scikit-learn's split of the missing values from all the others
    ens.validate({"value": "nodes['value']", "threshold": "nodes['num_threshold']", "base": "_baseline_prediction"})
    return ens


def ensemble_from_sklearn_boosting(est: Any) -> Ensemble:
    """Dispatch on the estimator's class (one of :data:`SKLEARN_BOOSTING`)."""
    name = type(est).__name__
    if name.startswith("Hist"):
        return from_hist_gradient_boosting(est)
    return from_gradient_boosting(est)
