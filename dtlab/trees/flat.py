"""FlatTree: a binary decision tree as a struct of arrays.

A node ``i`` tests ``X[:, feature[i]] <= threshold[i]``: true goes to
``left[i]``, false to ``right[i]``; a missing value (NaN) goes left when
``missing_left[i]`` else right.  ``left[i] == right[i] == -1`` marks a leaf.
``value[i]`` holds per-class counts (classification) or the prediction
(regression) of node ``i``; leaves are what predictions read, but internal
nodes keep their values too (useful for pruning and drawing).

The root is node 0 and any node order is allowed.  Models go in and out as
JSON, never pickle.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._validation import check_int
from .order import breadth_first, preorder

TASKS = ("classification", "regression")
JSON_FORMAT = "dtlab.FlatTree/1"
__all__ = ["FlatTree", "TreeValidationError", "breadth_first", "preorder"]


class TreeValidationError(ValueError):
    """A FlatTree whose arrays do not describe a valid binary tree."""


@dataclass(eq=False)
class FlatTree:
    """A binary decision tree stored as parallel arrays.

    Attributes
    ----------
    feature : ndarray of shape (n_nodes,), int32
        Feature tested at each internal node; -1 at leaves.
    threshold : ndarray of shape (n_nodes,), float64
        ``x <= threshold`` goes left.  0 at leaves.
    left, right : ndarray of shape (n_nodes,), int32
        Child indices; -1 at leaves.
    value : ndarray of shape (n_nodes, n_outputs), float64
        Class counts (classification, ``n_outputs == n_classes``) or the
        predicted value (regression, ``n_outputs == 1``).
    n_features : int
        Number of input features the tree expects.
    task : {"classification", "regression"}
    classes : ndarray of shape (n_classes,) or None
        Class labels in the column order of ``value`` (classification).
    missing_left : ndarray of shape (n_nodes,), bool
        Direction of NaN at each internal node.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    n_features: int
    task: str = "classification"
    classes: np.ndarray | None = None
    missing_left: np.ndarray | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.feature = np.ascontiguousarray(self.feature, dtype=np.int32)
        self.threshold = np.ascontiguousarray(self.threshold, dtype=np.float64)
        self.left = np.ascontiguousarray(self.left, dtype=np.int32)
        self.right = np.ascontiguousarray(self.right, dtype=np.int32)
        value = np.asarray(self.value, dtype=np.float64)
        if value.ndim == 1:
            value = value[:, None]
        self.value = np.ascontiguousarray(value)
        if self.missing_left is None:
            self.missing_left = np.ones(self.feature.shape[0], dtype=np.bool_)
        self.missing_left = np.ascontiguousarray(self.missing_left, dtype=np.bool_)
        if self.classes is not None:
            self.classes = np.asarray(self.classes)
        self.validate()

    # ------------------------------------------------------------------ shape
    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def is_leaf(self) -> np.ndarray:
        """Boolean mask of shape (n_nodes,)."""
        return self.left == -1

    @property
    def n_leaves(self) -> int:
        return int(self.is_leaf.sum())

    @property
    def n_outputs(self) -> int:
        return int(self.value.shape[1])

    def node_depths(self) -> np.ndarray:
        """Depth of every node (root 0), int32 of shape (n_nodes,)."""
        depth = np.zeros(self.n_nodes, dtype=np.int32)
        for node in self.preorder():
            if self.left[node] != -1:
                depth[self.left[node]] = depth[node] + 1
                depth[self.right[node]] = depth[node] + 1
        return depth

    @property
    def max_depth(self) -> int:
        return int(self.node_depths().max())

    def preorder(self) -> list[int]:
        """Node indices in depth-first preorder from the root (parents before children)."""
        return preorder(self.left, self.right)

    # ------------------------------------------------------------- validation
    def validate(self) -> None:
        """Raise :class:`TreeValidationError` unless the arrays form one binary tree rooted at 0."""
        n = self.feature.shape[0]
        if n == 0:
            raise TreeValidationError("a tree needs at least one node (the root)")
        for name in ("feature", "threshold", "left", "right", "missing_left"):
            arr = getattr(self, name)
            if arr.ndim != 1 or arr.shape[0] != n:
                raise TreeValidationError(f"{name} must have shape ({n},), got {arr.shape}")
        if self.value.ndim != 2 or self.value.shape[0] != n or self.value.shape[1] == 0:
            raise TreeValidationError(f"value must have shape ({n}, n_outputs), got {self.value.shape}")
        check_int(self.n_features, "n_features", low=1)
        if self.task not in TASKS:
            raise TreeValidationError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.task == "regression" and self.value.shape[1] != 1:
            raise TreeValidationError("a regression tree has one output per node")
        if self.classes is not None and self.classes.shape[0] != self.value.shape[1]:
            raise TreeValidationError(f"{self.classes.shape[0]} classes but value has "
                                      f"{self.value.shape[1]} columns")
        leaf_left, leaf_right = self.left == -1, self.right == -1
        if (leaf_left != leaf_right).any():
            bad = int(np.flatnonzero(leaf_left != leaf_right)[0])
            raise TreeValidationError(f"node {bad} has exactly one child; a binary tree node has 0 or 2")
        internal = ~leaf_left
        for name in ("left", "right"):
            child = getattr(self, name)[internal]
            if ((child < 0) | (child >= n)).any():
                raise TreeValidationError(f"{name} child index out of range [0, {n}): "
                                          f"{child[(child < 0) | (child >= n)][:5].tolist()}")
        children = np.concatenate([self.left[internal], self.right[internal]])
        if (children == 0).any():
            raise TreeValidationError("the root (node 0) cannot be a child: the tree has a cycle")
        counts = np.bincount(children, minlength=n)
        if (counts > 1).any():
            bad = int(np.flatnonzero(counts > 1)[0])
            raise TreeValidationError(f"node {bad} has {counts[bad]} parents: a node can have only one "
                                      "(the arrays form a DAG or a cycle, not a tree)")
        if (counts[1:] == 0).any():
            bad = int(np.flatnonzero(counts[1:] == 0)[0]) + 1
            raise TreeValidationError(f"node {bad} is not reachable from the root")
        feat = self.feature[internal]
        if ((feat < 0) | (feat >= self.n_features)).any():
            raise TreeValidationError(f"feature index out of range [0, {self.n_features}) at an internal node: "
                                      f"{feat[(feat < 0) | (feat >= self.n_features)][:5].tolist()}")
        bad = np.flatnonzero(internal & ~np.isfinite(self.threshold))
        if bad.size:  # named, so that a corrupted file points at its wrong number
            raise TreeValidationError(f"thresholds of internal nodes must be finite: node {bad[0]} has threshold "
                                      f"{self.threshold[bad[0]]}")
        bad = np.flatnonzero(~np.isfinite(self.value).all(axis=1))
        if bad.size:
            raise TreeValidationError(f"node values must be finite: node {bad[0]} has value "
                                      f"{self.value[bad[0]].tolist()}")
        # n-1 edges, every non-root node one parent, root none: with n nodes this is a tree
        # unless a cycle avoids the root; a walk from the root must then reach every node.
        if len(preorder(self.left, self.right, limit=n)) != n:
            raise TreeValidationError("the arrays contain a cycle not reachable from the root")

    # ------------------------------------------------------------- conversion
    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of plain lists."""
        classes = None
        if self.classes is not None:
            classes = self.classes.tolist()
        return {
            "format": JSON_FORMAT,
            "task": self.task,
            "n_features": int(self.n_features),
            "classes": classes,
            "feature": self.feature.tolist(),
            "threshold": [float(t) for t in self.threshold],
            "left": self.left.tolist(),
            "right": self.right.tolist(),
            "missing_left": self.missing_left.astype(int).tolist(),
            "value": self.value.tolist(),
            "metadata": self.metadata,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "FlatTree":
        if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
            raise ValueError(f"not a FlatTree document: expected format {JSON_FORMAT!r}, "
                             f"got {data.get('format') if isinstance(data, dict) else type(data).__name__!r}")
        try:
            return cls(feature=data["feature"], threshold=data["threshold"], left=data["left"],
                       right=data["right"], value=data["value"], n_features=data["n_features"],
                       task=data["task"], classes=data.get("classes"),
                       missing_left=np.asarray(data.get("missing_left"), dtype=bool)
                       if data.get("missing_left") is not None else None,
                       metadata=data.get("metadata") or {})
        except KeyError as exc:
            raise ValueError(f"FlatTree document lacks the field {exc.args[0]!r}") from exc

    def to_json(self) -> str:
        # repr-exact floats: json writes shortest round-trip repr, so thresholds survive
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> "FlatTree":
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        """Write the tree as JSON to ``path``."""
        Path(path).write_text(self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> "FlatTree":
        """Read a tree written by :meth:`save`; raises ``ValueError`` on a malformed file."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no tree file at {path}")
        try:
            return cls.from_json(path.read_text())
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path} is not valid JSON: {exc}") from exc

    # ------------------------------------------------------------ prediction
    def apply(self, X: Any, backend: str = "auto") -> np.ndarray:
        """Index of the leaf each row reaches, int32 of shape (n_samples,)."""
        from .leaves import apply

        return apply(self, X, backend=backend)

    def predict_value(self, X: Any, backend: str = "auto") -> np.ndarray:
        """``value`` of the reached leaf, float64 of shape (n_samples, n_outputs)."""
        return self.value[self.apply(X, backend=backend)]

    def predict_proba(self, X: Any, backend: str = "auto") -> np.ndarray:
        """Class frequencies of the reached leaf, shape (n_samples, n_classes)."""
        if self.task != "classification":
            raise ValueError("predict_proba needs a classification tree")
        counts = self.predict_value(X, backend=backend)
        totals = counts.sum(axis=1, keepdims=True)
        return np.divide(counts, totals, out=np.full_like(counts, 1.0 / counts.shape[1]), where=totals > 0)

    def predict(self, X: Any, backend: str = "auto") -> np.ndarray:
        """Majority class label (classification) or leaf value (regression), shape (n_samples,)."""
        values = self.predict_value(X, backend=backend)
        if self.task == "regression":
            return values[:, 0]
        best = np.argmax(values, axis=1)
        return self.classes[best] if self.classes is not None else best

    # ---------------------------------------------------------- constructors
    @classmethod
    def leaf(cls, value: Any, n_features: int, task: str = "classification",
             classes: Any = None) -> "FlatTree":
        """A one-node tree predicting ``value`` everywhere."""
        value = np.atleast_1d(np.asarray(value, dtype=np.float64))[None, :]
        return cls(feature=[-1], threshold=[0.0], left=[-1], right=[-1], value=value,
                   n_features=n_features, task=task, classes=classes)

    @classmethod
    def from_sklearn(cls, estimator: Any) -> "FlatTree":
        """Import a fitted scikit-learn ``DecisionTreeClassifier`` / ``DecisionTreeRegressor``.

        Class values become weighted class counts (scikit-learn >= 1.4 stores
        fractions; they are multiplied back by the node's weighted sample count).
        """
        from .sklearn_import import from_sklearn

        return from_sklearn(cls, estimator)

    def __repr__(self) -> str:
        return (f"FlatTree(task={self.task!r}, n_nodes={self.n_nodes}, n_leaves={self.n_leaves}, "
                f"max_depth={self.max_depth}, n_features={self.n_features})")

    def equals(self, other: "FlatTree") -> bool:
        """Exact structural and value equality (same node order)."""
        return (isinstance(other, FlatTree) and self.task == other.task and self.n_features == other.n_features
                and all(np.array_equal(getattr(self, a), getattr(other, a))
                        for a in ("feature", "threshold", "left", "right", "value", "missing_left")))
