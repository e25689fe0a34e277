"""Import LightGBM models (``Booster.dump_model()``) as an :class:`Ensemble`.

LightGBM sends ``x <= threshold`` left in double precision.  What happens to
a missing value depends on the feature's ``missing_type``: ``NaN`` sends NaN
to ``default_left``; ``None`` reads NaN as 0.0; ``Zero`` sends 0 (and NaN) to
``default_left``; and any ``|x| <= 1e-35f`` is read as 0 first.  The type is a
property of the feature (its bin mapper), so
the importer records, per feature, the input rewrite that makes the one walk
of dtlab reproduce it.  The raw score is the sum of the leaves (the initial
score is folded into the first trees) -- also for ``boosting="rf"``, whose
``predict(raw_score=True)`` is the sum (only its transformed ``predict``
divides by the number of iterations).  The leaf values of the dump are
final: each tree's ``shrinkage`` (and dart's rescaling) is already in them.

A model trained with ``linear_tree=True`` (a linear model in each leaf:
``leaf_const``, ``leaf_features``, ``leaf_coeff``) is refused, not predicted:
dtlab's leaves are constants, and LightGBM's constant ``leaf_value`` is what it
predicts only for a row with a NaN among the leaf's features.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .categorical import CategoricalSplits
from .ensemble import Ensemble, ModelFormatError, nested_to_arrays, pack, read_json_model

#: What an error calls the numbers :meth:`Ensemble.validate` checks, in the dump's terms.
FIELDS = {"value": "leaf_value", "threshold": "threshold"}
#: The keys of a linear leaf (``linear_tree=True``).
LINEAR_LEAF_KEYS = ("leaf_const", "leaf_coeff", "leaf_features")

#: LightGBM's kZeroThreshold (``1e-35f``, a float32 literal): its predictor reads ``|x| <=`` it as 0.
ZERO_THRESHOLD = float(np.float32(1e-35))


def load_dump(model: Any) -> dict:
    """The ``dump_model()`` dict from a Booster, a dict, JSON text, or a path to a JSON file of it."""
    if hasattr(model, "dump_model"):
        model = model.dump_model()
    model = read_json_model(model, "LightGBM model")
    if not isinstance(model, dict) or "tree_info" not in model:
        raise ModelFormatError("not a LightGBM model dump (no 'tree_info'); pass booster.dump_model()")
    return model


def from_lightgbm(model: Any) -> Ensemble:
    """Read a LightGBM model (Booster or its ``dump_model()``).

    Raises
    ------
    ModelFormatError
        Malformed dump, linear trees (``linear_tree=True``: refused), a decision type other than ``<=`` and
        ``==``, or a NaN/inf leaf_value or threshold (the error names the tree).
    """
    dump = load_dump(model)
    try:
        n_features = int(dump["max_feature_idx"]) + 1
        per_iter = int(dump.get("num_tree_per_iteration", 1))
        names = dump.get("feature_names")
        infos = dump["tree_info"]
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFormatError(f"malformed LightGBM dump: {err!r}") from err
    if not isinstance(infos, list):
        raise ModelFormatError(f"malformed LightGBM dump: tree_info is a {type(infos).__name__}, not a list")
    if per_iter < 1 or len(infos) % per_iter:  # trees are round-major: tree t adds into output t % per_iter
        raise ModelFormatError(f"malformed LightGBM dump: {len(infos)} trees are not whole iterations of "
                               f"num_tree_per_iteration {per_iter}")
    missing_type: dict[int, str] = {}

    def name(f):
        return f"feature {f} ({names[f]!r})" if names and f < len(names) else f"feature {f}"

    splits_read: list = []  # per internal node in preorder: its categories going left, or None

    def split(node):
        f = int(node["split_feature"])
        kind = node.get("missing_type", "None")
        if missing_type.setdefault(f, kind) != kind:
            raise ModelFormatError(f"{name(f)} has splits with missing_type {missing_type[f]!r} and {kind!r}")
        decision = node.get("decision_type", "<=")
        if decision == "==":
            # LightGBM's CategoricalDecision: the listed categories go left, any other (and a negative value)
            # right; NaN right, or read as category 0 where missing_type is None (nan_as_zero does that)
            listed = np.asarray([int(c) for c in str(node["threshold"]).split("||")], np.int64)
            splits_read.append(listed)
            zero_left = kind == "None" and bool((listed == 0).any())
            categorical_features.add(f)
            # threshold: where 0 goes, so that reading NaN as 0 in the trees (inference.rules) stays right
            return f, 0.0 if zero_left else -1.0, zero_left
        if decision != "<=":
            raise ModelFormatError(f"{name(f)}: decision_type {decision!r} is not supported ('<=' and '==')")
        splits_read.append(None)
        return f, float(node["threshold"]), bool(node.get("default_left", True))

    def leaf(node):
        if info.get("is_linear") or any(k in node for k in LINEAR_LEAF_KEYS):
            raise ModelFormatError(f"tree {t}: a LightGBM model trained with linear_tree=True (a linear model "
                                   "in each leaf) is not supported; dtlab predicts constant leaves only")
        return node["leaf_value"]

    trees, cat_nodes, cat_sets, categorical_features, n_nodes = [], [], [], set(), 0
    for t, info in enumerate(infos):
        splits_read.clear()
        try:
            tree = nested_to_arrays(info["tree_structure"], lambda n: (n["left_child"], n["right_child"]),
                                    lambda n: "split_feature" not in n, split, leaf)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            if isinstance(err, ModelFormatError):
                raise
            raise ModelFormatError(f"malformed LightGBM tree {t}: {err!r}") from err
        for node, listed in zip(np.flatnonzero(tree["left"] != -1), splits_read):  # both in preorder
            if listed is not None:
                cat_nodes.append(n_nodes + int(node))
                cat_sets.append(listed)
        n_nodes += tree["left"].shape[0]
        trees.append(tree)
    forest = pack(trees)
    categorical = None
    if cat_nodes:
        if any((c < 0).any() for c in cat_sets):
            raise ModelFormatError("a LightGBM categorical split lists a negative category")
        categorical = CategoricalSplits.from_sets(np.asarray(cat_nodes, np.int64), cat_sets,
                                                  np.zeros(len(cat_nodes), bool),
                                                  truncated_features=sorted(categorical_features))
    zero = np.asarray(sorted(f for f, k in missing_type.items() if k == "Zero"), np.int64)
    none = np.asarray(sorted(f for f, k in missing_type.items() if k == "None"), np.int64)
    # missing_type None: NaN becomes 0.0 and then meets the threshold (default_left plays no part)
    n_trees = len(trees)
    ens = Ensemble(forest, n_features, per_iter, np.arange(n_trees, dtype=np.int64) % per_iter,
                   np.zeros(per_iter), 1.0,
                   None, nan_as_zero=none, zero_as_missing=zero, zero_threshold=ZERO_THRESHOLD,
                   source=f"lightgbm.{str(dump.get('objective', '')).split(' ')[0]}", feature_names=names,
                   categorical=categorical)
    try:
        ens.validate(FIELDS, inf_thresholds=False)  # LightGBM writes 1e300, never inf
    except ValueError as err:
        raise ModelFormatError(f"inconsistent LightGBM model: {err}") from err
    return ens
