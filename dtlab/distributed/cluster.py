"""A ``LocalCluster`` on loopback for notebooks, tests and benchmarks, its Dask log lines kept quiet."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from .dask_executor import alive_workers

__all__ = ["ClusterSession", "local_cluster"]


@contextmanager
def local_cluster(n_workers: int = 2, threads_per_worker: int = 1, processes: bool = True,
                  dashboard: bool = False) -> Iterator[Any]:
    """A ``distributed.LocalCluster`` on 127.0.0.1 and its client, closed on exit.

    Parameters
    ----------
    n_workers, threads_per_worker : int
    processes : bool
        Worker processes (each under a nanny, which starts a new one when its worker dies), or threads of
        this process (faster to start; what tests use where a real process is not needed).
    dashboard : bool
        Serve the dashboard on a free port of 127.0.0.1 (``client.dashboard_link``).

    Dask's own log lines (a failed heartbeat, a closed stream while the cluster shuts down) stay out of the
    output from the start to the end of the teardown: a notebook cell would show them as tracebacks.
    """
    import logging

    import distributed

    kwargs = dict(n_workers=n_workers, threads_per_worker=threads_per_worker, processes=processes,
                  host="127.0.0.1", dashboard_address="127.0.0.1:0" if dashboard else None,
                  silence_logs=logging.CRITICAL)
    if not processes:
        kwargs["protocol"] = "tcp"
    handlers = [h for h in logging.getLogger("distributed").handlers if isinstance(h, logging.StreamHandler)]
    levels = [h.level for h in handlers]
    try:
        for h in handlers:
            h.setLevel(logging.CRITICAL)
        with distributed.LocalCluster(**kwargs) as cluster, distributed.Client(cluster) as client:
            yield client
    finally:
        for h, level in zip(handlers, levels):
            h.setLevel(level)


class ClusterSession:
    """A LocalCluster kept open across notebook cells, restarted with other sizes on demand.

    ``start(n_workers, threads_per_worker)`` closes the previous cluster and starts one (worker processes,
    dashboard on a free loopback port); ``client`` is its client; ``close()`` ends it (idempotent).
    """

    def __init__(self, processes: bool = True, dashboard: bool = True):
        self.processes, self.dashboard = processes, dashboard
        self._context = None
        self.client = None

    def start(self, n_workers: int = 2, threads_per_worker: int = 1) -> dict:
        """Start a cluster; returns ``{"workers", "threads per worker", "dashboard"}``."""
        self.close()
        self._context = local_cluster(int(n_workers), int(threads_per_worker), self.processes, self.dashboard)
        self.client = self._context.__enter__()
        return {"workers": len(alive_workers(self.client)), "threads per worker": int(threads_per_worker),
                "dashboard": self.client.dashboard_link if self.dashboard else None}

    def close(self) -> None:
        if self._context is not None:
            context, self._context, self.client = self._context, None, None
            context.__exit__(None, None, None)
