"""GDT on devices, measured: one sweep of evaluators and device counts, and a performance model that must fit it.

Analogues of Jurczuk, Czajkowski, Kretowski (Applied Intelligence 2021):
Fig. 9 (speedup of each evaluator over the sequential one as the dataset
grows) and Fig. 10 (speedup over one device for 1, 2, 4 devices).  Both come
from one :func:`device_sweep`: every (rows, devices) point is the same batch
timed the same way -- the evaluators of a size built together, warmed up, and
called in alternation, each call's wall time split into the evaluator's
phases -- so the one-device time of Fig. 10 is the one-worker time of Fig. 9
by construction.  :class:`PoolModel` extends the curves beyond the devices
present only where it reproduces every measured point within
:data:`MODEL_TOLERANCE`; :func:`process_probe` measures what the machine's
cores give two processes running the kernel alone, the hardware bound of CPU
workers (:func:`hardware_bound`, drawn as a line in the device figures).
Experiment code: the estimator never imports it.
"""

from __future__ import annotations

import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from dtlab.datasets import chess3x3
from dtlab.distributed.dask_executor import alive_workers
from workbench.evolution.throughput import reference_evaluator, timing_batch
from workbench.timing import load_average, paired_medians

__all__ = ["MODEL_TOLERANCE", "PoolModel", "dask_overhead", "device_scaling", "device_sweep", "evaluator_speedups",
           "hardware_bound", "local_dask_cluster", "pool_speedup", "present_devices", "process_probe"]

#: The largest relative error at a measured point for which the model's extension is drawn.
MODEL_TOLERANCE = 0.20

#: The evaluator phases every device timing splits a call into (dispatch: the rest of the call's wall time).
CALL_PHASES = ("prepare", "transfer", "kernel", "merge", "dispatch")


def present_devices(kind: str = "cpu") -> int:
    """Devices of ``kind`` on this machine: CPU cores (workers) or real GPUs (0 without one; never the simulator)."""
    from dtlab.backend import real_gpu_available, resolve_backend

    if kind == "cpu":
        return len(resolve_backend("cpu").devices())
    if not real_gpu_available():
        return 0
    return len(resolve_backend("cuda").devices())


@contextmanager
def local_dask_cluster(n_workers: int = 2, processes: bool = True) -> Iterator[Any]:
    """A ``LocalCluster`` on loopback (one thread per worker, no dashboard) and its client, Dask's log lines
    kept quiet through its teardown (:func:`dtlab.distributed.cluster.local_cluster`)."""
    from dtlab.distributed.cluster import local_cluster

    with local_cluster(n_workers=n_workers, threads_per_worker=1, processes=processes) as client:
        yield client


@contextmanager
def _maybe_cluster(use: bool, n_workers: int):
    if not use:
        yield None
        return
    try:
        import distributed  # noqa: F401
    except ImportError:
        yield None
        return
    with local_dask_cluster(n_workers) as client:
        yield client


def _contenders(kind: str, device_counts: Sequence[int], X, y, client=None) -> dict[tuple[str, int], Any]:
    """Evaluators by (method, devices): CPU workers (one thread each) or GPUs; Dask workers with a client."""
    from dtlab.evolution.evaluators import PoolEvaluator

    made = {}
    for d in device_counts:
        if kind == "cuda":
            from dtlab.evolution.evaluators.cuda import CudaEvaluator

            made["GPUs", d] = CudaEvaluator(X, y, 2, d)
        else:
            made["CPU workers", d] = PoolEvaluator(X, y, 2, d)
    if client is not None:
        from dtlab.evolution.evaluators.dask import DaskEvaluator

        n = len(alive_workers(client))
        made["Dask workers", n] = DaskEvaluator(X, y, 2, n, client=client)
    return made


def time_calls(evaluators: Sequence[Any], batch, repeats: int) -> list[dict[str, float]]:
    """Each evaluator's ``evaluate(batch)`` timed in alternation after one warm-up call, phases per call.

    Returns, per evaluator, ``seconds`` (median wall time of a call),
    ``seconds_min`` / ``seconds_max`` (the spread) and the median of each of
    :data:`CALL_PHASES` over the same calls, ``dispatch`` being a call's wall
    time beyond its evaluator-timed phases (handing the work to the device
    threads and back).
    """
    for ev in evaluators:
        ev.evaluate(batch, 1)
    calls: list[list[dict[str, float]]] = [[] for _ in evaluators]
    for _ in range(repeats):
        for ev, out in zip(evaluators, calls):
            before = dict(ev.timings)
            start = time.perf_counter()
            ev.evaluate(batch, 1)
            wall = time.perf_counter() - start
            phases = {k: ev.timings[k] - before[k] for k in ("prepare", "transfer", "kernel", "merge")}
            out.append({"wall": wall, **phases, "dispatch": max(wall - sum(phases.values()), 0.0)})
    rows = []
    for out in calls:
        walls = [c["wall"] for c in out]
        rows.append({"seconds": statistics.median(walls), "seconds_min": min(walls), "seconds_max": max(walls),
                     **{k: statistics.median(c[k] for c in out) for k in CALL_PHASES}})
    return rows


def device_sweep(sizes: Sequence[int] = (10_000, 100_000, 1_000_000), device_counts: Sequence[int] = (1, 2),
                 kind: str = "cpu", repeats: int = 5, reference_repeats: int = 1, use_dask: bool = False,
                 noise_attrs: int = 0, reference: bool = True, seed: int = 0):
    """Seconds per evaluation of one evolved batch for every size and device count, and of the NumPy reference.

    Parameters
    ----------
    sizes : rows of Chess3x3
    device_counts : devices to time (CPU workers of one thread each, or GPUs); more than present are skipped
    kind : {"cpu", "cuda"}
    repeats : timed calls per evaluator (alternating), after one warm-up call
    reference_repeats : timed calls of the NumPy reference on the whole batch (it takes seconds at 10^6 rows)
    use_dask : also time a Dask cluster of ``min(cores, 2)`` worker processes on loopback
    noise_attrs : random attributes added to Chess3x3's two
    reference : whether to time the NumPy reference (Fig. 9 needs it; a device-count panel does not)

    Returns
    -------
    DataFrame, one row per (rows, method, devices): ``n_samples, noise_attrs, n_trees, method, devices, threads,
    seconds, seconds_min, seconds_max`` and the phases of :data:`CALL_PHASES` (median seconds per call).
    """
    import pandas as pd

    present = present_devices(kind)
    if present == 0:
        raise RuntimeError(f"no {kind} device is present to measure")
    counts = [d for d in device_counts if d <= max(present, 1)] or [1]
    rows = []
    with _maybe_cluster(use_dask, min(present_devices("cpu"), 2)) as client:
        for n in sizes:
            X, y, batch, _ = timing_batch(n, noise_attrs, seed=seed)
            if reference:
                ref = reference_evaluator(X, y, 2)
                t_ref = paired_medians([lambda ref=ref, b=batch: ref.evaluate(b, 1)], repeats=reference_repeats,
                                       warmup=0)[0]
                rows.append({"n_samples": n, "method": "NumPy reference", "devices": 1, "threads": 1,
                             "seconds": t_ref, "seconds_min": t_ref, "seconds_max": t_ref})
            evaluators = _contenders(kind, counts, X, y, client)
            try:
                timed = time_calls(list(evaluators.values()), batch, repeats)
            finally:
                for ev in evaluators.values():
                    ev.close()
            for (method, d), t in zip(evaluators, timed):
                rows.append({"n_samples": n, "method": method, "devices": d, "threads": 1 if method == "GPUs" else d,
                             **t})
            for r in rows[-len(evaluators) - reference:]:
                r["n_trees"], r["noise_attrs"] = batch.n_trees, noise_attrs
    return pd.DataFrame(rows)


def evaluator_speedups(sweep):
    """Fig. 9: each evaluator's speedup over the NumPy reference on the same batch, from a :func:`device_sweep`."""
    ref = sweep[sweep.method == "NumPy reference"].set_index("n_samples").seconds
    out = sweep.copy()
    out["speedup_over_reference"] = ref.loc[out.n_samples].to_numpy() / out.seconds.to_numpy()
    return out


def hardware_bound(n_devices: float, cores: int, probe_ratio: float) -> float:
    """Speedup over one CPU worker the machine allows: the probe's rate for ``cores`` processes, none beyond them.

    One worker: 1; ``cores`` or more: ``probe_ratio`` (``cores`` processes
    running the kernel alone, :func:`process_probe`); linear in between.
    """
    if cores <= 1:
        return 1.0
    return 1.0 + (probe_ratio - 1.0) * (min(float(n_devices), cores) - 1.0) / (cores - 1.0)


@dataclass
class PoolModel:
    """Seconds per evaluation of ``n`` rows on ``d`` devices: ``fixed + per_row * n / d + per_device * (d - 1)``.

    ``fixed``: the host's share of a call (preparing the batch, merging, a
    round trip); ``per_row``: the kernel's seconds per row on one device;
    ``per_device``: what each further device adds (its transfers, its part of
    the merge).  The coefficients are non-negative least squares on relative
    errors, so small and large sizes weigh alike; ``max_error`` is the largest
    relative error at a measured point, of its seconds or of its speedup over
    one device at the same size (the figure draws speedups: a model within 15%
    of two times can be 30% off their ratio).  The model gives every device its own
    compute, as a GPU has; CPU workers sharing a machine fall below it, and
    the fit then fails its tolerance instead of being drawn.
    """

    fixed: float
    per_row: float
    per_device: float
    max_error: float = float("nan")

    @classmethod
    def fit(cls, points) -> "PoolModel":
        """Fit to measured ``(n_samples, devices, seconds)`` rows (a DataFrame with those columns)."""
        from scipy.optimize import nnls

        n = points.n_samples.to_numpy(float)
        d = points.devices.to_numpy(float)
        t = points.seconds.to_numpy(float)
        design = np.column_stack([np.ones_like(n), n / d, d - 1.0]) / t[:, None]
        coef, _ = nnls(design, np.ones_like(t))
        model = cls(*map(float, coef))
        errors = list(np.abs(model.seconds(n, d) / t - 1.0))
        for i in np.flatnonzero(d > 1):
            one = np.flatnonzero((n == n[i]) & (d == 1))
            if one.size:
                measured = t[one[0]] / t[i]
                errors.append(abs(float(model.speedup(n[i], d[i])) / measured - 1.0))
        model.max_error = float(np.max(errors))
        return model

    def seconds(self, n_samples, n_devices):
        d = np.asarray(n_devices, float)
        return self.fixed + self.per_row * np.asarray(n_samples, float) / d + self.per_device * (d - 1.0)

    def speedup(self, n_samples, n_devices):
        return self.seconds(n_samples, 1) / self.seconds(n_samples, n_devices)

    @property
    def usable(self) -> bool:
        return self.max_error <= MODEL_TOLERANCE


def device_scaling(sweep, device_counts: Sequence[int] = (1, 2, 4), method: str = "CPU workers",
                   probe_ratio: float | None = None, cores: int | None = None, fit_to=None):
    """Fig. 10 from a :func:`device_sweep`: speedup over one device, measured, modelled where the model fits, bound.

    ``fit_to`` (optional): further measured rows (a sweep's) the model must
    also reproduce, e.g. a wider sweep of other sizes when ``sweep`` holds one.

    Returns
    -------
    curves : DataFrame
        ``n_samples, n_devices, seconds, speedup, source`` with ``source`` one of ``"measured"``,
        ``"modelled"`` (every count, only when the model is within :data:`MODEL_TOLERANCE` of every
        measured point) and ``"bound"`` (CPU workers, when ``probe_ratio`` is given:
        :func:`hardware_bound`).
    model : PoolModel
    """
    import pandas as pd

    measured = sweep[sweep.method == method]
    points = measured if fit_to is None else pd.concat([measured, fit_to[fit_to.method == method]])
    model = PoolModel.fit(points)
    rows = []
    for n, part in measured.groupby("n_samples"):
        base = float(part[part.devices == 1].seconds.iloc[0])
        for r in part.itertuples():
            rows.append({"n_samples": n, "n_devices": int(r.devices), "seconds": float(r.seconds),
                         "speedup": base / float(r.seconds), "source": "measured"})
        for d in device_counts:
            if model.usable:
                rows.append({"n_samples": n, "n_devices": d, "seconds": float(model.seconds(n, d)),
                             "speedup": float(model.speedup(n, d)), "source": "modelled"})
            if probe_ratio is not None and cores:
                rows.append({"n_samples": n, "n_devices": d, "seconds": float("nan"),
                             "speedup": hardware_bound(d, cores, probe_ratio), "source": "bound"})
    return pd.DataFrame(rows), model


def dask_overhead(n_samples: int = 1_000_000, n_workers: int = 2, repeats: int = 5, seed: int = 0) -> dict:
    """The Dask evaluator's extra seconds per generation against the in-process pool with as many devices.

    Both evaluate the same batch with ``n_workers`` single-thread devices
    (CPU workers of the pool; Dask worker processes on loopback); the
    overhead is the difference of the median evaluation times.
    """
    from dtlab.evolution.evaluators import PoolEvaluator
    from dtlab.evolution.evaluators.dask import DaskEvaluator

    try:
        import distributed  # noqa: F401
    except ImportError:
        return {"skipped": "dask.distributed is not installed here (pip install 'dtlab[dask]')"}
    X, y, batch, _ = timing_batch(n_samples, seed=seed)
    load = load_average()
    with local_dask_cluster(n_workers) as client:
        pool = PoolEvaluator(X, y, 2, n_workers)
        dask = DaskEvaluator(X, y, 2, n_workers, client=client)
        try:
            t_pool, t_dask = paired_medians([lambda: pool.evaluate(batch, 1), lambda: dask.evaluate(batch, 1)],
                                            repeats=repeats)
            round_s = dask.executor.last_seconds
        finally:
            pool.close()
            dask.close()
    return {"n_samples": n_samples, "n_trees": batch.n_trees, "devices": n_workers, "threads_per_device": 1,
            "pool_seconds": t_pool, "dask_seconds": t_dask, "overhead_seconds": t_dask - t_pool,
            "overhead_fraction": (t_dask - t_pool) / t_pool, "last_round": round_s,
            "dask_workers": "processes on 127.0.0.1", "load_average": {"before": load, "after": load_average()}}


def pool_speedup(n_samples: int = 1_000_000, n_devices: int = 2, repeats: int = 7, seed: int = 0,
                 noise_attrs: int = 0) -> dict:
    """Seconds per batch on 1 and on ``n_devices`` CPU workers (one thread each) and the speedup, load stated.

    Timed as every point of :func:`device_sweep` is (:func:`time_calls`: the
    same batch, a warm-up call, alternating calls, medians), so its numbers
    differ from the sweep's only by when they ran.  With ``n_devices`` workers
    on as many free cores this approaches ``n_devices``; :func:`process_probe`
    tells whether the cores are free and independent.
    """
    from dtlab.evolution.evaluators import PoolEvaluator

    X, y, batch, _ = timing_batch(n_samples, noise_attrs, seed=seed)
    load = load_average()
    one, many = PoolEvaluator(X, y, 2, 1), PoolEvaluator(X, y, 2, n_devices)
    try:
        t_one, t_many = time_calls([one, many], batch, repeats)
    finally:
        one.close()
        many.close()
    return {"n_samples": n_samples, "noise_attrs": noise_attrs, "n_trees": batch.n_trees, "devices": [1, n_devices],
            "threads_per_device": 1, "seconds": [t_one["seconds"], t_many["seconds"]],
            "seconds_range": [[t["seconds_min"], t["seconds_max"]] for t in (t_one, t_many)],
            "speedup": t_one["seconds"] / t_many["seconds"], "cores": present_devices("cpu"),
            "load_average": {"before": load, "after": load_average()}}


def _probe_job(index: int, n_samples: int, repeats: int, barrier, results) -> None:
    """One process: build a shard and a batch, warm up, then time the serial kernel -- alone (process 0, while the
    others wait at ``barrier``) and with every process at once (all start together after the barrier)."""
    from dtlab.evolution.evaluators.base import BatchWork
    from dtlab.evolution.evaluators.devices import CpuShard
    from dtlab.evolution.individual import pack
    from dtlab.evolution.operators import grow_dipole_tree

    X, y = chess3x3(n_samples, seed=0)
    rng = np.random.default_rng(0)
    batch = pack([grow_dipole_tree(X[:5000], y[:5000], 2, 5, 2, rng) for _ in range(50)])
    work = BatchWork.prepare(batch, 1, X.shape[1], X.dtype)
    shard = CpuShard(np.ascontiguousarray(X.T), y, 0, 2)
    shard.evaluate(work)

    def timed() -> float:
        times = []
        for _ in range(repeats):
            begin = time.perf_counter()
            shard.evaluate(work)
            times.append(time.perf_counter() - begin)
        return float(np.median(times))

    barrier.wait()  # every process is ready
    if index == 0:
        results.put(("alone", timed()))
    barrier.wait()  # the others waited, blocked, while process 0 ran alone: now they start timing together
    results.put(("together", timed()))


def _run_together(n_processes: int, n_samples: int, repeats: int) -> tuple[float, list[float]]:
    """(process 0's seconds alone, every process's seconds when all run at once), from one set of processes."""
    from multiprocessing import get_context

    ctx = get_context("spawn")  # fresh interpreters: no shared numba thread pool, no GIL
    barrier, results = ctx.Barrier(n_processes), ctx.Queue()
    procs = [ctx.Process(target=_probe_job, args=(i, n_samples, repeats, barrier, results))
             for i in range(n_processes)]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=600) for _ in range(n_processes + 1)]
    finally:
        for p in procs:
            p.join(timeout=60)
    return (next(t for kind, t in got if kind == "alone"), [t for kind, t in got if kind == "together"])


def process_probe(n_samples: int = 500_000, n_processes: int = 2, repeats: int = 9) -> dict:
    """Whether the machine's cores run the evaluation kernel independently: 1 process alone, then ``n`` at once.

    Separate processes share nothing in Python (no GIL, no numba thread pool),
    so if ``n`` of them together take longer per evaluation than one alone,
    the cores share hardware (hyperthreads of one core, a CPU quota, other
    load) and no in-process pool can do better.  ``throughput_ratio`` is the
    ``n`` processes' total rate over one's: ``n`` for independent cores.  The
    processes start timing together (a barrier after their warm-up); the
    same processes time one of them alone first, while the others wait
    blocked at the barrier, so the interpreters start once.
    """
    load = load_average()
    alone, together = _run_together(n_processes, n_samples, repeats)
    return {"n_samples": n_samples, "processes": n_processes, "seconds_alone": alone, "seconds_together": together,
            "throughput_ratio": float(n_processes * alone / np.mean(together)),
            "load_average": {"before": load, "after": load_average()}}
