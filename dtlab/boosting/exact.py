"""The exact split finder of one fit (:class:`ExactSearch`): the presorted lists, their double buffers, the
levels driven through the kernels of :mod:`._exact_cpu` (the algorithm and XGBoost's conventions are
described there)."""

from __future__ import annotations

import numpy as np

from ..splits import DEFAULT_SORT, SORTS, presort_columns
from ._exact_cpu import (
    PARALLEL_MIN_WORK,
    _find_splits_slice,
    _level,
    _mark_sides,
    _partition_find_slice,
    _reduce_splits,
)
from ._workers import run_slices
from .sampling import gate_gains


def _presort_features(f0, f1, w, data, argsort, rows, vals):
    """The sorted lists of the features ``f0:f1`` (one worker's slice) into their part of ``rows``, ``vals``."""
    a, b = data.indptr[f0], data.indptr[f1]
    rows[a:b], vals[a:b] = presort_columns(data.indptr[f0:f1 + 1] - a, data.indices[a:b], data.values[a:b], argsort)


class ExactSearch:
    """The exact split finder of one fit: the sorted lists and their double buffers.

    A :class:`.protocols.SplitFinder` without rows of its own: the grower keeps them in a
    :class:`.grower.HostRows`, whose ``pos`` and ``side`` :meth:`split` reads and marks.

    Parameters
    ----------
    data : :class:`dtlab.boosting.grower.ColumnData`
    n_workers : int
    """

    #: The level's column sample (:attr:`.protocols.SplitFinder.allowed`), set by the grower; None: every feature.
    allowed: np.ndarray | None = None

    def __init__(self, data, n_workers: int):
        self.indptr = data.indptr
        nnz = int(data.indptr[-1])
        self.n_workers = n_workers
        # a parallel region costs tens of microseconds on a quiet machine and milliseconds on a busy one:
        # tiny lists are scanned serially (PARALLEL_MIN_WORK)
        self.parallel = n_workers > 1 and nnz >= PARALLEL_MIN_WORK
        self.rows0, self.vals0 = np.empty(nnz, np.int32), np.empty(nnz, np.float32)
        run_slices(_presort_features, data.n_features, n_workers if self.parallel else 1, data, SORTS[DEFAULT_SORT],
                   self.rows0, self.vals0)
        self.col_missing = np.diff(data.indptr) < data.n_samples
        self.buffers = [(np.empty(nnz, np.int32), np.empty(nnz, np.float32)) for _ in range(2)]
        n = max(data.n_samples, 1)
        self.bufs = np.empty((3, n_workers, n))
        self.tmp = (np.empty((n_workers, n), np.int32), np.empty((n_workers, n), np.float32))
        #: Entries scanned (prefix sums), ranked (once per missing direction) and partitioned, over the fit:
        #: the work counts behind :func:`workbench.boosting.intensity.counted`.
        self.work = {"scanned": 0, "ranked": 0, "partitioned": 0}

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        """This round's gradients; the root is each whole list."""
        self.gh = np.stack([g, h], axis=1).astype(np.float32, copy=False)  # g, h are float32 already
        self.lists = (self.rows0, self.vals0)
        self.seg = np.stack([self.indptr[:-1], self.indptr[1:]], axis=1).astype(np.int64)
        self.flip = 0
        self.pending = None

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        """Best split of each node of the level: ``(feature, loss_chg, threshold, missing_left)`` arrays.

        A partition left by :meth:`split` runs first, in the same dispatch: each worker partitions its
        slice of the lists, then scans them."""
        d = self.seg.shape[0]
        f_gain = np.empty((d, n_nodes))
        f_thr = np.empty((d, n_nodes), np.float32)
        f_left = np.empty((d, n_nodes), np.bool_)
        rows, vals = self.lists
        find_args = (n_nodes, self.gh, node_g, node_h, node_n, self.col_missing, lam, mcw, self.bufs,
                     f_gain, f_thr, f_left)
        partition = self.pending is not None
        if partition:
            old = self.pending
        else:  # the root: nothing to partition (placeholders of the partition's arguments)
            old = (self.seg, np.empty(0, np.int64), np.empty(0, np.uint8), rows, vals)
        if self.parallel:
            _level(self.indptr, *old, rows, vals, self.seg, *self.tmp, *find_args, self.n_workers, partition)
        elif partition:
            _partition_find_slice(0, d, 0, self.indptr, *old, rows, vals, self.seg, *self.tmp, *find_args)
        else:
            _find_splits_slice(0, d, 0, self.seg, n_nodes, vals, rows, *find_args[1:])
        self.pending = None
        lengths = self.seg[:, n_nodes] - self.seg[:, 0]
        self.work["scanned"] += int(lengths.sum())
        self.work["ranked"] += int((lengths * np.where(self.col_missing, 2, 1)).sum())
        gate_gains(f_gain, self.allowed)  # the level's column sample (sampling.py)
        best_f, best = _reduce_splits(f_gain, n_nodes)
        k = np.arange(n_nodes)
        fk = np.maximum(best_f, 0)
        return best_f, best, f_thr[fk, k], f_left[fk, k]

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """Mark each row's side; the partition of the lists into the children's segments is left to the
        next :meth:`find` (none when the children are the ``last`` level: leaves need no lists)."""
        rows, vals = self.lists
        _mark_sides(self.seg, rows, vals, split_k, split_f, split_thr, split_left, pos, side)
        if not last:
            self.follow_sides(split_k, side)

    def follow_sides(self, split_k, side) -> None:
        """The partition of the lists by the rows' ``side`` (marked here, or elsewhere: a Dask worker holding
        other features, :mod:`.dask.exact`), left to the next :meth:`find`."""
        rows, vals = self.lists
        out = self.buffers[self.flip]
        self.flip ^= 1
        self.work["partitioned"] += int((self.seg[:, split_k + 1] - self.seg[:, split_k]).sum())
        new_seg = np.empty((self.seg.shape[0], 2 * split_k.shape[0] + 1), np.int64)
        self.pending = (self.seg, split_k, side, rows, vals)
        self.lists = out
        self.seg = new_seg
