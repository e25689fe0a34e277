"""PackedForest: many trees in concatenated arrays, the unit every batched kernel takes.

GDT's evaluators walk a population of trees over the same rows, a boosting
model and the inference engine walk an ensemble: each kernel takes one
:class:`PackedForest` instead of a list of trees, so a launch covers every
tree and no per-tree Python runs inside it.

Layout: tree ``t`` is nodes ``node_offset[t]:node_offset[t + 1]``, its root
first; ``left``/``right`` hold forest-global node indices (-1 at leaves) and
every child comes after its parent (so one reverse sweep sees children before
parents, and a walk can never cycle).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from .order import preorder


@dataclass(frozen=True)
class PackedForest:
    """Trees packed into concatenated arrays.

    Attributes
    ----------
    node_offset : ndarray of shape (n_trees + 1,), int64
        Tree ``t`` is packed nodes ``node_offset[t]:node_offset[t + 1]``, its root first.
    feature : ndarray of shape (n_nodes,), int32
        Attribute tested at internal nodes (any value at leaves).
    threshold : ndarray of shape (n_nodes,), float64
        ``x <= threshold`` goes left.
    left, right : ndarray of shape (n_nodes,), int32
        Forest-global child indices, after the parent and inside the same tree; -1 at leaves.
    missing_left : ndarray of shape (n_nodes,), bool
        Where NaN goes at each test.
    value : ndarray of shape (n_nodes, n_outputs), float64, or None
        What each node predicts (class counts, leaf values), when the forest carries it.
    """

    node_offset: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    missing_left: np.ndarray
    value: np.ndarray | None = None

    @classmethod
    def from_arrays(cls, sizes: Sequence[int] | np.ndarray, feature: np.ndarray, threshold: np.ndarray,
                    left: np.ndarray, right: np.ndarray, missing_left: np.ndarray | None = None,
                    value: np.ndarray | None = None) -> "PackedForest":
        """Pack concatenated per-tree arrays whose child indices are tree-local.

        Parameters
        ----------
        sizes : sequence of int (n_trees,)
            Nodes of each tree; the arrays hold the trees one after the other.
        feature, threshold, left, right : concatenated node arrays (n_nodes,);
            ``left``/``right`` local to their tree (root 0), -1 at leaves
        missing_left : bool array (n_nodes,), optional (default: NaN goes left)
        value : array (n_nodes, n_outputs), optional
        """
        sizes = np.asarray(sizes, dtype=np.int64)
        offset = np.zeros(sizes.shape[0] + 1, np.int64)
        np.cumsum(sizes, out=offset[1:])
        base = np.repeat(offset[:-1], sizes)
        left = np.asarray(left)
        right = np.asarray(right)
        internal = left != -1
        n = int(offset[-1])
        return cls(offset, np.ascontiguousarray(feature, np.int32), np.ascontiguousarray(threshold, np.float64),
                   np.where(internal, left + base, -1).astype(np.int32),
                   np.where(internal, right + base, -1).astype(np.int32),
                   np.ones(n, np.bool_) if missing_left is None else np.ascontiguousarray(missing_left, np.bool_),
                   None if value is None else np.ascontiguousarray(value, np.float64))

    @classmethod
    def from_trees(cls, trees: Sequence) -> "PackedForest":
        """Pack :class:`~dtlab.trees.FlatTree` objects (any node order; renumbered in preorder where needed).

        Values are kept when every tree has the same number of outputs.
        """
        if len(trees) == 0:
            raise ValueError("a PackedForest needs at least one tree")
        parts = []
        for tree in trees:
            order = np.arange(tree.n_nodes)
            internal = tree.left != -1
            if (tree.left[internal] <= np.flatnonzero(internal)).any() or \
                    (tree.right[internal] <= np.flatnonzero(internal)).any():
                order = np.asarray(preorder(tree.left, tree.right), dtype=np.int64)
            new_index = np.empty(tree.n_nodes, np.int64)
            new_index[order] = np.arange(tree.n_nodes)
            left = np.where(tree.left[order] != -1, new_index[tree.left[order]], -1)
            right = np.where(tree.right[order] != -1, new_index[tree.right[order]], -1)
            parts.append((tree.feature[order], tree.threshold[order], left, right, tree.missing_left[order],
                          tree.value[order]))
        same_outputs = len({p[5].shape[1] for p in parts}) == 1
        return cls.from_arrays([len(p[0]) for p in parts], *(np.concatenate([p[k] for p in parts]) for k in range(5)),
                               value=np.concatenate([p[5] for p in parts]) if same_outputs else None)

    @property
    def n_trees(self) -> int:
        return int(self.node_offset.shape[0] - 1)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    def validate(self, n_features: int) -> None:
        """Raise ``ValueError`` unless the arrays describe ``n_trees`` trees over ``n_features`` attributes.

        Cheap vectorised checks, run before any kernel so that a malformed
        forest never reaches compiled code (which does no bounds checking).
        """
        n = self.n_nodes
        off = self.node_offset
        if off.ndim != 1 or off.shape[0] < 2 or off[0] != 0 or off[-1] != n or (np.diff(off) < 1).any():
            raise ValueError("node_offset must start at 0, end at n_nodes and give every tree >= 1 node")
        for name in ("feature", "threshold", "left", "right", "missing_left"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {getattr(self, name).shape}")
        if self.value is not None and (self.value.ndim != 2 or self.value.shape[0] != n):
            raise ValueError(f"value must have shape ({n}, n_outputs), got {self.value.shape}")
        internal = self.left != -1
        if ((self.right != -1) != internal).any():
            raise ValueError("every node needs two children or none")
        tree_of = np.repeat(np.arange(self.n_trees), np.diff(off))
        for child in (self.left[internal], self.right[internal]):
            # children must lie after the parent and inside the same tree; this also rules out cycles
            if ((child <= np.flatnonzero(internal)) | (child >= off[tree_of[internal] + 1])).any():
                raise ValueError("child indices must point forward inside the same tree")
        if internal.any() and ((self.feature[internal] < 0) | (self.feature[internal] >= n_features)).any():
            raise ValueError(f"feature indices must lie in [0, {n_features})")
        if np.isnan(self.threshold[internal]).any():
            raise ValueError("thresholds of internal nodes must not be NaN")
