"""Parameter checks, input conversion and JSON of the boosting estimators (shared by both)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from .._validation import check_int, check_real, check_sklearn_input_shape, check_X
from ..backend import to_host
from ..trees.boosted_import import GBDT_FORMAT, TREE_FIELDS, categories_to_fields, read_boosted_trees
from ..trees.ensemble import ModelFormatError
from .grower import BoostedTree, ColumnData
from .lossguide_grower import GROW_POLICIES

JSON_FORMAT = GBDT_FORMAT
SPLIT_METHODS = ("auto", "exact", "hist")
HIST_LOOPS = ("collective", "scheduler")


def chosen_split_method(est) -> str:
    """``split_method``, or XGBoost's ``tree_method`` where it is set: "auto", "exact" or "hist"."""
    method, alias = est.split_method, getattr(est, "tree_method", None)
    if method not in SPLIT_METHODS:
        raise ValueError(f"split_method must be one of {SPLIT_METHODS}, got {method!r}")
    if alias is None:
        return method
    if alias == "approx":
        raise ValueError("tree_method='approx' (XGBoost's per-tree sketch) has no counterpart in dtlab: use "
                         "tree_method='hist' (or split_method='hist')")
    if alias not in SPLIT_METHODS:
        raise ValueError(f"tree_method must be one of {SPLIT_METHODS} or None, got {alias!r}")
    if method != "auto" and method != alias:
        raise ValueError(f"split_method={method!r} and tree_method={alias!r} (its XGBoost name) disagree; set one")
    return alias


def _chosen_max_bins(est) -> int:
    """``max_bins``, or the ``max_bin`` of XGBoost and LightGBM where it is set."""
    bins = check_int(est.max_bins, "max_bins", low=2, high=256)
    alias = getattr(est, "max_bin", None)
    if alias is None:
        return bins
    alias = check_int(alias, "max_bin", low=2, high=256)
    if bins != 256 and bins != alias:
        raise ValueError(f"max_bins={bins} and max_bin={alias} (its XGBoost/LightGBM name) disagree; set one")
    return alias


def check_params(est, categorical: bool = False) -> dict:
    """The validated hyper-parameters of a GBDT estimator, as the boosting loop takes them.

    ``categorical``: the fit's data has categorical features (``split_method="auto"`` then runs ``"hist"``).
    The returned ``split_method`` is the one the fit runs, never ``"auto"``.
    """
    requested = chosen_split_method(est)
    if est.grow_policy not in GROW_POLICIES:
        raise ValueError(f"grow_policy must be one of {GROW_POLICIES}, got {est.grow_policy!r}")
    if getattr(est, "dask_hist_loop", "collective") not in HIST_LOOPS:
        raise ValueError(f"dask_hist_loop must be one of {HIST_LOOPS}, got {est.dask_hist_loop!r}")
    lossguide = est.grow_policy == "lossguide"
    if requested == "auto":  # exact where it can grow the tree asked for, else histograms
        method = "hist" if lossguide or categorical else "exact"
    else:
        method = requested
    params = dict(
        n_estimators=check_int(est.n_estimators, "n_estimators", low=1),
        max_depth=check_int(est.max_depth, "max_depth", low=0 if lossguide else 1),
        learning_rate=check_real(est.learning_rate, "learning_rate", low=0.0, low_inclusive=False),
        reg_lambda=check_real(est.reg_lambda, "reg_lambda", low=0.0),
        gamma=check_real(est.gamma, "gamma", low=0.0),
        min_child_weight=check_real(est.min_child_weight, "min_child_weight", low=0.0),
        split_method=method,
        max_bins=_chosen_max_bins(est),
        grow_policy=est.grow_policy,
        max_leaves=check_int(est.max_leaves, "max_leaves", low=0),
        max_cat_to_onehot=check_int(est.max_cat_to_onehot, "max_cat_to_onehot", low=1),
    )
    for name in ("subsample", "colsample_bytree", "colsample_bylevel"):
        params[name] = check_real(getattr(est, name), name, low=0.0, low_inclusive=False, high=1.0)
    if lossguide and method != "hist":
        raise ValueError("grow_policy='lossguide' needs split_method='hist' (as in XGBoost: the exact method grows "
                         "level by level)")
    if not lossguide and params["max_leaves"]:
        raise ValueError("max_leaves applies to grow_policy='lossguide' (leaf-wise growth); depthwise trees are "
                         "bounded by max_depth")
    if lossguide and not params["max_depth"] and not params["max_leaves"]:
        raise ValueError("grow_policy='lossguide' with max_depth=0 (no depth limit) needs max_leaves >= 1")
    return params


def check_sample_weight(sample_weight: Any, n_samples: int, name: str = "sample_weight") -> np.ndarray | None:
    """Sample weights as float64 (n_samples,): finite, non-negative, not all zero; None stays None."""
    if sample_weight is None:
        return None
    w = np.asarray(to_host(sample_weight), dtype=np.float64)
    if w.ndim == 0:
        w = np.full(n_samples, float(w))
    if w.shape != (n_samples,):
        raise ValueError(f"{name} must have shape ({n_samples},), got {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError(f"{name} must hold finite non-negative numbers")
    if not w.any():
        raise ValueError(f"{name} is zero everywhere; at least one row needs a positive weight")
    return w


def column_names(X) -> list[str] | None:
    """The pandas column names of X, when they are all strings."""
    if hasattr(X, "columns") and all(isinstance(c, str) for c in X.columns):
        return list(X.columns)
    return None


def fit_data(X) -> tuple[ColumnData, list[str] | None]:
    """Training matrix as column data (sparse stays sparse), and the pandas column names if any."""
    check_sklearn_input_shape(X)
    names = column_names(X)
    X = to_host(X)
    return ColumnData.from_input(X), names


def predict_rows(X, n_features: int, who: str = "the model", chunk: int = 65_536):
    """Rows to predict as float32 dense blocks (NaN = missing); sparse input is densified a block at a time,
    its absent entries becoming NaN.  Yields arrays of shape (<= chunk, n_features); ``who`` names the
    model in the error for a wrong number of features."""
    check_sklearn_input_shape(X)
    X = to_host(X)
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2 and shape[1] != n_features:
        raise ValueError(f"X has {shape[1]} features, but {who} is expecting {n_features} features as input")
    if scipy.sparse.issparse(X):
        csr = scipy.sparse.csr_matrix(X, dtype=np.float32)
        for s in range(0, max(csr.shape[0], 1), chunk):
            block = csr[s:s + chunk]
            dense = np.full(block.shape, np.nan, np.float32)
            rows = np.repeat(np.arange(block.shape[0]), np.diff(block.indptr))
            dense[rows, block.indices] = block.data
            if np.isinf(dense).any():
                raise ValueError("X contains inf; only finite values (and NaN for missing) are allowed")
            yield dense
        return
    yield check_X(X, dtype=np.float32, allow_nan=True, n_features=n_features, min_samples=0)


def trees_to_json(trees: list[BoostedTree]) -> list[dict[str, Any]]:
    return [{**{k: getattr(t, k).tolist() for k in TREE_FIELDS}, **categories_to_fields(t.categories)}
            for t in trees]


def trees_from_json(items: list[dict[str, Any]]) -> list[BoostedTree]:
    """The trees of a model file, each field checked (:func:`dtlab.trees.boosted_import.read_boosted_trees`)."""
    return [BoostedTree(**tree) for tree in read_boosted_trees(items)]


def save(est, path: str | Path) -> None:
    """Write a fitted estimator as JSON: parameters, fitted scalars, classes and every tree."""
    fitted = dict(base_margin=est.base_margin_, n_features_in_=est.n_features_in_, n_outputs=est.n_outputs_,
                  best_iteration_=est.best_iteration_, evals_result_=est.evals_result_,
                  trees=trees_to_json(est.trees_))
    if hasattr(est, "classes_"):
        fitted["classes_"] = est.classes_.tolist()
    if hasattr(est, "feature_names_in_"):
        fitted["feature_names_in_"] = est.feature_names_in_.tolist()
    fitted["categorical_"] = np.flatnonzero(est.categorical_).tolist()
    fitted["categories_"] = {str(f): [c.item() if hasattr(c, "item") else c for c in cats]
                             for f, cats in est.categories_.items()}
    doc = {"format": JSON_FORMAT, "estimator": type(est).__name__, "params": est.get_params(), "fitted": fitted}
    Path(path).write_text(json.dumps(doc))


def load(cls, path: str | Path):
    """An estimator of class ``cls`` read from :func:`save`'s JSON.

    Every tree is checked, and the model validated as a forest (children inside
    their tree and after their parent, features inside ``[0, n_features_in_)``,
    whole rounds of ``n_outputs`` trees), before anything predicts with it.

    Raises
    ------
    ModelFormatError (a ValueError)
        Not such a file, a field missing or malformed, or trees that are not a valid forest.
    """
    try:
        doc = json.loads(Path(path).read_text())
    except json.JSONDecodeError as err:
        raise ModelFormatError(f"{path} is not valid JSON: {err}") from err
    if not isinstance(doc, dict) or doc.get("format") != JSON_FORMAT or doc.get("estimator") != cls.__name__:
        raise ModelFormatError(f"{path} is not a {cls.__name__} saved by dtlab ({JSON_FORMAT})")
    try:
        est = cls(**doc["params"])
        f = doc["fitted"]
        est.base_margin_ = float(f["base_margin"])
        est.n_features_in_ = check_int(f["n_features_in_"], "n_features_in_", low=1)
        est.n_outputs_ = check_int(f["n_outputs"], "n_outputs", low=1)
        est.best_iteration_ = check_int(f["best_iteration_"], "best_iteration_", low=0, allow_none=True)
        est.evals_result_ = f["evals_result_"]
        if "classes_" in f:
            est.classes_ = np.asarray(f["classes_"])
            expected = 2 if est.n_outputs_ == 1 else est.n_outputs_  # logistic: one margin; softmax: one per class
            if est.classes_.ndim != 1 or est.classes_.shape[0] != expected or est.n_outputs_ == 2:
                raise ValueError(f"{est.classes_.shape[0]} classes do not match {est.n_outputs_} outputs")
        if "feature_names_in_" in f:
            est.feature_names_in_ = np.asarray(f["feature_names_in_"], dtype=object)
        est.categorical_ = np.zeros(est.n_features_in_, bool)
        est.categorical_[np.asarray(f.get("categorical_", []), np.int64)] = True
        est.categories_ = {int(k): list(v) for k, v in f.get("categories_", {}).items()}
        trees = trees_from_json(f["trees"])
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, ModelFormatError):
            raise
        raise ModelFormatError(f"{path}: malformed {cls.__name__} model: {err!r}") from err
    est._set_trees(trees)  # validates the forest (ModelFormatError) before any kernel sees it
    return est
