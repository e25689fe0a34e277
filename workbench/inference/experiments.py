"""Experiments with tree inference: the patent's example, time against tree shape and threads, decision vs
combining time, and the benchmarks against XGBoost, LightGBM, scikit-learn, TL2cgen and lleaves (throughput
on the standard and the large models, latency of small batches: :mod:`workbench.inference.bench`); figure and
benchmark producers.

Every timing alternates the contenders (:func:`workbench.timing.paired_times`)
and reports medians; thread counts are stated on both sides of every ratio.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import numpy as np

from dtlab.backend import cpu_cores
from dtlab.inference.forest import Forest
from dtlab.inference.reference import bitmask_steps, identifier_string
from dtlab.trees.synthetic import random_grid_tree
from workbench.inference.bench import CPU_METHODS, GOAL
from workbench.inference.patent import patent_example
from workbench.inference.plots import benchmark_captions, figure_captions
from workbench.registry import RunContext, register_benchmark, register_figure
from workbench.timing import load_average, machine_threads, numba_threads, paired_times


def _progress(iterable, enabled: bool, desc: str):
    if not enabled:
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, leave=False)


# ------------------------------------------------------------------ the patent's example
def patent_tables() -> dict:
    """The Fig. 1 example stepped: per level each decision node's selected identifier, the base, the OR; the AND.

    Returns
    -------
    dict with ``levels`` (list of {"selected": [(node, string)], "base", "or"}), ``and``, ``class``,
    ``n_leaves``; identifiers as the patent prints them (leftmost leaf first).
    """
    tree, x = patent_example()
    steps = bitmask_steps(Forest(tree).ensemble.forest, 0, x)
    s = lambda bits: identifier_string(bits, 16)  # noqa: E731
    return {"levels": [{"selected": [(int(n), s(v)) for n, v in sorted(t["selected"].items())],
                        "base": s(t["base"]), "or": s(t["or"])} for t in steps["levels"]],
            "and": s(steps["and"]), "class": int(tree.value[steps["leaf"], 0]), "n_leaves": 16, "x": x.tolist()}


# ------------------------------------------------------------------ shapes and threads
def random_forest_of_depth(depth: int, n_trees: int, n_features: int, seed: int = 0, p_split: float = 1.0):
    """``n_trees`` random trees of depth ``depth`` (complete for ``p_split=1``) with thresholds at normal quantiles."""
    rng = np.random.default_rng(seed)
    grid = np.quantile(rng.normal(size=4096), np.linspace(0.02, 0.98, 49))
    return Forest([random_grid_tree(rng, n_features, depth, grid, p_split=p_split) for _ in range(n_trees)],
                  combine="sum")


def random_rows(n_rows: int, n_features: int, missing: float = 0.0, seed: int = 0) -> np.ndarray:
    """Standard normal rows, float32 (n_rows, n_features), with a share ``missing`` of the entries NaN (seeded)."""
    if not 0.0 <= missing <= 1.0:
        raise ValueError(f"missing must be a share in [0, 1], got {missing}")
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X


def time_vs_depth(depths: Sequence[int] = (2, 4, 6, 8, 10, 12), n_trees: int = 20, n_rows: int = 20_000,
                  n_features: int = 28, methods: Sequence[str] = CPU_METHODS, threads: int = 1,
                  repeats: int = 3, seed: int = 0, progress: bool = False, missing: float = 0.0) -> list[dict]:
    """Nanoseconds per tree and row of each method against depth (complete random trees), on ``threads``,
    rows with a share ``missing`` of their entries NaN.

    Returns
    -------
    list of dict: ``depth``, ``nodes_per_tree``, ``method``, ``ns_per_tree_row``, ``seconds``, ``threads``.
    """
    X = random_rows(n_rows, n_features, missing, seed)
    rows = []
    with numba_threads(threads):
        for depth in _progress(depths, progress, "depths"):
            forest = random_forest_of_depth(depth, n_trees, n_features, seed + depth)
            Xp = forest.prepare(X)
            times = paired_times([lambda m=m, f=forest, x=Xp: f.raw_sum(x, m) for m in methods], repeats=repeats)
            for m, t in zip(methods, times):
                sec = statistics.median(t)
                rows.append({"depth": depth, "nodes_per_tree": forest.ensemble.forest.n_nodes / n_trees,
                             "method": m, "seconds": sec, "ns_per_tree_row": sec / (n_rows * n_trees) * 1e9,
                             "threads": threads})
    return rows


def throughput_vs_threads(depth: int = 8, n_trees: int = 50, n_rows: int = 100_000, n_features: int = 28,
                          methods: Sequence[str] = CPU_METHODS, repeats: int = 3, seed: int = 0,
                          progress: bool = False, missing: float = 0.0, max_threads: int | None = None) -> list[dict]:
    """Tree-rows per second of each method with 1 .. ``max_threads`` (default: all) numba threads, rows with a
    share ``missing`` of their entries NaN.

    Returns
    -------
    list of dict: ``threads``, ``method``, ``depth``, ``tree_rows_per_second``.
    """
    forest = random_forest_of_depth(depth, n_trees, n_features, seed)
    X = forest.prepare(random_rows(n_rows, n_features, missing, seed))
    most = machine_threads() if max_threads is None else max(1, min(int(max_threads), machine_threads()))
    rows = []
    for threads in _progress(range(1, most + 1), progress, "threads"):
        with numba_threads(threads):
            times = paired_times([lambda m=m: forest.raw_sum(X, m) for m in methods], repeats=repeats)
        for m, t in zip(methods, times):
            rows.append({"threads": threads, "method": m, "depth": depth,
                         "tree_rows_per_second": n_rows * n_trees / statistics.median(t)})
    return rows


def decision_vs_combining(depths: Sequence[int] = (4, 6, 8), n_rows: int = 4096, nodes_per_task: int = 4,
                          repeats: int = 5, seed: int = 0, progress: bool = False) -> list[dict]:
    """The patent's T_D vs T_T, measured: decision and combining seconds per row for each thread assignment.

    One complete random tree per depth; the tasks of each assignment run in a
    ``prange`` over all numba threads.
    """
    from workbench.inference.assignment import ASSIGNMENTS, timed_phases

    rows = []
    for depth in _progress(depths, progress, "depths"):
        forest = random_forest_of_depth(depth, 1, 8, seed + depth)
        X = forest.prepare(np.random.default_rng(seed).normal(size=(n_rows, 8)))
        for assignment in ASSIGNMENTS:
            r = timed_phases(forest, X, 0, assignment, nodes_per_task, repeats)
            rows.append({"depth": depth, "assignment": assignment, "n_tasks": r["n_tasks"],
                         "decide_ns_per_row": r["decide_seconds"] / n_rows * 1e9,
                         "combine_ns_per_row": r["combine_seconds"] / n_rows * 1e9,
                         "threads": machine_threads()})
    return rows


# ------------------------------------------------------------------ the benchmarks against the peers
#: Rows predicted and rows trained on, by scale: the standard cases (issue #11: 10^6 x 28, 100 trees).
BENCH = {"small": dict(n_rows=200_000, n_train=20_000, n_features=28),
         "paper": dict(n_rows=1_000_000, n_train=100_000, n_features=28)}
#: Cases: name -> (model kind, trees, depth, LightGBM leaves).  The standard ones: 100 trees of depth 6 and 8.
STANDARD_CASES = {f"{kind} depth {d}": (kind, 100, d, None) for d in (6, 8) for kind in ("xgboost", "lightgbm",
                                                                                          "sklearn")}
#: Layouts past the L2 cache: 500 trees of depth 10 (2,047 nodes each) and LightGBM's leaf-wise trees of 1,023
#: leaves (no depth bound).
LARGE_CASES = {"xgboost 500 trees depth 10": ("xgboost", 500, 10, None),
               "lightgbm 500 trees depth 10": ("lightgbm", 500, 10, None),
               "lightgbm 1023 leaves": ("lightgbm", 100, None, 1023)}
LARGE = {"small": dict(n_rows=20_000, n_train=100_000, n_features=28),
         "paper": dict(n_rows=200_000, n_train=200_000, n_features=28)}
#: The serving case: the standard depth-8 models predicted 1-64 rows at a time.
LATENCY_CASES = {"xgboost depth 8": ("xgboost", 100, 8, None), "lightgbm depth 8": ("lightgbm", 100, 8, None)}


def run_cases(cases: dict, size: dict, *, repeats: int = 5, seed: int = 0, latency: bool = False,
              progress: bool = False) -> dict:
    """:func:`~workbench.inference.bench.compare_case` (or, ``latency``, :func:`.bench.latency_case`)
    on each case's model, trained on ``size["n_train"]`` rows, predicting ``size["n_rows"]`` other rows.

    Returns
    -------
    dict: ``cases`` ({name: case result}), ``comparisons`` (all cases'), ``n_rows``, ``n_features``, the
    every-peer summary (:func:`~workbench.inference.bench.goal_summary`) and ``verdicts`` (each rule of
    :data:`~workbench.inference.bench.GOAL` on this run)
    """
    from workbench.inference.bench import compare_case, goal_summary, latency_case, train_model

    X = np.random.default_rng(seed + 1).normal(size=(size["n_rows"], size["n_features"])).astype(np.float32)
    out: dict[str, Any] = {"n_rows": size["n_rows"], "n_features": size["n_features"], "n_train": size["n_train"],
                           "cases": {}, "comparisons": []}
    for name, (kind, n_trees, depth, leaves) in _progress(cases.items(), progress, "cases"):
        model = train_model(kind, size["n_train"], size["n_features"], seed, n_trees=n_trees, depth=depth,
                            leaves=leaves)
        result = (latency_case(name, kind, model, X, rounds=repeats) if latency
                  else compare_case(name, kind, model, X, repeats=repeats))
        out["cases"][name] = result
        out["comparisons"] += result["comparisons"]
    out.update(goal_summary(out["comparisons"]))
    return {**out, "verdicts": GOAL.judge(out)}


# ------------------------------------------------------------------ producers
#: The static throughput-against-threads figure (``inference_threads``): its forest and its rows by scale.
THREAD_FOREST = {"depth": 8, "n_trees": 50}
THREAD_ROWS = {"small": 100_000, "paper": 1_000_000}


@register_figure("inference_patent", technique="inference", captions=figure_captions,
                 description="JP5863426B2 Fig. 1 stepped: per-level OR table and final AND for 16 leaves")
def _patent_figure(ctx: RunContext) -> dict:
    from workbench.inference.plots import plot_patent_table

    tables = patent_tables()
    ctx.savefig(plot_patent_table(tables), "inference_patent_example")
    return {"and": tables["and"], "class": tables["class"]}


@register_figure("inference_shapes", technique="inference", captions=figure_captions,
                 description="Time per tree-row against depth / nodes per tree, throughput against threads, "
                             "decision vs combining time of the patent's thread assignments")
def _shapes_figure(ctx: RunContext) -> dict:
    from workbench.inference.plots import plot_phases, plot_threads, plot_time_vs_depth

    load_before = load_average()
    depth_rows = time_vs_depth(n_rows=ctx.pick(20_000, 200_000), seed=ctx.seed)
    thread_rows = throughput_vs_threads(**THREAD_FOREST, n_rows=ctx.pick(THREAD_ROWS["small"], THREAD_ROWS["paper"]),
                                        seed=ctx.seed)
    phase_rows = decision_vs_combining(seed=ctx.seed)
    ctx.savefig(plot_time_vs_depth(depth_rows), "inference_time_vs_depth")
    ctx.savefig(plot_threads(thread_rows), "inference_threads")
    ctx.savefig(plot_phases(phase_rows), "inference_phases")
    return {"time_vs_depth": depth_rows, "threads": thread_rows, "phases": phase_rows,
            "load_average_before": load_before, "load_average_after": load_average()}


def _bench(ctx: RunContext, figure: str, cases: dict, size: dict, plot, latency: bool = False) -> dict:
    load_before = load_average()
    result = run_cases(cases, size, repeats=ctx.pick(5, 7), seed=ctx.seed, latency=latency)
    result.update(figure=figure, cores=cpu_cores(), goal=GOAL.statement, load_average_before=load_before,
                  load_average_after=load_average())
    ctx.savefig(plot(result), figure)
    return result


@register_benchmark("inference_vs_peers", technique="inference", captions=benchmark_captions, goal=GOAL,
                    description="100 trees of depth 6 and 8 on 28 features: Forest.predict vs XGBoost "
                                "inplace_predict, LightGBM predict, scikit-learn random forest, TL2cgen and "
                                "lleaves (same models, same predictions)")
def _benchmark(ctx: RunContext) -> dict:
    from workbench.inference.plots import plot_benchmark

    return _bench(ctx, "inference_benchmark", STANDARD_CASES, BENCH[ctx.scale], plot_benchmark)


@register_benchmark("inference_large", technique="inference", captions=benchmark_captions, goal=GOAL,
                    description="Layouts past the L2 cache: 500 trees of depth 10 (XGBoost, LightGBM) and "
                                "LightGBM trees of 1,023 leaves: Forest.predict vs the libraries, TL2cgen, lleaves")
def _large_benchmark(ctx: RunContext) -> dict:
    from workbench.inference.plots import plot_benchmark

    return _bench(ctx, "inference_large", LARGE_CASES, LARGE[ctx.scale], plot_benchmark)


@register_benchmark("inference_latency", technique="inference", captions=benchmark_captions, goal=GOAL,
                    description="Serving: p50 and p99 seconds per call of 1-64 rows, depth-8 XGBoost and "
                                "LightGBM models: Forest.predict vs XGBoost, LightGBM and TL2cgen")
def _latency_benchmark(ctx: RunContext) -> dict:
    from workbench.inference.plots import plot_latency

    return _bench(ctx, "inference_latency", LATENCY_CASES, BENCH[ctx.scale], plot_latency, latency=True)
