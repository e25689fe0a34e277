"""The histogram split finder node by node (:class:`LossguideSearch`): what leaf-wise growth and categorical
splits need.

The level-wise finders (:mod:`.hist`, :mod:`.exact`) split a whole level at
once and forget the nodes they do not split.  Here every open node (a leaf still to split)
keeps its rows (a segment of one row order, split in place by stable
partitions) and its histograms, so nodes can be split in any order: one at
a time, best first (``grow_policy="lossguide"``), or a level at a time.  The
binning, the histogram build with the sibling by subtraction and the
numeric scans are :mod:`.hist`'s (its kernels run on a batch of new nodes
gathered into one contiguous order); categorical features add the partition
search of :mod:`._categorical_splits` over a bin per category.

A split is kept as a table over one feature's bins (1: the bin goes left):
``bin <= b`` for a threshold, the chosen categories for a categorical split,
and the missing bin on the learnt side; one partition kernel serves both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._jit import NJIT
from ._categorical_splits import categorical_level, left_bins
from ._hist_cpu import _choose_splits, _level, _level_slice
from .hist import HistSearch
from .sampling import gate_gains


@dataclass
class Split:
    """The best split of one open node (``feature = -1``: none); a :class:`.protocols.NodeSplit`, with the
    table the finder partitions its rows by."""

    feature: int
    gain: float
    threshold: float
    missing_left: bool
    table: np.ndarray | None  # uint8 (n_total_bins,): 1 where a bin goes left
    categories: np.ndarray | None  # the category values going left (categorical splits), int64


@numba.njit(**NJIT)
def _partition(order, start, end, bins, f, table, tmp):
    """Stable partition of ``order[start:end]`` by ``table[bins[row, f]]`` (left first); returns the first
    position of the right part."""
    n_left = 0
    for i in range(start, end):
        r = order[i]
        if table[bins[r, f]]:
            order[start + n_left] = r
            n_left += 1
        else:
            tmp[i - start - n_left] = r
    for i in range(end - start - n_left):
        order[start + n_left + i] = tmp[i]
    return start + n_left


@numba.njit(**NJIT)
def _segment_sums(order, start, end, g, h):
    """G, H of a node's rows, added in row order (its segment is increasing): the level-wise grower's sums."""
    sg = 0.0
    sh = 0.0
    for i in range(start, end):
        sg += g[order[i]]
        sh += h[order[i]]
    return sg, sh


class LossguideSearch:
    """Histogram split search over any set of open nodes: a :class:`.protocols.NodeWiseSplitFinder` (the
    grower's :func:`.lossguide_grower.grow_lossguide_tree`), which keeps every open node's rows itself.

    Parameters
    ----------
    data : :class:`dtlab.boosting.grower.ColumnData`
    n_workers : int
    max_bins : int in [2, 256]
    categorical : bool array (n_features,), the features split as categories (non-negative integers, at most
        ``max_bins - 1`` of them)
    max_cat_to_onehot : int
    """

    #: The column sample of the nodes :meth:`evaluate` takes next (:attr:`.protocols.NodeWiseSplitFinder.allowed`),
    #: set by the grower; None: every feature.
    allowed: np.ndarray | None = None

    def __init__(self, data, n_workers: int, max_bins: int, categorical: np.ndarray, max_cat_to_onehot: int):
        self.hist = HistSearch(data, n_workers, max_bins)
        hs = self.hist
        self.categorical = np.asarray(categorical, bool)
        self.cat_features = np.flatnonzero(self.categorical).astype(np.int64)
        self.max_onehot = int(max_cat_to_onehot)
        self.cat_values = {}
        for f in self.cat_features:
            values = np.unique(data.values[data.indptr[f]:data.indptr[f + 1]])
            if values.shape[0] > max_bins - 1:
                raise ValueError(f"categorical feature {f} has {values.shape[0]} categories; at most max_bins - 1 "
                                 f"= {max_bins - 1} are supported (raise max_bins, up to 256)")
            self.cat_values[int(f)] = values.astype(np.int64)  # bin b <-> category values[b]
        n = data.n_samples
        self.tmp = np.empty(n, np.int32)
        self.shape = (hs.bins.shape[1], hs.n_bins_total)

    # ------------------------------------------------------------------ per tree
    def start_tree(self, g: np.ndarray, h: np.ndarray) -> tuple[float, float]:
        """This round's gradients; the root holds every row.  Returns the root's ``(G, H)``."""
        n = g.shape[0]
        self.g, self.h = g, h
        self.order = np.arange(n, dtype=np.int32)
        self.segment = {0: (0, n)}
        self.hists: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        return _segment_sums(self.order, 0, n, g, h)

    def sums(self, node: int) -> tuple[float, float]:
        s, e = self.segment[node]
        return _segment_sums(self.order, s, e, self.g, self.h)

    def evaluate(self, nodes: list[int], parents: list[int], node_g, node_h, lam: float, mcw: float) -> list[Split]:
        """Histograms and best splits of new nodes.

        ``nodes`` come in sibling pairs ``(2 j, 2 j + 1)`` whose parent ``parents[j]`` has its histograms
        kept (the smaller sibling is built, the other is the parent's minus it), or as the root alone
        (``parents == [-1]``).  Every node's rows must be its segment already.
        """
        hs = self.hist
        d, n_total = self.shape
        n_nodes = len(nodes)
        # the new nodes' rows, gathered into one contiguous order (a batch's nodes need not be adjacent)
        starts = [self.segment[k] for k in nodes]
        nseg = np.zeros(n_nodes + 1, np.int64)
        np.cumsum([e - s for s, e in starts], out=nseg[1:])
        order = np.concatenate([self.order[s:e] for s, e in starts]) if n_nodes > 1 else self.order[
            starts[0][0]:starts[0][1]]
        hg, hh = np.empty((n_nodes, d, n_total)), np.empty((n_nodes, d, n_total))
        if parents[0] < 0:
            build, parent = np.zeros(1, np.int64), np.full(1, -1, np.int64)
            hg_parent = hh_parent = hg
        else:
            sizes = np.diff(nseg)
            pairs = 2 * np.arange(n_nodes // 2)
            build = np.where(sizes[0::2] <= sizes[1::2], pairs, pairs + 1).astype(np.int64)
            parent = np.arange(n_nodes // 2, dtype=np.int64)
            hg_parent = np.stack([self.hists[p][0] for p in parents])
            hh_parent = np.stack([self.hists[p][1] for p in parents])
        node_g, node_h = np.asarray(node_g, np.float64), np.asarray(node_h, np.float64)
        f_gain, f_bin, f_left = self._scan(order, nseg, build, parent, hg_parent, hh_parent, hg, hh, node_g, node_h,
                                           lam, mcw)
        for p in parents:
            self.hists.pop(p, None)  # a split node's histograms are not needed again
        for j, k in enumerate(nodes):
            self.hists[k] = (hg[j], hh[j])
        gate_gains(f_gain, self.allowed)
        best_f, best, split_bin, thr, left = _choose_splits(f_gain, f_bin, f_left, hs.cut_table, hs.n_bins)
        return [self._split_of(j, int(best_f[j]), float(best[j]), int(split_bin[j]), float(thr[j]), bool(left[j]),
                               hg, hh, node_g, node_h, lam, mcw) for j in range(n_nodes)]

    def _scan(self, order, nseg, build, parent, hg_parent, hh_parent, hg, hh, node_g, node_h, lam, mcw):
        """The batch's histograms (into ``hg``, ``hh``) and each feature's best split per node: ``(f_gain,
        f_bin, f_left)`` of shape (n_features, n_nodes) -- :mod:`.hist`'s kernels, then the categorical
        partition search for the categorical features."""
        hs = self.hist
        d, n_nodes = self.shape[0], hg.shape[0]
        f_gain = np.empty((d, n_nodes))
        f_bin = np.empty((d, n_nodes), np.int64)
        f_left = np.empty((d, n_nodes), np.bool_)
        args = (hs.columns, order, nseg, build, parent, hg_parent, hh_parent, self.g, self.h, hg, hh, n_nodes,
                hs.n_bins, node_g, node_h, hs.col_missing, lam, mcw, hs.pos_bins, hs.bufs, f_gain, f_bin, f_left)
        if hs.parallel:
            _level(*args, hs.n_workers)
        else:
            _level_slice(0, d, 0, *args)
        if self.cat_features.size:
            categorical_level(self.cat_features, hg, hh, hs.n_bins, node_g, node_h, hs.col_missing, lam, mcw,
                              self.max_onehot, f_gain, np.zeros((d, n_nodes), np.int64), f_left,
                              np.zeros((d, n_nodes), np.bool_))
        return f_gain, f_bin, f_left

    def _split_of(self, j, f, gain, split_bin, thr, miss_left, hg, hh, node_g, node_h, lam, mcw) -> Split:
        """The table of node ``j``'s chosen split (and its categories when the feature is categorical)."""
        if f < 0:
            return Split(-1, 0.0, 0.0, True, None, None)
        hs = self.hist
        table = np.zeros(hs.n_bins_total, np.uint8)
        if self.categorical[f]:
            chosen, miss_left, _ = left_bins(hg[j, f], hh[j, f], hs.n_bins[f], node_g[j], node_h[j],
                                             hs.col_missing[f], lam, mcw, self.max_onehot)
            table[chosen] = 1
            table[hs.miss_bin] = miss_left
            return Split(f, gain, 0.0, miss_left, table, self.cat_values[f][chosen])
        table[:split_bin + 1] = 1  # bins <= b (b = -1: none; the last present bin: all)
        table[hs.n_bins[f]:] = 0
        table[hs.miss_bin] = miss_left
        return Split(f, gain, thr, miss_left, table, None)

    def split(self, node: int, split: Split, left: int, right: int) -> None:
        """Move ``node``'s rows to its children ``left``, ``right`` (stable: row order kept in each)."""
        s, e = self.segment.pop(node)
        mid = _partition(self.order, s, e, self.hist.bins, split.feature, split.table, self.tmp)
        self.segment[left] = (s, mid)
        self.segment[right] = (mid, e)

    def leaf_of_row(self, leaves: dict[int, int]) -> np.ndarray:
        """Each row's leaf: ``leaves`` maps an open node to its index in the finished tree."""
        out = np.empty(self.order.shape[0], np.int64)
        for node, (s, e) in self.segment.items():
            out[self.order[s:e]] = leaves[node]
        return out
