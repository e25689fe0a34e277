"""The histogram split finder of one fit (:class:`HistSearch`): quantile bins of every feature, the row
order per node and the level's histograms, driven through the kernels of :mod:`._hist_cpu` (the method is
described there)."""

from __future__ import annotations

import numpy as np

from ._exact_cpu import PARALLEL_MIN_WORK
from ._hist_cpu import _bin_values, _choose_splits, _level, _level_slice, padded_cuts
from ._rows_cpu import PARALLEL_MIN_ROWS, _segment_sums, _settle_segments, _split_rows, _split_rows_summed
from ._workers import run_slices
from .protocols import NodeSums
from .sampling import gate_gains


def bin_edges(values: np.ndarray, max_bins: int) -> np.ndarray:
    """Cut points of one feature's present values (float32, increasing): a value's bin is the number of cuts
    ``<= value``, and ``x < cuts[b]`` holds exactly for the bins ``<= b``.

    At most ``max_bins - 2`` cuts (``max_bins - 1`` bins for present values):
    midpoints between neighbouring distinct values when they are few enough,
    else quantiles of the values (order statistics at equal steps).
    """
    return _edges_of_sorted(np.sort(np.asarray(values, np.float32)), max_bins)


def _edges_of_sorted(srt: np.ndarray, max_bins: int) -> np.ndarray:
    """:func:`bin_edges` of values already sorted (float32)."""
    if srt.shape[0] == 0:
        return np.empty(0, np.float32)
    new = np.empty(srt.shape[0], np.bool_)
    new[0] = True
    np.not_equal(srt[1:], srt[:-1], out=new[1:])
    distinct = srt[new]
    if distinct.shape[0] <= 1:
        return np.empty(0, np.float32)
    if distinct.shape[0] <= max_bins - 1:
        mids = (distinct[:-1] + distinct[1:]) * np.float32(0.5)
        return np.where(mids == distinct[:-1], distinct[1:], mids).astype(np.float32)
    steps = np.linspace(0, srt.shape[0] - 1, max_bins)[1:-1].round().astype(np.int64)
    cuts = np.unique(srt[steps])
    return cuts[cuts > distinct[0]]  # no empty first bin


def _bin_features(f0, f1, w, data, max_bins, binsT, cuts, given=False):
    """Cut points and bins of the features ``f0:f1`` (one worker's slice): ``cuts[f]``, ``binsT[f]``
    (``given``: ``cuts`` holds the cut points already, e.g. those of the whole data on a Dask worker).

    The cuts come from the sorted column; each value's bin from a branch-free binary search over them
    (:func:`._hist_cpu._bin_values`): with the cuts given, no sort at all.
    """
    for f in range(f0, f1):
        s, e = data.indptr[f], data.indptr[f + 1]
        values = data.values[s:e]
        if not given:
            cuts[f] = _edges_of_sorted(np.sort(values), max_bins)
        _bin_values(values, data.indices[s:e], padded_cuts(cuts[f]), binsT[f])


class HistSearch:
    """The histogram split finder of one fit: binned data, row order per node, the level's histograms.

    A :class:`.protocols.RowStateFinder`: its rows' state is :class:`SegmentRows`, read off its row order.

    Parameters
    ----------
    data : :class:`dtlab.boosting.grower.ColumnData`
    n_workers : int
    max_bins : int in [2, 256]
    cuts : list of float32 arrays (n_features,) or None
        The cut points of every feature (:func:`bin_edges` of the whole data, on a Dask worker holding some
        of its rows: :mod:`.dask.hist`); None: made from ``data``.
    """

    #: The level's column sample (:attr:`.protocols.SplitFinder.allowed`), set by the grower; None: every feature.
    allowed: np.ndarray | None = None

    def __init__(self, data, n_workers: int, max_bins: int, cuts: list | None = None):
        d, n = data.n_features, data.n_samples
        self.n_bins_total = max_bins
        self.miss_bin = max_bins - 1
        binsT = np.full((d, n), self.miss_bin, np.uint8)
        self.cuts = [None] * d if cuts is None else list(cuts)
        self.parallel = n_workers > 1 and n * d >= PARALLEL_MIN_WORK
        run_slices(_bin_features, d, n_workers if self.parallel else 1, data, max_bins, binsT, self.cuts,
                   cuts is not None)
        self.n_bins = np.array([c.shape[0] + 1 for c in self.cuts], np.int64)
        self.cut_table = np.full((d, max(max_bins - 2, 1)), np.inf, np.float32)
        for f, cuts in enumerate(self.cuts):
            self.cut_table[f, :cuts.shape[0]] = cuts
        self.columns = binsT  # (n_features, n_samples): one feature's bins, read by the build and the rows' split
        self._bins = None
        self.col_missing = np.diff(data.indptr) < n
        self.n_workers = n_workers
        self.pos_bins = np.arange(max_bins, dtype=np.float32)
        self.bufs = np.empty((3, n_workers, max_bins))
        self.order_buf = np.empty(n, np.int32)
        self._first_order = np.arange(n, dtype=np.int32)  # every tree's row order at its root (start_tree)
        self.order = np.empty(n, np.int32)
        self._store = [None] * 4
        self._next_store = 0
        self.goes_left = np.empty(n, np.uint8)
        self.leaf_of_row = None  # SegmentRows': every tree settles every row; made on first use
        self._right_rows = None  # split(): scratch of the one-pass split, made on first use
        self.child_sums = None  # split(): (G, H, count) of the children

    @property
    def bins(self) -> np.ndarray:
        """The bins by row, uint8 (n_samples, n_features): made on first use, for the finders that read a row's
        bins whole (lossguide and categorical splits, the CUDA search)."""
        if self._bins is None:
            self._bins = np.ascontiguousarray(self.columns.T)
        return self._bins

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        n = g.shape[0]
        self.g, self.h = g, h
        if self.order.shape[0] != n:  # another number of rows than binned (not a hist fit's)
            self.order, self.order_buf = np.empty(n, np.int32), np.empty(n, np.int32)
            self._right_rows = None
            self._first_order = np.arange(n, dtype=np.int32)
        self.order[:] = self._first_order  # into the kept buffer: no fresh memory per tree
        self.nseg = np.array([0, n], np.int64)
        shape = (1, self.columns.shape[0], self.n_bins_total)
        self._next_store = 0
        self.hg, self.hh = self._alloc(shape), self._alloc(shape)
        # the root's histogram is built from every row; nothing to subtract
        self.build, self.parent = np.zeros(1, np.int64), np.full(1, -1, np.int64)
        self.hg_parent, self.hh_parent = self.hg, self.hh

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        """The level's histograms, then the best split of each node: ``(feature, loss_chg, threshold,
        missing_left)`` arrays."""
        d = self.columns.shape[0]
        f_gain = np.empty((d, n_nodes))
        f_bin = np.empty((d, n_nodes), np.int64)
        f_left = np.empty((d, n_nodes), np.bool_)
        args = (self.columns, self.order, self.nseg, self.build, self.parent, self.hg_parent, self.hh_parent, self.g,
                self.h, self.hg, self.hh, n_nodes, self.n_bins, node_g, node_h, self.col_missing, lam, mcw,
                self.pos_bins, self.bufs, f_gain, f_bin, f_left)
        if self.parallel:  # numba's OpenMP team, as the exact search: its workers, spinning after one
            _level(*args, self.n_workers)  # search's region, take the next at once instead of holding a core
        else:
            _level_slice(0, d, 0, *args)
        gate_gains(f_gain, self.allowed)  # the level's column sample (sampling.py)
        return self._choose(f_gain, f_bin, f_left, n_nodes)

    def _choose(self, f_gain, f_bin, f_left, n_nodes):
        """Per node the feature of the largest gain (the first of equal gains), its bin and threshold."""
        best_f, best, self.split_bin, thr, left = _choose_splits(f_gain, f_bin, f_left, self.cut_table, self.n_bins)
        return best_f, best, thr, left

    def _thresholds(self, f: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``x < threshold`` for the bins ``<= b`` of features ``f`` (``b = -1``: no present value left;
        ``b = n_bins - 1``: every present value left)."""
        inside = self.cut_table[f, np.clip(b, 0, self.cut_table.shape[1] - 1)]
        return np.where(b < 0, np.float32(-np.inf),
                        np.where(b >= self.n_bins[f] - 1, np.float32(np.inf), inside)).astype(np.float32)

    def row_state(self, g: np.ndarray, h: np.ndarray) -> SegmentRows:
        return SegmentRows(self)

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """Rows to the children; the next :meth:`find` builds the smaller child of each split and subtracts
        it from the parent for the other (nothing when the children are the ``last`` level).

        ``pos``, ``side``: unused (the rows' nodes are this finder's segments of the row order,
        :class:`SegmentRows`)."""
        n_split = split_k.shape[0]
        new_seg = np.empty(2 * n_split + 1, np.int64)
        new_seg[0] = 0
        np.cumsum(self.nseg[split_k + 1] - self.nseg[split_k], out=new_seg[2::2])
        # parallel only where the rows are many: a parallel region costs more than splitting a few thousand
        parallel = self.parallel and new_seg[-1] >= PARALLEL_MIN_ROWS
        split_bin = self.split_bin[split_k]
        if parallel:
            _split_rows(self.n_workers, True, self.columns, self.order, self.nseg, split_k, split_f, split_bin,
                        split_left, self.miss_bin, self.order_buf, new_seg, self.goes_left)
            self.child_sums = _segment_sums(self.order_buf, new_seg, self.g, self.h)
        else:  # one pass, the children's sums on the way (the same bits)
            if self._right_rows is None:
                self._right_rows = np.empty(self.order.shape[0], np.int32)
            self.child_sums = _split_rows_summed(self.columns, self.order, self.nseg, split_k, split_f, split_bin,
                                                 split_left, self.miss_bin, self.order_buf, new_seg, self.g, self.h,
                                                 self._right_rows)
        # the level's segments stay readable (in order_buf) until the next split: SegmentRows settles the
        # rows of the nodes that did not split from them
        self.level_order, self.level_nseg = self.order, self.nseg
        self.order, self.order_buf = self.order_buf, self.order
        self.nseg = new_seg
        if last:
            return
        sizes = np.diff(new_seg)
        pairs = 2 * np.arange(n_split)
        self.build = np.where(sizes[0::2] <= sizes[1::2], pairs, pairs + 1).astype(np.int64)
        self.parent = split_k.astype(np.int64)
        self.hg_parent, self.hh_parent = self.hg, self.hh
        shape = (2 * n_split,) + tuple(self.hg.shape[1:])
        self.hg, self.hh = self._alloc(shape), self._alloc(shape)

    def _alloc(self, shape):
        """Storage of a level's histograms (float64; the CUDA subclass allocates on the device).

        Four buffers kept over the fit, taken in turn: (g, h) of this level and of its parent; fresh
        memory would be faulted in page by page at every level.
        """
        slot = self._next_store
        self._next_store = (slot + 1) % 4
        buf = self._store[slot]
        if buf is None or buf.shape[0] < shape[0] or buf.shape[1:] != shape[1:]:
            buf = self._store[slot] = np.empty(shape)
        return buf[:shape[0]]


class SegmentRows:
    """The grower's rows of a :class:`HistSearch` tree (a :class:`.protocols.RowState`, as
    :class:`.grower.HostRows` is for the exact search), read off the finder's row order: node ``k`` of the
    newest level holds the rows ``order[nseg[k]:nseg[k + 1]]``.

    The children's sums are those segments' sums, made by the finder's split (:meth:`HistSearch.split`: the
    additions of ``HostRows``, in the same order); a node that stops splitting settles its segment's rows in
    its leaf.  No per-row node or side is kept: ``HostRows``' pass over every row per level (a chain of
    additions into per-node sums in memory) was a tenth of a hist fit.
    """

    pos = side = None  # no per-row node or side: the finder's segments say where each row is

    def __init__(self, search: HistSearch):
        self.search = search
        n = search.order.shape[0]
        if search.leaf_of_row is None or search.leaf_of_row.shape[0] != n:  # kept over the fit's trees
            search.leaf_of_row = np.empty(n, np.int64)

    def root_sums(self) -> NodeSums:
        s = self.search
        return _segment_sums(s.order, s.nseg, s.g, s.h)

    def advance(self, which: np.ndarray, level_ids: np.ndarray, n_children: int) -> NodeSums:
        """The level's nodes that do not split (``which < 0``) settle; the sums of the ``n_children`` children
        the finder's :meth:`~HistSearch.split` made (none: zero-length sums)."""
        s = self.search
        if n_children:  # split() moved the level's segments aside and summed the children
            _settle_segments(s.level_order, s.level_nseg, np.asarray(which, np.int64), np.asarray(level_ids, np.int64),
                             s.leaf_of_row)
            return s.child_sums
        _settle_segments(s.order, s.nseg, np.asarray(which, np.int64), np.asarray(level_ids, np.int64), s.leaf_of_row)
        return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)

    def leaf_of_row(self) -> np.ndarray:
        return self.search.leaf_of_row
