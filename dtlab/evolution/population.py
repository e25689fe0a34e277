"""The population of a GDT run as flat arrays: every tree's nodes and statistics one after another.

The compiled host loop (:mod:`dtlab.evolution.breeding`) keeps the whole
population in one set of arrays, in the layout of a
:class:`~dtlab.trees.PackedForest` plus each node's statistics, so a
generation's selection, crossover, mutation and packing run in one compiled
call instead of thousands of small NumPy calls.  An
:class:`~dtlab.evolution.individual.Individual` is one tree in the same
breadth-first form; :meth:`Population.individual` and
:meth:`Population.from_individuals` convert.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from ..trees import PackedForest
from .individual import Individual

_NJIT = dict(cache=True, nogil=True)


@dataclass
class Population:
    """Trees of a population, concatenated.

    Attributes
    ----------
    node_offset : ndarray of shape (n_trees + 1,), int64
        Tree ``t`` is nodes ``node_offset[t]:node_offset[t + 1]``, root first, breadth-first.
    feature : ndarray of shape (n_nodes,), int32
        Tested attribute; -1 at leaves.
    threshold : ndarray of shape (n_nodes,), float64
        ``x <= threshold`` goes left; 0 at leaves.
    left : ndarray of shape (n_nodes,), int32
        Tree-local index of the left child (the right one is ``left + 1``); -1 at leaves.
    counts : ndarray of shape (n_nodes, n_classes), int64
    cand_hash : ndarray of shape (n_nodes, n_classes, 2), uint64
    cand_row : ndarray of shape (n_nodes, n_classes, 2), int64
        The statistics of each tree's last evaluation (see :class:`~dtlab.evolution.individual.Individual`).
    fitness, accuracy : ndarray of shape (n_trees,), float64
        NaN until evaluated.
    evaluated : ndarray of shape (n_trees,), bool
    ident : ndarray of shape (n_trees,), int64
        Slots with the same ident hold the same individual (an unchanged offspring selected twice, or
        an elite kept): the identity the reference loop's lists of objects carry, which the elitism
        rule uses (the next best individuals are those that are *not* the best).
    """

    node_offset: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    counts: np.ndarray
    cand_hash: np.ndarray
    cand_row: np.ndarray
    fitness: np.ndarray
    accuracy: np.ndarray
    evaluated: np.ndarray
    ident: np.ndarray

    ARRAYS = ("node_offset", "feature", "threshold", "left", "counts", "cand_hash", "cand_row", "fitness",
              "accuracy", "evaluated", "ident")

    @property
    def n_trees(self) -> int:
        return int(self.node_offset.shape[0] - 1)

    @property
    def sizes(self) -> np.ndarray:
        """Nodes of each tree, int64 of shape (n_trees,)."""
        return np.diff(self.node_offset)

    def astuple(self) -> tuple:
        return tuple(getattr(self, name) for name in self.ARRAYS)

    def n_leaves(self, t: int) -> int:
        a, b = self.node_offset[t], self.node_offset[t + 1]
        return int((self.left[a:b] == -1).sum())

    def individual(self, t: int) -> Individual:
        """Tree ``t`` as an :class:`~dtlab.evolution.individual.Individual` (copied arrays)."""
        a, b = int(self.node_offset[t]), int(self.node_offset[t + 1])
        left = self.left[a:b].copy()
        return Individual(self.feature[a:b].copy(), self.threshold[a:b].copy(), left,
                          np.where(left == -1, -1, left + 1).astype(np.int32), self.counts[a:b].copy(),
                          self.cand_hash[a:b].copy(), self.cand_row[a:b].copy(), float(self.fitness[t]),
                          float(self.accuracy[t]), bool(self.evaluated[t]))

    def individuals(self) -> list[Individual]:
        """Every slot as an Individual; slots with the same ident share one object."""
        made: dict[int, Individual] = {}
        out = []
        for t, i in enumerate(self.ident.tolist()):
            if i not in made:
                made[i] = self.individual(t)
            out.append(made[i])
        return out

    @classmethod
    def from_individuals(cls, individuals: list[Individual], ident: np.ndarray | None = None) -> "Population":
        """Concatenate individuals; ``ident`` defaults to one per distinct object (by identity)."""
        if ident is None:
            first: dict[int, int] = {}
            ident = np.array([first.setdefault(id(ind), len(first)) for ind in individuals], np.int64)
        sizes = np.array([ind.n_nodes for ind in individuals], np.int64)
        offset = np.zeros(len(individuals) + 1, np.int64)
        np.cumsum(sizes, out=offset[1:])
        cat = {name: np.concatenate([getattr(ind, name) for ind in individuals])
               for name in ("feature", "threshold", "left", "counts", "cand_hash", "cand_row")}
        return cls(offset, cat["feature"].astype(np.int32), cat["threshold"].astype(np.float64),
                   cat["left"].astype(np.int32), cat["counts"].astype(np.int64), cat["cand_hash"].astype(np.uint64),
                   cat["cand_row"].astype(np.int64),
                   np.array([ind.fitness for ind in individuals], np.float64),
                   np.array([ind.accuracy for ind in individuals], np.float64),
                   np.array([ind.evaluated for ind in individuals], np.bool_), np.asarray(ident, np.int64).copy())

    def forest(self, slots: np.ndarray) -> PackedForest:
        """The trees of ``slots`` (int64, in that order) as a :class:`~dtlab.trees.PackedForest`."""
        offset, feature, threshold, left, right = _pack(self.node_offset, self.feature, self.threshold, self.left,
                                                        np.asarray(slots, np.int64))
        return PackedForest(offset, feature, threshold, left, right, np.ones(feature.shape[0], np.bool_))

    DTYPES = {"node_offset": np.int64, "feature": np.int32, "threshold": np.float64, "left": np.int32,
              "counts": np.int64, "cand_hash": np.uint64, "cand_row": np.int64, "fitness": np.float64,
              "accuracy": np.float64, "evaluated": np.bool_, "ident": np.int64}

    def validate(self) -> None:
        """Raise ``ValueError`` unless the arrays hold breadth-first binary trees with sibling-adjacent children.

        What a loaded checkpoint must pass before any compiled loop reads it (they do no bounds checks).
        """
        for name, dtype in self.DTYPES.items():
            if getattr(self, name).dtype != dtype:
                raise ValueError(f"{name} must be {np.dtype(dtype).name}, got {getattr(self, name).dtype}")
        off, n = self.node_offset, self.feature.shape[0]
        n_classes = self.counts.shape[1] if self.counts.ndim == 2 else 0
        if off.ndim != 1 or off.shape[0] < 2 or off[0] != 0 or off[-1] != n or (np.diff(off) < 1).any():
            raise ValueError("node_offset must start at 0, end at the number of nodes and give every tree a node")
        for name in ("threshold", "left"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({n},)")
        if self.counts.shape != (n, n_classes) or self.cand_hash.shape != (n, n_classes, 2) or \
                self.cand_row.shape != (n, n_classes, 2):
            raise ValueError("statistics arrays do not match the number of nodes and classes")
        for name in ("fitness", "accuracy", "evaluated", "ident"):
            if getattr(self, name).shape != (self.n_trees,):
                raise ValueError(f"{name} must have one entry per tree")
        if not _breadth_first(off, self.left):
            raise ValueError("every tree must be breadth-first from its root, children adjacent (right = left + 1)")
        internal = self.left != -1
        if (self.feature[internal] < 0).any() or not np.isfinite(self.threshold[internal]).all():
            raise ValueError("internal nodes need a feature >= 0 and a finite threshold")


@numba.njit(**_NJIT)
def _pack(node_offset, feature, threshold, left, slots):
    """Forest arrays (global child indices) of the trees ``slots``."""
    offset = np.zeros(slots.shape[0] + 1, np.int64)
    for j in range(slots.shape[0]):
        offset[j + 1] = offset[j] + node_offset[slots[j] + 1] - node_offset[slots[j]]
    n = offset[-1]
    out_feature = np.empty(n, np.int32)
    out_threshold = np.empty(n, np.float64)
    out_left = np.empty(n, np.int32)
    out_right = np.empty(n, np.int32)
    for j in range(slots.shape[0]):
        src, dst = node_offset[slots[j]], offset[j]
        for k in range(offset[j + 1] - dst):
            out_feature[dst + k] = feature[src + k]
            out_threshold[dst + k] = threshold[src + k]
            child = left[src + k]
            out_left[dst + k] = -1 if child == -1 else dst + child
            out_right[dst + k] = -1 if child == -1 else dst + child + 1
    return offset, out_feature, out_threshold, out_left, out_right


@numba.njit(**_NJIT)
def _breadth_first(node_offset, left):
    """Whether every tree's k-th internal node (in node order) has its children at 2k + 1, 2k + 2."""
    for t in range(node_offset.shape[0] - 1):
        rank = 0
        for node in range(node_offset[t + 1] - node_offset[t]):
            child = left[node_offset[t] + node]
            if child == -1:
                continue
            if child != 2 * rank + 1 or child <= node or child + 1 >= node_offset[t + 1] - node_offset[t]:
                return False
            rank += 1
        if 2 * rank + 1 != node_offset[t + 1] - node_offset[t]:
            return False
    return True
