"""The batched CPU evaluator (numba): every tree of a batch in one pass over the data, on threads or shards."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ...trees import PackedForest
from ...trees.bitmask import forest_masks
from ..kernels import _evaluate_range_parallel, _evaluate_range_serial, tree_salts
from .base import LeafStats, check_data, merge_stats


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
        from ...datasets import shard

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

    def _run_range(self, start: int, stop: int, forest: PackedForest, masks, seed: np.uint64, n_blocks: int,
                   parallel: bool) -> LeafStats:
        stats = LeafStats.empty(forest.n_nodes, self.n_classes)
        kernel = _evaluate_range_parallel if parallel else _evaluate_range_serial
        kernel(self.Xt, self.y, np.int64(start), np.int64(stop), seed, forest.node_offset, forest.feature,
               forest.threshold, forest.left, forest.right, forest.missing_left, tree_salts(seed, forest.n_trees),
               masks.masked, masks.test_offset,
               masks.test_feature, masks.test_threshold, masks.test_mask, masks.leaf_offset, masks.leaf_node,
               n_blocks, stats.counts, stats.cand_hash, stats.cand_row)
        return stats

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        forest.validate(self.n_features)  # the compiled kernel does no bounds checks
        masks = forest_masks(forest, self.Xt.dtype)
        seed = np.uint64(seed)
        if self._pool is None:
            n_blocks = max(1, min(numba.get_num_threads() * 2, self.n_samples))
            return self._run_range(0, self.n_samples, forest, masks, seed, n_blocks, True)
        futures = [self._pool.submit(self._run_range, start, stop, forest, masks, seed, 1, False)
                   for start, stop in self.shard_bounds]
        return merge_stats([f.result() for f in futures])

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        return np.asarray(self.Xt[:, np.asarray(row_ids)].T, dtype=np.float64)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
