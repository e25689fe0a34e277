"""The evaluator protocol, leaf statistics and their exact merge.

An evaluator holds the training data for a whole run (as each GPU of the
paper holds its shard, Jurczuk, Czajkowski, Kretowski 2021, section 3.2) and
turns a :class:`~dtlab.trees.PackedForest` of trees into per-leaf statistics:

* ``counts[node, c]``: training objects of class ``c`` reaching leaf ``node``;
* ``cand_row[node, c, :2]``: two of those objects drawn at random (the rows
  with the smallest draw keys, see :mod:`dtlab.evolution.evaluators.draws`), -1 where
  the leaf has fewer; the host builds mixed dipoles from them;
* ``cand_hash[node, c, :2]``: their draw hashes, so partial statistics of
  shards can be merged exactly (:func:`merge_stats`).

Evaluators keep no arrangement of objects in nodes between generations
(paper, section 3.4): each call walks all rows again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from ...trees import PackedForest
from ._fitness_cpu import _merge_into
from .draws import EMPTY_HASH


@dataclass
class LeafStats:
    """Statistics of a batch's leaves over some rows (all rows, or one shard's).

    Attributes
    ----------
    counts : ndarray of shape (n_nodes_total, n_classes), int64
    cand_hash : ndarray of shape (n_nodes_total, n_classes, 2), uint64
        :data:`~dtlab.evolution.evaluators.draws.EMPTY_HASH` in empty slots.
    cand_row : ndarray of shape (n_nodes_total, n_classes, 2), int64
        Global row ids, -1 in empty slots; slot 0 has the smaller key.

    Only leaves are filled by evaluators; internal nodes stay zero / empty.
    """

    counts: np.ndarray
    cand_hash: np.ndarray
    cand_row: np.ndarray

    @classmethod
    def empty(cls, n_nodes: int, n_classes: int) -> "LeafStats":
        return cls(np.zeros((n_nodes, n_classes), np.int64),
                   np.full((n_nodes, n_classes, 2), EMPTY_HASH, np.uint64),
                   np.full((n_nodes, n_classes, 2), -1, np.int64))

    def equals(self, other: "LeafStats") -> bool:
        return (np.array_equal(self.counts, other.counts) and np.array_equal(self.cand_hash, other.cand_hash)
                and np.array_equal(self.cand_row, other.cand_row))


def merge_stats(parts: list[LeafStats]) -> LeafStats:
    """Merge partial statistics of disjoint row sets (shards, devices, workers) into one.

    Counts add; each (node, class) keeps the two candidates with the smallest
    ``(hash, row)`` keys among all parts.  The result equals the statistics of
    the union of the rows, whatever the split and the order of ``parts``.

    Parameters
    ----------
    parts : list of LeafStats, all of the same shape

    Returns
    -------
    LeafStats (new arrays; the parts are not modified)
    """
    if not parts:
        raise ValueError("merge_stats needs at least one part")
    first = parts[0]
    out = LeafStats(first.counts.copy(), first.cand_hash.copy(), first.cand_row.copy())
    for part in parts[1:]:
        if part.counts.shape != out.counts.shape:
            raise ValueError(f"cannot merge statistics of shapes {part.counts.shape} and {out.counts.shape}")
        _merge_into(out.counts, out.cand_hash, out.cand_row, part.counts, part.cand_hash, part.cand_row)
    return out


@runtime_checkable
class Evaluator(Protocol):
    """What the evolutionary loop needs from an evaluator.

    Constructed once per run as ``factory(X, y, n_classes, n_devices=...)``
    with validated data (``X`` C-contiguous float32/float64 without NaN,
    ``y`` int32 codes in ``0..n_classes-1``); it may place the data on devices.
    """

    n_samples: int
    n_classes: int

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        """Statistics of every leaf of ``forest`` over all training rows.

        ``seed`` (a uint64-range int) seeds the order-independent draw (row
        hashes, and :func:`~dtlab.evolution.evaluators.draws.tree_salts`); the result
        must not depend on how the evaluator splits or orders rows.
        """
        ...

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        """Feature values of the given global rows, shape (len(row_ids), n_features), float64."""
        ...

    def close(self) -> None:
        """Release devices, threads and memory."""
        ...


#: Phases of an evaluation that evaluators time (seconds, summed over calls in ``evaluator.timings``):
#: host preparation of the batch, transfers to and from the devices (the slowest device), kernels (the
#: slowest device), merging the devices' partial statistics on the host.
PHASES = ("prepare", "transfer", "kernel", "merge")


@dataclass(frozen=True)
class BatchWork:
    """What every device receives for one evaluation: the batch, its seed and what the host derived from them.

    Attributes
    ----------
    forest : PackedForest
    seed : numpy.uint64
    salts : ndarray of shape (n_trees,), uint64
        :func:`~dtlab.evolution.evaluators.draws.tree_salts` of the batch.
    masks : ForestMasks
        Leaf bitmasks of the trees with at most 64 leaves (:mod:`dtlab.trees.bitmask`), thresholds
        rounded to the data's dtype.
    threshold : ndarray of shape (n_nodes,), the data's dtype
        The forest's thresholds rounded down to the data's dtype: ``x <= threshold`` holds exactly when
        ``x <= forest.threshold`` for every value ``x`` of that dtype (a GPU then compares in float32).
    """

    forest: PackedForest
    seed: np.uint64
    salts: np.ndarray
    masks: object
    threshold: np.ndarray

    @classmethod
    def prepare(cls, forest: PackedForest, seed: int, n_features: int, dtype) -> "BatchWork":
        """Validate ``forest`` (the compiled kernels do no bounds checks) and derive what every device needs.

        One compiled call (:mod:`._prepare`); a forest it finds malformed is
        handed to :meth:`~dtlab.trees.PackedForest.validate` for the error message.
        """
        from ...trees.bitmask import ForestMasks
        from ._prepare import forest_is_valid, prepare

        n = forest.feature.shape[0]
        off = forest.node_offset
        shapes_ok = (off.ndim == 1 and off.shape[0] >= 2
                     and all(getattr(forest, name).shape == (n,)
                             for name in ("threshold", "left", "right", "missing_left"))
                     and (forest.value is None or (forest.value.ndim == 2 and forest.value.shape[0] == n)))
        if not (shapes_ok and forest_is_valid(off, forest.feature, forest.threshold, forest.left, forest.right,
                                              np.int64(n_features))):
            forest.validate(n_features)
            raise ValueError("malformed forest: every child must come after its parent, inside its tree")
        seed = np.uint64(seed)
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise ValueError(f"thresholds can be rounded to float32 or float64, not {dtype}")
        threshold, masks, salts = prepare(off, forest.feature, forest.threshold, forest.left, forest.right, seed,
                                          np.empty(0, dtype))
        return cls(forest, seed, salts, ForestMasks(*masks), threshold)


def check_partial(stats: LeafStats, forest: PackedForest, n_rows: int, where: str) -> None:
    """Refuse a device's partial statistics unless every tree counted each of the shard's ``n_rows`` rows once.

    A device or worker that failed silently (lost data, a kernel that did not
    run) would otherwise give a wrong fitness without an error.

    Raises
    ------
    RuntimeError
        Naming ``where`` and the counts found.
    """
    if stats.counts.shape != (forest.n_nodes, stats.counts.shape[1]):
        raise RuntimeError(f"{where} returned statistics for {stats.counts.shape[0]} nodes, expected {forest.n_nodes}")
    per_tree = np.add.reduceat(stats.counts.sum(axis=1), forest.node_offset[:-1])
    if not (per_tree == n_rows).all():
        bad = int(np.flatnonzero(per_tree != n_rows)[0])
        raise RuntimeError(f"{where} counted {int(per_tree[bad])} rows in tree {bad} of its batch but holds {n_rows};"
                           " its statistics are refused rather than merged into a wrong fitness")


def check_data(X: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate an evaluator's data: C-contiguous finite float32/float64 ``X`` and int codes ``y`` in range.

    Returns ``X`` (float32 kept, anything else as float64) and ``y`` as int32.
    """
    from ..._validation import check_X, check_y

    X = check_X(X, dtype=np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64)
    y = check_y(y, X.shape[0])
    if y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"y must hold integer class codes in [0, {n_classes}); encode labels first "
                         "(dtlab._validation.encode_labels)")
    return X, np.ascontiguousarray(y, dtype=np.int32)
