"""Ensemble: a packed forest with the rule that turns its leaves into the source library's raw prediction.

Every importer (scikit-learn, XGBoost, LightGBM, dtlab's own trees) returns
one :class:`Ensemble`; the inference engine (``dtlab.inference``) and any other
technique read models through it.  The prediction of row ``x`` is::

    raw[x, :] = base + scale * sum_t  value[leaf_t(x), :]  placed at columns tree_column[t]:tree_column[t]+n_values

so XGBoost / LightGBM margins (one value per tree, trees of class ``k`` into
column ``k``), scikit-learn forests (class fractions averaged, ``scale =
1/n_trees``) and single trees share one accumulation.

Comparisons are all ``x <= threshold`` (left) in the precision of the input,
promoted against the float64 threshold (:mod:`dtlab.trees.walk`); a library
whose test is ``x < t`` on float32 values (XGBoost) is imported with
``t`` replaced by the float32 value just below it and ``input_dtype = float32``,
which is the same test for every float32 ``x``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .packed import PackedForest

#: The default names of the numbers :meth:`Ensemble.validate` checks are finite.
FIELD_NAMES = {"value": "leaf value", "threshold": "threshold", "base": "base"}


class ModelFormatError(ValueError):
    """A model file or dump that cannot be read (malformed, or a feature dtlab does not support)."""


def read_json_model(model: Any, what: str = "model") -> Any:
    """``model`` parsed: a path to a JSON file, JSON text or bytes -> its value; anything else unchanged.

    A string is JSON text when it starts with ``{`` and a path otherwise; unreadable files and malformed
    JSON raise :class:`ModelFormatError` naming ``what``.
    """
    import json
    from pathlib import Path

    if isinstance(model, (str, Path)) and not str(model).lstrip().startswith("{"):
        try:
            model = Path(model).read_text()
        except OSError as err:
            raise ModelFormatError(f"cannot read {what} file {model!s}: {err}") from err
    if isinstance(model, (bytes, bytearray)):
        model = model.decode()
    if isinstance(model, str):
        try:
            model = json.loads(model)
        except json.JSONDecodeError as err:
            raise ModelFormatError(f"malformed {what} JSON: {err}") from err
    return model


@dataclass(frozen=True)
class Ensemble:
    """A forest and its output rule.

    Attributes
    ----------
    forest : PackedForest
        ``value`` of shape (n_nodes, n_values), float64, read at leaves.
    n_features : int
    n_outputs : int
        Columns of the raw prediction.
    tree_column : ndarray of shape (n_trees,), int64
        First output column tree ``t`` adds into.
    base : ndarray of shape (n_outputs,), float64
        Added once per row (XGBoost's base margin; 0 elsewhere).
    scale : float
        Multiplies the sum over trees (``1/n_trees`` for averaging forests).
    input_dtype : numpy dtype or None
        The dtype the source library converts X to before its tests (float32
        for XGBoost and scikit-learn); None keeps the caller's float32/float64.
    nan_as_zero : ndarray of int
        Features whose NaN the library reads as 0.0 (LightGBM ``missing_type: None``).
    zero_as_missing : ndarray of int
        Features on which 0 (and NaN) follow ``missing_left`` (LightGBM ``missing_type: Zero``).
    zero_threshold : float
        Values with ``|x| <= zero_threshold`` are read as 0.0 (LightGBM: ``kZeroThreshold = 1e-35f``).
    source : str
    feature_names : list of str or None
    categorical : CategoricalSplits or None
        The category sets of the categorical nodes (:mod:`dtlab.trees.categorical`); None: every node
        tests ``x <= threshold``.
    """

    forest: PackedForest
    n_features: int
    n_outputs: int
    tree_column: np.ndarray
    base: np.ndarray
    scale: float = 1.0
    input_dtype: Any = None
    nan_as_zero: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    zero_as_missing: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    zero_threshold: float = 0.0
    source: str = "dtlab"
    feature_names: list | None = None
    categorical: Any = None

    @property
    def n_values(self) -> int:
        return int(self.forest.value.shape[1])

    def validate(self, names: dict[str, str] | None = None, inf_thresholds: bool = True) -> None:
        """Raise ``ValueError`` unless the parts agree, every node is reached from its root exactly once, and
        the numbers the prediction reads are usable (checked once, before any kernel): leaf values and base
        finite, thresholds of numeric splits not NaN.

        ``names`` maps ``"value"``, ``"threshold"``, ``"base"`` to the source format's names for them
        (:data:`FIELD_NAMES` by default), so that an error names the field of the file that is wrong.
        ``inf_thresholds=False`` refuses infinite thresholds too (an importer whose library never writes
        one: XGBoost, LightGBM); dtlab's and scikit-learn's trees use them to send every present value one way.
        """
        self._check_finite({**FIELD_NAMES, **(names or {})}, inf_thresholds)
        self.forest.validate(self.n_features)
        if self.forest.value is None:
            raise ValueError("the forest of an Ensemble needs leaf values")
        self._check_reached()
        tc = self.tree_column
        if tc.shape != (self.forest.n_trees,) or (tc < 0).any() or (tc + self.n_values > self.n_outputs).any():
            raise ValueError("tree_column must give every tree columns inside [0, n_outputs)")
        if self.base.shape != (self.n_outputs,):
            raise ValueError(f"base must have shape ({self.n_outputs},), got {self.base.shape}")
        if self.categorical is not None:
            self.categorical.validate(self.forest)

    def _check_reached(self) -> None:
        """Every node but a root must have one parent: then (children after their parent, inside the tree) the
        root reaches it.  An unreached leaf would be a leaf to the methods that number a tree's leaves (bitmask,
        quickscorer), and their prediction wrong."""
        f = self.forest
        internal = f.left != -1
        parents = np.bincount(np.concatenate([f.left[internal], f.right[internal]]), minlength=f.n_nodes)
        parents[f.node_offset[:-1]] += 1  # a root has none (no child points back to its tree's first node)
        if (parents != 1).any():
            bad = int(np.flatnonzero(parents != 1)[0])
            t = int(np.searchsorted(f.node_offset, bad, side="right") - 1)
            raise ValueError(f"tree {t}, node {bad - int(f.node_offset[t])} is not reached from the root exactly "
                             "once (an unreached or shared node)")

    def _check_finite(self, names: dict[str, str], inf_thresholds: bool) -> None:
        """A NaN or inf leaf value or base, or a NaN threshold of a numeric split, is an error naming the tree
        and node: it would make the rows reaching it NaN (or the test meaningless) without a word.  Runs
        before the structural checks so that a mutated number is reported as such; skipped where the arrays
        do not even agree in shape (the structural checks report that)."""
        f = self.forest
        n, off = f.n_nodes, f.node_offset
        if not np.isfinite(self.base).all():
            raise ValueError(f"{names['base']} {self.base.tolist()} is not finite")
        if not np.isfinite(self.scale):
            raise ValueError(f"scale {self.scale} is not finite")
        if f.value is None or f.left.shape != (n,) or f.threshold.shape != (n,) or f.value.shape[:1] != (n,) or \
                off.ndim != 1 or off.shape[0] < 2 or off[0] != 0 or off[-1] != n:
            return
        internal = f.left != -1
        numeric = internal.copy()
        if self.categorical is not None:  # a categorical node tests its set; its threshold is not read
            cat = np.asarray(self.categorical.node)
            numeric[cat[(cat >= 0) & (cat < n)]] = False
        bad_value = ~internal & ~np.isfinite(f.value).all(axis=1)
        bad_threshold = numeric & (np.isnan(f.threshold) if inf_thresholds else ~np.isfinite(f.threshold))
        for bad, what, shown in ((bad_value, names["value"], f.value),
                                 (bad_threshold, names["threshold"], f.threshold)):
            if bad.any():
                node = int(np.flatnonzero(bad)[0])
                t = int(np.searchsorted(off, node, side="right") - 1)
                number = shown[node].tolist()
                raise ValueError(f"tree {t}, node {node - int(off[t])}: {what} {number} is not finite "
                                 f"({int(bad.sum())} such node(s) in the model)")


def strict_to_inclusive_float32(threshold: np.ndarray) -> np.ndarray:
    """Float64 thresholds ``t'`` such that ``x <= t'`` equals ``x < float32(t)`` for every float32 ``x``.

    ``t'`` is the float32 number just below ``float32(t)``, stored as float64.
    """
    t32 = np.asarray(threshold, np.float64).astype(np.float32)
    return np.nextafter(t32, np.float32(-np.inf)).astype(np.float64)


def nested_to_arrays(root: dict, children, is_leaf, read_split, read_leaf) -> dict[str, np.ndarray]:
    """Flatten one nested tree (dicts of dicts, as JSON dumps give them) into preorder node arrays.

    Parameters
    ----------
    root : dict
    children : callable(node) -> (left dict, right dict)
    is_leaf : callable(node) -> bool
    read_split : callable(node) -> (feature, threshold, missing_left)
    read_leaf : callable(node) -> leaf value (float)

    Returns
    -------
    dict of ``feature, threshold, left, right, missing_left, value`` (tree-local, root 0).
    """
    feature, threshold, left, right, missing_left, value = [], [], [], [], [], []
    stack = [(root, -1, False)]
    while stack:
        node, parent, is_right = stack.pop()
        i = len(feature)
        if parent >= 0:
            (right if is_right else left)[parent] = i
        if not isinstance(node, dict):
            raise ModelFormatError(f"a tree node must be a JSON object, got {type(node).__name__}")
        if is_leaf(node):
            feature.append(-1)
            threshold.append(0.0)
            missing_left.append(True)
            value.append(float(read_leaf(node)))
            left.append(-1)
            right.append(-1)
            continue
        f, t, m = read_split(node)
        feature.append(int(f))
        threshold.append(float(t))
        missing_left.append(bool(m))
        value.append(0.0)
        left.append(-1)
        right.append(-1)
        lo, hi = children(node)
        stack.append((hi, i, True))
        stack.append((lo, i, False))  # popped first: preorder
    return {"feature": np.asarray(feature, np.int32), "threshold": np.asarray(threshold, np.float64),
            "left": np.asarray(left, np.int32), "right": np.asarray(right, np.int32),
            "missing_left": np.asarray(missing_left, bool), "value": np.asarray(value, np.float64)[:, None]}


def pack(trees: list[dict[str, np.ndarray]]) -> PackedForest:
    """Pack tree-local arrays (as :func:`nested_to_arrays` returns) into one PackedForest."""
    if not trees:
        raise ModelFormatError("the model has no trees")
    cat = {k: np.concatenate([t[k] for t in trees]) for k in trees[0]}
    return PackedForest.from_arrays([len(t["feature"]) for t in trees], cat["feature"], cat["threshold"],
                                    cat["left"], cat["right"], cat["missing_left"], cat["value"])
