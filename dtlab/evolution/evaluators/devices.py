"""The device-pool evaluator: one host thread per device, each owning its shard of the rows for the whole run.

The multi-GPU scheme of the GDT paper (Jurczuk, Czajkowski, Kretowski 2021,
section 3.2, Fig. 6): the host keeps the evolutionary loop, each device keeps
a contiguous shard of the training rows, receives the changed individuals of a
generation (a :class:`~dtlab.evolution.evaluators.base.BatchWork`), and sends
back the partial statistics of its rows, which the host merges exactly
(:func:`~dtlab.evolution.evaluators.base.merge_stats`).

A device is a GPU (:class:`~dtlab.evolution.evaluators.cuda.CudaEvaluator`)
or a CPU worker standing in for one (:class:`PoolEvaluator` here): a host
thread running the *serial* numba kernel over its own NumPy shard, so ``k``
workers use ``k`` cores and the device count is a measurable quantity on any
machine.  (numba's thread count is global to the process, not per host
thread, so a worker is kept to one thread by running the serial kernel.)

The shard classes and :func:`make_shard` / :func:`evaluate_shard` are also
what the Dask evaluator runs on its workers.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from ...distributed import DevicePool, shard_bounds
from ...trees import PackedForest
from ._fitness_cpu import _evaluate_range_serial
from .base import PHASES, BatchWork, LeafStats, check_data, check_partial, merge_stats


class CpuShard:
    """A CPU worker's shard: its rows transposed (one contiguous column per feature), evaluated on one thread.

    Parameters
    ----------
    Xt : ndarray of shape (n_features, n_rows), float32 or float64, C-contiguous
    y : ndarray of shape (n_rows,), int32
    start : int
        Global id of the shard's first row.
    n_classes : int
    """

    kind = "cpu"

    def __init__(self, Xt: np.ndarray, y: np.ndarray, start: int, n_classes: int):
        self.Xt = np.ascontiguousarray(Xt)
        self.y = np.ascontiguousarray(y, dtype=np.int32)
        self.start = int(start)
        self.n_rows = int(self.y.shape[0])
        self.n_classes = int(n_classes)

    def evaluate(self, work: BatchWork) -> tuple[LeafStats, dict[str, float]]:
        """Partial statistics of the shard's rows and the seconds spent (``{"transfer": 0, "kernel": s}``)."""
        start = time.perf_counter()
        forest, masks = work.forest, work.masks
        stats = LeafStats.empty(forest.n_nodes, self.n_classes)
        _evaluate_range_serial(self.Xt, self.y, np.int64(0), np.int64(self.n_rows), np.int64(self.start), work.seed,
                               forest.node_offset, forest.feature, forest.threshold, forest.left, forest.right,
                               forest.missing_left, work.salts, masks.masked, masks.test_offset, masks.test_feature,
                               masks.test_threshold, masks.test_mask, masks.leaf_offset, masks.leaf_node, 1,
                               stats.counts, stats.cand_hash, stats.cand_row)
        return stats, {"transfer": 0.0, "kernel": time.perf_counter() - start}

    def close(self) -> None:
        self.Xt = self.y = None


def make_shard(kind: str, Xt: np.ndarray, y: np.ndarray, start: int, n_classes: int, **options):
    """The shard of a device of ``kind`` (``"cpu"`` worker or ``"cuda"`` GPU); run where the shard will live."""
    if kind == "cpu":
        return CpuShard(Xt, y, start, n_classes)
    if kind == "cuda":
        from ._fitness_cuda import CudaShard

        return CudaShard(Xt, y, start, n_classes, **options)
    raise ValueError(f"unknown device kind {kind!r}; expected 'cpu' or 'cuda'")


def evaluate_shard(shard, work: BatchWork) -> tuple[LeafStats, dict[str, float], int]:
    """``shard.evaluate(work)`` and the shard's row count (what the host checks the counts against)."""
    stats, seconds = shard.evaluate(work)
    return stats, seconds, shard.n_rows


def merge_checked(results: list, forest: PackedForest, bounds: list[tuple[int, int]], where: str) -> LeafStats:
    """Merge the devices' ``(stats, seconds, n_rows)`` results after checking each covers its whole shard."""
    for i, ((stats, _, n_rows), (a, b)) in enumerate(zip(results, bounds)):
        if n_rows != b - a:
            raise RuntimeError(f"{where} {i} holds {n_rows} rows but its shard has {b - a}")
        check_partial(stats, forest, b - a, f"{where} {i}")
    return merge_stats([r[0] for r in results])


class PoolEvaluator:
    """Evaluator over a pool of devices, each owning a shard; here CPU workers, one thread each.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64, finite
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : int >= 1
        CPU workers.  More than the machine's cores is allowed, with a
        warning: the workers then share cores and the count no longer
        measures parallel hardware.

    Attributes
    ----------
    bounds : list of (start, stop)
        The rows of each device's shard.
    timings : dict
        Seconds per phase (:data:`~dtlab.evolution.evaluators.base.PHASES`), summed over calls;
        ``calls`` counts the calls.

    Notes
    -----
    The statistics, hence the fitted tree, do not depend on ``n_devices``:
    the draws are keyed on global row ids and the merge is exact.
    """

    kind = "cpu"
    serialize = False

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, n_devices: int | None = 1):
        X, y = self._check_data(X, y, n_classes)
        self._X = X  # the host's rows, for the dipoles' feature values (no copy)
        self.n_samples, self.n_features = X.shape
        self.n_classes = int(n_classes)
        self.dtype = X.dtype
        n_shards = self._plan(X, n_devices)
        self.bounds = shard_bounds(self.n_samples, n_shards)
        self.n_devices = n_shards
        self.timings = dict.fromkeys(PHASES, 0.0)
        self.calls = 0
        self._pool = DevicePool(n_shards, serialize=self.serialize, name=f"dtlab-{self.kind}")
        try:
            self._pool.start(lambda i: self._make_shard(i, X, y))
        except BaseException:
            self._pool.close()
            raise

    def _check_data(self, X, y, n_classes: int):
        """The validated ``(X, y)`` the shards are cut from (a sparse evaluator keeps ``X`` in CSR)."""
        return check_data(X, y, n_classes)

    @staticmethod
    def _row_bytes(X) -> int:
        """Bytes a device's shard takes per row: the row's values and its label."""
        return X.shape[1] * X.itemsize + 4

    def _plan(self, X: np.ndarray, n_devices: int | None) -> int:
        """Number of shards; warns when the workers outnumber the cores, refuses data the host cannot copy."""
        from ...backend import resolve_backend

        n_devices = 1 if n_devices is None else int(n_devices)
        cpu = resolve_backend("cpu")
        cores = len(cpu.devices())
        if n_devices > cores:
            warnings.warn(f"n_devices={n_devices} CPU workers on a machine with {cores} cores: the workers share "
                          "cores, so the device count no longer measures parallel hardware", UserWarning, stacklevel=4)
        # the workers' transposed shards are one more copy of the data in host memory
        cpu.check_fits(self._row_bytes(X) * X.shape[0], "the CPU workers' shards (a transposed copy of the data)")
        return min(n_devices, self.n_samples)

    def _make_shard(self, i: int, X: np.ndarray, y: np.ndarray):
        a, b = self.bounds[i]
        return CpuShard(np.ascontiguousarray(X[a:b].T), y[a:b], a, self.n_classes)

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        start = time.perf_counter()
        work = BatchWork.prepare(forest, seed, self.n_features, self.dtype)
        prepared = time.perf_counter()
        results = self._pool.map(evaluate_shard, work)
        computed = time.perf_counter()
        stats = merge_checked(results, forest, self.bounds, f"{self.kind} device")
        self.timings["prepare"] += prepared - start
        self.timings["transfer"] += max(r[1]["transfer"] for r in results)
        self.timings["kernel"] += max(r[1]["kernel"] for r in results)
        self.timings["merge"] += time.perf_counter() - computed
        self.calls += 1
        return stats

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        return np.asarray(self._X[np.asarray(row_ids)], dtype=np.float64)

    def close(self) -> None:
        self._pool.close()


class PoolOrOwnKernels:
    """What the batched CPU evaluators share: with ``n_devices`` they hand everything to a device pool
    (:class:`PoolEvaluator` or its sparse kind), else they run their own kernels on numba's threads."""

    _pool = None

    def _adopt(self, pool) -> None:
        """Evaluate, read rows and close through ``pool``; its sizes and timings are this evaluator's."""
        self._pool = pool
        self.n_samples, self.n_features = pool.n_samples, pool.n_features
        self.n_classes, self.n_devices = pool.n_classes, pool.n_devices
        self.timings = pool.timings

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
