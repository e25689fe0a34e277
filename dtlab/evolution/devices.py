"""Producers of GDT's device figures and benchmarks, and the GPU benchmark (registered for ``python -m dtlab``).

* figure ``evolution_devices``: the evaluators against the NumPy reference as
  data grow (Fig. 9 analogue), speedup over one device for 1, 2, 4 devices
  (Fig. 10 analogue, modelled beyond the devices present), where a
  generation's time goes (:mod:`dtlab.evolution.scaling`);
* benchmark ``evolution_device_speed``: 2 CPU workers against 1 at 10^6 rows,
  whether the cores are independent (a process probe), and the Dask
  evaluator's overhead per generation against the in-process pool;
* benchmark ``evolution_gpu``: on a real GPU, GDT on 5 x 10^6 rows of
  Chess3x3 with 16 noise attributes for about a minute (per-generation time,
  projected 10,000 generations), evaluator throughput in tree-rows per second
  and the fraction of the GPU's copy bandwidth it reaches; elsewhere a
  ``pending`` entry that says so.

Imported by :mod:`dtlab.evolution.experiments` (which the catalog loads);
the estimator never imports it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ..experiments.registry import RunContext, register_benchmark, register_figure
from . import device_plots, scaling

__all__ = ["COPY_BANDWIDTH_BYTES_PER_S", "gpu_benchmark", "gpu_throughput"]

#: A device-to-device copy on the project's H200, bytes read plus written per second (../shared/GPU.md).
COPY_BANDWIDTH_BYTES_PER_S = 4.3e12

#: The paper's time for 10,000 generations on 5 x 10^6 rows x 18 attributes, four Tesla P100 (section 4).
PAPER_SECONDS = 480.0


@register_figure("evolution_devices", technique="evolution",
                 description="GDT on devices: evaluators vs the NumPy reference as data grow (Fig. 9), speedup over "
                             "one device for 1, 2, 4 devices, measured and modelled (Fig. 10), time per generation "
                             "by phase",
                 captions=device_plots.device_captions)
def _device_figures(ctx: RunContext) -> dict:
    sizes = ctx.pick((10_000, 100_000, 1_000_000), (10_000, 100_000, 1_000_000, 10_000_000))
    speed = scaling.evaluator_speedups(sizes=sizes, repeats=ctx.pick(3, 5), seed=ctx.seed)
    ctx.savefig(device_plots.plot_evaluator_speedups(speed), "evolution_evaluator_speedups")
    kind = "cuda" if ctx.backend == "cuda" and scaling.present_devices("cuda") else "cpu"
    curves, phases, model = scaling.device_scaling(sizes=sizes, device_counts=(1, 2, 4), kind=kind,
                                                   repeats=ctx.pick(5, 7), seed=ctx.seed)
    words = "GPUs" if kind == "cuda" else "CPU workers"
    ctx.savefig(device_plots.plot_device_scaling(curves, kind=words), "evolution_device_scaling")
    breakdown = scaling.generation_breakdown(n_samples=ctx.pick(100_000, 1_000_000), generations=ctx.pick(20, 50),
                                             seed=ctx.seed)
    ctx.savefig(device_plots.plot_generation_breakdown(breakdown), "evolution_generation_time")
    return {"evaluator_speedups": speed.to_dict(orient="records"), "device_scaling": curves.to_dict(orient="records"),
            "phases": phases.to_dict(orient="records"), "model": model.__dict__, "kind": words,
            "cores": scaling.present_devices("cpu"), "generation_breakdown": breakdown.to_dict(orient="records"),
            "probe": scaling.process_probe(n_samples=ctx.pick(300_000, 1_000_000)),
            "load_average": scaling.load_average()}


def speed_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text of the device-speed benchmark: the 2-worker speedup, the process probe, the Dask overhead."""
    pool, probe, dask = results["pool"], results["probe"], results["dask"]
    speedups, ratios = results.get("speedups", [pool["speedup"]]), results.get("probe_ratios", [])
    loads = [r["pool"]["load_average"]["before"][0] for r in results.get("rounds", []) if r["pool"]["load_average"]
             ["before"]]
    spread = (f" (median of {len(speedups)} rounds, range {min(speedups):.2f}-{max(speedups):.2f}x; two processes "
              f"running the kernel alone reached {min(ratios):.2f}-{max(ratios):.2f}x one process's rate in the same "
              f"rounds, load average {min(loads):.2f}-{max(loads):.2f}: the machine's cores are shared with others)"
              if len(speedups) > 1 and ratios and loads else "")
    shared = probe["throughput_ratio"] < 0.8 * probe["processes"]
    if "skipped" in dask:
        dask_text = f"Dask: {dask['skipped']}."
    else:
        dask_text = (f"Dask ({dask['devices']} worker processes on loopback, one thread each) against the in-process "
                     f"pool with as many workers: {1000 * dask['overhead_seconds']:+.1f} ms per generation "
                     f"({100 * dask['overhead_fraction']:+.0f}%: {1000 * dask['dask_seconds']:.0f} against "
                     f"{1000 * dask['pool_seconds']:.0f} ms).")
    return {"evolution_device_speed": (
        f"Device pool on {pool['n_samples']:,} Chess3x3 rows ({pool['n_trees']} trees per batch, one thread per "
        f"CPU worker, {pool['cores']} cores): 2 workers against 1, "
        f"{pool['speedup']:.2f}x ({1000 * pool['seconds'][0]:.0f} ms against {1000 * pool['seconds'][1]:.0f} ms per "
        f"batch){spread}. In that round two separate processes running the same kernel reached "
        f"{probe['throughput_ratio']:.2f}x one process's rate"
        + (", so the cores did not run it independently then (no pool can beat that). " if shared else ". ")
        + dask_text)}


@register_benchmark("evolution_device_speed", technique="evolution",
                    description="GDT device pool: 2 CPU workers vs 1 at 10^6 rows (threads and load stated), a "
                                "process probe of the cores, the Dask evaluator's overhead per generation",
                    captions=speed_captions)
def _device_speed(ctx: RunContext) -> dict:
    """Several rounds, each a pool timing then a process probe: the cores of a shared machine come and go."""
    n = 1_000_000
    rounds = []
    for _ in range(ctx.pick(3, 5)):
        rounds.append({"pool": scaling.pool_speedup(n_samples=n, repeats=ctx.pick(7, 11), seed=ctx.seed),
                       "probe": scaling.process_probe(n_samples=ctx.pick(500_000, 1_000_000))})
    ordered = sorted(rounds, key=lambda r: r["pool"]["speedup"])
    median = ordered[len(ordered) // 2]
    return {"pool": median["pool"], "probe": median["probe"], "rounds": rounds,
            "speedups": [r["pool"]["speedup"] for r in rounds],
            "probe_ratios": [r["probe"]["throughput_ratio"] for r in rounds],
            "dask": scaling.dask_overhead(n_samples=n, repeats=ctx.pick(5, 9), seed=ctx.seed)}


# ------------------------------------------------------------------ GPU
def _leaf_depths(forest) -> np.ndarray:
    """Depth of every node of a packed forest (children come after parents)."""
    depth = np.zeros(forest.n_nodes, np.int64)
    for node in range(forest.n_nodes):
        if forest.left[node] != -1:
            depth[forest.left[node]] = depth[forest.right[node]] = depth[node] + 1
    return depth


def gpu_throughput(n_samples: int = 5_000_000, noise_attrs: int = 16, repeats: int = 10, seed: int = 0) -> dict:
    """Tree-rows per second of the CUDA evaluator on one GPU and the fraction of the copy bandwidth it reaches.

    Bytes counted per evaluation (a lower bound on the memory traffic, no
    reuse through caches assumed): for every tree, each row's label (4 bytes)
    and the attribute values its walk reads, one per level of its leaf (the
    leaf counts give the rows per leaf); with the leaf bitmasks every test of
    the tree is read for every row.  The fraction is bytes / time / 4.3 TB/s.
    """
    from ..datasets import chess3x3
    from ..experiments.timing import median_seconds
    from .evaluators.cuda import CudaEvaluator
    from .individual import pack
    from .throughput import evolved_population

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    population = evolved_population(X[:20_000], y[:20_000], generations=30, seed=seed)
    batch = pack(population)
    ev = CudaEvaluator(X, y, 2, 1)
    try:
        stats = ev.evaluate(batch, 1)  # warm-up; chooses the leaf search
        seconds = median_seconds(lambda: ev.evaluate(batch, 1), repeats=repeats, warmup=0)
        kernel = ev.timings["kernel"] / ev.calls
        search = ev.leaf_search_used[0]
        search_seconds = dict(ev._pool.states[0].leaf_search_seconds)
    finally:
        ev.close()
    depth = _leaf_depths(batch)
    rows_per_node = stats.counts.sum(axis=1)
    tests = np.diff(batch.node_offset) // 2  # a binary tree of k nodes has (k - 1) / 2 tests
    walk_bytes = float((rows_per_node * depth).sum() * X.itemsize + batch.n_trees * n_samples * 4)
    mask_bytes = float((tests * n_samples).sum() * X.itemsize + batch.n_trees * n_samples * 4)
    used = mask_bytes if search == "bitmask" else walk_bytes
    return {"n_samples": n_samples, "n_features": X.shape[1], "n_trees": batch.n_trees,
            "seconds_per_batch": seconds, "kernel_seconds": kernel, "leaf_search": search,
            "leaf_search_seconds": search_seconds, "tree_rows_per_s": batch.n_trees * n_samples / seconds,
            "kernel_tree_rows_per_s": batch.n_trees * n_samples / kernel, "bytes_per_batch": used,
            "bandwidth_fraction": used / kernel / COPY_BANDWIDTH_BYTES_PER_S}


def gpu_benchmark(n_samples: int = 5_000_000, noise_attrs: int = 16, budget_seconds: float = 60.0,
                  seed: int = 0) -> dict:
    """GDT on one GPU for about ``budget_seconds``: per-generation time and the projected 10,000 generations."""
    from ..backend import describe
    from ..datasets import chess3x3
    from . import GDTClassifier

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    start = time.perf_counter()
    clf = GDTClassifier(backend="cuda", n_devices=1, max_generations=10_000, max_stagnation=10_000,
                        random_state=seed,
                        callback=lambda g, rec: time.perf_counter() - start > budget_seconds)
    clf.fit(X, y)
    h = clf.history_
    per_generation = float(np.median(h.seconds.iloc[1:])) if len(h) > 1 else float("nan")
    projected = float(h.seconds.iloc[0] + 10_000 * per_generation)
    return {"n_samples": n_samples, "n_features": X.shape[1], "generations": int(clf.n_generations_),
            "seconds": float(h.elapsed_s.iloc[-1]), "initial_population_seconds": float(h.seconds.iloc[0]),
            "seconds_per_generation_median": per_generation, "projected_10000_generations_seconds": projected,
            "target_seconds": 60.0, "paper_seconds_4_p100": PAPER_SECONDS, "meets_target": projected < 60.0,
            "best_size": int(h.best_size.iloc[-1]), "best_accuracy": float(h.best_accuracy.iloc[-1]),
            "gpus": describe().get("gpus")}


def gpu_captions(results: dict[str, Any]) -> dict[str, str]:
    if results.get("status") == "pending":
        return {"evolution_gpu": f"GPU numbers pending: {results['reason']}. Target: {results['target']}."}
    run, tp = results["run"], results["throughput"]
    return {"evolution_gpu": (
        f"On {run['gpus'][0]['name'] if run.get('gpus') else 'the GPU'}: GDT on {run['n_samples']:,} rows x "
        f"{run['n_features']} attributes ran {run['generations']:,} generations in {run['seconds']:.0f} s, "
        f"{1000 * run['seconds_per_generation_median']:.1f} ms per generation, so 10,000 generations take about "
        f"{run['projected_10000_generations_seconds']:.0f} s (target 60 s; the paper: {PAPER_SECONDS:.0f} s on four "
        f"P100). Evaluator: {tp['tree_rows_per_s']:.3g} tree-rows/s per batch ({tp['kernel_tree_rows_per_s']:.3g} "
        f"in the kernels, {tp['leaf_search']} leaf search), {100 * tp['bandwidth_fraction']:.1f}% of the 4.3 TB/s "
        f"copy bandwidth by the bytes-read model.")}


@register_benchmark("evolution_gpu", technique="evolution",
                    description="GDT on a real GPU: 5 x 10^6 rows x 18 attributes for about a minute (projected "
                                "10,000 generations), evaluator tree-rows/s and bandwidth fraction; pending without "
                                "a GPU", captions=gpu_captions)
def _gpu_benchmark(ctx: RunContext) -> dict:
    target = "5,000,000 rows x 18 attributes (Chess3x3 + 16 noise), 10,000 generations in under 60 s on one H200"
    if scaling.present_devices("cuda") == 0:
        from ..backend import cuda_status

        why = cuda_status()[1] or "only numba's CUDA simulator is enabled"
        return {"status": "pending", "reason": f"no real GPU on the machine that ran this ({why}); run "
                                               "`make gpu-check` on a GPU machine", "target": target}
    n = ctx.pick(5_000_000, 5_000_000)
    return {"status": "measured", "target": target, "run": gpu_benchmark(n_samples=n, seed=ctx.seed),
            "throughput": gpu_throughput(n_samples=n, seed=ctx.seed)}
