"""Boosted trees as an Ensemble: dtlab's GBDT models, in memory and as their JSON files ("dtlab.GBDT/1").

A GBDT model is exactly an :class:`~dtlab.trees.ensemble.Ensemble`: round-major
trees (round ``r``, output ``c`` at ``r * n_outputs + c``) whose leaf values
add into column ``c``, a base margin in every column, scale 1.  Its trees test
``x < threshold`` on float32 values, as XGBoost's do; they are packed with each
threshold replaced by the float32 number just below it, the same leaf for every
float32 ``x`` under the Ensemble's ``x <= t`` (so ``input_dtype`` is float32).

:func:`read_boosted_trees` checks the trees of a model file -- every field
present, one length per tree, integer children and features -- and
:func:`boosted_ensemble` validates the packed forest (children forward inside
their tree, so no cycle; features inside ``[0, n_features)``) before any
kernel can see the arrays: a corrupted file is a clear error, never a crash.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from .categorical import CategoricalSplits
from .ensemble import Ensemble, ModelFormatError, strict_to_inclusive_float32
from .packed import PackedForest

#: The ``format`` of a GBDT model file (``GBDTClassifier.save_json``).
GBDT_FORMAT = "dtlab.GBDT/1"
#: The arrays of one boosted tree, and their dtypes in memory.
TREE_FIELDS = {"feature": np.int32, "threshold": np.float32, "missing_left": np.bool_, "left": np.int32,
               "right": np.int32, "value": np.float32, "gain": np.float64, "cover": np.float64}
#: What an error calls the numbers :meth:`Ensemble.validate` checks, in the model file's terms.
FIELDS = {"value": "value", "threshold": "threshold", "base": "base_margin"}
#: A tree's categorical splits in a model file (absent when it has none): node ``cat_nodes[i]`` sends the
#: categories ``cat_values[cat_offsets[i]:cat_offsets[i + 1]]`` left, every other category right.
CATEGORY_FIELDS = {"cat_nodes": np.int32, "cat_offsets": np.int64, "cat_values": np.int64}


def categories_to_fields(categories: Mapping[int, np.ndarray]) -> dict[str, list]:
    """A tree's ``{node: categories going left}`` as the lists of :data:`CATEGORY_FIELDS` (empty: no fields)."""
    if not categories:
        return {}
    nodes = sorted(int(k) for k in categories)
    sizes = [len(categories[k]) for k in nodes]
    return {"cat_nodes": nodes, "cat_offsets": np.concatenate([[0], np.cumsum(sizes)]).astype(int).tolist(),
            "cat_values": np.concatenate([np.asarray(categories[k], np.int64) for k in nodes]).tolist()}


def _categories_of(item: Mapping, t: int, n_nodes: int) -> dict[int, np.ndarray]:
    """The ``{node: categories}`` of tree ``t``'s :data:`CATEGORY_FIELDS`, checked."""
    if not any(k in item for k in CATEGORY_FIELDS):
        return {}
    try:
        nodes, offsets, values = (_column(item[k], k, dtype, t) for k, dtype in CATEGORY_FIELDS.items())
    except KeyError as err:
        raise ModelFormatError(f"tree {t}: categorical splits need all of {list(CATEGORY_FIELDS)}") from err
    if offsets.shape != (nodes.shape[0] + 1,) or offsets[0] != 0 or offsets[-1] != values.shape[0] or \
            (np.diff(offsets) < 0).any() or (nodes < 0).any() or (nodes >= n_nodes).any() or (values < 0).any():
        raise ModelFormatError(f"tree {t}: malformed categorical splits (offsets, node indices or negative "
                               "categories)")
    return {int(k): values[offsets[i]:offsets[i + 1]] for i, k in enumerate(nodes)}


def read_boosted_trees(items: Any) -> list[dict[str, np.ndarray]]:
    """The trees of a GBDT model file as dicts of arrays (:data:`TREE_FIELDS`).

    Raises
    ------
    ModelFormatError
        Not a list of trees, a field missing, a value of the wrong kind (a
        fractional child index, text), or fields of different lengths.
    """
    if not isinstance(items, list) or not items:
        raise ModelFormatError("a GBDT model file needs a non-empty list of trees")
    trees = []
    for t, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ModelFormatError(f"tree {t} of the model file is not a JSON object")
        missing = [k for k in TREE_FIELDS if k not in item]
        if missing:
            raise ModelFormatError(f"tree {t} of the model file lacks the fields {missing}")
        tree = {key: _column(item[key], key, dtype, t) for key, dtype in TREE_FIELDS.items()}
        if len({a.shape[0] for a in tree.values()}) != 1 or tree["feature"].shape[0] == 0:
            raise ModelFormatError(f"tree {t}: its fields have different lengths (or none)")
        tree["categories"] = _categories_of(item, t, tree["feature"].shape[0])
        trees.append(tree)
    return trees


def _column(values: Any, key: str, dtype, t: int) -> np.ndarray:
    """One field of tree ``t`` as an array of ``dtype``; integers must be whole and inside int32."""
    raw = np.asarray(values)
    if raw.ndim != 1 or raw.dtype.kind not in "biuf":
        raise ModelFormatError(f"tree {t}: {key} must be a list of numbers")
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        whole = raw.dtype.kind != "f" or bool((raw == np.round(raw)).all())
        if not whole or (raw < info.min).any() or (raw > info.max).any():
            raise ModelFormatError(f"tree {t}: {key} must hold integers within {np.dtype(dtype).name}")
    return raw.astype(dtype)


def boosted_ensemble(trees: Sequence[Any], n_features: int, n_outputs: int, base_margin: float,
                     feature_names: list | None = None, source: str = "dtlab.GBDT") -> Ensemble:
    """The Ensemble of boosted trees (round-major, ``n_outputs`` per round), validated.

    Parameters
    ----------
    trees : sequence of objects or dicts with the arrays of :data:`TREE_FIELDS` (``left``/``right`` tree-local,
        -1 at leaves; ``threshold`` float32, ``x < threshold`` goes left; ``value`` the leaf output) and
        optionally ``categories``, ``{node: categories going left}`` (any other category goes right, a
        missing value the ``missing_left`` way)
    n_features, n_outputs : int
    base_margin : float
        Added to every output column.

    Raises
    ------
    ModelFormatError
        The trees do not form a valid forest over ``n_features`` features.
    """
    if not len(trees):
        raise ModelFormatError("a boosted model needs at least one tree")
    if int(n_outputs) < 1:
        raise ModelFormatError(f"a boosted model needs n_outputs >= 1, got {n_outputs}")

    def get(t, k):
        return np.asarray(t[k] if isinstance(t, Mapping) else getattr(t, k))

    fields = ("feature", "threshold", "missing_left", "left", "right", "value")
    sizes = [get(t, "feature").shape[0] for t in trees]
    if any(get(t, k).shape != (n,) for t, n in zip(trees, sizes) for k in fields):
        raise ModelFormatError("the arrays of a boosted tree have different lengths")
    cat = {k: np.concatenate([get(t, k) for t in trees]) for k in fields}
    forest = PackedForest.from_arrays(sizes, np.where(cat["left"] == -1, 0, cat["feature"]),
                                      strict_to_inclusive_float32(cat["threshold"]), cat["left"], cat["right"],
                                      cat["missing_left"], cat["value"].astype(np.float64)[:, None])
    n_trees = len(trees)
    try:
        categorical = _categorical_splits(trees, sizes)
        ens = Ensemble(forest, int(n_features), int(n_outputs), np.arange(n_trees, dtype=np.int64) % int(n_outputs),
                       np.full(int(n_outputs), float(base_margin)), 1.0, np.float32, source=source,
                       feature_names=feature_names, categorical=categorical)
        if n_trees % int(n_outputs):
            raise ValueError(f"{n_trees} trees are not whole rounds of {n_outputs} outputs")
        ens.validate(FIELDS)
    except ValueError as err:
        raise ModelFormatError(f"inconsistent boosted model: {err}") from err
    return ens


def _categorical_splits(trees: Sequence[Any], sizes: list[int]) -> CategoricalSplits | None:
    """The categorical nodes of all trees (forest-global), or None where no tree has one."""
    nodes, sets, start = [], [], 0
    for t, n in zip(trees, sizes):
        cats = t.get("categories") if isinstance(t, Mapping) else getattr(t, "categories", None)
        for node, values in (cats or {}).items():
            nodes.append(start + int(node))
            sets.append(np.asarray(values, np.int64))
        start += n
    if not nodes:
        return None
    return CategoricalSplits.from_sets(np.asarray(nodes, np.int64), sets, np.zeros(len(nodes), bool))


def ensemble_from_gbdt_json(doc: Mapping) -> Ensemble:
    """The Ensemble of a GBDT model file (parsed JSON), predicting as the saved estimator does (its best
    iteration's trees when it stopped early)."""
    if doc.get("format") != GBDT_FORMAT:
        raise ModelFormatError(f"not a dtlab GBDT model file (format {doc.get('format')!r}, expected "
                               f"{GBDT_FORMAT!r})")
    try:
        fitted = doc["fitted"]
        n_outputs = int(fitted["n_outputs"])
        n_features = int(fitted["n_features_in_"])
        base = float(fitted["base_margin"])
        best = fitted.get("best_iteration_")
    except (KeyError, TypeError, ValueError) as err:
        raise ModelFormatError(f"malformed GBDT model file: {err!r}") from err
    trees = read_boosted_trees(fitted["trees"])
    if best is not None:
        n_rounds = len(trees) // max(n_outputs, 1)
        if not isinstance(best, int) or not 0 <= best < n_rounds:  # a negative one would drop trees from the end
            raise ModelFormatError(f"best_iteration_ {best!r} is not a round of the model's {n_rounds}")
        trees = trees[:(best + 1) * n_outputs]
    return boosted_ensemble(trees, n_features, n_outputs, base, fitted.get("feature_names_in_"),
                            source=f"dtlab.{doc.get('estimator', 'GBDT')}")
