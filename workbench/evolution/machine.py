"""What this machine's cores allow CPU workers: the process probe and the speedup bound it gives.

Separate processes share nothing in Python (no GIL, no numba thread pool), so
two of them running GDT's serial evaluation kernel at once measure whether the
cores run it independently; that rate bounds what any number of CPU workers of
one process can reach (:func:`hardware_bound`, drawn as a line in the device
figures).  Experiment code: the estimator never imports it.
"""

from __future__ import annotations

import time

import numpy as np

from dtlab.datasets import chess3x3
from workbench.timing import load_average

__all__ = ["hardware_bound", "process_probe"]


def hardware_bound(n_devices: float, cores: int, probe_ratio: float) -> float:
    """Speedup over one CPU worker the machine allows: the probe's rate for ``cores`` processes, none beyond them.

    One worker: 1; ``cores`` or more: ``probe_ratio`` (``cores`` processes
    running the kernel alone, :func:`process_probe`); linear in between.
    """
    if cores <= 1:
        return 1.0
    return 1.0 + (probe_ratio - 1.0) * (min(float(n_devices), cores) - 1.0) / (cores - 1.0)


def _probe_job(n_samples: int, repeats: int, barrier, results) -> None:
    """One process: build a shard and a batch, warm up, wait for the others at ``barrier``, time the serial kernel."""
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
    barrier.wait()  # every process is ready: they start timing together
    times = []
    for _ in range(repeats):
        begin = time.perf_counter()
        shard.evaluate(work)
        times.append(time.perf_counter() - begin)
    results.put(float(np.median(times)))


def _run_together(n_processes: int, n_samples: int, repeats: int) -> list[float]:
    from multiprocessing import get_context

    ctx = get_context("spawn")  # fresh interpreters: no shared numba thread pool, no GIL
    barrier, results = ctx.Barrier(n_processes), ctx.Queue()
    procs = [ctx.Process(target=_probe_job, args=(n_samples, repeats, barrier, results)) for _ in range(n_processes)]
    for p in procs:
        p.start()
    try:
        return [results.get(timeout=600) for _ in procs]
    finally:
        for p in procs:
            p.join(timeout=60)


def process_probe(n_samples: int = 500_000, n_processes: int = 2, repeats: int = 9) -> dict:
    """Whether the machine's cores run the evaluation kernel independently: 1 process alone, then ``n`` at once.

    Separate processes share nothing in Python (no GIL, no numba thread pool),
    so if ``n`` of them together take longer per evaluation than one alone,
    the cores share hardware (hyperthreads of one core, a CPU quota, other
    load) and no in-process pool can do better.  ``throughput_ratio`` is the
    ``n`` processes' total rate over one's: ``n`` for independent cores.  The
    processes start timing together (a barrier after their warm-up).
    """
    load = load_average()
    alone = _run_together(1, n_samples, repeats)[0]
    together = _run_together(n_processes, n_samples, repeats)
    return {"n_samples": n_samples, "processes": n_processes, "seconds_alone": alone, "seconds_together": together,
            "throughput_ratio": float(n_processes * alone / np.mean(together)),
            "load_average": {"before": load, "after": load_average()}}
