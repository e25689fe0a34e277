"""Exact boosting on a Dask cluster, feature-parallel: each worker holds every row of a slice of columns.

The swGBDT paper's core groups, across machines.  Worker ``w`` holds the
columns ``f0:f1`` of every row, sorted once (:class:`ExactPart`: a
single-process :class:`~dtlab.boosting.exact.ExactSearch` over its slice).
The client runs the single-process boosting loop and grower
(:func:`~dtlab.boosting.booster.boost`) with the rows' gradients, nodes and
sums (what one process keeps per row: ``n_samples`` floats, no features);
its finder (:class:`DaskExactSearch`) sends per level:

1. **find** -- the rows' sides of the last split (one bit per row, packed)
   with the nodes that split and the children's sums; every worker
   partitions its sorted lists stably into the children's segments and finds
   the best split of every node on its features (the single-process kernels);
   the best per node is reduced on the client (the largest loss change, the
   smallest feature on ties: slices are in feature order);
2. **mark** -- the winning splits; the worker owning a split's feature marks
   the side of each of the node's rows where that feature is present (two bit
   arrays: marked, left); the client puts in the missing side for the rest.

The gradients go to the workers once per tree.  Every number the trees are
made of is computed as in one process, so the trees are the single-process
trees bit for bit, for any number of workers.
"""

from __future__ import annotations

import numpy as np

from ...backend import thread_scope
from .._exact_cpu import _mark_sides
from ..exact import ExactSearch
from ..grower import ColumnData
from .hist import part_matrix, worker_threads

__all__ = ["DaskExactSearch", "ExactPart", "feature_slices"]


def feature_slices(present: np.ndarray, n_slices: int) -> list[tuple[int, int]]:
    """Contiguous feature slices with about equal present entries each (the work of a level), none empty."""
    d = present.shape[0]
    n_slices = max(1, min(n_slices, d))
    ends = np.cumsum(present, dtype=np.float64)
    total = ends[-1] if ends[-1] > 0 else 1.0
    cuts = [0]
    for k in range(1, n_slices):
        c = int(np.searchsorted(ends, total * k / n_slices, side="left")) + 1
        cuts.append(min(max(c, cuts[-1] + 1), d - (n_slices - k)))
    cuts.append(d)
    return [(cuts[k], cuts[k + 1]) for k in range(n_slices)]


class ExactPart:
    """One worker's slice of the columns, every row, sorted once; the slice's best splits per level.

    Parameters
    ----------
    blocks : row blocks of the columns ``f0:f1`` (numpy, pandas or scipy.sparse)
    f0 : int, the slice's first feature (its global index)
    """

    def __init__(self, blocks: list, f0: int):
        data = ColumnData.from_input(part_matrix(blocks))
        self.f0 = int(f0)
        self.n_threads = worker_threads()
        with thread_scope(self.n_threads):
            self.search = ExactSearch(data, self.n_threads)
        n = data.n_samples
        self.side = np.zeros(n, np.uint8)
        self.no_pos = np.full(n, -1, np.int64)  # _mark_sides' missing-side pass is the client's
        self.n_samples = n

    def handle(self, message: tuple, replay: bool):
        kind, tree, partition, node_g, node_h, node_n, lam, mcw = message
        if kind != "find":
            raise ValueError(f"unknown message {kind!r}")
        with thread_scope(self.n_threads):
            s = self.search
            if tree is not None:
                s.start_tree(*tree)
            if partition is not None:
                split_k, bits = partition
                self.side[:] = np.unpackbits(bits, count=self.n_samples)
                s.follow_sides(split_k, self.side)
            best_f, best, thr, mleft = s.find(node_g.shape[0], node_g, node_h, node_n, lam, mcw)
        if replay:
            return None
        return np.where(best_f >= 0, best_f + self.f0, -1), best, thr, mleft

    def mark(self, split_k, split_f, split_thr, split_left):
        """Sides of the rows of the splits on this slice's features where the feature is present: packed
        bits (marked, left); None when no split uses this slice."""
        d = self.search.seg.shape[0]
        mine = (split_f >= self.f0) & (split_f < self.f0 + d)
        if not mine.any():
            return None
        side = np.full(self.n_samples, 2, np.uint8)  # 2: not marked here
        rows, vals = self.search.lists
        _mark_sides(self.search.seg, rows, vals, split_k[mine], split_f[mine] - self.f0, split_thr[mine],
                    split_left[mine], self.no_pos, side)
        return np.packbits(side != 2), np.packbits(side == 1)


def _mark(state: ExactPart, split_k, split_f, split_thr, split_left):
    return state.mark(split_k, split_f, split_thr, split_left)


class DaskExactSearch:
    """The client's exact finder: the workers' slices searched per level, the best split per node reduced.

    A :class:`~dtlab.boosting.protocols.SplitFinder` without rows of its own: the grower keeps them in a
    :class:`~dtlab.boosting.grower.HostRows`, whose ``pos`` and ``side`` :meth:`split` reads and marks.

    Parameters
    ----------
    replicas : :class:`~dtlab.distributed.replicas.Replicas` of :class:`ExactPart`, in feature order
    n_samples : int

    Attributes
    ----------
    level_bytes : list of (depth, bytes): the rows' sides marked by the workers and sent to them, per level
    """

    #: Set by the grower before each :meth:`find`; always None here (a Dask fit takes no column sample).
    allowed: np.ndarray | None

    def __init__(self, replicas, n_samples: int):
        self.replicas = replicas
        self.n_samples = n_samples
        self.level_bytes: list[tuple[int, int]] = []
        self._tree = None
        self._partition = None

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        self._tree = (np.asarray(g, np.float32), np.asarray(h, np.float32))  # sent with the root's find
        self._partition = None
        self.depth = 0

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        new_tree = self._tree is not None
        message = ("find", self._tree, self._partition, np.asarray(node_g, np.float64),
                   np.asarray(node_h, np.float64), np.asarray(node_n, np.int64), float(lam), float(mcw))
        # a tree's first message holds its gradients: a part sent again replays from there
        replies = self.replicas.send(message, restart=new_tree)
        self._tree = self._partition = None
        best_f = np.full(n_nodes, -1, np.int64)
        best = np.zeros(n_nodes)
        thr = np.zeros(n_nodes, np.float32)
        mleft = np.ones(n_nodes, np.bool_)
        for f, gain, t, ml in replies:  # slices in feature order: strictly larger wins, so ties keep the first
            better = (f >= 0) & (gain > best)
            best_f[better], best[better], thr[better], mleft[better] = f[better], gain[better], t[better], ml[better]
        return best_f, best, thr, mleft

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """The rows' sides: the missing side of their node, then the owners' marks where the feature is present."""
        received = self.replicas.received_bytes
        marks = self.replicas.ask(_mark, split_k, split_f, split_thr, split_left)
        self.depth += 1
        which = np.full(max(int(pos.max()), int(split_k.max())) + 1, -1, np.int64)
        which[split_k] = np.arange(split_k.shape[0])
        inside = (pos >= 0) & (which[np.maximum(pos, 0)] >= 0)
        side[inside] = np.asarray(split_left, np.uint8)[which[pos[inside]]]
        for mark in marks:
            if mark is not None:
                marked = np.unpackbits(mark[0], count=self.n_samples).astype(bool)
                side[marked] = np.unpackbits(mark[1], count=self.n_samples)[marked]
        moved = self.replicas.received_bytes - received  # the marks, up
        if not last:  # the sides, down to every worker with the next find
            self._partition = (split_k, np.packbits(side))
            moved += self._partition[1].nbytes * self.replicas.n_parts
        self.level_bytes.append((self.depth, moved))
