"""GDT on a real GPU: the H200 target run and the evaluator's throughput and bandwidth (``evolution_gpu``).

On a machine with a GPU, :func:`gpu_benchmark` runs GDT on 5 x 10^6 rows of
Chess3x3 with 16 noise attributes for about a minute (time per generation,
the initial population, and the projected 10,000 generations against the 60 s
target), and :func:`gpu_throughput` times the CUDA evaluator alone
(tree-rows per second and the fraction of the GPU's copy bandwidth).  The host
loop is the compiled one (:mod:`dtlab.evolution.breeding`), so a generation's
host work is a few hundred microseconds beside the kernels.
"""

from __future__ import annotations

import time

import numpy as np

__all__ = ["COPY_BANDWIDTH_BYTES_PER_S", "PAPER_SECONDS", "gpu_benchmark", "gpu_throughput", "recorded_gpu_table"]

#: A device-to-device copy on the project's H200, bytes read plus written per second (../shared/GPU.md).
COPY_BANDWIDTH_BYTES_PER_S = 4.3e12

#: The paper's time for 10,000 generations on 5 x 10^6 rows x 18 attributes, four Tesla P100 (section 4).
PAPER_SECONDS = 480.0


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
    from dtlab.datasets import chess3x3
    from dtlab.evolution.evaluators.cuda import CudaEvaluator
    from dtlab.evolution.individual import pack
    from workbench.evolution.throughput import evolved_population
    from workbench.timing import median_seconds

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
    from dtlab.backend import describe
    from dtlab.datasets import chess3x3
    from dtlab.evolution import GDTClassifier

    X, y = chess3x3(n_samples, noise_attrs, seed=seed)
    start = time.perf_counter()
    clf = GDTClassifier(backend="cuda", n_devices=1, max_generations=10_000, max_stagnation=10_000,
                        random_state=seed,
                        callback=lambda g, rec: time.perf_counter() - start > budget_seconds)
    clf.fit(X, y)
    h = clf.history_
    per_generation = float(np.mean(h.seconds.iloc[1:])) if len(h) > 1 else float("nan")
    # measured when the run reached 10,000 generations within the budget, else projected from the mean
    projected = (float(h.elapsed_s.iloc[-1]) if clf.n_generations_ >= 10_000
                 else float(h.seconds.iloc[0] + 10_000 * per_generation))
    return {"n_samples": n_samples, "n_features": X.shape[1], "generations": int(clf.n_generations_),
            "seconds": float(h.elapsed_s.iloc[-1]), "initial_population_seconds": float(h.seconds.iloc[0]),
            "seconds_per_generation_mean": per_generation,
            "seconds_per_generation_median": float(np.median(h.seconds.iloc[1:])) if len(h) > 1 else float("nan"),
            "projected_10000_generations_seconds": projected, "measured_10000": clf.n_generations_ >= 10_000,
            "target_seconds": 60.0, "paper_seconds_4_p100": PAPER_SECONDS, "meets_target": projected < 60.0,
            "best_size": int(h.best_size.iloc[-1]), "best_accuracy": float(h.best_accuracy.iloc[-1]),
            "gpus": describe().get("gpus")}


#: Words for the recorded entries of ``evolution_gpu``, in the order a table shows them.
_RECORDED_WORDS = {
    "status": "status", "reason": "why", "target": "target", "n_samples": "rows", "n_features": "attributes",
    "generations": "generations run", "seconds_per_generation_median": "seconds per generation (median)",
    "projected_10000_generations_seconds": "10,000 generations (s; projected unless measured)",
    "measured_10000": "10,000 generations measured", "meets_target": "under the 60 s target",
    "paper_seconds_4_p100": "the paper, four Tesla P100 (s)", "best_size": "best tree (nodes)",
    "best_accuracy": "best training accuracy", "tree_rows_per_s": "evaluator: tree-rows per second",
    "bandwidth_fraction": "evaluator: share of the copy bandwidth", "host_share": "host's share of a generation",
    "gpus": "GPUs",
}


def _text(value) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def recorded_gpu_table(paths):
    """What the first of ``paths`` (``results.json`` files) that records ``evolution_gpu`` says, as a small table.

    Returns a DataFrame with columns ``recorded`` (the quantity) and ``value`` (as text), the file and the
    date of the run first; one row saying that nothing was recorded when no file has the entry.
    """
    import json
    from pathlib import Path

    import pandas as pd

    for path in map(Path, paths):
        if not path.exists():
            continue
        entry = json.loads(path.read_text()).get("benchmarks", {}).get("evolution_gpu")
        if not entry:
            continue
        results = dict(entry.get("results", {}))
        for part in ("run", "throughput"):  # a measured entry keeps the run and the evaluator's timing apart
            if isinstance(results.get(part), dict):
                results.update(results.pop(part))
        gpu_rows = [r for r in results.get("breakdown", []) if str(r.get("evaluator", "")).startswith("GPU")]
        if gpu_rows:
            results["host_share"] = float(gpu_rows[0]["host_share"])
        history = entry.get("history") or [{}]
        rows = [("file", str(path)), ("run", f"{history[-1].get('date', '?')}, code {history[-1].get('commit', '?')}")]
        rows += [(words, _text(results[key])) for key, words in _RECORDED_WORDS.items() if key in results]
        return pd.DataFrame(rows, columns=["recorded", "value"]).set_index("recorded")
    return pd.DataFrame([("evolution_gpu", "nothing recorded: run `make gpu-check` on a GPU machine")],
                        columns=["recorded", "value"]).set_index("recorded")
