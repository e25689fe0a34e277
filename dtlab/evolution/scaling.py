"""GDT on devices, measured: evaluators against the reference as data grow, devices against one, where time goes.

Analogues of Jurczuk, Czajkowski, Kretowski (Applied Intelligence 2021):
Fig. 9 (speedup of each evaluator over the sequential one as the dataset
grows, :func:`evaluator_speedups`), Fig. 10 (speedup over one device for 1, 2,
4 devices, :func:`device_scaling`, measured on the devices present and
extended by :class:`PoolModel`, a performance model fitted to the measured
kernel, transfer and merge times), and the split of a generation's time
(:func:`generation_breakdown`).  :func:`dask_overhead` compares the Dask
evaluator with the in-process pool.  The GPU benchmark is in
:mod:`dtlab.evolution.gpu_bench`.

Every timing is a median of several evaluations of the same batch: the
population of a real GDT run on Chess3x3 (:func:`timing_batch`).  Experiment
code: the estimator never imports it.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Sequence

import numpy as np

from ..datasets import chess3x3
from ..experiments.timing import load_average, paired_medians

__all__ = ["PoolModel", "dask_overhead", "device_scaling", "evaluator_speedups", "generation_breakdown",
           "local_dask_cluster", "pool_speedup", "present_devices", "process_probe", "timing_batch"]


def present_devices(kind: str = "cpu") -> int:
    """Devices of ``kind`` on this machine: CPU cores (workers) or real GPUs (0 without one; never the simulator)."""
    from ..backend import real_gpu_available, resolve_backend

    if kind == "cpu":
        return len(resolve_backend("cpu").devices())
    if not real_gpu_available():
        return 0
    return len(resolve_backend("cuda").devices())


def timing_batch(n_samples: int, noise_attrs: int = 0, seed: int = 0, generations: int = 30):
    """Chess3x3 rows and the population of a GDT run on them after ``generations`` generations, packed.

    Returns
    -------
    X : ndarray (n_samples, 2 + noise_attrs), float32
    y : ndarray (n_samples,), int32
    batch : PackedForest of the ``population_size`` (default 50) evolved trees
    population : list of Individual, the same trees
    """
    from .individual import pack
    from .throughput import evolved_population

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    m = min(n_samples, 20_000)
    population = evolved_population(X[:m], y[:m], generations=generations, seed=seed)
    return X, y, pack(population), population


@contextmanager
def local_dask_cluster(n_workers: int = 2, processes: bool = True) -> Iterator[Any]:
    """A ``LocalCluster`` on loopback (one thread per worker, no dashboard) and its client, Dask's log lines
    kept quiet through its teardown (:func:`dtlab.distributed.cluster.local_cluster`)."""
    from ..distributed.cluster import local_cluster

    with local_cluster(n_workers=n_workers, threads_per_worker=1, processes=processes) as client:
        yield client


def _factories(n_devices: Sequence[int], client=None, with_gpu: bool = False) -> dict[str, Any]:
    """Evaluator factories ``f(X, y) -> evaluator`` by label: CPU workers, Dask workers, GPUs."""
    from .evaluators import PoolEvaluator

    made = {f"CPU workers x{d}": (lambda X, y, d=d: PoolEvaluator(X, y, 2, d)) for d in n_devices}
    if client is not None:
        from .evaluators.dask import DaskEvaluator

        n = len(client.scheduler_info()["workers"])
        made[f"Dask workers x{n}"] = lambda X, y: DaskEvaluator(X, y, 2, n, client=client)
    if with_gpu:
        from .evaluators.cuda import CudaEvaluator

        made["GPU x1"] = lambda X, y: CudaEvaluator(X, y, 2, 1)
    return made


def evaluator_speedups(sizes: Sequence[int] = (10_000, 100_000, 1_000_000), repeats: int = 3,
                       reference_trees: int = 5, use_dask: bool = True, seed: int = 0):
    """Fig. 9 analogue: seconds per batch of each evaluator and its speedup over the NumPy reference.

    The reference evaluates one tree at a time, so its time for the batch is
    measured on ``reference_trees`` trees and scaled by ``n_trees /
    reference_trees`` (at 10^6 rows the whole batch would take it half a
    minute per repeat).  CPU workers run one thread each (1 and every core),
    Dask workers are processes on loopback, a GPU is timed where one is present.

    Returns
    -------
    DataFrame with ``method, n_samples, n_trees, seconds, speedup_over_reference, devices, threads``.
    """
    import pandas as pd

    from .individual import pack
    from .throughput import reference_evaluator

    cores = present_devices("cpu")
    rows = []
    with _maybe_cluster(use_dask, min(cores, 2)) as client:
        for n in sizes:
            X, y, batch, population = timing_batch(n, seed=seed)
            sub = pack(population[:reference_trees])
            ref = reference_evaluator(X, y, 2)
            t_ref = paired_medians([lambda ref=ref, sub=sub: ref.evaluate(sub, 1)], repeats=1)[0]
            t_ref *= batch.n_trees / sub.n_trees
            rows.append({"method": "NumPy reference", "n_samples": n, "seconds": t_ref, "devices": 1, "threads": 1})
            evaluators = {label: make(X, y) for label, make in
                          _factories(sorted({1, cores}), client, present_devices("cuda") > 0).items()}
            try:
                times = paired_medians([lambda ev=ev, b=batch: ev.evaluate(b, 1) for ev in evaluators.values()],
                                       repeats=repeats)
            finally:
                for ev in evaluators.values():
                    ev.close()
            for (label, ev), t in zip(evaluators.items(), times):
                rows.append({"method": label, "n_samples": n, "seconds": t, "devices": ev.n_devices,
                             "threads": 1 if label.startswith("GPU") else ev.n_devices})
            for r in rows[-len(evaluators) - 1:]:
                r.update(n_trees=batch.n_trees, speedup_over_reference=t_ref / r["seconds"])
    return pd.DataFrame(rows)


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


@dataclass
class PoolModel:
    """Seconds per evaluation on ``d`` devices of ``n`` rows, fitted to measured phases.

    ``T(n, d) = prepare + transfer + kernel_0 + kernel_per_row * n / d + merge_0 + merge_per_device * (d - 1)
    + dispatch_0 + dispatch_per_device * (d - 1)``

    The kernel rate comes from one-device runs: the model assumes that every
    added device brings its own compute and memory bandwidth, as a GPU does.
    Where the measured devices share hardware (CPU workers on one machine),
    measurements fall below it.
    """

    prepare: float
    transfer: float
    kernel_0: float
    kernel_per_row: float
    merge_0: float
    merge_per_device: float
    dispatch_0: float
    dispatch_per_device: float

    @classmethod
    def fit(cls, phases) -> "PoolModel":
        """Fit to a phases table (:func:`device_scaling`'s ``phases``): least squares, one phase at a time."""
        one = phases[phases["n_devices"] == 1]
        rows, kernel = one["n_samples"].to_numpy(float), one["kernel"].to_numpy()
        k1, k0 = np.polyfit(rows, kernel, 1) if len(set(rows)) > 1 else (float(kernel.mean() / rows.mean()), 0.0)
        d = phases["n_devices"].to_numpy(float) - 1
        merge, dispatch = phases["merge"].to_numpy(), phases["dispatch"].to_numpy()
        if np.ptp(d) > 0:
            m1, m0 = np.polyfit(d, merge, 1)
            o1, o0 = np.polyfit(d, dispatch, 1)
        else:
            m1, m0, o1, o0 = 0.0, float(merge.mean()), 0.0, float(dispatch.mean())
        return cls(float(phases["prepare"].mean()), float(phases["transfer"].mean()), max(float(k0), 0.0),
                   max(float(k1), 0.0), max(float(m0), 0.0), max(float(m1), 0.0), max(float(o0), 0.0),
                   max(float(o1), 0.0))

    def seconds(self, n_samples: float, n_devices: float) -> float:
        d = float(n_devices)
        return (self.prepare + self.transfer + self.kernel_0 + self.kernel_per_row * n_samples / d + self.merge_0
                + self.merge_per_device * (d - 1) + self.dispatch_0 + self.dispatch_per_device * (d - 1))

    def speedup(self, n_samples: float, n_devices: float) -> float:
        return self.seconds(n_samples, 1) / self.seconds(n_samples, n_devices)


def device_scaling(sizes: Sequence[int] = (10_000, 100_000, 1_000_000), device_counts: Sequence[int] = (1, 2, 4),
                   kind: str = "cpu", repeats: int = 5, seed: int = 0):
    """Fig. 10 analogue: speedup over one device, measured on the devices present, modelled beyond them.

    Parameters
    ----------
    sizes : rows of Chess3x3
    device_counts : devices to report; those up to the devices present are measured
    kind : {"cpu", "cuda"}
        CPU workers (one thread each) or GPUs.

    Returns
    -------
    curves : DataFrame
        ``n_samples, n_devices, speedup, seconds, source`` (``"measured"`` or ``"modelled"``; the model is
        reported at every count, so measured and modelled can be compared where both exist).
    phases : DataFrame
        Per measured (rows, devices): seconds per evaluation of ``prepare, transfer, kernel, merge`` and
        ``dispatch`` (the rest of the wall time: handing work to the device threads and back), and ``wall``.
    model : PoolModel
    """
    import pandas as pd

    from .evaluators import PoolEvaluator
    from .evaluators.cuda import CudaEvaluator

    present = present_devices(kind)
    if present == 0:
        raise RuntimeError(f"no {kind} device is present to measure")
    measured = [d for d in device_counts if d <= present] or [1]
    make = (lambda X, y, d: PoolEvaluator(X, y, 2, d)) if kind == "cpu" else \
        (lambda X, y, d: CudaEvaluator(X, y, 2, d))
    phase_rows, curve_rows = [], []
    for n in sizes:
        X, y, batch, _ = timing_batch(n, seed=seed)
        evaluators = [make(X, y, d) for d in measured]
        try:
            for ev in evaluators:
                ev.evaluate(batch, 1)  # warm-up, then count from zero
                ev.timings.update(dict.fromkeys(ev.timings, 0.0))
                ev.calls = 0
            walls = paired_medians([lambda ev=ev, b=batch: ev.evaluate(b, 1) for ev in evaluators], repeats=repeats,
                                   warmup=0)
            for d, ev, wall in zip(measured, evaluators, walls):
                per_call = {k: v / ev.calls for k, v in ev.timings.items()}
                dispatch = max(wall - sum(per_call.values()), 0.0)
                phase_rows.append({"n_samples": n, "n_devices": d, "wall": wall, **per_call, "dispatch": dispatch})
        finally:
            for ev in evaluators:
                ev.close()
    phases = pd.DataFrame(phase_rows)
    model = PoolModel.fit(phases)
    for n in sizes:
        base = phases[(phases.n_samples == n) & (phases.n_devices == 1)].wall.iloc[0]
        for d in device_counts:
            hit = phases[(phases.n_samples == n) & (phases.n_devices == d)]
            if len(hit):
                curve_rows.append({"n_samples": n, "n_devices": d, "seconds": float(hit.wall.iloc[0]),
                                   "speedup": float(base / hit.wall.iloc[0]), "source": "measured"})
            curve_rows.append({"n_samples": n, "n_devices": d, "seconds": model.seconds(n, d),
                               "speedup": model.speedup(n, d), "source": "modelled"})
    return pd.DataFrame(curve_rows), phases, model


class _Timed:
    """An evaluator whose ``evaluate`` wall time is summed (the rest of a generation is the host's operators)."""

    def __init__(self, inner):
        self.inner, self.seconds = inner, 0.0
        self.n_samples, self.n_classes = inner.n_samples, inner.n_classes

    def evaluate(self, forest, seed):
        start = time.perf_counter()
        try:
            return self.inner.evaluate(forest, seed)
        finally:
            self.seconds += time.perf_counter() - start

    def rows(self, row_ids):
        return self.inner.rows(row_ids)


def generation_breakdown(n_samples: int = 100_000, generations: int = 20, n_devices: Sequence[int] = (1, 2),
                         use_dask: bool = True, seed: int = 0, **gdt_params: Any):
    """Where a generation's time goes: host operators, preparing the batch, transfers, kernels, merge, dispatch.

    Runs ``generations`` GDT generations on Chess3x3 after the initial
    population with each evaluator (CPU workers, Dask workers, a GPU where
    present) and divides the time per generation into phases.

    Returns
    -------
    DataFrame, one row per evaluator: ``evaluator, n_samples, generations`` and mean seconds per generation of
    ``host_operators, prepare, transfer, kernel, merge, dispatch``, plus ``total``.
    """
    import pandas as pd

    from .._validation import encode_labels
    from . import GDTClassifier
    from .algorithm import initial_state, next_generation
    from .operators import OperatorContext

    X, y = chess3x3(n_samples, seed=seed)
    clf = GDTClassifier(random_state=seed, **gdt_params)
    params = clf._validated_params()
    _, y_enc = encode_labels(y)
    rows = []
    with _maybe_cluster(use_dask, min(present_devices("cpu"), 2)) as client:
        for label, make in _factories(n_devices, client, present_devices("cuda") > 0).items():
            inner = make(X, y_enc)
            try:
                ev = _Timed(inner)
                rng = np.random.default_rng(seed)
                state = initial_state(X, y_enc, 2, ev, params, rng)
                ctx = OperatorContext(rng=rng, fetch_rows=ev.rows, feature_span=np.ptp(X, axis=0).astype(np.float64),
                                      n_samples=n_samples, variant_p=params.variant_p, max_depth=params.max_depth,
                                      ranking_pressure=params.ranking_pressure)
                inner.timings.update(dict.fromkeys(inner.timings, 0.0))
                ev.seconds = 0.0
                start = time.perf_counter()
                for _ in range(generations):
                    next_generation(state, ev, params, ctx)
                total = time.perf_counter() - start
            finally:
                inner.close()
            phases = {k: v / generations for k, v in inner.timings.items()}
            rows.append({"evaluator": label, "n_samples": n_samples, "generations": generations,
                         "host_operators": (total - ev.seconds) / generations, **phases,
                         "dispatch": max(ev.seconds / generations - sum(phases.values()), 0.0),
                         "total": total / generations})
    return pd.DataFrame(rows)


def dask_overhead(n_samples: int = 1_000_000, n_workers: int = 2, repeats: int = 5, seed: int = 0) -> dict:
    """The Dask evaluator's extra seconds per generation against the in-process pool with as many devices.

    Both evaluate the same batch with ``n_workers`` single-thread devices
    (CPU workers of the pool; Dask worker processes on loopback); the
    overhead is the difference of the median evaluation times.
    """
    from .evaluators import PoolEvaluator
    from .evaluators.dask import DaskEvaluator

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

    The same batch, timed in alternation (medians).  With ``n_devices`` workers
    on as many free cores this approaches ``n_devices``; :func:`process_probe`
    tells whether the cores are free and independent.
    """
    from .evaluators import PoolEvaluator

    X, y, batch, _ = timing_batch(n_samples, noise_attrs, seed=seed)
    load = load_average()
    one, many = PoolEvaluator(X, y, 2, 1), PoolEvaluator(X, y, 2, n_devices)
    try:
        t_one, t_many = paired_medians([lambda: one.evaluate(batch, 1), lambda: many.evaluate(batch, 1)],
                                       repeats=repeats)
    finally:
        one.close()
        many.close()
    return {"n_samples": n_samples, "noise_attrs": noise_attrs, "n_trees": batch.n_trees, "devices": [1, n_devices],
            "threads_per_device": 1,
            "seconds": [t_one, t_many], "speedup": t_one / t_many, "cores": present_devices("cpu"),
            "load_average": {"before": load, "after": load_average()}}


def _probe_job(n_samples: int, repeats: int, start_at: float | None) -> float:
    """One process: build a shard and a batch, warm up, wait until ``start_at``, time the serial kernel."""
    from .evaluators.base import BatchWork
    from .evaluators.pool import CpuShard
    from .individual import pack
    from .operators import grow_tree

    X, y = chess3x3(n_samples, seed=0)
    rng = np.random.default_rng(0)
    batch = pack([grow_tree(X[:5000], y[:5000], 2, 5, 2, rng) for _ in range(50)])
    work = BatchWork.prepare(batch, 1, X.shape[1], X.dtype)
    shard = CpuShard(np.ascontiguousarray(X.T), y, 0, 2)
    shard.evaluate(work)
    if start_at is not None:
        time.sleep(max(0.0, start_at - time.time()))
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        shard.evaluate(work)
        times.append(time.perf_counter() - begin)
    return float(np.median(times))


def process_probe(n_samples: int = 500_000, n_processes: int = 2, repeats: int = 9) -> dict:
    """Whether the machine's cores run the evaluation kernel independently: 1 process alone, then ``n`` at once.

    Separate processes share nothing in Python (no GIL, no numba thread pool),
    so if ``n`` of them together take longer per evaluation than one alone,
    the cores share hardware (hyperthreads of one core, a CPU quota, other
    load) and no in-process pool can do better.  ``throughput_ratio`` is the
    ``n`` processes' total rate over one's: ``n`` for independent cores.
    """
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(n_processes, mp_context=get_context("spawn")) as pool:
        alone = pool.submit(_probe_job, n_samples, repeats, None).result()
        start_at = time.time() + 8.0  # after every process has built its data and compiled
        together = [f.result() for f in [pool.submit(_probe_job, n_samples, repeats, start_at)
                                         for _ in range(n_processes)]]
    return {"n_samples": n_samples, "processes": n_processes, "seconds_alone": alone, "seconds_together": together,
            "throughput_ratio": float(n_processes * alone / np.mean(together)), "load_average": load_average()}
