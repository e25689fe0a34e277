"""The Dask executor: parts of the data persisted on a cluster's workers for a whole run, work mapped over them.

For when one machine is not enough (the paper's outlook: "hybrid
parallelizations, such as MPI/CUDA"): the same shape as
:class:`~dtlab.distributed.device_pool.DevicePool` -- build a state per part once,
then send every part the same small work item and gather the results -- on a
``dask.distributed`` cluster.  Each part's arrays are scattered to one worker
and the state built from them lives there (``workers=[...]``,
``allow_other_workers=False``), so only the work items and the results cross
the network each round.  With dask-cuda's ``LocalCUDACluster`` each worker owns
one GPU and a state can hold device arrays.

Workers that leave.  A part whose worker left (its state future is no longer
``finished``, or the round fails with a lost-dependency error) is scattered
again from the host's copy to a worker that is still there and the round is
run again, once; if no worker is left (none joins within
:data:`WORKER_GRACE_S` seconds), or the round fails again, a
:class:`ClusterError` says so.  A result is never taken from a part that was
not computed in that round.  A round never waits without a limit: while it
runs, the executor checks every :data:`POLL_S` seconds that the workers of its
parts are still there (a killed worker process is noticed at the next check,
its parts sent again), and a round that has not finished after
``round_timeout`` seconds (a worker that hangs, a cluster that stopped
answering) ends in a :class:`ClusterError`.

Generic, like the pool: nothing here knows the work.  ``distributed`` is
imported when an executor is made, never by ``import dtlab``.
"""

from __future__ import annotations

import concurrent.futures
import time
import uuid
from typing import Any, Callable, Sequence

__all__ = ["CONNECT_TIMEOUT_S", "POLL_S", "ROUND_TIMEOUT_S", "WORKER_GRACE_S", "ClusterError", "DaskExecutor",
           "connect"]

#: Seconds to wait for a scheduler given by address before saying it cannot be reached.
CONNECT_TIMEOUT_S = 10.0
#: Default seconds one round (one :meth:`DaskExecutor.map`, each attempt) may take before it is given up.
ROUND_TIMEOUT_S = 600.0
#: Seconds between two checks, while a round runs, that the workers holding its parts are still there.
POLL_S = 0.5
#: Seconds to wait, when no worker is left, for one to join before giving the data up: a nanny starts a new
#: worker in place of a killed process within a few seconds, and a loaded machine can read the cluster between
#: the two.
WORKER_GRACE_S = 15.0


class ClusterError(RuntimeError):
    """The Dask cluster cannot do the work: closed client, unreachable scheduler, no workers left, a round too long."""


class _WorkerLeft(RuntimeError):
    """A worker holding a part left while a round ran (handled inside :meth:`DaskExecutor.map`)."""


def connect(client: Any = None, timeout: float | None = None):
    """A running ``distributed.Client`` from a client, a scheduler address, or None (the default client).

    Raises
    ------
    ImportError
        ``distributed`` is not installed (``pip install 'dtlab[dask]'``).
    ClusterError
        The client is closed, the scheduler cannot be reached, or there is no default client.
    """
    try:
        import distributed
    except ImportError as exc:
        raise ImportError("the Dask executor needs dask.distributed: pip install 'dtlab[dask]'") from exc
    if client is None:
        try:
            return distributed.default_client()
        except ValueError as exc:
            raise ClusterError("executor='dask' needs a Dask client: create one (distributed.Client(...)) or pass "
                               "the client or a scheduler address as executor") from exc
    if isinstance(client, str):
        timeout = CONNECT_TIMEOUT_S if timeout is None else timeout
        try:
            return distributed.Client(client, timeout=f"{timeout}s")
        except (OSError, TimeoutError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {client!r} within {timeout:.0f} s: {exc}") from exc
    if not isinstance(client, distributed.Client):
        raise TypeError(f"expected a distributed.Client or a scheduler address, got {type(client).__name__}")
    if client.status != "running":
        raise ClusterError(f"the Dask client is {client.status}; pass a running client")
    return client


def _timed(fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """``(fn(*args), seconds it took)``, run on a worker."""
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def _on_cluster(arg: Any) -> bool:
    """Whether a part's argument is data on the cluster: a future, or a list or tuple of them."""
    from distributed import Future

    if isinstance(arg, (list, tuple)):
        return len(arg) > 0 and all(_on_cluster(a) for a in arg)
    return isinstance(arg, Future)


def alive_workers(client) -> list[str]:
    try:
        # asked of the scheduler itself: the client's cached identity, which scheduler_info refreshes and
        # returns, is rewritten without its workers by the client's own periodic update, which can land between
        # the two (a cluster of two workers was once read as having none)
        return sorted(client.sync(client.scheduler.identity, n_workers=-1)["workers"])
    except TypeError:  # older distributed: no n_workers argument
        return sorted(client.scheduler_info()["workers"])
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"the Dask scheduler stopped answering: {exc}") from exc


def _cancel(client, futures: list) -> None:
    try:
        client.cancel(futures)
    except Exception:  # the cluster may already be gone: nothing left to cancel
        pass


class DaskExecutor:
    """Parts of the data kept on Dask workers; one work item mapped over all of them per round.

    Parameters
    ----------
    client : distributed.Client, scheduler address or None
        See :func:`connect`.  The executor never closes a client it was given
        (it closes one it connected to by address).
    parts : sequence of tuples
        The arguments of ``make_state`` for each part (e.g. a shard's arrays);
        the host keeps them to send a part again when its worker leaves.  An
        argument that is a ``distributed.Future`` (or a list of them: data
        already on the cluster) is passed as it is, not scattered.
    make_state : callable
        ``make_state(*part) -> state``, run on the worker that keeps the part;
        importable by the workers (a module-level function).
    round_timeout : float > 0, default=ROUND_TIMEOUT_S
        Seconds a round may take (each of its at most two attempts) before
        :meth:`map` gives it up with a :class:`ClusterError`.

    Attributes
    ----------
    workers : list of str
        The worker of each part (parts are dealt round-robin over the workers present).
    resent : int
        Parts sent again after their worker left.
    last_seconds : dict
        ``{"round": wall seconds of the last map, "work": the longest part's own seconds}``.
    """

    def __init__(self, client: Any, parts: Sequence[tuple], make_state: Callable[..., Any],
                 round_timeout: float = ROUND_TIMEOUT_S):
        if not round_timeout > 0:
            raise ValueError(f"round_timeout must be > 0 seconds, got {round_timeout!r}")
        self.round_timeout = float(round_timeout)
        self._owns_client = isinstance(client, str)
        self.client = connect(client)
        self._parts = list(parts)
        self._make_state = make_state
        alive = alive_workers(self.client)
        if not alive:
            raise ClusterError("the Dask cluster has no workers")
        self.workers = [alive[i % len(alive)] for i in range(len(self._parts))]
        self.resent = 0
        self.last_seconds = {"round": 0.0, "work": 0.0}
        self.states = [self._place(i) for i in range(len(self._parts))]

    def _place(self, i: int):
        worker = self.workers[i]
        # host objects are scattered from the host's copy; data already on the cluster (futures, e.g. a Dask
        # collection's blocks) is passed as it is: Dask moves it, or computes it again from its graph if lost
        arrays = list(self._parts[i])
        host = [k for k, a in enumerate(arrays) if not _on_cluster(a)]
        if host:
            sent = self.client.scatter([arrays[k] for k in host], workers=[worker], broadcast=False, hash=False)
            for k, future in zip(host, sent):
                arrays[k] = future
        return self.client.submit(self._make_state, *arrays, workers=[worker], allow_other_workers=False,
                                  pure=False, key=f"dtlab-part-{i}-{uuid.uuid4().hex}")

    def _lost_parts(self, alive: list[str]) -> list[int]:
        """The parts whose worker left or whose state is gone."""
        return [i for i, (s, w) in enumerate(zip(self.states, self.workers))
                if w not in alive or s.status in ("cancelled", "lost", "error")]

    def _resend_lost(self) -> bool:
        """Place again the parts whose state is gone; False when nothing was lost."""
        alive = alive_workers(self.client)
        lost = self._lost_parts(alive)
        if not lost:
            return False
        deadline = time.monotonic() + WORKER_GRACE_S
        while not alive and time.monotonic() < deadline:
            time.sleep(POLL_S)
            alive = alive_workers(self.client)
        if not alive:
            gone = sorted({self.workers[i] for i in lost})
            raise ClusterError(f"the Dask cluster lost every worker (those of part(s) {lost}: {gone}); the data "
                               "have nowhere to go. The result of this round was not computed.")
        for k, i in enumerate(lost):
            self.workers[i] = alive[k % len(alive)]
            self.resent += 1
            self.states[i] = self._place(i)
        return True

    def map(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``[fn(state_i, *args) for each part i]``, each on its part's worker; results in part order.

        ``fn`` must be importable by the workers.  Each call is timed on its
        worker, so :attr:`last_seconds` tells the cluster's overhead from the work.
        """
        return self.map_each(fn, [args] * len(self.states))

    def map_each(self, fn: Callable[..., Any], part_args: Sequence[tuple], resend: bool = True) -> list[Any]:
        """``[fn(state_i, *part_args[i]) for each part i]``: :meth:`map` with arguments of each part's own.

        ``resend=False`` for work whose parts depend on each other while they run (they talk to each other):
        a lost worker then ends the round in a :class:`ClusterError` naming it, nothing is sent again.
        """
        if len(part_args) != len(self.states):
            raise ValueError(f"{len(part_args)} argument tuples for {len(self.states)} parts")
        start = time.perf_counter()
        for attempt in (0, 1):
            if attempt == 0 and resend:
                self._resend_lost()  # a worker may have left since the last round
            futures = [self.client.submit(_timed, fn, state, *args, workers=[w], allow_other_workers=False,
                                          pure=False)
                       for state, w, args in zip(self.states, self.workers, part_args)]
            try:
                out = self._gather(futures)
                break
            except Exception as exc:
                import distributed

                _cancel(self.client, futures)  # nothing of a failed round keeps running (or waiting) on the cluster
                # CancelledError: the base of FutureCancelledError and of FuturesCancelledError, which
                # distributed.wait raises when a part's state was forgotten with its killed worker
                lost = isinstance(exc, (concurrent.futures.CancelledError, distributed.scheduler.KilledWorker,
                                        _WorkerLeft, OSError))
                if lost and attempt == 0 and resend and self._resend_lost():
                    continue
                if lost:
                    raise ClusterError(f"a Dask worker was lost while computing{self._who_left()} and the round "
                                       f"could not be completed ({type(exc).__name__}: {exc}); no result was "
                                       "taken") from exc
                raise
        self.last_seconds = {"round": time.perf_counter() - start, "work": max(s for _, s in out)}
        return [r for r, _ in out]

    def _who_left(self) -> str:
        """`` (worker(s) [...] of part(s) [...])``: the parts' workers no longer in the cluster, for an error."""
        try:
            lost = self._lost_parts(alive_workers(self.client))
        except Exception:  # the scheduler itself is gone: nothing more to say
            return ""
        return f" (worker(s) {sorted({self.workers[i] for i in lost})} of part(s) {lost})" if lost else ""

    def _gather(self, futures: list) -> list:
        """The round's results, waiting at most ``round_timeout`` seconds and watching its workers meanwhile.

        Raises
        ------
        _WorkerLeft
            A worker holding one of the parts left while the round ran (its
            tasks, pinned to it, would otherwise wait for it for ever).
        ClusterError
            The round did not finish within ``round_timeout`` seconds.
        """
        import distributed

        deadline = time.monotonic() + self.round_timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                waiting = sum(f.status == "pending" for f in futures)
                raise ClusterError(f"a round of work on the Dask cluster did not finish within "
                                   f"{self.round_timeout:g} s ({waiting} of {len(futures)} parts still pending; "
                                   "a worker may hang): no result was taken. Raise round_timeout for longer rounds.")
            try:
                distributed.wait(futures, timeout=min(POLL_S, remaining))
            except TimeoutError:
                alive = alive_workers(self.client)
                lost = self._lost_parts(alive)
                if lost:
                    raise _WorkerLeft(f"the worker(s) {sorted({self.workers[i] for i in lost})} of part(s) {lost} "
                                      "left during the round") from None
                continue
            return self.client.gather(futures)

    def close(self) -> None:
        """Release the parts on the workers (and the client, if the executor connected it); idempotent."""
        if self.states:
            _cancel(self.client, self.states)
            self.states = []
        if self._owns_client:
            self.client.close()
            self._owns_client = False
