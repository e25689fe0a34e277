"""Histogram boosting on a Dask cluster, data-parallel: the rows stay on the workers, histograms travel.

Each worker keeps a partition of the rows for the whole fit (:class:`HistPart`):
its bins, its labels, margins and gradients, and the rows' nodes of the tree
being grown.  Per fit the bin cuts are computed once for the whole data
(:mod:`.bins`: the single-process cuts, whatever the partitioning).  Per
tree and level the client (:class:`DaskHistSearch`, a
:class:`~dtlab.boosting.hist.HistSearch` over summed histograms) sends the
level's split decisions -- node, feature, bin, missing side, and which child
of each split to build -- and every worker splits its rows, adds up its
children's (g, h, count) and builds the histograms of the children to build
from its rows (the kernels of :mod:`.._hist_cpu`, unchanged).  The client adds
the workers' histograms in part order, gets each sibling by subtraction from
its parent, scans them once for the best split of every node (the
single-process scan) and decides.  Rows never cross the network; per level
each worker sends ``built nodes x features x max_bins x 2`` float64.

The child to build is the one with the smaller hessian sum (read from the
parent's histogram before the split: the rows' counts are on the workers);
for squared error that is the smaller child, as in one process.  With exact
sums (small-integer targets, power-of-two learning rates) the trees are the
single-process trees for any number of workers; otherwise sums are added in
another order, and the trees agree to rounding.

The grower (:func:`~dtlab.boosting.grower.grow_boosted_tree`) runs unchanged
on the client: this finder's ``row_state`` (:class:`DaskRows`) stands for the
rows, and a level's round trip happens when the grower advances the rows.
:mod:`.collective` runs this same finder on every worker instead, its
"round trip" an exchange of the parts' replies between the workers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...backend import thread_scope
from ...distributed.dask_data import stack_rows
from .._hist_cpu import _build_nodes, _build_slice, _place_children, _split_hessians
from ..grower import ColumnData
from ..hist import HistSearch, SegmentRows
from ..losses import LOSSES
from ..protocols import NodeSums
from .bins import ColumnKeys

__all__ = ["DaskHistSearch", "DaskRows", "HistPart", "TreeStart", "block_summary", "first_summaries", "part_matrix"]


def worker_threads() -> int:
    """Threads of the Dask worker this runs on (1 outside a worker)."""
    try:
        from distributed import get_worker

        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):
        return 1


def part_matrix(blocks: list) -> Any:
    """A part's rows as a matrix :class:`~dtlab.boosting.grower.ColumnData` takes (pandas to float32 numpy)."""
    X = stack_rows(blocks)
    if hasattr(X, "iloc"):
        X = X.to_numpy(dtype=np.float32, na_value=np.nan)
    return X


def encode_part_labels(y_blocks: list, classes: np.ndarray | None, n_outputs: int) -> np.ndarray:
    """A part's targets as the boosting loop takes them: float32 (regression, two classes) or int32 codes."""
    y = np.concatenate([np.asarray(b).reshape(-1) for b in y_blocks])
    if classes is None:
        return y.astype(np.float32)
    codes = np.searchsorted(classes, y)
    if (codes >= classes.shape[0]).any() or (classes[np.minimum(codes, classes.shape[0] - 1)] != y).any():
        raise ValueError("y holds labels not among the classes found")
    return codes.astype(np.int32) if n_outputs > 1 else codes.astype(np.float32)


def block_summary(y: Any, classifier: bool):
    """A label block's rows, and its distinct labels and their counts (classification) or its float64 sum and
    float32 mean (regression): :func:`.labels.combine_summaries` makes the whole data's targets of them."""
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.reshape(-1)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if classifier:
        values, counts = np.unique(y, return_counts=True)
        return y.shape[0], values, counts, None
    yf = y.astype(np.float32)
    if not np.all(np.isfinite(yf)):
        raise ValueError("y contains NaN or inf")
    single = float(np.mean(yf)) if yf.size else 0.0  # the one-block case: exactly the local fit's mean
    return y.shape[0], None, None, (float(yf.astype(np.float64).sum()), single)


class HistPart:
    """One worker's rows: their bins, targets, margins, gradients and the nodes of the tree being grown.

    The labels are kept as given until the ``"cuts"`` message brings the whole data's classes, loss and base
    margin (:meth:`summaries` first tells the client what the part's labels are, in the same query as its
    columns: one scheduler round trip for both).

    Parameters
    ----------
    X_blocks, y_blocks : lists of row blocks and their targets
    max_bins : int
    """

    def __init__(self, X_blocks: list, y_blocks: list, max_bins: int):
        self.data = ColumnData.from_input(part_matrix(X_blocks))
        self.y_blocks = y_blocks
        n_y = sum(np.shape(b)[0] for b in y_blocks)
        if n_y != self.data.n_samples:
            raise ValueError(f"a part holds {self.data.n_samples} rows of X but {n_y} targets")
        self.max_bins = max_bins
        self.n_threads = worker_threads()
        self.keys = None
        self.search = None
        self.rows = None
        self.reuse_buffers = False  # see _build
        self._kept = [None, None]
        self._turn = 0
        self._gathered = None  # _scratch
        self._leaf_values = None  # _start_tree

    # queries of the cut procedure (no state changed)
    def column_keys(self) -> ColumnKeys:
        if self.keys is None:
            self.keys = ColumnKeys(self.data.indptr, self.data.values)
        return self.keys

    def summaries(self, max_bins: int, classifier: bool) -> tuple:
        """``(ColumnKeys.summary, [block_summary of each label block])``: the first query of a fit."""
        return self.column_keys().summary(max_bins), [block_summary(b, classifier) for b in self.y_blocks]

    def _set_targets(self, classes, loss: str, n_outputs: int, base_margin: float) -> None:
        """The labels encoded as the boosting loop takes them, margins at the base, room for gradients."""
        self.y = encode_part_labels(self.y_blocks, classes, n_outputs)
        self.y_blocks = None
        self.loss = LOSSES[loss]
        shape = (self.y.shape[0],) if n_outputs == 1 else (self.y.shape[0], n_outputs)
        self.margin = np.full(shape, base_margin, np.float32)
        self.g, self.h = np.empty(shape, np.float32), np.empty(shape, np.float32)

    def handle(self, message: tuple, replay: bool):
        kind = message[0]
        with thread_scope(self.n_threads):
            if kind == "cuts":  # ("cuts", cuts, (classes, loss, n_outputs, base margin))
                self._set_targets(*message[2])
                self.search = HistSearch(self.data, self.n_threads, self.max_bins, message[1])
                self.data = self.keys = None  # the bins are all that is needed from here on
                return None
            if kind == "tree":
                return self._start_tree(*message[1:], replay)
            if kind == "level":
                return self._level(*message[1:], replay)
        raise ValueError(f"unknown message {kind!r}")

    def _start_tree(self, output: int, new_round: bool, previous, replay: bool):
        if previous is not None:  # the last tree's leaves: margins (the rows still in a node settle there)
            prev_output, node_value, which, level_ids = previous
            self.rows.advance(which, level_ids, 0)
            leaf = self.rows.leaf_of_row()
            if self._leaf_values is None:
                self._leaf_values = np.empty(leaf.shape[0], np.float32)
            values = np.take(node_value, leaf, out=self._leaf_values, mode="clip")  # "raise" buffers ``out``
            if self.margin.ndim == 1:
                self.margin += values
            else:
                self.margin[:, prev_output] += values
        if new_round:
            self.loss.gradients(self.margin, self.y, self.g, self.h)
        g = self.g if self.g.ndim == 1 else np.ascontiguousarray(self.g[:, output])
        h = self.h if self.h.ndim == 1 else np.ascontiguousarray(self.h[:, output])
        self.search.start_tree(g, h)
        if self.rows is None:  # the rows' nodes: the finder's segments of its row order, kept for the fit
            self.rows = SegmentRows(self.search)
        sums = self.rows.root_sums()
        return None if replay else (sums, self._build(np.zeros(1, np.int64)))

    def _level(self, split_k, split_f, split_bin, split_left, which, level_ids, n_children, build, last,
               replay: bool):
        s = self.search
        s.split_bin = split_bin
        s.split(split_k, split_f, None, split_left, self.rows.pos, self.rows.side, last=last)
        sums = self.rows.advance(which, level_ids, n_children)
        if replay:
            return None
        return (sums, None) if last else (sums, self._build(build))

    def _scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """The gathered gradients' scratch of :func:`.._hist_cpu._build_slice`, one pair for the whole fit."""
        if self._gathered is None:
            n = self.search.columns.shape[1]
            self._gathered = (np.empty(n, np.float32), np.empty(n, np.float32))
        return self._gathered

    def _build(self, build: np.ndarray):
        """Histograms of the nodes ``build`` of the level from this part's rows: (g, h), each
        (n_build, n_features, max_bins) float64 (``_hist_cpu``'s build, as in its level kernel).

        Fresh arrays, except for a part of a collective fit (``reuse_buffers``): two pairs kept and taken in
        turn (its finder reads a level's histograms, and the root's until the next level is placed; fresh
        memory would be faulted in page by page at every level)."""
        s = self.search
        shape = (build.shape[0], s.columns.shape[0], s.n_bins_total)
        if self.reuse_buffers:
            self._turn ^= 1
            kept = self._kept[self._turn]
            if kept is None or kept[0].shape[0] < shape[0]:
                kept = self._kept[self._turn] = (np.empty(shape), np.empty(shape))
            out_g, out_h = kept[0][:shape[0]], kept[1][:shape[0]]
        else:
            out_g, out_h = np.empty(shape), np.empty(shape)
        if s.parallel:
            _build_nodes(s.columns, s.order, s.nseg, build, s.g, s.h, out_g, out_h, s.n_workers)
        else:
            _build_slice(0, shape[1], s.columns, s.order, s.nseg, build, s.g, s.h, out_g, out_h, *self._scratch())
        return out_g, out_h


def _column_keys(state: HistPart) -> ColumnKeys:
    return state.column_keys()


def _summaries(state: HistPart, max_bins: int, classifier: bool):
    return state.summaries(max_bins, classifier)


def _windows(state: HistPart, brackets: list):
    return _column_keys(state).windows(brackets)


def first_summaries(replicas, max_bins: int, classifier: bool) -> tuple[list, list]:
    """Every part's column summary and its label blocks' summaries (in block order), in one query."""
    replies = replicas.ask(_summaries, max_bins, classifier)
    return [c for c, _ in replies], [s for _, blocks in replies for s in blocks]


class TreeStart:
    """What the client's boosting loop passes as a tree's ``g`` (the gradients themselves are on the workers)."""

    def __init__(self, output: int, new_round: bool):
        self.output, self.new_round = output, new_round


class DaskHistSearch(HistSearch):
    """The client's histogram finder: the workers' histograms added up, the single-process scan over them.

    A :class:`~dtlab.boosting.protocols.RowStateFinder`, whose rows' state is :class:`DaskRows`; its
    :meth:`start_tree` takes a :class:`TreeStart` for ``g`` (and None for ``h``).

    Parameters
    ----------
    replicas : :class:`~dtlab.distributed.replicas.Replicas` of :class:`HistPart`
    n_features, n_samples : int
    max_bins : int
    n_threads : int, threads of the client's scan
    targets : tuple, ``(classes or None, loss name, n_outputs, base margin)`` sent with the cuts
    summaries : list, every part's :meth:`ColumnKeys.summary` (the first element of :func:`first_summaries`'s)

    Attributes
    ----------
    level_bytes : list of (depth, bytes received) per level round: the histograms (and node sums) sent
    """

    def __init__(self, replicas, n_features: int, n_samples: int, max_bins: int, n_threads: int, targets: tuple,
                 summaries: list):
        from .bins import distributed_cuts

        self.replicas = replicas
        cuts, n_present = distributed_cuts(n_features, max_bins, lambda: summaries,
                                           lambda brackets: replicas.ask(_windows, brackets))
        replicas.send(("cuts", cuts, targets))
        empty = ColumnData(np.zeros(n_features + 1, np.int64), np.empty(0, np.int32), np.empty(0, np.float32), 0,
                           n_features)
        super().__init__(empty, n_threads, max_bins, cuts)
        self.col_missing = n_present < n_samples  # of the whole data (this finder holds no rows)
        self.level_bytes: list[tuple[int, int]] = []
        self._settle = None
        self._previous = None

    def start_tree(self, g: TreeStart, h: Any = None) -> None:
        """A tree of output ``g.output``: the workers settle the last tree, make gradients (a new round),
        and send their roots' sums and histograms."""
        previous = None if self._previous is None else (*self._previous, *self._settle)
        before = self.replicas.received_bytes
        replies = self.replicas.send(("tree", g.output, g.new_round, previous))
        self.level_bytes.append((0, self.replicas.received_bytes - before))
        self._root_sums, (self.hg, self.hh) = self._summed(replies)
        self.hg_parent, self.hh_parent = self.hg, self.hh
        self.build = self.parent = np.empty(0, np.int64)  # the scan only: the histograms are made
        self.g = self.h = np.empty(0, np.float32)
        self.order, self.nseg = np.empty(0, np.int32), np.zeros(1, np.int64)
        self.depth = 0

    def _summed(self, replies: list) -> tuple:
        """A message's replies added over the parts in part order: ((G, H, count) per node, (g, h) histograms
        of the nodes built, or None)."""
        return _add_sums([r[0] for r in replies]), None if replies[0][1] is None else _add_hists(
            [r[1] for r in replies])

    def _kept_features(self) -> tuple[int, int]:
        """The features ``(first, end)`` whose summed histograms this finder holds: all of them."""
        return 0, self.hg.shape[1]

    def row_state(self, g: Any, h: Any) -> DaskRows:
        return DaskRows(self)

    def tree_done(self, output: int, node_value: np.ndarray) -> None:
        """The grown tree's value at every node it made (pruned nodes: their leaf's), sent with the next tree."""
        self._previous = (output, np.asarray(node_value, np.float32))

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        """Keep the level's decisions for the round :meth:`DaskRows.advance` sends; choose the child to build."""
        sides = np.empty((2, split_k.shape[0]))
        _split_hessians(self.hh, split_k.astype(np.int64), split_f.astype(np.int64),
                        self.split_bin[split_k].astype(np.int64), np.asarray(split_left, np.bool_), self.n_bins, sides)
        h_left, h_right = sides
        pairs = 2 * np.arange(split_k.shape[0])
        build = np.where(h_left <= h_right, pairs, pairs + 1).astype(np.int64)
        split_bin = self.split_bin
        self._decision = (split_k.astype(np.int64), split_f.astype(np.int64), split_bin.astype(np.int64),
                          np.asarray(split_left, np.bool_), build, bool(last))

    def advance_level(self, which: np.ndarray, level_ids: np.ndarray, n_children: int):
        split_k, split_f, split_bin, split_left, build, last = self._decision
        before = self.replicas.received_bytes
        replies = self.replicas.send(("level", split_k, split_f, split_bin, split_left, which, level_ids,
                                      n_children, build, last))
        self.depth += 1
        self.level_bytes.append((self.depth, self.replicas.received_bytes - before))
        sums, built = self._summed(replies)
        if not last:  # each sibling its parent minus the built child, into the kept buffers (HistSearch._alloc)
            shape = (n_children,) + self.hg.shape[1:]
            hg, hh = self._alloc(shape), self._alloc(shape)
            _place_children(*self._kept_features(), build, split_k, built[0], built[1], self.hg, self.hh, hg, hh)
            self.hg, self.hh = hg, hh
        self.hg_parent, self.hh_parent = self.hg, self.hh  # unread: nothing is built or subtracted by the scan
        return sums


class DaskRows:
    """The grower's rows, kept on the workers: the sums come back from the level's round trip (a
    :class:`~dtlab.boosting.protocols.RowState` whose :meth:`leaf_of_row` names nodes, not rows)."""

    pos = side = None  # the rows' nodes and sides live on the workers

    def __init__(self, search: DaskHistSearch):
        self.search = search
        self.n_nodes = 1

    def root_sums(self) -> NodeSums:
        return self.search._root_sums

    def advance(self, which: np.ndarray, level_ids: np.ndarray, n_children: int) -> NodeSums:
        if n_children == 0:  # the tree is done: the workers settle their rows with the next tree's message
            self.search._settle = (np.asarray(which, np.int64), np.asarray(level_ids, np.int64))
            return np.zeros(0), np.zeros(0), np.zeros(0, np.int64)
        self.n_nodes += n_children
        return self.search.advance_level(np.asarray(which, np.int64), np.asarray(level_ids, np.int64), n_children)

    def leaf_of_row(self) -> np.ndarray:
        """Every node made, standing for "a row in that node": pruning maps each to its kept leaf."""
        return np.arange(self.n_nodes)


def _add_sums(parts: list) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(G, H, count) per node, added over the parts in part order."""
    g, h, n = (np.array(x, copy=True) for x in parts[0])
    for pg, ph, pn in parts[1:]:
        g += pg
        h += ph
        n += pn
    return g, h, n


def _add_hists(parts: list) -> tuple[np.ndarray, np.ndarray]:
    hg, hh = (np.array(x, copy=True) for x in parts[0])
    for pg, ph in parts[1:]:
        hg += pg
        hh += ph
    return hg, hh
