"""The Dask evaluator: GDT's shards persisted on the workers of a ``dask.distributed`` cluster.

For when one machine is not enough.  The same protocol as every evaluator and
the same shards as the device pool (:mod:`.devices`): each worker builds a
:class:`~dtlab.evolution.evaluators.devices.CpuShard` (or a CUDA shard, on a
dask-cuda ``LocalCUDACluster`` with one worker per GPU) from the rows
scattered to it once; per generation the host sends every shard the batch
(:class:`~dtlab.evolution.evaluators.base.BatchWork`, a few kilobytes) and
merges the partial statistics it gathers, exactly as for local devices, so the
tree does not depend on the executor either.

A worker lost mid-run: its shard is sent again from the host to a worker
still present and the generation is evaluated again
(:class:`~dtlab.distributed.dask_executor.DaskExecutor`); with no worker left
the fit stops with a clear error.  Every partial result is checked to count
each row of its shard once before it is merged, so a shard that was not
evaluated can never pass for one that was.

Selected with ``GDTClassifier(executor=client)`` (or ``executor="dask"`` for
the default client, or a scheduler address); ``backend`` still says where
each worker computes.
"""

from __future__ import annotations

import time

import numpy as np

from ...distributed import shard_bounds
from ...trees import PackedForest
from .base import PHASES, BatchWork, LeafStats, check_data
from .devices import evaluate_shard, make_shard, merge_checked


class DaskEvaluator:
    """Evaluator whose shards live on Dask workers.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64, finite
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : int or None
        Shards (None: one per worker present).  Shards are dealt round-robin,
        so more shards than workers puts several on a worker.
    client : distributed.Client, scheduler address or None
        None: the default client of the session.
    backend : {"cpu", "cuda"}
        Where each worker computes its shard.

    Raises
    ------
    ImportError
        dask.distributed is not installed.
    ClusterError
        The client is closed, the scheduler unreachable, or the cluster has no workers.
    """

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, n_devices: int | None = None,
                 client=None, backend: str = "cpu"):
        from ...distributed.dask_executor import DaskExecutor, alive_workers, connect

        if backend not in ("cpu", "cuda"):
            raise ValueError(f"backend must be 'cpu' or 'cuda' for the Dask evaluator, got {backend!r}")
        X, y = check_data(X, y, n_classes)
        self._X = X
        self.n_samples, self.n_features = X.shape
        self.n_classes = int(n_classes)
        self.dtype = X.dtype
        client = connect(client)
        n_shards = n_devices if n_devices is not None else max(1, len(alive_workers(client)))
        self.bounds = shard_bounds(self.n_samples, min(int(n_shards), self.n_samples))
        self.n_devices = len(self.bounds)
        parts = [(backend, np.ascontiguousarray(X[a:b].T), y[a:b], a, self.n_classes) for a, b in self.bounds]
        self.timings = dict.fromkeys(PHASES, 0.0)
        self.calls = 0
        self._executor = DaskExecutor(client, parts, make_shard)

    @property
    def executor(self):
        """The :class:`~dtlab.distributed.dask_executor.DaskExecutor` (workers, parts sent again, timings)."""
        return self._executor

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        start = time.perf_counter()
        work = BatchWork.prepare(forest, seed, self.n_features, self.dtype)
        prepared = time.perf_counter()
        results = self._executor.map(evaluate_shard, work)
        gathered = time.perf_counter()
        stats = merge_checked(results, forest, self.bounds, "Dask shard")
        kernel = max(r[1]["kernel"] for r in results)
        self.timings["prepare"] += prepared - start
        self.timings["kernel"] += kernel
        # scheduling, serialisation and the network: the round's time beyond the slowest shard's work
        self.timings["transfer"] += max(0.0, (gathered - prepared) - kernel)
        self.timings["merge"] += time.perf_counter() - gathered
        self.calls += 1
        return stats

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        return np.asarray(self._X[np.asarray(row_ids)], dtype=np.float64)

    def close(self) -> None:
        self._executor.close()
