"""Histogram split search: quantile bins, one gradient histogram per node, the sibling by subtraction.

Each feature's present values are cut into at most ``max_bins - 1`` bins
(midpoints between distinct values when there are few, quantiles otherwise);
the last bin, ``max_bins - 1``, holds the missing values.  Per level, the
histogram of (g, h) per feature and bin is built only for the smaller child of
each split, from its rows; the larger child's is its parent's minus it (the
subtraction trick: half the rows are never read).  The best split per node
and feature is the greedy trees' prefix-sum ranking
(:func:`dtlab.greedy._scans._rank_prefix`) run over bins instead of rows,
missing values tried on both sides.  The work per level is O(rows of the
smaller children x features) for the histograms plus O(nodes x features x
bins) for the scans, against O(present entries) for the exact search.
"""

from __future__ import annotations

import numba
import numpy as np

from ..greedy._scans import _rank_prefix
from ._exact import PARALLEL_MIN_WORK, RT_EPS, _leaf_gain
from ._pool import run_slices
from .losses import NJIT

#: Below this many rows to split, a level's rows are split serially.
PARALLEL_MIN_ROWS = 1 << 16


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


@numba.njit(**NJIT)
def _fill_bins(rows, starts, out_row):
    """``out_row[rows[i]] = b`` for the positions ``starts[b - 1] <= i < starts[b]`` of a sorted column (the
    bin of a value is the number of cuts ``<= value``; ``starts[b]`` is the first value ``>= cuts[b]``)."""
    lo = 0
    for b in range(starts.shape[0] + 1):
        hi = starts[b] if b < starts.shape[0] else rows.shape[0]
        for i in range(lo, hi):
            out_row[rows[i]] = b
        lo = hi


@numba.njit(**NJIT)
def _best_bin_split(hg, hh, n_bins, g_node, h_node, col_missing, lam, mcw, pos_bins, buf, hbuf, obuf):
    """Best split of one node and feature from its histogram: (loss_chg, last bin on the left, missing_left).

    The bin "all present values on one side" is ``n_bins - 1`` (present left)
    or -1 (present right); the missing bin is ``hg[-1]``.
    """
    miss = hg.shape[0] - 1
    g_miss, h_miss = hg[miss], hh[miss]
    root = _leaf_gain(g_node, h_node, lam)
    best = 0.0
    best_bin = -2
    best_left = True
    acc_g = 0.0
    acc_h = 0.0
    for b in range(n_bins):  # prefix sums of both statistics in one pass, ranked once per direction
        acc_g += hg[b]
        acc_h += hh[b]
        buf[b] = acc_g
        hbuf[b] = acc_h
    g_pres, h_pres = acc_g, acc_h
    for direction in range(0 if col_missing else 1, 2):  # missing right (only where some miss), then left
        miss_left = direction == 1
        proxy, nl = _rank_prefix(pos_bins, 0, n_bins, buf, hbuf, g_pres, h_pres, 1, lam, np.float32(0.0), g_miss,
                                 h_miss, miss_left, mcw, False, obuf, None)
        if nl > 0 and proxy - root > best:
            best, best_bin, best_left = proxy - root, nl - 1, miss_left
        if col_missing and h_miss > 0.0 and h_miss >= mcw and h_pres >= mcw:
            chg = _leaf_gain(g_pres, h_pres, lam) + _leaf_gain(g_miss, h_miss, lam) - root
            if chg > best:
                best, best_bin, best_left = chg, (-1 if miss_left else n_bins - 1), miss_left
    return best, best_bin, best_left


@numba.njit(**NJIT)
def _level_slice(f0, f1, slot, bins, order, nseg, build, parent, hg_parent, hh_parent, g, h, hg, hh, n_nodes,
                 n_bins, node_g, node_h, col_missing, lam, mcw, pos_bins, bufs, f_gain, f_bin, f_left):
    """One worker's share of a level, features ``f0:f1``: histograms, then the best split of every node.

    For each ``j``, node ``build[j]``'s histogram is summed from its rows; if
    ``parent[j] >= 0`` its sibling (``build[j] ^ 1``) gets the parent's
    histogram (``hg_parent[parent[j]]``) minus it.  Then every node of the
    level is scanned.  Fusing the two keeps a worker's histograms in its cache
    and costs one parallel launch per level.
    """
    n_total = hg.shape[2]
    for j in range(build.shape[0]):
        k = build[j]
        for f in range(f0, f1):
            for b in range(n_total):
                hg[k, f, b] = 0.0
                hh[k, f, b] = 0.0
        # row by row: a row's gradients are read once and its bins of the slice are contiguous; consecutive
        # updates go to different features' histograms, so they do not wait on each other
        for i in range(nseg[k], nseg[k + 1]):
            r = order[i]
            gr = g[r]
            hr = h[r]
            for f in range(f0, f1):
                b = bins[r, f]
                hg[k, f, b] += gr
                hh[k, f, b] += hr
        p = parent[j]
        if p >= 0:
            o = k ^ 1
            for f in range(f0, f1):
                for b in range(n_total):
                    hg[o, f, b] = hg_parent[p, f, b] - hg[k, f, b]
                    hh[o, f, b] = hh_parent[p, f, b] - hh[k, f, b]
    for f in range(f0, f1):
        for k in range(n_nodes):
            f_gain[f, k], f_bin[f, k], f_left[f, k] = _best_bin_split(
                hg[k, f], hh[k, f], n_bins[f], node_g[k], node_h[k], col_missing[f], lam, mcw, pos_bins,
                bufs[0, slot], bufs[1, slot], bufs[2, slot])


@numba.njit(parallel=True, **NJIT)
def _level(bins, order, nseg, build, parent, hg_parent, hh_parent, g, h, hg, hh, n_nodes, n_bins, node_g, node_h,
           col_missing, lam, mcw, pos_bins, bufs, f_gain, f_bin, f_left, n_workers):
    """:func:`_level_slice` with the features cut into ``n_workers`` slices (worker ``w`` in scratch slot ``w``)."""
    d = bins.shape[1]
    for w in numba.prange(n_workers):
        _level_slice(w * d // n_workers, (w + 1) * d // n_workers, w, bins, order, nseg, build, parent, hg_parent,
                     hh_parent, g, h, hg, hh, n_nodes, n_bins, node_g, node_h, col_missing, lam, mcw, pos_bins,
                     bufs, f_gain, f_bin, f_left)


@numba.njit(**NJIT)
def _chunk(nseg, k, c, n_chunks):
    """Chunk ``c`` of ``n_chunks`` of node ``k``'s segment of the row order: ``[a, b)``."""
    s, e = nseg[k], nseg[k + 1]
    return s + (e - s) * c // n_chunks, s + (e - s) * (c + 1) // n_chunks


@numba.njit(**NJIT)
def _mark_chunk(c, n_chunks, bins, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, side, goes_left,
                n_left):
    """Pass 1 of :func:`_split_rows`, chunk ``c`` of every splitting node: each row's side (``side[r]``, and
    ``goes_left[i]`` at its position ``i`` in the order), the left rows counted in ``n_left[j, c]``."""
    for j in range(split_k.shape[0]):
        f = split_f[j]
        sb = split_bin[j]
        ml = 1 if split_left[j] else 0
        a, b = _chunk(nseg, split_k[j], c, n_chunks)
        count = 0
        for i in range(a, b):
            r = order[i]
            v = bins[r, f]
            left = ml if v == miss_bin else (1 if v <= sb else 0)
            side[r] = left
            goes_left[i] = left
            count += left
        n_left[j, c] = count


@numba.njit(**NJIT)
def _move_chunk(c, n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out):
    """Pass 2 of :func:`_split_rows`: chunk ``c``'s rows to their child's next slots (from ``left_at[j, c]``,
    ``right_at[j, c]``), branch-free: the slot is a select, the side moves one of the two cursors."""
    for j in range(split_k.shape[0]):
        a, b = _chunk(nseg, split_k[j], c, n_chunks)
        lo = left_at[j, c]
        ro = right_at[j, c]
        for i in range(a, b):
            left = goes_left[i]
            order_out[lo if left else ro] = order[i]
            lo += left
            ro += 1 - left


@numba.njit(parallel=True, **NJIT)
def _mark_parallel(n_chunks, bins, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, side, goes_left,
                   n_left):
    for c in numba.prange(n_chunks):
        _mark_chunk(c, n_chunks, bins, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, side,
                    goes_left, n_left)


@numba.njit(parallel=True, **NJIT)
def _move_parallel(n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out):
    for c in numba.prange(n_chunks):
        _move_chunk(c, n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out)


@numba.njit(**NJIT)
def _split_rows(n_chunks, parallel, bins, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, side,
                order_out, new_seg, goes_left):
    """The rows of the splitting nodes to their children, left child first, row order kept (a stable
    partition): child ``2 j`` of the ``j``-th splitting node gets ``new_seg[2 j]:new_seg[2 j + 1]``,
    child ``2 j + 1`` the rest up to ``new_seg[2 j + 2]`` (``new_seg[0::2]`` set beforehand).

    Two passes over every node's segment cut into ``n_chunks`` chunks (in parallel when ``parallel``): the
    sides and the left count per chunk, then each chunk's rows to slots that follow from the counts.  A
    stable partition is unique, so the result does not depend on the chunks.
    """
    n_split = split_k.shape[0]
    n_left = np.empty((n_split, n_chunks), np.int64)
    if parallel:
        _mark_parallel(n_chunks, bins, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, side,
                       goes_left, n_left)
    else:
        for c in range(n_chunks):
            _mark_chunk(c, n_chunks, bins, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, side,
                        goes_left, n_left)
    left_at = np.empty((n_split, n_chunks), np.int64)
    right_at = np.empty((n_split, n_chunks), np.int64)
    for j in range(n_split):
        lo = new_seg[2 * j]
        new_seg[2 * j + 1] = lo + n_left[j].sum()
        ro = new_seg[2 * j + 1]
        for c in range(n_chunks):
            a, b = _chunk(nseg, split_k[j], c, n_chunks)
            left_at[j, c] = lo
            right_at[j, c] = ro
            lo += n_left[j, c]
            ro += b - a - n_left[j, c]
    if parallel:
        _move_parallel(n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out)
    else:
        for c in range(n_chunks):
            _move_chunk(c, n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out)


@numba.njit(**NJIT)
def _choose_splits(f_gain, f_bin, f_left, cut_table, n_bins):
    """Per node the feature of the largest gain (the first of equal gains; -1 and gain 0 if none above
    ``RT_EPS``), its bin, threshold (as :meth:`HistSearch._thresholds`) and missing side."""
    d, n_nodes = f_gain.shape
    best_f = np.empty(n_nodes, np.int64)
    best = np.empty(n_nodes)
    split_bin = np.empty(n_nodes, np.int64)
    thr = np.empty(n_nodes, np.float32)
    left = np.empty(n_nodes, np.bool_)
    last = cut_table.shape[1] - 1
    for k in range(n_nodes):
        top = 0
        for f in range(1, d):
            if f_gain[f, k] > f_gain[top, k]:
                top = f
        gain = f_gain[top, k]
        ok = gain > RT_EPS
        best_f[k] = top if ok else -1
        best[k] = gain if ok else 0.0
        b = f_bin[top, k]
        split_bin[k] = b
        if b < 0:
            thr[k] = -np.inf
        elif b >= n_bins[top] - 1:
            thr[k] = np.inf
        else:
            thr[k] = cut_table[top, min(b, last)]
        left[k] = f_left[top, k]
    return best_f, best, split_bin, thr, left


def _bin_features(f0, f1, w, data, max_bins, binsT, cuts):
    """Cut points and bins of the features ``f0:f1`` (one worker's slice): ``cuts[f]``, ``binsT[f]``.

    One sort of each column gives both: the cuts are its order statistics and each bin a run of it (a
    500,000-value column: 21 ms, against 37 ms for a sort plus a binary search per value).
    """
    for f in range(f0, f1):
        s, e = data.indptr[f], data.indptr[f + 1]
        values = data.values[s:e]
        order = np.argsort(values)  # not stable: equal values share a bin whatever their order
        srt = values[order]
        cuts[f] = _edges_of_sorted(srt, max_bins)
        _fill_bins(data.indices[s:e][order], np.searchsorted(srt, cuts[f], side="left"), binsT[f])


class HistSearch:
    """The histogram split finder of one fit: binned data, row order per node, the level's histograms.

    Parameters
    ----------
    data : :class:`dtlab.boosting.grower.ColumnData`
    n_workers : int
    max_bins : int in [2, 256]
    """

    def __init__(self, data, n_workers: int, max_bins: int):
        d, n = data.n_features, data.n_samples
        self.n_bins_total = max_bins
        self.miss_bin = max_bins - 1
        binsT = np.full((d, n), self.miss_bin, np.uint8)
        self.cuts = [None] * d
        self.parallel = n_workers > 1 and n * d >= PARALLEL_MIN_WORK
        run_slices(_bin_features, d, n_workers if self.parallel else 1, data, max_bins, binsT, self.cuts)
        self.n_bins = np.array([c.shape[0] + 1 for c in self.cuts], np.int64)
        self.cut_table = np.full((d, max(max_bins - 2, 1)), np.inf, np.float32)
        for f, cuts in enumerate(self.cuts):
            self.cut_table[f, :cuts.shape[0]] = cuts
        self.bins = np.ascontiguousarray(binsT.T)  # (n_samples, n_features): rows read whole by the build
        self.col_missing = np.diff(data.indptr) < n
        self.n_workers = n_workers
        self.pos_bins = np.arange(max_bins, dtype=np.float32)
        self.bufs = np.empty((3, n_workers, max_bins))
        self.order_buf = np.empty(n, np.int32)
        self._store = [None] * 4
        self.goes_left = np.empty(n, np.uint8)

    def start_tree(self, g: np.ndarray, h: np.ndarray) -> None:
        n = g.shape[0]
        self.g, self.h = g, h
        self.order = np.arange(n, dtype=np.int32)
        self.nseg = np.array([0, n], np.int64)
        shape = (1, self.bins.shape[1], self.n_bins_total)
        self._next_store = 0
        self.hg, self.hh = self._alloc(shape), self._alloc(shape)
        # the root's histogram is built from every row; nothing to subtract
        self.build, self.parent = np.zeros(1, np.int64), np.full(1, -1, np.int64)
        self.hg_parent, self.hh_parent = self.hg, self.hh

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        """The level's histograms, then the best split of each node: ``(feature, loss_chg, threshold,
        missing_left)`` arrays."""
        d = self.bins.shape[1]
        f_gain = np.empty((d, n_nodes))
        f_bin = np.empty((d, n_nodes), np.int64)
        f_left = np.empty((d, n_nodes), np.bool_)
        args = (self.bins, self.order, self.nseg, self.build, self.parent, self.hg_parent, self.hh_parent, self.g,
                self.h, self.hg, self.hh, n_nodes, self.n_bins, node_g, node_h, self.col_missing, lam, mcw,
                self.pos_bins, self.bufs, f_gain, f_bin, f_left)
        if self.parallel:  # numba's OpenMP team, as the exact search: its workers, spinning after one
            _level(*args, self.n_workers)  # search's region, take the next at once instead of holding a core
        else:
            _level_slice(0, d, 0, *args)
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

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """Rows to the children; the next :meth:`find` builds the smaller child of each split and subtracts
        it from the parent for the other (nothing when the children are the ``last`` level)."""
        n_split = split_k.shape[0]
        new_seg = np.empty(2 * n_split + 1, np.int64)
        new_seg[0] = 0
        np.cumsum(self.nseg[split_k + 1] - self.nseg[split_k], out=new_seg[2::2])
        # parallel only where the rows are many: a parallel region costs more than splitting a few thousand
        parallel = self.parallel and new_seg[-1] >= PARALLEL_MIN_ROWS
        n_chunks = self.n_workers if parallel else 1
        _split_rows(n_chunks, parallel, self.bins, self.order, self.nseg, split_k, split_f, self.split_bin[split_k],
                    split_left, self.miss_bin, side, self.order_buf, new_seg, self.goes_left)
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
