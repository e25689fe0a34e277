"""Import XGBoost models (``Booster.save_raw("json")`` or ``get_dump(dump_format="json")``) as an :class:`Ensemble`.

XGBoost sends ``x < split_condition`` left, on float32 values, and NaN to
``default_left``; the margin is the sum of the leaves of each output group
plus ``base_score`` mapped to margin space by the objective's link (stored as a
probability for logistic objectives, a mean for log-link ones).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .categorical import CategoricalSplits
from .ensemble import Ensemble, ModelFormatError, nested_to_arrays, pack, strict_to_inclusive_float32

#: Objectives whose base_score is stored as a probability (margin = logit).
LOGIT_OBJECTIVES = ("binary:logistic", "reg:logistic", "binary:logitraw")
#: Objectives whose base_score is stored as a mean (margin = log).
LOG_OBJECTIVES = ("count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft")


def _base_margin(objective: str, base_score: float) -> float:
    if objective in LOGIT_OBJECTIVES and objective != "binary:logitraw":
        return math.log(base_score / (1.0 - base_score))
    if objective in LOG_OBJECTIVES:
        return math.log(base_score)
    return base_score


def _parse_base_score(text: Any) -> np.ndarray:
    # XGBoost >= 3 writes "[5E-1]" (a vector, one per target); 2.x writes "5E-1"
    s = str(text).strip().strip("[]")
    try:
        return np.asarray([float(v) for v in s.split(",") if v.strip()], np.float64)
    except ValueError as err:
        raise ModelFormatError(f"cannot read base_score {text!r}") from err


def load_json(model: Any) -> dict:
    """The model JSON as a dict from a Booster, JSON text/bytes, a dict, or a path to a .json file."""
    if hasattr(model, "save_raw"):
        model = model.save_raw("json")
    if isinstance(model, (bytes, bytearray)):
        model = model.decode()
    if isinstance(model, Path) or (isinstance(model, str) and not model.lstrip().startswith("{")):
        model = Path(model).read_text()
    if isinstance(model, str):
        try:
            model = json.loads(model)
        except json.JSONDecodeError as err:
            raise ModelFormatError(f"malformed XGBoost model JSON: {err}") from err
    if not isinstance(model, dict) or "learner" not in model:
        raise ModelFormatError("not an XGBoost model JSON (no 'learner' key); save it with "
                               "booster.save_raw('json') or booster.save_model('model.json')")
    return model


def from_xgboost(model: Any) -> Ensemble:
    """Read an XGBoost gbtree model (Booster, ``save_raw("json")`` output, dict or .json path).

    Raises
    ------
    ModelFormatError
        Malformed JSON, a linear or dart booster, vector leaves.
    """
    learner = load_json(model)["learner"]
    try:
        params = learner["learner_model_param"]
        booster = learner["gradient_booster"]
        objective = learner["objective"]["name"]
        name = booster["name"]
        if name != "gbtree":
            raise ModelFormatError(f"XGBoost booster {name!r} is not supported; supported: 'gbtree'")
        gb = booster["model"]
        trees_json, tree_info = gb["trees"], gb["tree_info"]
        n_features = int(params["num_feature"])
        n_class = int(params.get("num_class", 0))
        n_targets = int(params.get("num_target", 1))
    except (KeyError, TypeError) as err:
        raise ModelFormatError(f"malformed XGBoost model JSON: missing {err}") from err
    if n_targets > 1:
        raise ModelFormatError("multi-target XGBoost models are not supported")
    n_outputs = max(n_class, 1)
    trees, cat_nodes, cat_sets, n_nodes = [], [], [], 0
    for t in trees_json:
        try:
            if int(t["tree_param"].get("size_leaf_vector", "1")) > 1:
                raise ModelFormatError("vector-leaf XGBoost trees are not supported")
            left = np.asarray(t["left_children"], np.int32)
            right = np.asarray(t["right_children"], np.int32)
            cond = np.asarray(t["split_conditions"], np.float64)
            feat = np.asarray(t["split_indices"], np.int32)
            default_left = np.asarray(t["default_left"], bool)
        except (KeyError, TypeError, ValueError) as err:
            raise ModelFormatError(f"malformed XGBoost tree: {err}") from err
        leaf = left == -1
        categorical = _categorical_nodes(t, left.shape[0])
        threshold = np.where(leaf, 0.0, strict_to_inclusive_float32(np.nan_to_num(cond)))
        for node, _ in categorical:
            threshold[node] = 0.0  # the node tests a set (cat_sets); its split condition means nothing
            cat_nodes.append(n_nodes + node)
        cat_sets += [listed for _, listed in categorical]
        trees.append({"feature": np.where(leaf, -1, feat).astype(np.int32), "threshold": threshold,
                      "left": left, "right": right, "missing_left": default_left,
                      "value": np.where(leaf, cond, 0.0)[:, None]})
        n_nodes += left.shape[0]
    forest = pack(trees)
    categorical = None
    if cat_nodes:
        # XGBoost sends its listed categories right and every other value left (negative ones and those
        # beyond the list too): the left set is the complement inside the bitset's whole words, out_left True
        left_sets = [np.setdiff1d(np.arange(32 * (int(c.max()) // 32 + 1)), c) for c in cat_sets]
        categorical = CategoricalSplits.from_sets(np.asarray(cat_nodes, np.int64), left_sets,
                                                  np.ones(len(cat_nodes), bool))
    base = _parse_base_score(params.get("base_score", "0.5"))
    base = np.array([_base_margin(objective, float(b)) for b in base])
    base = np.broadcast_to(base, (n_outputs,)).astype(np.float64) if base.size in (1, n_outputs) else base
    ens = Ensemble(forest, n_features, n_outputs, np.asarray(tree_info, np.int64) % n_outputs,
                   np.ascontiguousarray(base), 1.0, np.float32, source=f"xgboost.{objective}",
                   feature_names=learner.get("feature_names") or None, categorical=categorical)
    try:
        ens.validate()
    except ValueError as err:
        raise ModelFormatError(f"inconsistent XGBoost model: {err}") from err
    return ens


def _categorical_nodes(tree: dict, n_nodes: int) -> list[tuple[int, np.ndarray]]:
    """The categorical splits of one XGBoost tree (``split_type`` 1): ``(node, listed categories)`` pairs."""
    kinds = np.asarray(tree.get("split_type", []), np.int64)
    if not (kinds != 0).any():
        return []
    try:
        nodes = np.asarray(tree["categories_nodes"], np.int64)
        starts = np.asarray(tree["categories_segments"], np.int64)
        sizes = np.asarray(tree["categories_sizes"], np.int64)
        values = np.asarray(tree["categories"], np.int64)
    except KeyError as err:
        raise ModelFormatError(f"an XGBoost tree with categorical splits lacks {err}") from err
    if not (nodes.shape == starts.shape == sizes.shape) or (sizes < 1).any() or (starts < 0).any() or \
            (starts + sizes > values.shape[0]).any() or (nodes < 0).any() or (nodes >= n_nodes).any() or \
            (values < 0).any() or set(nodes.tolist()) != set(np.flatnonzero(kinds == 1).tolist()):
        raise ModelFormatError("malformed categorical splits in an XGBoost tree")
    return [(int(k), values[s:s + z]) for k, s, z in zip(nodes, starts, sizes)]


def from_xgboost_dump(dump: list, n_features: int, base_margin: float | np.ndarray = 0.0,
                      n_outputs: int = 1) -> Ensemble:
    """Read ``booster.get_dump(dump_format="json")`` (a list of JSON strings, one per tree).

    The dump carries neither the base score nor the feature count: pass
    ``base_margin`` (in margin space) and ``n_features``.  Trees are assigned
    to outputs round robin (XGBoost's order for multi-class models).
    """
    def split(node):
        f = node["split"]
        f = int(f[1:]) if isinstance(f, str) and f.startswith("f") and f[1:].isdigit() else f
        if not isinstance(f, int):
            raise ModelFormatError(f"feature {node['split']!r} is named; dump with the model's "
                                   "default names f0, f1, ... or use save_raw('json')")
        return f, float(strict_to_inclusive_float32(np.float64(node["split_condition"]))), \
            node["missing"] == node["yes"]

    def children(node):
        by_id = {c["nodeid"]: c for c in node["children"]}
        return by_id[node["yes"]], by_id[node["no"]]

    trees = []
    for text in dump:
        try:
            root = json.loads(text) if isinstance(text, str) else text
            trees.append(nested_to_arrays(root, children, lambda n: "leaf" in n, split, lambda n: n["leaf"]))
        except (KeyError, TypeError, json.JSONDecodeError) as err:
            raise ModelFormatError(f"malformed XGBoost JSON dump: {err!r}") from err
    base = np.broadcast_to(np.asarray(base_margin, np.float64), (n_outputs,)).copy()
    ens = Ensemble(pack(trees), int(n_features), n_outputs, np.arange(len(trees)) % n_outputs, base, 1.0,
                   np.float32, source="xgboost.dump")
    ens.validate()
    return ens
