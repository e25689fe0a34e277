"""The host's side of a GDT generation, measured: where a generation's time goes, and the compiled loop's speed.

* :func:`generation_breakdown`: GDT generations with each evaluator, their
  time split into the host's phases (the compiled operators, packing the
  batch, storing statistics, the loop's bookkeeping, preparing the batch,
  merging) and the devices' (transfers, kernels, handing work over);
* :func:`host_loop_speed`: whole ``GDTClassifier.fit`` calls on the issue's
  cases, timed in alternation, against the times of the Python host loop
  recorded before it was compiled (:data:`BASELINE_FILE`), and the loop alone
  against its plain reference (:func:`~dtlab.evolution.operators.reference_generation`)
  in the same run.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from dtlab.datasets import chess3x3
from dtlab.distributed.dask_executor import alive_workers
from workbench.evolution.devices import _maybe_cluster, present_devices
from workbench.evolution.throughput import operator_context
from workbench.timing import load_average, numba_threads

__all__ = ["BASELINE_FILE", "HOST_LOOP_CASES", "generation_breakdown", "host_loop_baseline", "host_loop_speed",
           "loop_alone"]

#: The Python host loop's fit times, measured on this project's 2-core machine with the exclusive lock before the
#: loop was compiled (the commit is in the file), for :func:`host_loop_speed` to compare against.
BASELINE_FILE = Path(__file__).with_name("host_loop_baseline.json")

#: (rows, generations) of the issue's cases: Chess3x3 with 2 noise attributes, GDTClassifier(random_state=3,
#: max_stagnation=10**6), 2 threads.
HOST_LOOP_CASES = ((1_000, 1_000), (100_000, 300))

#: Phases of a generation in stacking order: the host's first, then the devices'.
HOST_PHASES = ("operators", "packing", "statistics", "loop", "prepare", "merge")
DEVICE_PHASES = ("dispatch", "transfer", "kernel")


class _Timed:
    """An evaluator whose ``evaluate`` wall time is summed (what the breakdown splits into phases)."""

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


def _breakdown_evaluators(n_devices: Sequence[int], client, X, y) -> dict[str, tuple[str, int, Any]]:
    """``{label: (kind, devices, factory)}`` of the evaluators a breakdown times."""
    from dtlab.evolution import PoolEvaluator

    made = {f"CPU workers x{d}": ("CPU workers", d, lambda d=d: PoolEvaluator(X, y, 2, d)) for d in n_devices}
    if client is not None:
        from dtlab.evolution.evaluators.dask import DaskEvaluator

        n = len(alive_workers(client))
        made[f"Dask workers x{n}"] = ("Dask workers", n, lambda: DaskEvaluator(X, y, 2, n, client=client))
    if present_devices("cuda") > 0:
        from dtlab.evolution.evaluators.cuda import CudaEvaluator

        made["GPU x1"] = ("GPUs", 1, lambda: CudaEvaluator(X, y, 2, 1))
    return made


def _timed_run(X, y_enc, make, params, seed: int):
    """GDT's generations after the initial population with the evaluator ``make()`` builds, timed by phase.

    Returns ``(phases, evaluator timings, evaluate calls' seconds, the generations' seconds)``, summed."""
    from dtlab.evolution.algorithm import initial_state, run

    inner = make()
    try:
        ev = _Timed(inner)
        state = initial_state(X, y_enc, 2, ev, params, np.random.default_rng(seed))
        ctx = operator_context(state.rng, X, ev, params)
        ctx.phases = {}
        inner.timings.update(dict.fromkeys(inner.timings, 0.0))
        ev.seconds = 0.0
        run(state, ev, params, ctx)
        return ctx.phases, dict(inner.timings), ev.seconds, float(sum(r["seconds"] for r in state.history[1:]))
    finally:
        inner.close()


_WARM: list[bool] = []


def _warm_up(params) -> None:
    """A few timed generations on 300 rows, once per process: the first evaluator a breakdown times then does not
    pay for loading the compiled host loop and kernels (tens of milliseconds, a generation's worth on small data)."""
    if _WARM:
        return
    from dtlab.evolution import PoolEvaluator

    X, y = chess3x3(300, seed=0)
    y_enc = y.astype(np.int32)
    _timed_run(X, y_enc, lambda: PoolEvaluator(X, y_enc, 2, 1), params, 0)
    _WARM.append(True)


def generation_breakdown(n_samples: int = 100_000, generations: int = 20, n_devices: Sequence[int] = (1, 2),
                         noise_attrs: int = 0, use_dask: bool = True, seed: int = 0, **gdt_params: Any):
    """Where a generation's time goes, host and devices, for each evaluator.

    Runs ``generations`` GDT generations on Chess3x3 after the initial
    population with each evaluator (CPU workers of one thread each, Dask
    workers, a GPU where present) through :func:`~dtlab.evolution.algorithm.run`,
    as ``fit`` does, and divides the mean time per generation into
    :data:`HOST_PHASES` and :data:`DEVICE_PHASES` (``loop``: the rest of the
    host's time -- the history record, the generator's state kept for an
    interruption, the stopping rules).

    Returns
    -------
    DataFrame, one row per evaluator: ``evaluator, kind`` ("CPU workers", "Dask workers", "GPUs"), ``devices,
    n_samples, generations``, mean seconds per generation of every phase, ``total`` and ``host_share`` (the host
    phases' fraction of ``total``).
    """
    import pandas as pd

    from dtlab.evolution import GDTClassifier
    from dtlab.evolution.algorithm import EvolutionParams

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    params = EvolutionParams.from_estimator(GDTClassifier(random_state=seed, max_generations=generations,
                                                          max_stagnation=10**9, **gdt_params))
    _warm_up(EvolutionParams.from_estimator(GDTClassifier(random_state=0, max_generations=3, max_stagnation=10**9,
                                                          **gdt_params)))
    y_enc = np.unique(y, return_inverse=True)[1].astype(np.int32)  # labels as 0..k-1, as fit does
    rows = []
    with _maybe_cluster(use_dask, min(present_devices("cpu"), 2)) as client:
        for label, (kind, d, make) in _breakdown_evaluators(n_devices, client, X, y_enc).items():
            phases, timings, evaluate_s, total = _timed_run(X, y_enc, make, params, seed)
            per = {k: v / generations for k, v in {**phases, **timings}.items()}
            per["dispatch"] = max(evaluate_s / generations - sum(per[k] for k in ("prepare", "transfer", "kernel",
                                                                                 "merge")), 0.0)
            per["loop"] = max(total / generations - sum(per[k] for k in ("operators", "packing", "statistics"))
                              - evaluate_s / generations, 0.0)
            row = {"evaluator": label, "kind": kind, "devices": d, "n_samples": n_samples, "generations": generations,
                   **{k: per.get(k, 0.0) for k in HOST_PHASES + DEVICE_PHASES}, "total": total / generations}
            row["host_share"] = sum(row[k] for k in HOST_PHASES) / row["total"]
            rows.append(row)
    return pd.DataFrame(rows)


def host_loop_baseline() -> dict:
    """The recorded times of the Python host loop (:data:`BASELINE_FILE`)."""
    return json.loads(BASELINE_FILE.read_text())


def _spread(values: Sequence[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def _busy_seconds() -> tuple[float, float]:
    """(CPU seconds the whole machine has been busy, this process's CPU seconds); NaN where /proc/stat is missing."""
    import os

    try:
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
    except OSError:
        return float("nan"), 0.0
    own = os.times()
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK"), own.user + own.system


#: The last commit with the Python host loop: "today's code" that :func:`host_loop_speed` runs beside the compiled
#: loop, from the repository's history (``git archive``), when the checkout has it.
BASELINE_COMMIT = "79f2c687a8bb0735ea203bcc2f4803a2f50ae703"

_WORKER = r"""
import json, os, sys, time
import numba
from dtlab.datasets import chess3x3
from dtlab.distributed.dask_executor import alive_workers
from dtlab.evolution import GDTClassifier

def busy():
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    own = os.times()
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK"), own.user + own.system

args = json.loads(sys.argv[1])
numba.set_num_threads(args["threads"])
data = {}
for line in sys.stdin:
    n, g = json.loads(line)
    if n not in data:
        data[n] = chess3x3(n, args["noise_attrs"], seed=args["seed"])
    clf = GDTClassifier(random_state=args["random_state"], max_stagnation=10**6, max_generations=g)
    b0, o0 = busy()
    start = time.perf_counter()
    clf.fit(*data[n])
    seconds = time.perf_counter() - start
    b1, o1 = busy()
    print(json.dumps({"seconds": seconds, "other_cpu_seconds": (b1 - b0) - (o1 - o0), "n_nodes": int(clf.tree_.n_nodes),
                      "ms_per_generation": 1000 * float(clf.history_.seconds.iloc[1:].mean())}), flush=True)
"""


class _OldCode:
    """``GDTClassifier.fit`` of another commit's dtlab (``git archive``), run in a worker process on request."""

    def __init__(self, commit: str, threads: int, noise_attrs: int, random_state: int, seed: int):
        import os
        import shutil
        import subprocess
        import sys
        import tempfile

        root = Path(__file__).resolve().parents[2]
        # one folder per commit, kept: git archive keeps the commit's file times, so numba's cache there stays valid
        # and only the first run compiles the old code
        folder = Path(tempfile.gettempdir()) / f"dtlab-baseline-{commit[:12]}"
        if not (folder / "dtlab" / "__init__.py").exists():
            archive = subprocess.run(["git", "-C", str(root), "archive", commit, "dtlab"], capture_output=True)
            if archive.returncode:
                raise RuntimeError(f"commit {commit[:7]} is not in this checkout's history "
                                   f"({archive.stderr.decode().strip()[:200]})")
            staging = Path(tempfile.mkdtemp(prefix=folder.name + "-", dir=folder.parent))
            subprocess.run(["tar", "-x", "-C", str(staging)], input=archive.stdout, check=True)
            try:
                staging.rename(folder)
            except OSError:  # another run extracted it meanwhile
                shutil.rmtree(staging, ignore_errors=True)
        env = dict(os.environ, PYTHONPATH=str(folder), NUMBA_NUM_THREADS=str(threads))
        self.proc = subprocess.Popen([sys.executable, "-c", _WORKER, json.dumps(
            {"threads": threads, "noise_attrs": noise_attrs, "random_state": random_state, "seed": seed})],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=str(folder))

    def fit(self, n: int, g: int) -> dict:
        self.proc.stdin.write(json.dumps([n, g]) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the baseline worker stopped (exit code {self.proc.poll()})")
        return json.loads(line)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def host_loop_speed(cases: Sequence[tuple[int, int]] = HOST_LOOP_CASES, noise_attrs: int = 2, repeats: int = 5,
                    threads: int = 2, random_state: int = 3, seed: int = 0, baseline_commit: str | None = None,
                    tolerance: float = 0.10, attempts: int = 4) -> dict:
    """Whole ``GDTClassifier.fit`` calls on each (rows, generations) case on ``threads`` threads, this code's and,
    with ``baseline_commit``, that commit's (in a worker process), in alternation.

    A shared machine's other processes, and on a virtual machine the
    hypervisor's steal, take cores from numba's parallel regions, which then
    wait for their descheduled thread; so each fit records the CPU seconds
    used outside its own process meanwhile (``/proc/stat``), and a fit during
    which that exceeded ``tolerance`` of a core is taken again (up to
    ``attempts`` tries, the last kept in any case; the discarded tries are kept).

    Returns
    -------
    dict with, per case ``"<rows>x<generations>"`` and contender (``"now"``,
    and ``"baseline"`` with a commit), the fit seconds of every repeat, their
    median / min / max, the mean milliseconds per generation, the tree's size
    and the discarded tries; ``threads`` and the load average before and after.
    """
    from dtlab.evolution import GDTClassifier

    data = {n: chess3x3(n, noise_attrs, seed=seed) for n, _ in cases}
    who = ("now",) + (("baseline",) if baseline_commit else ())
    out: dict[str, Any] = {f"{n}x{g}": {"n_samples": n, "generations": g,
                                        **{w: {"fit_seconds": [], "ms_per_generation": [], "discarded": []}
                                           for w in who}} for n, g in cases}

    def fit_now(n: int, g: int) -> dict:
        clf = GDTClassifier(random_state=random_state, max_stagnation=10**6, max_generations=g)
        busy0, own0 = _busy_seconds()
        start = time.perf_counter()
        clf.fit(*data[n])
        seconds = time.perf_counter() - start
        busy1, own1 = _busy_seconds()
        return {"seconds": seconds, "other_cpu_seconds": (busy1 - busy0) - (own1 - own0),
                "n_nodes": int(clf.tree_.n_nodes),
                "ms_per_generation": 1000 * float(clf.history_.seconds.iloc[1:].mean())}

    load = load_average()
    old = _OldCode(baseline_commit, threads, noise_attrs, random_state, seed) if baseline_commit else None
    try:
        with numba_threads(threads):
            for n, _ in cases:  # warm-up: numba's caches (the old code's compile here), first-touch allocations
                fit_now(n, 5)
                if old is not None:
                    old.fit(n, 5)
            for _ in range(repeats):
                for n, g in cases:
                    for w in who:
                        entry = out[f"{n}x{g}"][w]
                        for attempt in range(attempts):
                            r = fit_now(n, g) if w == "now" else old.fit(n, g)
                            quiet = not r["other_cpu_seconds"] > tolerance * r["seconds"] + 0.05  # NaN: kept
                            if quiet or attempt == attempts - 1:
                                break
                            entry["discarded"].append({k: r[k] for k in ("seconds", "other_cpu_seconds")})
                        entry["fit_seconds"].append(r["seconds"])
                        entry["ms_per_generation"].append(r["ms_per_generation"])
                        entry["n_nodes"] = r["n_nodes"]
    finally:
        if old is not None:
            old.close()
    for case in out.values():
        for w in who:
            case[w]["fit"] = _spread(case[w]["fit_seconds"])
    return {"cases": out, "threads": threads, "noise_attrs": noise_attrs, "random_state": random_state,
            "repeats": repeats, "baseline_commit": baseline_commit, "tolerance": tolerance,
            "load_average": {"before": load, "after": load_average()}}


def loop_alone(n_samples: int = 1_000, generations: int = 200, noise_attrs: int = 2, repeats: int = 3,
               threads: int = 2, seed: int = 0) -> dict:
    """The compiled host loop against its plain Python reference on the same evaluator, in alternation.

    Both run ``generations`` generations from the same initial population
    (they give the same population, :mod:`dtlab.evolution.operators`); the
    ratio is the host loop's own speedup, the evaluation's time included on
    both sides.
    """
    import copy

    from dtlab.evolution import CpuEvaluator, GDTClassifier
    from dtlab.evolution.algorithm import initial_state, run
    from dtlab.evolution.operators import reference_generation

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    y_enc = np.unique(y, return_inverse=True)[1].astype(np.int32)  # labels as 0..k-1, as fit does
    params = GDTClassifier(random_state=3, max_generations=generations, max_stagnation=10**9)._validated_params()
    times: dict[str, list[float]] = {"compiled": [], "reference": []}
    with numba_threads(threads):
        evaluator = CpuEvaluator(X, y_enc, 2)
        start_state = initial_state(X, y_enc, 2, evaluator, params, np.random.default_rng(seed))
        for _ in range(repeats):
            for name, step in (("compiled", None), ("reference", reference_generation)):
                state = copy.deepcopy(start_state)
                ctx = operator_context(state.rng, X, evaluator, params)
                begin = time.perf_counter()
                run(state, evaluator, params, ctx, **({} if step is None else {"step": step}))
                times[name].append(time.perf_counter() - begin)
        evaluator.close()
    return {"n_samples": n_samples, "generations": generations, "threads": threads,
            **{name: _spread(t) for name, t in times.items()},
            "speedup": statistics.median(times["reference"]) / statistics.median(times["compiled"])}
