"""The batched CPU evaluator (numba): every tree of a batch in one pass over the data, on threads or CPU workers."""

from __future__ import annotations

import time

import numba
import numpy as np

from ...trees import PackedForest
from ._fitness_cpu import _evaluate_range_parallel, _evaluate_range_serial, _evaluate_trees, tree_groups
from .base import PHASES, BatchWork, LeafStats, check_data
from .devices import PoolEvaluator, PoolOrOwnKernels

#: Rows below which splitting the rows over threads costs more (private copies, their merge) than it gains.
ROWS_PER_BLOCK = 8 * 1024

#: (rows x trees) below which a batch is evaluated on the calling thread: a population of 50 on up to ~5,000 rows,
#: where starting a parallel region and waiting for its slowest thread (on a busy machine, for a descheduled one)
#: costs more than the evaluation itself.
SERIAL_WORK = 256 * 1024


class CpuEvaluator(PoolOrOwnKernels):
    """Fast batched CPU evaluator (numba): the whole batch in one pass over the data.

    The data are held transposed (one contiguous column per feature) so that
    the trees with at most 64 leaves, the usual GDT individuals, find the
    leaves of a chunk of rows with branch-free leaf bitmasks in SIMD code
    (:mod:`dtlab.trees.bitmask`); larger trees are walked node by node.

    With ``n_devices=None`` one call of a parallel kernel splits the rows into
    blocks over all of numba's threads.  With ``n_devices=k`` the rows are
    split into ``k`` shards owned by ``k`` CPU workers of a device pool
    (:class:`~dtlab.evolution.evaluators.devices.PoolEvaluator`), one host thread
    each running the serial kernel, and the host merges their partial
    statistics: the multi-device scheme of the paper (section 3.2) with CPU
    workers standing in for GPUs, so ``n_devices=1`` is one core and
    ``n_devices=2`` two.  Every setting gives identical statistics.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64, finite
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : int or None
        CPU workers (one thread each); None for all numba threads on one copy of the data.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, n_devices: int | None = None):
        if n_devices is not None:
            self._adopt(PoolEvaluator(X, y, n_classes, n_devices))
            return
        X, y = check_data(X, y, n_classes)
        self.Xt = np.ascontiguousarray(X.T)
        self.n_samples = X.shape[0]
        self.n_features = X.shape[1]
        self.n_classes = int(n_classes)
        self.n_devices = 1
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.timings = dict.fromkeys(PHASES, 0.0)

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        if self._pool is not None:
            return self._pool.evaluate(forest, seed)
        start = time.perf_counter()
        work = BatchWork.prepare(forest, seed, self.n_features, self.Xt.dtype)
        masks = work.masks
        prepared = time.perf_counter()
        stats = LeafStats.empty(forest.n_nodes, self.n_classes)
        threads = numba.get_num_threads()
        args = (self.Xt, self.y, np.int64(0), np.int64(self.n_samples), np.int64(0), work.seed, forest.node_offset,
                forest.feature, forest.threshold, forest.left, forest.right, forest.missing_left, work.salts,
                masks.masked, masks.test_offset, masks.test_feature, masks.test_threshold, masks.test_mask,
                masks.leaf_offset, masks.leaf_node)
        if threads == 1 or self.n_samples * forest.n_trees < SERIAL_WORK:
            # a parallel region's start and its wait for the slowest thread cost more than this work
            _evaluate_range_serial(*args, 1, stats.counts, stats.cand_hash, stats.cand_row)
        elif forest.n_trees >= threads:  # every thread gets trees of its own: no private copies to merge
            _evaluate_trees(*args, *tree_groups(masks, threads), stats.counts, stats.cand_hash, stats.cand_row)
        else:  # too few trees to go round: split the rows, then merge the blocks' statistics
            n_blocks = max(1, min(threads * 2, self.n_samples // ROWS_PER_BLOCK))
            _evaluate_range_parallel(*args, n_blocks, stats.counts, stats.cand_hash, stats.cand_row)
        self.timings["prepare"] += prepared - start
        self.timings["kernel"] += time.perf_counter() - prepared  # the blocks' merge is inside the kernel
        return stats

    def serial_data(self, n_trees: int) -> tuple[np.ndarray, np.ndarray] | None:
        """``(Xt, y)`` when a batch of ``n_trees`` trees would be evaluated on the calling thread, else None.

        What :mod:`dtlab.evolution.fused` needs to run a whole generation, this
        evaluation included, in one compiled call; a device pool evaluates on its workers instead.
        """
        if self._pool is not None:
            return None
        if numba.get_num_threads() == 1 or self.n_samples * n_trees < SERIAL_WORK:
            return self.Xt, self.y
        return None

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        if self._pool is not None:
            return self._pool.rows(row_ids)
        return np.asarray(self.Xt[:, np.asarray(row_ids)].T, dtype=np.float64)
