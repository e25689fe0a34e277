"""Import XGBoost models (``Booster.save_raw("json")`` or ``get_dump(dump_format="json")``) as an :class:`Ensemble`.

XGBoost sends ``x < split_condition`` left, on float32 values, and NaN to
``default_left``; the margin is the sum of the leaves of each output group
plus ``base_score`` mapped to margin space by the objective's link (stored as a
probability for logistic objectives, a mean for log-link ones; an objective
missing from the tables here is refused).  A dart booster's trees are those of
a gbtree, each tree's output multiplied by its ``weight_drop`` when XGBoost
predicts (every tree, as ``Booster.predict``'s default iteration range): the
importer multiplies the leaves, in float32 as XGBoost does.  Several outputs
are classes (``num_class``) or targets (``num_target``): a tree adds into the
output of its ``tree_info``, or, with vector leaves (``multi_output_tree``),
into all of them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from .categorical import CategoricalSplits
from .ensemble import Ensemble, ModelFormatError, nested_to_arrays, pack, strict_to_inclusive_float32
from .order import preorder

#: Objectives whose base_score is stored as a probability (margin = logit).
LOGIT_OBJECTIVES = ("binary:logistic", "reg:logistic")
#: Objectives whose base_score is stored as a mean (margin = log).
LOG_OBJECTIVES = ("count:poisson", "reg:gamma", "reg:tweedie", "survival:cox", "survival:aft")
#: Objectives whose base_score is the margin itself (each checked against XGBoost's ``output_margin``).
IDENTITY_OBJECTIVES = ("reg:squarederror", "reg:linear", "reg:squaredlogerror", "reg:pseudohubererror",
                       "reg:absoluteerror", "reg:quantileerror", "binary:logitraw", "binary:hinge", "multi:softmax",
                       "multi:softprob", "rank:pairwise", "rank:ndcg", "rank:map")
#: What an error calls the numbers :meth:`Ensemble.validate` checks, in the model JSON's terms.
FIELDS = {"value": "leaf value (split_conditions)", "threshold": "split_conditions", "base": "base_score"}


def _base_margin(objective: str, base_score: float) -> float:
    """``base_score`` in margin space; an objective whose link is not known here is refused (a wrong link
    would shift every prediction silently)."""
    if not math.isfinite(base_score):
        raise ModelFormatError(f"base_score {base_score} is not finite")
    if objective in LOGIT_OBJECTIVES:
        if not 0.0 < base_score < 1.0:
            raise ModelFormatError(f"base_score {base_score} of {objective} is not a probability in (0, 1)")
        return math.log(base_score / (1.0 - base_score))
    if objective in LOG_OBJECTIVES:
        if not base_score > 0.0:
            raise ModelFormatError(f"base_score {base_score} of {objective} is not a positive mean")
        return math.log(base_score)
    if objective in IDENTITY_OBJECTIVES:
        return base_score
    raise ModelFormatError(f"XGBoost objective {objective!r} is not supported (its base_score link is unknown); "
                           f"supported: {', '.join(LOGIT_OBJECTIVES + LOG_OBJECTIVES + IDENTITY_OBJECTIVES)}")


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


def _trees_and_weights(booster: dict) -> tuple[dict, np.ndarray | None]:
    """The gbtree model of ``gradient_booster``, and dart's ``weight_drop`` (one per tree; None for gbtree)."""
    name = booster["name"]
    if name == "gbtree":
        return booster["model"], None
    if name == "dart":  # a gbtree whose trees' outputs XGBoost multiplies by weight_drop when it predicts
        return booster["gbtree"]["model"], np.asarray(booster["weight_drop"], np.float64).reshape(-1)
    raise ModelFormatError(f"XGBoost booster {name!r} is not supported; supported: 'gbtree', 'dart'")


def from_xgboost(model: Any) -> Ensemble:
    """Read an XGBoost tree model (Booster, ``save_raw("json")`` output, dict or .json path): gbtree or dart
    (each tree's leaves times its ``weight_drop``, as XGBoost predicts), one output per class or target,
    scalar or vector leaves (``multi_strategy="multi_output_tree"``).

    Raises
    ------
    ModelFormatError
        Malformed JSON, a gblinear booster, an objective whose base_score link is unknown, or a NaN/inf
        leaf value, split condition, base_score or weight_drop (the error names the field and tree).
    """
    learner = load_json(model)["learner"]
    try:
        params = learner["learner_model_param"]
        objective = learner["objective"]["name"]
        gb, weights = _trees_and_weights(learner["gradient_booster"])
        trees_json, tree_info = gb["trees"], np.asarray(gb["tree_info"], np.int64)
        n_features = int(params["num_feature"])
        n_class = int(params.get("num_class", 0))
        n_targets = int(params.get("num_target", 1))
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, ModelFormatError):
            raise
        raise ModelFormatError(f"malformed XGBoost model JSON: missing or bad {err}") from err
    if n_class > 1 and n_targets > 1:
        raise ModelFormatError(f"an XGBoost model with both num_class {n_class} and num_target {n_targets}")
    n_outputs = max(n_class, n_targets, 1)
    base = _parse_base_score(params.get("base_score", "0.5"))
    base = np.array([_base_margin(objective, float(b)) for b in base])
    if weights is not None:
        if weights.shape[0] != len(trees_json):
            raise ModelFormatError(f"dart weight_drop has {weights.shape[0]} weights for {len(trees_json)} trees")
        if not np.isfinite(weights).all():
            t = int(np.flatnonzero(~np.isfinite(weights))[0])
            raise ModelFormatError(f"tree {t}: dart weight_drop {weights[t]} is not finite")
    trees, cat_nodes, cat_sets, n_nodes, vector = [], [], [], 0, False
    for i, t in enumerate(trees_json):
        try:
            tree, categorical = _read_tree(t, n_outputs)
        except (KeyError, TypeError, ValueError) as err:
            if isinstance(err, ModelFormatError):
                raise ModelFormatError(f"XGBoost tree {i}: {err}") from err
            raise ModelFormatError(f"malformed XGBoost tree {i}: {err}") from err
        if weights is not None:  # XGBoost's float product of the tree's output and its weight
            tree["value"] = (tree["value"].astype(np.float32) * np.float32(weights[i])).astype(np.float64)
        vector |= tree["value"].shape[1] > 1
        cat_nodes += [n_nodes + node for node, _ in categorical]
        cat_sets += [listed for _, listed in categorical]
        trees.append(tree)
        n_nodes += tree["left"].shape[0]
    if vector and any(t["value"].shape[1] != n_outputs for t in trees):
        raise ModelFormatError("an XGBoost model mixing vector-leaf and scalar-leaf trees")
    forest = pack(trees)
    categorical = None
    if cat_nodes:
        # XGBoost sends its listed categories right and every other value left (negative ones and those
        # beyond the list too): the left set is the complement inside the bitset's whole words, out_left True
        left_sets = [np.setdiff1d(np.arange(32 * (int(c.max()) // 32 + 1)), c) for c in cat_sets]
        categorical = CategoricalSplits.from_sets(np.asarray(cat_nodes, np.int64), left_sets,
                                                  np.ones(len(cat_nodes), bool))
    base = np.broadcast_to(base, (n_outputs,)).astype(np.float64) if base.size in (1, n_outputs) else base
    try:
        # tree_info is each tree's output (class or target); a vector-leaf tree fills all outputs from 0
        ens = Ensemble(forest, n_features, n_outputs, tree_info, np.ascontiguousarray(base), 1.0, np.float32,
                       source=f"xgboost.{objective}", feature_names=learner.get("feature_names") or None,
                       categorical=categorical)
        ens.validate({**FIELDS, "value": "leaf_weights" if vector else FIELDS["value"]}, inf_thresholds=False)
    except ValueError as err:
        raise ModelFormatError(f"inconsistent XGBoost model: {err}") from err
    return ens


def _read_tree(t: dict, n_outputs: int) -> tuple[dict[str, np.ndarray], list[tuple[int, np.ndarray]]]:
    """One tree of the model JSON as node arrays (tree-local, XGBoost's node order), and its categorical
    nodes.  A vector-leaf tree (``size_leaf_vector`` > 1) keeps its leaves in ``leaf_weights``, leaf ``k``'s
    vector at ``k * size``, ``k`` in the leaf's ``right_children``."""
    left = np.asarray(t["left_children"], np.int32)
    right = np.asarray(t["right_children"], np.int32)
    cond = np.asarray(t["split_conditions"], np.float64)
    feat = np.asarray(t["split_indices"], np.int32)
    default_left = np.asarray(t["default_left"], bool)
    size = max(int(t["tree_param"].get("size_leaf_vector", "1")), 1)  # XGBoost 1.x writes 0 for scalar leaves
    if not left.shape == right.shape == cond.shape == feat.shape == default_left.shape:
        raise ModelFormatError("its node arrays have different lengths")
    leaf = left == -1
    if size > 1:
        if size != n_outputs:
            raise ModelFormatError(f"leaf vectors of size {size} for {n_outputs} outputs")
        weights = np.asarray(t["leaf_weights"], np.float64).reshape(-1, size)
        slot = right[leaf]
        if (slot < 0).any() or (slot >= weights.shape[0]).any():
            raise ModelFormatError("a leaf's index into leaf_weights is out of range")
        value = np.zeros((left.shape[0], size))
        value[leaf] = weights[slot]
        right = np.where(leaf, -1, right)
    else:
        value = np.where(leaf, cond, 0.0)[:, None]
    categorical = _categorical_nodes(t, left.shape[0])
    cond = np.where(leaf, 0.0, cond)
    for node, _ in categorical:
        cond[node] = 0.0  # the node tests a set; its split condition (NaN) means nothing
    # NaN and inf stay as they are, for the validation to name them (float32 rounding would hide inf)
    finite = np.isfinite(cond)
    threshold = np.where(finite, strict_to_inclusive_float32(np.where(finite, cond, 0.0)), cond)
    return _reached({"feature": np.where(leaf, -1, feat).astype(np.int32), "threshold": threshold, "left": left,
                     "right": right, "missing_left": default_left, "value": value}, categorical)


def _reached(tree: dict[str, np.ndarray], categorical: list) -> tuple[dict[str, np.ndarray], list]:
    """The nodes the root reaches, in preorder, where a pruned tree keeps deleted ones (``num_deleted``: unreached
    leaves, which bitmask and quickscorer would count) or a child before its parent; else the tree as it is (so
    that node numbers in errors are XGBoost's).  Malformed children are left for the validation to name."""
    left, right = tree["left"], tree["right"]
    n = left.shape[0]
    split = np.flatnonzero(left != -1)
    children = np.concatenate([left[split], right[split]])
    if ((children < 1) | (children >= n)).any():
        return tree, categorical
    parents = np.bincount(children, minlength=n)
    if parents[0] == 0 and (parents[1:] == 1).all() and (left[split] > split).all() and (right[split] > split).all():
        return tree, categorical
    order = np.asarray(preorder(left, right, limit=n), np.int64)
    if order.shape[0] > n or np.unique(order).shape[0] != order.shape[0]:
        return tree, categorical  # a cycle or a shared node
    new = np.full(n, -1, np.int64)
    new[order] = np.arange(order.shape[0])
    out = {k: v[order] for k, v in tree.items()}
    for k in ("left", "right"):
        out[k] = np.where(out[k] != -1, new[np.maximum(out[k], 0)], -1).astype(np.int32)
    return out, [(int(new[node]), listed) for node, listed in categorical if new[node] >= 0]


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
                      n_outputs: int = 1, num_parallel_tree: int = 1) -> Ensemble:
    """Read ``booster.get_dump(dump_format="json")`` (a list of JSON strings, one per tree).

    The dump carries neither the base score nor the feature count: pass
    ``base_margin`` (in margin space) and ``n_features``.  Trees are assigned
    to outputs in XGBoost's order: ``num_parallel_tree`` trees of output 0,
    then of output 1, ... per round.  Nor does it carry a dart model's
    ``weight_drop``: read a dart model from its ``save_raw("json")``.
    """
    def split(node):
        f = node["split"]
        f = int(f[1:]) if isinstance(f, str) and f.startswith("f") and f[1:].isdigit() else f
        if not isinstance(f, int):
            raise ModelFormatError(f"feature {node['split']!r} is named; dump with the model's "
                                   "default names f0, f1, ... or use save_raw('json')")
        cond = float(node["split_condition"])  # NaN and inf kept for the validation to name
        return f, float(strict_to_inclusive_float32(np.float64(cond))) if math.isfinite(cond) else cond, \
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
    column = np.arange(len(trees)) // int(num_parallel_tree) % n_outputs
    ens = Ensemble(pack(trees), int(n_features), n_outputs, column, base, 1.0, np.float32, source="xgboost.dump")
    try:
        ens.validate({"value": "leaf", "threshold": "split_condition", "base": "base_margin"}, inf_thresholds=False)
    except ValueError as err:
        raise ModelFormatError(f"inconsistent XGBoost dump: {err}") from err
    return ens
