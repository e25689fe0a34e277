"""The plain NumPy reference evaluator: readable, one tree at a time; what the kernels are tested against."""

from __future__ import annotations

import numpy as np

from ...trees import PackedForest
from .base import LeafStats, check_data
from .draws import splitmix64, tree_salts


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

    def leaves(self, forest: PackedForest, t: int) -> np.ndarray:
        """Packed index of the leaf each row reaches in tree ``t``, int64 of shape (n_samples,)."""
        node = np.full(self.n_samples, forest.node_offset[t], dtype=np.int64)
        while True:
            inner = forest.left[node] != -1
            if not inner.any():
                return node
            at = node[inner]
            go_left = self.X[np.flatnonzero(inner), forest.feature[at]] <= forest.threshold[at]
            node[inner] = np.where(go_left, forest.left[at], forest.right[at])

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        forest.validate(self.X.shape[1])
        stats = LeafStats.empty(forest.n_nodes, self.n_classes)
        row_hash = _row_hashes(seed, self.global_rows)
        salts = tree_salts(seed, forest.n_trees)
        for t in range(forest.n_trees):
            leaf = self.leaves(forest, t)
            np.add.at(stats.counts, (leaf, self.y), 1)
            h = row_hash ^ salts[t]
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
