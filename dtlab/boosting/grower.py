"""Level-wise growth of one boosting tree, over a split finder (exact or histogram).

The grower owns what both split methods share: the rows' node positions, the
node sums ``G, H``, XGBoost's leaf weights ``-G/(H+lambda)`` (0 where ``H <
min_child_weight``), the bottom-up ``gamma`` pruning and the compaction of the
kept nodes in breadth-first order (children after their parents, as
:class:`dtlab.trees.PackedForest` wants).  A split finder
(:class:`.protocols.SplitFinder`) provides ``start_tree(g, h)``, ``find(n_nodes,
node_g, node_h, node_n, lam, mcw)`` and ``split(split_k, split_f, split_thr,
split_left, pos, side, last)`` (``last``: the children will be leaves, so the
finder only marks each row's ``side`` and keeps no state for them), and reads
the level's column sample from its ``allowed``.

The rows' state (node, side, leaf; the children's sums: :class:`.protocols.RowState`) is :class:`HostRows`
on the CPU; a finder may bring its own, ``row_state(g, h)`` (:class:`.protocols.RowStateFinder`; the CPU histogram
finder reads the rows' nodes off its row order: :class:`.hist.SegmentRows`; the
CUDA finders keep the rows on the device: :mod:`._rows_cuda`; the Dask histogram
finder on the workers: :mod:`.dask.hist`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numba
import numpy as np
import scipy.sparse

from .._jit import NJIT
from .._validation import check_X
from ._gain import RT_EPS, leaf_values
from .protocols import NodeSums, RowState, SplitFinder


@dataclass
class ColumnData:
    """A feature matrix as columns of present entries (CSC): what both split finders read.

    Attributes
    ----------
    indptr : int64 array (n_features + 1,)
    indices : int32 array (nnz,), rows of the entries, increasing within each column
    values : float32 array (nnz,), finite
    n_samples, n_features : int
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    n_samples: int
    n_features: int

    @classmethod
    def from_input(cls, X) -> "ColumnData":
        """From a dense array (NaN = missing) or a scipy.sparse matrix (absent entries = missing), never densified."""
        if scipy.sparse.issparse(X):
            n, d = X.shape
            if n == 0 or d == 0:
                raise ValueError(f"X has shape {X.shape}; at least one row and one feature needed")
            csc = scipy.sparse.csc_matrix(X, dtype=np.float32, copy=True)
            csc.sort_indices()
            data = csc.data.astype(np.float32)
            if np.isinf(data).any():
                raise ValueError("X contains inf; only finite values (and NaN or absent entries for missing)")
            present = ~np.isnan(data)  # a stored NaN is missing too
            before = np.zeros(data.shape[0] + 1, np.int64)
            np.cumsum(present, out=before[1:])
            indptr = before[csc.indptr].astype(np.int64)  # present entries before each column start
            return cls(indptr, csc.indices[present].astype(np.int32), data[present], n, d)
        X = check_X(X, dtype=np.float32, allow_nan=True)
        n, d = X.shape
        XT = np.ascontiguousarray(X.T)
        if not np.isnan(XT).any():  # every entry present: the columns as they lie (no mask, no gather)
            return cls(np.arange(d + 1, dtype=np.int64) * n, np.tile(np.arange(n, dtype=np.int32), d),
                       XT.reshape(-1), n, d)
        present = ~np.isnan(XT)
        indptr = np.zeros(d + 1, np.int64)
        np.cumsum(present.sum(axis=1), out=indptr[1:])
        rows = np.broadcast_to(np.arange(n, dtype=np.int32), (d, n))
        return cls(indptr, rows[present], XT[present], n, d)


@dataclass
class BoostedTree:
    """One grown tree in breadth-first order (node 0 the root; -1 children at leaves).

    ``threshold`` is float32 and a row goes left when ``x < threshold``
    (XGBoost's test); ``value`` is the node's output ``learning_rate * weight``
    (float32), ``gain`` the loss change of its split (0 at leaves), ``cover``
    its hessian sum.  ``categories`` maps each categorical split node to the
    category values (int64) that go left (:mod:`.lossguide_grower`); any other
    category goes right, a missing value the ``missing_left`` way.
    """

    feature: np.ndarray
    threshold: np.ndarray
    missing_left: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray
    gain: np.ndarray
    cover: np.ndarray
    categories: dict = field(default_factory=dict)

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])


@numba.njit(**NJIT)
def _node_sums(pos, g, h, n_nodes):
    node_g = np.zeros(n_nodes)
    node_h = np.zeros(n_nodes)
    node_n = np.zeros(n_nodes, np.int64)
    for r in range(pos.shape[0]):
        k = pos[r]
        if k >= 0:
            node_g[k] += g[r]
            node_h[k] += h[r]
            node_n[k] += 1
    return node_g, node_h, node_n


@numba.njit(**NJIT)
def _advance(pos, side, which, level_ids, leaf_of_row, g, h, n_children):
    """Rows of splitting nodes move to child ``2 j`` (left) or ``2 j + 1``; the others settle in their leaf.

    Returns the children's sums as :func:`_node_sums` (the same additions in the same order), from this pass.
    """
    node_g = np.zeros(n_children)
    node_h = np.zeros(n_children)
    node_n = np.zeros(n_children, np.int64)
    for r in range(pos.shape[0]):
        k = pos[r]
        if k < 0:
            continue
        j = which[k]
        if j < 0:
            leaf_of_row[r] = level_ids[k]
            pos[r] = -1
        else:
            c = 2 * j + 1 - side[r]
            pos[r] = c
            node_g[c] += g[r]
            node_h[c] += h[r]
            node_n[c] += 1
    return node_g, node_h, node_n


class HostRows:
    """The rows of one tree in host memory: each row's node (``pos``), ``side`` and leaf; the node sums.

    A :class:`.protocols.RowState`: the grower's for the finders without rows of their own
    (:class:`.exact.ExactSearch`, :class:`.dask.exact.DaskExactSearch`).
    """

    pos: np.ndarray  # int64 (n_samples,), -1 once settled
    side: np.ndarray  # uint8 (n_samples,)

    def __init__(self, g: np.ndarray, h: np.ndarray):
        n = g.shape[0]
        self.g, self.h = g, h
        self.pos = np.zeros(n, np.int64)
        self.side = np.zeros(n, np.uint8)
        self._leaf = np.zeros(n, np.int64)

    def root_sums(self) -> NodeSums:
        return _node_sums(self.pos, self.g, self.h, 1)

    def advance(self, which: np.ndarray, level_ids: np.ndarray, n_children: int) -> NodeSums:
        return _advance(self.pos, self.side, which, level_ids, self._leaf, self.g, self.h, n_children)

    def leaf_of_row(self) -> np.ndarray:
        return self._leaf


def grow_boosted_tree(search: SplitFinder, g: np.ndarray, h: np.ndarray, max_depth: int, learning_rate: float,
                      reg_lambda: float, gamma: float, min_child_weight: float,
                      level_features: Callable[[int], np.ndarray | None] | None = None
                      ) -> tuple[BoostedTree, np.ndarray]:
    """Grow one tree level by level to ``max_depth``, prune by ``gamma``.

    Parameters
    ----------
    search : :class:`.protocols.SplitFinder` (:class:`.exact.ExactSearch`, :class:`.hist.HistSearch`, ...)
    g, h : float32 arrays (n_samples,)
    max_depth : int >= 1
    learning_rate, reg_lambda, gamma, min_child_weight : float
    level_features : callable(depth) -> bool mask (n_features,) or None, optional
        The features each level may split on (the column sample, :mod:`.sampling`); the finder zeroes the
        others' gains before it chooses (``search.allowed``).

    Returns
    -------
    tree : BoostedTree
    leaf_of_row : int64 array (n_samples,), the (kept) leaf of every training row
    """
    lam, mcw = float(reg_lambda), float(min_child_weight)
    search.start_tree(g, h)
    rows: RowState = search.row_state(g, h) if hasattr(search, "row_state") else HostRows(g, h)
    # the nodes in creation order (breadth first), at most 2^(max_depth + 1) - 1 of them
    size = 2 ** (max_depth + 1) - 1
    feature = np.full(size, -1, np.int32)
    threshold = np.zeros(size, np.float32)
    miss = np.ones(size, np.bool_)
    left = np.full(size, -1, np.int32)
    right = np.full(size, -1, np.int32)
    gain = np.zeros(size)
    G = np.zeros(size)
    H = np.zeros(size)
    parent = np.full(size, -1, np.int64)
    node_g, node_h, node_n = rows.root_sums()
    G[0], H[0] = node_g[0], node_h[0]
    level_ids = np.zeros(1, np.int64)
    n_used = 1
    for depth in range(max_depth + 1):
        n_nodes = level_ids.shape[0]
        if depth == max_depth:
            rows.advance(np.full(n_nodes, -1, np.int64), level_ids, 0)
            break
        search.allowed = level_features(depth) if level_features is not None else None
        best_f, best, thr, mleft = search.find(n_nodes, node_g, node_h, node_n, lam, mcw)
        split_k = np.flatnonzero((best_f >= 0) & (best > RT_EPS))
        n_split = split_k.shape[0]
        which = np.full(n_nodes, -1, np.int64)
        which[split_k] = np.arange(n_split)
        if n_split:
            search.split(split_k, best_f[split_k].astype(np.int64), thr[split_k], mleft[split_k], rows.pos,
                         rows.side, last=depth + 1 == max_depth)
        node_g, node_h, node_n = rows.advance(which, level_ids, 2 * n_split)
        if not n_split:
            break
        nodes = level_ids[split_k]
        feature[nodes], threshold[nodes], miss[nodes], gain[nodes] = best_f[split_k], thr[split_k], \
            mleft[split_k], best[split_k]
        children = np.arange(n_used, n_used + 2 * n_split)
        left[nodes], right[nodes] = children[0::2], children[1::2]
        parent[children] = np.repeat(nodes, 2)
        G[children], H[children] = node_g, node_h
        n_used += 2 * n_split
        level_ids = children
    feature, threshold, miss, left, right = feature[:n_used], threshold[:n_used], miss[:n_used], left[:n_used], \
        right[:n_used]
    gain, G, H, parent = gain[:n_used], G[:n_used], H[:n_used], parent[:n_used]
    tree = BoostedTree(feature, threshold, miss, left, right, leaf_values(G, H, lam, mcw, learning_rate), gain, H)
    return prune(tree, parent, gamma, rows.leaf_of_row())


def prune(tree: BoostedTree, parent: np.ndarray, gamma: float, leaf_of_row: np.ndarray):
    """XGBoost's pruner: bottom up, a split whose children are leaves and whose loss change is below
    ``gamma`` becomes a leaf; then the kept nodes are renumbered breadth first.

    Returns the pruned tree and each row's leaf in it.
    """
    left, right = tree.left.copy(), tree.right.copy()
    for node in range(tree.n_nodes - 1, -1, -1):  # children come after parents: they are settled first
        if left[node] != -1 and left[left[node]] == -1 and left[right[node]] == -1 and tree.gain[node] < gamma:
            left[node] = right[node] = -1
    kept = np.zeros(tree.n_nodes, np.bool_)
    resolve = np.arange(tree.n_nodes)
    for node in range(tree.n_nodes):
        p = parent[node]
        kept[node] = p < 0 or (kept[p] and left[p] != -1)
        if not kept[node]:
            resolve[node] = resolve[p]
    new_id = np.cumsum(kept) - 1
    leaf = left[kept] == -1
    out = BoostedTree(np.where(leaf, -1, tree.feature[kept]).astype(np.int32),
                      np.where(leaf, 0.0, tree.threshold[kept]).astype(np.float32), tree.missing_left[kept],
                      np.where(leaf, -1, new_id[np.maximum(left[kept], 0)]).astype(np.int32),
                      np.where(leaf, -1, new_id[np.maximum(right[kept], 0)]).astype(np.int32),
                      tree.value[kept], np.where(leaf, 0.0, tree.gain[kept]), tree.cover[kept],
                      {int(new_id[k]): v for k, v in tree.categories.items() if kept[k] and left[k] != -1})
    return out, new_id[resolve[leaf_of_row]]
