"""Histogram boosting on Dask with the workers talking to each other: one task per worker for the rounds, no
scheduler round trip per level.

The scheduler-driven loop (:func:`~dtlab.boosting.dask.fit.boost_on_workers`) grows each
tree on the client and pays one submit and gather through the scheduler per
level: ``n_estimators x (max_depth + 1)`` round trips.  Here every worker runs
the *same* grower (:class:`WorkerHistSearch`: the client's
:class:`~dtlab.boosting.dask.hist.DaskHistSearch` over the worker's own
:class:`~dtlab.boosting.dask.hist.HistPart`) in one task.  Where the client's finder would
send a level's message to the parts and add their replies in part order, the
worker's applies the message to its own part and exchanges the reply with the
others, the arrays sent as raw bytes
(:mod:`~dtlab.distributed.collective`): with two ranks a reduce-scatter by
feature halves -- each rank adds the two parts' histograms of its half, scans
them, and the ranks swap their per-feature results -- otherwise an allreduce
of the whole.  Either way every addition is the client's, bit for bit, and
every rank takes the client's decisions from the same numbers, so every
worker grows the trees the scheduler-driven loop grows (the client checks
that all ranks agree, every round).  Only the trees come back through the
scheduler.

The client keeps its per-round loop (eval sets, callbacks, early stopping,
progress): one task per round where it has any of them; otherwise one task
for all the rounds (at the benchmark's size a round trip through the
scheduler costs about half a round's work), stopped early by the ranks
together past :data:`TASK_SECONDS`.  A worker lost during a round ends the
fit with an error naming it (the other ranks' receives fail at once or time
out; the client notices the worker leave within
:data:`~dtlab.distributed.dask_executor.POLL_S`): the parts depend on each
other mid-round, so no part is sent again.  Where the group cannot be set up
(its ranks cannot reach each other, two parts share a worker thread) or
should not be (the cluster talks TLS: the group's sockets are plain TCP, so
the fit keeps its bytes on the cluster's TLS channel and warns once with
:data:`TLS_FALLBACK`), :func:`start_collective` returns None and the fit takes
the scheduler-driven loop.  The group admits only ranks that prove they hold
its secret (made on the client for each fit, handed to the ranks through
the scheduler), and its frames carry numeric arrays only, checked against
what each exchange expects (:mod:`dtlab.distributed.collective`).
"""

from __future__ import annotations

import time
import uuid
import warnings
from typing import Any, Callable

import numpy as np

from ...distributed.collective import (
    CollectiveError,
    close_group,
    group,
    join_group,
    new_secret,
    open_group,
    plain_tcp_cluster,
)
from ...distributed.dask_executor import ClusterError
from .._hist_cpu import _level_slice, _split_hessians
from ..grower import ColumnData, grow_boosted_tree
from ..hist import HistSearch
from ..sampling import gate_gains
from .hist import DaskHistSearch, TreeStart

__all__ = ["COLLECTIVE_TIMEOUT_S", "TASK_SECONDS", "TLS_FALLBACK", "CollectiveLoop", "WorkerHistSearch",
           "start_collective"]

#: Seconds a rank waits for another one (a level's histograms, the group's connections).
COLLECTIVE_TIMEOUT_S = 60.0
#: What a hist fit on a TLS cluster says once: why it takes the scheduler-driven loop.
TLS_FALLBACK = ("dtlab hist on Dask: the workers talk TLS, and the workers' own exchange (plain TCP sockets) would "
                "carry the histograms outside it; this fit exchanges them through the scheduler instead (the same "
                "trees, one round trip per level)")
#: Seconds of rounds after which a task stops where the client has nothing to do between rounds (far below the
#: executor's round timeout; a lost worker is noticed within POLL_S whatever the task's length).
TASK_SECONDS = 5.0


def feature_halves(n_features: int) -> list[tuple[int, int]]:
    """The features each of two ranks sums and scans: ``[(0, d // 2), (d // 2, d)]``."""
    return [(0, n_features // 2), (n_features // 2, n_features)]


class _LocalParts:
    """What a worker's finder sees as "the replicas": its own part, and the group for the rest.

    ``own``: the features whose summed histograms this rank keeps -- all of them, or with two ranks its half
    (:func:`feature_halves`): each rank then sends the other only the other's half of its histograms and adds
    the other's half of its own (a reduce-scatter), half the bytes of a whole exchange.
    """

    def __init__(self, part: Any, collective: Any, n_features: int):
        self.part, self.collective = part, collective
        self.received_bytes = 0
        self._received = None
        part.reuse_buffers = True  # its replies are summed in place and read before its next message
        halves = feature_halves(n_features)
        self.split = collective.world == 2
        self.own = halves[collective.rank] if self.split else (0, n_features)
        self.other = halves[1 - collective.rank] if self.split else None

    def send(self, message: tuple) -> list:
        """The part's reply to ``message`` -- ``((G, H, count) per node, (g, h) histograms of the nodes built or
        None)`` -- summed over the group's parts in part order: the sums whole, the histograms over the
        features ``own`` (the rest of them this rank's alone)."""
        sums, hists = self.part.handle(message, False)
        sums = [np.ascontiguousarray(a) for a in sums]  # the part's fresh arrays: summed in place
        before = self.collective.bytes_received
        if hists is None or not self.split:
            total = self.collective.allreduce(sums + [np.ascontiguousarray(a) for a in (hists or ())])
            sums, hists = total[:3], None if hists is None else tuple(total[3:])
        else:
            (a, b), (p, q) = self.own, self.other
            n_build = hists[0].shape[0]
            theirs = [np.empty_like(x) for x in sums]
            halves = self._halves((n_build, b - a, hists[0].shape[2]))
            # each built node's block of the other's features is contiguous: sent as it lies, no copy; received
            # node by node too (each frame's arrays are checked against the ones expected, shapes included)
            self.collective.swap(sums + [h[j, p:q] for h in hists for j in range(n_build)],
                                 theirs + [y[j] for y in halves for j in range(n_build)])
            for x, y in zip(sums, theirs):
                np.add(x, y, out=x)  # rank 0's + rank 1's: the same bits either way round
            for h, y in zip(hists, halves):
                np.add(h[:, a:b], y, out=h[:, a:b])
        self.received_bytes += self.collective.bytes_received - before
        return [(tuple(sums), hists)]

    def _halves(self, shape: tuple) -> list:
        """Room for the other rank's half of a level's (g, h) histograms: one pair kept for the fit and viewed
        at each level's size (fresh memory would be faulted in page by page at every level: a Dask worker
        hands freed memory back to the OS at once)."""
        if self._received is None or self._received[0].shape[0] < shape[0]:
            self._received = [np.empty(shape), np.empty(shape)]
        return [x[:shape[0]] for x in self._received]

    def gather_scan(self, arrays: list) -> None:
        """Complete per-feature arrays (rows: features) of which this rank filled its own rows."""
        if self.split:
            (a, b), (p, q) = self.own, self.other
            self.collective.swap([np.ascontiguousarray(x[a:b]) for x in arrays], [x[p:q] for x in arrays])


class WorkerHistSearch(DaskHistSearch):
    """The client's histogram finder run on a worker: the same decisions from the group's summed replies.

    With two ranks each keeps the summed histograms of half the features (:class:`_LocalParts`), scans
    them, and the ranks swap their halves of the per-feature results -- best gain, bin and missing side of
    every node, and the hessians left and right of that bin (what :meth:`split` reads to choose the child to
    build) -- before every rank takes the client's decisions from the whole of them.

    Parameters
    ----------
    part : :class:`~dtlab.boosting.dask.hist.HistPart`, the worker's rows (its cuts already set)
    collective : :class:`~dtlab.distributed.collective.Collective`
    cuts : list of float32 arrays, the fit's bin cuts
    col_missing : bool array (n_features,), columns with a missing value anywhere in the data
    max_bins : int
    """

    def __init__(self, part: Any, collective: Any, cuts: list, col_missing: np.ndarray, max_bins: int):
        n_features = len(cuts)
        self.replicas = _LocalParts(part, collective, n_features)
        empty = ColumnData(np.zeros(n_features + 1, np.int64), np.empty(0, np.int32), np.empty(0, np.float32), 0,
                           n_features)
        HistSearch.__init__(self, empty, 1, max_bins, cuts)  # one thread: the client's scan, the same choices
        self.col_missing = col_missing
        self.level_bytes = []
        self._settle = None
        self._previous = None

    def _summed(self, replies: list) -> tuple:
        """The group's totals already (:meth:`_LocalParts.send`): this finder's own arrays, no copies."""
        return replies[0]

    def _kept_features(self) -> tuple[int, int]:
        return self.replicas.own

    def find(self, n_nodes, node_g, node_h, node_n, lam, mcw):
        """:meth:`HistSearch.find` over the rank's own features, the other rank's results swapped in."""
        d = self.columns.shape[0]
        a, b = self.replicas.own
        f_gain = np.empty((d, n_nodes))
        f_bin = np.empty((d, n_nodes), np.int64)
        f_left = np.empty((d, n_nodes), np.bool_)
        _level_slice(a, b, 0, self.columns, self.order, self.nseg, self.build, self.parent, self.hg_parent,
                     self.hh_parent, self.g, self.h, self.hg, self.hh, n_nodes, self.n_bins, node_g, node_h,
                     self.col_missing, lam, mcw, self.pos_bins, self.bufs, f_gain, f_bin, f_left)
        self._h_sides = np.empty((2, d, n_nodes))
        if self.replicas.split:
            # DaskHistSearch.split's hessians left and right of each feature's best bin (the same kernel: the
            # same sums), for the features whose histograms this rank holds
            f, k = np.divmod(np.arange(a * n_nodes, b * n_nodes), n_nodes)
            sides = np.empty((2, f.shape[0]))
            _split_hessians(self.hh, k, f, f_bin[a:b].ravel(), f_left[a:b].ravel(), self.n_bins, sides)
            self._h_sides[:, a:b] = sides.reshape(2, b - a, n_nodes)
            self.replicas.gather_scan([f_gain, f_bin, f_left, self._h_sides[0], self._h_sides[1]])
        gate_gains(f_gain, getattr(self, "allowed", None))
        return self._choose(f_gain, f_bin, f_left, n_nodes)

    def split(self, split_k, split_f, split_thr, split_left, pos, side, last: bool = False) -> None:
        if not self.replicas.split:
            return DaskHistSearch.split(self, split_k, split_f, split_thr, split_left, pos, side, last)
        h_left, h_right = self._h_sides[0, split_f, split_k], self._h_sides[1, split_f, split_k]
        pairs = 2 * np.arange(split_k.shape[0])
        build = np.where(h_left <= h_right, pairs, pairs + 1).astype(np.int64)
        self._decision = (split_k.astype(np.int64), split_f.astype(np.int64), self.split_bin.astype(np.int64),
                          np.asarray(split_left, np.bool_), build, bool(last))


def _join_attach(replica: Any, key: str, rank: int, world: int, address: tuple, names: list, timeout: float,
                 secret: bytes, cuts: list, col_missing: np.ndarray, max_bins: int) -> int:
    """Run on every rank's worker at once: join the group with its secret (:func:`join_group`), then keep the
    rank's finder beside its part (one task, one scheduler round trip for both)."""
    join_group(None, key, rank, world, address, names, timeout, secret)
    replica.collective_search = WorkerHistSearch(replica.state, group(key, rank), cuts, col_missing, max_bins)
    return rank


def _round(replica: Any, key: str, rank: int, n_outputs: int, grow: dict, n_rounds: int = 1,
           budget: float | None = None, close: bool = False) -> tuple:
    """Run on each worker: up to ``n_rounds`` rounds of trees (one per output each), grown with the other ranks.

    ``budget``: seconds after which the ranks stop early, all after the same round (each round ends with an
    :meth:`~dtlab.distributed.collective.Collective.allreduce` of whether a rank is past it); None: every
    round.  ``close``: close the group after the last of ``n_rounds`` (the fit's last round: no task more).

    Returns the trees (a list per round done), the bytes received per level, the seconds spent in the
    exchanges and the rest (the rank's own work: its histograms, the scan, the decisions).
    """
    start = time.perf_counter()
    search = replica.collective_search
    collective = group(key, rank)
    waited, n_levels = collective.wait_seconds, len(search.level_bytes)
    rounds = []
    try:
        for r in range(n_rounds):
            trees = []
            for c in range(n_outputs):
                tree, node_leaf = grow_boosted_tree(search, TreeStart(c, c == 0), None, **grow)
                search.tree_done(c, tree.value[node_leaf])
                trees.append(tree)
            rounds.append(trees)
            if budget is not None and r + 1 < n_rounds:
                late = np.array([time.perf_counter() - start > budget], np.int64)
                if collective.allreduce([late])[0][0] > 0:
                    break
    except BaseException:
        close_group(None, key, rank)  # a failed round ends the group: no rank left waiting on this one
        raise
    exchange = collective.wait_seconds - waited
    if close and len(rounds) == n_rounds:
        close_group(None, key, rank)
    return rounds, search.level_bytes[n_levels:], exchange, time.perf_counter() - start - exchange


class CollectiveLoop:
    """The client's side of a collective fit: the group's key and ranks; :meth:`boost` runs the rounds.

    Attributes
    ----------
    seconds : dict
        ``"round"`` wall seconds of the rounds, ``"work"`` the slowest rank's own work (its task's seconds
        outside the exchanges), ``"exchange"`` the slowest rank's seconds in the exchanges (sending, waiting for
        the others, adding), each summed over the rounds.
    level_bytes : list of (depth, bytes) rank 0 received per level: the other parts' histograms and sums
        (none with one worker; rank 0 sends the totals back to each)
    round_trips : int, rounds sent through the scheduler
    """

    def __init__(self, executor: Any, key: str):
        self.executor, self.key = executor, key
        self.ranks = list(range(len(executor.states)))
        self.seconds = {"round": 0.0, "work": 0.0, "exchange": 0.0}
        self.level_bytes: list = []
        self.round_trips = 0
        self.closed = False

    def boost(self, n_outputs: int, params: dict, on_round: Callable[[int, list], bool] | None = None,
              per_round: bool = True) -> list:
        """The boosting rounds of :func:`.fit.boost_on_workers`, one task per worker for each round or,
        where the client has nothing to do between rounds (``per_round=False``: no eval set, callback or
        progress bar; ``on_round`` is then called for each round afterwards), one task for as many rounds as
        :data:`TASK_SECONDS` hold (every round of the benchmark's fits): a round through the scheduler costs a
        submit and a gather, about half a round's work at the benchmark's size.  The fit's last task closes
        the group."""
        grow = dict(max_depth=params["max_depth"], learning_rate=params["learning_rate"],
                    reg_lambda=params["reg_lambda"], gamma=params["gamma"],
                    min_child_weight=params["min_child_weight"])
        trees: list = []
        r, n_rounds = 0, params["n_estimators"]
        while r < n_rounds:
            batch = 1 if per_round else n_rounds - r
            budget = None if per_round else TASK_SECONDS
            last = r + batch == n_rounds
            start = time.perf_counter()
            replies = self.executor.map_each(
                _round, [(self.key, k, n_outputs, grow, batch, budget, last) for k in self.ranks], resend=False)
            self.seconds["round"] += time.perf_counter() - start
            self.round_trips += 1
            self.seconds["work"] += max(own for *_, own in replies)
            self.seconds["exchange"] += max(wait for _, _, wait, _ in replies)
            self.level_bytes += replies[0][1]
            done = len(replies[0][0])
            if any(len(rounds) != done for rounds, *_ in replies):
                raise RuntimeError("the ranks of the group grew different numbers of rounds")
            self.closed = last and done == batch
            for i in range(done):
                _check_same_trees([rounds[i] for rounds, *_ in replies])
                trees += replies[0][0][i]
                if on_round is not None and on_round(r + i, trees):
                    return trees
            r += done
        return trees

    def close(self) -> None:
        if self.closed:  # the last round's task closed it
            return
        try:
            self.executor.map_each(close_group, [(self.key, k) for k in self.ranks], resend=False)
        except Exception:  # a lost worker took its sockets with it; the others closed theirs on the error
            pass


def _check_same_trees(replies: list) -> None:
    """Every rank grew the same trees (they took the same decisions from the same sums), or a clear error.

    ``replies``: each rank's trees of one round."""
    first = replies[0]
    for rank, trees in enumerate(replies[1:], 1):
        for a, b in zip(first, trees):
            if not all(np.array_equal(getattr(a, f), getattr(b, f))
                       for f in ("feature", "threshold", "missing_left", "left", "right", "value")):
                raise RuntimeError(f"rank {rank} grew another tree than rank 0 from the same histograms")


def start_collective(search: DaskHistSearch, timeout: float = COLLECTIVE_TIMEOUT_S) -> CollectiveLoop | None:
    """The group of a Dask hist fit's parts, each with its :class:`WorkerHistSearch`; None where the parts
    cannot form one (the fit then takes the scheduler-driven loop).

    The group's secret is made here, on the client, and reaches the ranks with the join's task, through the
    scheduler (the cluster's own channel and security).  On a cluster whose workers talk TLS the group is not
    formed (its sockets are plain TCP): the fit takes the scheduler-driven loop, which keeps every byte on the
    cluster's TLS channel, and says so in a warning.
    """
    executor = search.replicas.executor
    n = len(executor.states)
    if len(set(executor.workers)) < n:
        return None  # two parts on one worker: its one task at a time cannot run both ranks at once
    if not plain_tcp_cluster(executor.workers):
        warnings.warn(TLS_FALLBACK, UserWarning, stacklevel=3)
        return None
    key = f"dtlab-gbdt-{uuid.uuid4().hex}"
    loop = CollectiveLoop(executor, key)
    secret = new_secret()
    try:
        address = executor.map_each(open_group, [(key, k, n) for k in range(n)], resend=False)[0]
        executor.map_each(_join_attach, [(key, k, n, address, list(executor.workers), timeout, secret, search.cuts,
                                          search.col_missing, search.n_bins_total) for k in range(n)], resend=False)
    except (CollectiveError, ClusterError, OSError):  # the scheduler-driven loop sends a lost part again
        loop.close()
        return None
    loop.round_trips = 2  # the group's address, its connections and finders
    return loop
