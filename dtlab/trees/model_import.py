"""Model import: any supported model -- a file, a dump, a library's object, dtlab's own -- as an Ensemble.

:func:`to_ensemble` is the one format dispatch (as treelite's ``frontend``):
it recognises what it is given and calls the importer of that format
(:mod:`.sklearn_import`, :mod:`.xgboost_import`, :mod:`.lightgbm_import`, or
FlatTrees and PackedForests packed here).  What consumes an
:class:`~dtlab.trees.ensemble.Ensemble` -- the inference engine
(:class:`dtlab.inference.Forest`) -- knows no formats.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .ensemble import Ensemble, ModelFormatError, read_json_model
from .flat import FlatTree
from .packed import PackedForest

#: What :func:`to_ensemble` (and so :class:`dtlab.inference.Forest`) accepts, for error messages.
SUPPORTED = ("FlatTree", "list of FlatTree", "PackedForest (with value)",
             "dtlab estimators (greedy and GDT trees: tree_; GBDT: to_ensemble())",
             "dtlab model files (FlatTree JSON: tree_.save; GBDT JSON: save_json)",
             "scikit-learn DecisionTree*/ExtraTree*/RandomForest*/ExtraTrees*",
             "scikit-learn GradientBoosting*/HistGradientBoosting*", "xgboost.Booster / XGBModel (gbtree, dart)",
             "lightgbm.Booster / LGBMModel", "XGBoost model JSON (save_raw / save_model)",
             "LightGBM dump_model() JSON", "dtlab.trees.ensemble.Ensemble")


def _from_flat_trees(trees: list, combine: str, input_dtype) -> Ensemble:
    if combine not in ("mean", "sum"):
        raise ValueError(f"combine must be 'mean' or 'sum', got {combine!r}")
    if not trees:
        raise ValueError("a Forest needs at least one tree")
    n_features = {t.n_features for t in trees}
    if len(n_features) != 1:
        raise ValueError(f"the trees were fitted on different numbers of features: {sorted(n_features)}")
    normalised = []
    for t in trees:
        t.validate()
        if t.task == "classification":  # predict_proba's class frequencies
            totals = t.value.sum(axis=1, keepdims=True)
            value = np.divide(t.value, totals, out=np.full_like(t.value, 1.0 / t.value.shape[1]), where=totals > 0)
            t = FlatTree(t.feature, t.threshold, t.left, t.right, value, t.n_features, t.task, t.classes,
                         t.missing_left)
        normalised.append(t)
    forest = PackedForest.from_trees(normalised)
    if forest.value is None:
        raise ValueError("the trees have different numbers of outputs")
    n_values = forest.value.shape[1]
    return Ensemble(forest, n_features.pop(), n_values, np.zeros(forest.n_trees, np.int64), np.zeros(n_values),
                    1.0 / forest.n_trees if combine == "mean" else 1.0, input_dtype, source="dtlab")


def _xgboost_booster(model: Any) -> Any:
    """The Booster of an XGBoost model; of a scikit-learn wrapper that stopped early, its best iteration's trees
    (the wrapper's ``predict`` uses only those; a Booster's own ``predict`` uses every tree)."""
    if not hasattr(model, "get_booster"):
        return model
    booster = model.get_booster()
    best = getattr(model, "best_iteration", None)  # an AttributeError without early stopping
    if best is not None and getattr(model, "booster", None) != "gblinear" and best + 1 < booster.num_boosted_rounds():
        booster = booster[: best + 1]
    return booster


def to_ensemble(model: Any, combine: str = "mean") -> Ensemble:
    """Read any supported model (:data:`SUPPORTED`) into an :class:`Ensemble`.

    Raises
    ------
    TypeError : an unsupported model type (the message lists the supported ones)
    ModelFormatError : a malformed model file or dump
    """
    from .boosted_import import GBDT_FORMAT, ensemble_from_gbdt_json
    from .flat import JSON_FORMAT as FLAT_TREE_FORMAT
    from .lightgbm_import import from_lightgbm
    from .sklearn_boosting_import import SKLEARN_BOOSTING, ensemble_from_sklearn_boosting
    from .sklearn_import import SKLEARN_SUPPORTED, ensemble_from_sklearn
    from .xgboost_import import from_xgboost

    if isinstance(model, Ensemble):
        return model
    if callable(getattr(model, "to_ensemble", None)):  # a dtlab estimator that knows its Ensemble (GBDT)
        ens = model.to_ensemble()
        if not isinstance(ens, Ensemble):
            raise TypeError(f"{type(model).__name__}.to_ensemble() returned {type(ens).__name__}, not an Ensemble")
        return ens
    if isinstance(model, FlatTree):
        return _from_flat_trees([model], combine, None)
    if isinstance(model, (list, tuple)) and model and all(isinstance(t, FlatTree) for t in model):
        return _from_flat_trees(list(model), combine, None)
    if isinstance(model, PackedForest):
        if model.value is None:
            raise ValueError("a PackedForest needs leaf values (value) to predict")
        n_features = int(model.feature[model.left != -1].max()) + 1 if (model.left != -1).any() else 1
        n_values = model.value.shape[1]
        return Ensemble(model, n_features, n_values, np.zeros(model.n_trees, np.int64), np.zeros(n_values),
                        1.0 / model.n_trees if combine == "mean" else 1.0, None)
    if isinstance(getattr(model, "tree_", None), FlatTree):  # dtlab estimators predict on float32 X
        return _from_flat_trees([model.tree_], combine, np.float32)
    kind = type(model).__module__.split(".")[0]
    if type(model).__name__ in SKLEARN_BOOSTING and kind == "sklearn":
        return ensemble_from_sklearn_boosting(model)
    if kind == "sklearn" or type(model).__name__ in SKLEARN_SUPPORTED:
        return ensemble_from_sklearn(model)
    if kind == "xgboost":
        return from_xgboost(_xgboost_booster(model))
    if kind == "lightgbm":
        return from_lightgbm(model.booster_ if hasattr(model, "booster_") else model)
    if isinstance(model, (str, Path, bytes, bytearray, dict)):
        data = read_json_model(model)
        if isinstance(data, dict) and data.get("format") == FLAT_TREE_FORMAT:
            try:
                tree = FlatTree.from_dict(data)  # validates the tree
            except (ValueError, TypeError) as err:
                raise ModelFormatError(f"invalid dtlab tree file: {err}") from err
            return _from_flat_trees([tree], combine, None)
        if isinstance(data, dict) and data.get("format") == GBDT_FORMAT:
            return ensemble_from_gbdt_json(data)
        if isinstance(data, dict) and "learner" in data:
            return from_xgboost(data)
        if isinstance(data, dict) and "tree_info" in data:
            return from_lightgbm(data)
        raise ModelFormatError("the JSON is neither a dtlab model file (format dtlab.FlatTree/1 or dtlab.GBDT/1), "
                               "an XGBoost model (key 'learner') nor a LightGBM dump_model() (key 'tree_info')")
    raise TypeError(f"unsupported model type {type(model).__name__}; supported: {'; '.join(SUPPORTED)}")
