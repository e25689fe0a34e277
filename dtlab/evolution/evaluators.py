"""Fitness evaluators: the protocol, the NumPy reference, the batched CPU evaluator, the registry.

An evaluator holds the training data for a whole run (as each GPU of the
paper holds its shard, Jurczuk, Czajkowski, Kretowski 2021, section 3.2) and
turns a batch of flattened trees into per-leaf statistics:

* ``counts[node, c]``: training objects of class ``c`` reaching leaf ``node``;
* ``cand_row[node, c, :2]``: two of those objects drawn at random (the rows
  with the smallest draw keys, see :mod:`dtlab.evolution.kernels`), -1 where
  the leaf has fewer; the host builds mixed dipoles from them;
* ``cand_hash[node, c, :2]``: their draw hashes, so partial statistics of
  shards can be merged exactly (:func:`merge_stats`).

Evaluators keep no arrangement of objects in nodes between generations
(paper, section 3.4): each call walks all rows again.

A new evaluator (GPU, several devices, Dask) plugs in by implementing
:class:`Evaluator` and adding its factory to :data:`EVALUATORS` (or calling
:func:`register_evaluator`); :class:`~dtlab.evolution.GDTClassifier` picks it by
``backend`` name.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

import numba
import numpy as np

from ..trees.bitmask import forest_masks
from .kernels import EMPTY_HASH, _evaluate_range_parallel, _evaluate_range_serial, _merge_into, splitmix64


@dataclass(frozen=True)
class TreeBatch:
    """A batch of trees packed into concatenated arrays.

    Attributes
    ----------
    node_offset : ndarray of shape (n_trees + 1,), int64
        Tree ``t`` is packed nodes ``node_offset[t]:node_offset[t + 1]``, its root first.
    feature : ndarray of shape (n_nodes_total,), int32
        Attribute tested at internal nodes (any value at leaves).
    threshold : ndarray of shape (n_nodes_total,), float64
        ``x <= threshold`` goes left.
    left, right : ndarray of shape (n_nodes_total,), int32
        Packed (batch-global) child indices; -1 at leaves.
    tree_salt : ndarray of shape (n_trees,), uint64
        Per-tree salt of the draw (see :mod:`dtlab.evolution.kernels`).
    """

    node_offset: np.ndarray
    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    tree_salt: np.ndarray

    @property
    def n_trees(self) -> int:
        return int(self.node_offset.shape[0] - 1)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    def validate(self, n_features: int) -> None:
        """Raise ``ValueError`` unless the arrays describe ``n_trees`` trees over ``n_features`` attributes.

        Cheap vectorised checks run before any kernel so that a malformed
        batch never reaches compiled code (which does no bounds checking).
        """
        n = self.n_nodes
        off = self.node_offset
        if off.ndim != 1 or off.shape[0] < 2 or off[0] != 0 or off[-1] != n or (np.diff(off) < 1).any():
            raise ValueError("node_offset must start at 0, end at n_nodes and give every tree >= 1 node")
        for name in ("feature", "threshold", "left", "right"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} must have shape ({n},), got {getattr(self, name).shape}")
        if self.tree_salt.shape != (self.n_trees,):
            raise ValueError(f"tree_salt must have shape ({self.n_trees},), got {self.tree_salt.shape}")
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


@dataclass
class LeafStats:
    """Statistics of a batch's leaves over some rows (all rows, or one shard's).

    Attributes
    ----------
    counts : ndarray of shape (n_nodes_total, n_classes), int64
    cand_hash : ndarray of shape (n_nodes_total, n_classes, 2), uint64
        :data:`~dtlab.evolution.kernels.EMPTY_HASH` in empty slots.
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

    def evaluate(self, batch: TreeBatch, seed: int) -> LeafStats:
        """Statistics of every leaf of ``batch`` over all training rows.

        ``seed`` (a uint64-range int) seeds the order-independent draw; the
        result must not depend on how the evaluator splits or orders rows.
        """
        ...

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        """Feature values of the given global rows, shape (len(row_ids), n_features), float64."""
        ...

    def close(self) -> None:
        """Release devices, threads and memory."""
        ...


def check_data(X: np.ndarray, y: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate an evaluator's data: C-contiguous finite float32/float64 ``X`` and int codes ``y`` in range.

    Returns ``X`` (float32 kept, anything else as float64) and ``y`` as int32.
    """
    from .._validation import check_X, check_y

    X = check_X(X, dtype=np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64)
    y = check_y(y, X.shape[0])
    if y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"y must hold integer class codes in [0, {n_classes}); encode labels first "
                         "(dtlab._validation.encode_labels)")
    return X, np.ascontiguousarray(y, dtype=np.int32)


def _row_hashes(seed: int, rows: np.ndarray) -> np.ndarray:
    return splitmix64(np.uint64(seed) ^ rows.astype(np.uint64))


class NumpyEvaluator:
    """Plain NumPy reference evaluator: readable, one tree at a time; what the kernels are tested against.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : ignored (accepted for a uniform factory signature)
    row_offset : int
        Global id of the first row (for a shard of a larger data set).
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, n_devices: int | None = None,
                 row_offset: int = 0):
        X, y = check_data(X, y, n_classes)
        self.X = X
        self.y = y.astype(np.int64)
        self.n_samples = X.shape[0]
        self.n_classes = int(n_classes)
        self.global_rows = np.arange(row_offset, row_offset + X.shape[0], dtype=np.int64)

    def leaves(self, batch: TreeBatch, t: int) -> np.ndarray:
        """Packed index of the leaf each row reaches in tree ``t``, int64 of shape (n_samples,)."""
        node = np.full(self.n_samples, batch.node_offset[t], dtype=np.int64)
        while True:
            inner = batch.left[node] != -1
            if not inner.any():
                return node
            at = node[inner]
            go_left = self.X[np.flatnonzero(inner), batch.feature[at]] <= batch.threshold[at]
            node[inner] = np.where(go_left, batch.left[at], batch.right[at])

    def evaluate(self, batch: TreeBatch, seed: int) -> LeafStats:
        batch.validate(self.X.shape[1])
        stats = LeafStats.empty(batch.n_nodes, self.n_classes)
        row_hash = _row_hashes(seed, self.global_rows)
        for t in range(batch.n_trees):
            leaf = self.leaves(batch, t)
            np.add.at(stats.counts, (leaf, self.y), 1)
            h = row_hash ^ batch.tree_salt[t]
            # the two smallest (hash, row) keys of every (leaf, class) group
            order = np.lexsort((self.global_rows, h, self.y, leaf))
            group = leaf[order] * self.n_classes + self.y[order]
            first = np.ones(order.shape[0], dtype=bool)
            first[1:] = group[1:] != group[:-1]
            rank = np.arange(order.shape[0]) - np.maximum.accumulate(np.where(first, np.arange(order.shape[0]), 0))
            keep = rank < 2
            sel = order[keep]
            stats.cand_hash[leaf[sel], self.y[sel], rank[keep]] = h[sel]
            stats.cand_row[leaf[sel], self.y[sel], rank[keep]] = self.global_rows[sel]
        return stats

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        return np.asarray(self.X[np.asarray(row_ids) - self.global_rows[0]], dtype=np.float64)

    def close(self) -> None:
        pass


class CpuEvaluator:
    """Fast batched CPU evaluator (numba): the whole batch in one pass over the data.

    The data are held transposed (one contiguous column per feature) so that
    the trees with at most 64 leaves, the usual GDT individuals, find the
    leaves of a chunk of rows with branch-free leaf bitmasks in SIMD code
    (:mod:`dtlab.trees.bitmask`); larger trees are walked node by node.

    With ``n_devices=None`` (or 1) one call of a parallel kernel splits the
    rows into blocks over numba's threads.  With ``n_devices=k > 1`` the rows
    are split into ``k`` shards held for the whole run, one host thread per
    shard runs the serial kernel (which releases the GIL) and the host merges
    the partial statistics with :func:`merge_stats`: the multi-device scheme of
    the paper (section 3.2) with CPU workers standing in for GPUs.  Both give
    identical statistics.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64, finite
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : int or None
        Number of shards / worker threads; None for one shard over all threads.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, n_devices: int | None = None):
        from ..datasets import shard

        X, y = check_data(X, y, n_classes)
        self.Xt = np.ascontiguousarray(X.T)
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self.n_classes = int(n_classes)
        self.n_devices = 1 if n_devices is None else int(n_devices)
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        parts = shard(X, self.y, min(self.n_devices, self.n_samples))
        self.shard_bounds = [(part.start, part.start + part.X.shape[0]) for part in parts]
        self._pool = ThreadPoolExecutor(len(parts)) if len(parts) > 1 else None

    def _run_range(self, start: int, stop: int, batch: TreeBatch, masks, seed: np.uint64, n_blocks: int,
                   parallel: bool) -> LeafStats:
        stats = LeafStats.empty(batch.n_nodes, self.n_classes)
        kernel = _evaluate_range_parallel if parallel else _evaluate_range_serial
        kernel(self.Xt, self.y, np.int64(start), np.int64(stop), seed, batch.node_offset, batch.feature,
               batch.threshold, batch.left, batch.right, batch.tree_salt, masks.masked, masks.test_offset,
               masks.test_feature, masks.test_threshold, masks.test_mask, masks.leaf_offset, masks.leaf_node,
               n_blocks, stats.counts, stats.cand_hash, stats.cand_row)
        return stats

    def evaluate(self, batch: TreeBatch, seed: int) -> LeafStats:
        batch.validate(self.n_features)  # the compiled kernel does no bounds checks
        masks = forest_masks(batch.node_offset, batch.feature, batch.threshold, batch.left, batch.right,
                             self.Xt.dtype)
        seed = np.uint64(seed)
        if self._pool is None:
            n_blocks = max(1, min(numba.get_num_threads() * 2, self.n_samples))
            return self._run_range(0, self.n_samples, batch, masks, seed, n_blocks, True)
        futures = [self._pool.submit(self._run_range, start, stop, batch, masks, seed, 1, False)
                   for start, stop in self.shard_bounds]
        return merge_stats([f.result() for f in futures])

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        return np.asarray(self.Xt[:, np.asarray(row_ids)].T, dtype=np.float64)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None


#: Evaluator factories by backend name: ``factory(X, y, n_classes, n_devices=None) -> Evaluator``.
EVALUATORS: dict[str, Callable[..., Evaluator]] = {
    "numpy": NumpyEvaluator,
    "cpu": CpuEvaluator,
}


def register_evaluator(name: str, factory: Callable[..., Evaluator]) -> None:
    """Add (or replace) an evaluator factory under ``name`` (e.g. ``"cuda"``, ``"dask"``)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"an evaluator name must be a non-empty string, got {name!r}")
    EVALUATORS[name] = factory


def resolve_evaluator(backend: str) -> str:
    """The :data:`EVALUATORS` key that ``backend`` selects.

    ``"auto"`` means ``"cuda"`` when a CUDA evaluator is registered and
    :func:`dtlab.backend.resolve_backend` picks the GPU, else ``"cpu"``; any
    registered name selects itself.

    Raises
    ------
    ValueError
        ``backend`` names no registered evaluator (e.g. ``"cuda"`` before a
        CUDA evaluator exists); the message lists the available ones.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if backend == "auto":
        from ..backend import resolve_backend

        # resolve_backend("auto") never picks the simulator, so this is a real GPU
        return "cuda" if "cuda" in EVALUATORS and resolve_backend("auto").is_cuda else "cpu"
    if backend not in EVALUATORS:
        raise ValueError(f"no GDT evaluator is registered for backend={backend!r}; available evaluators: "
                         f"{sorted(EVALUATORS)} (or 'auto'). A CUDA evaluator registers itself under 'cuda' "
                         "with dtlab.evolution.register_evaluator once it exists.")
    return backend
