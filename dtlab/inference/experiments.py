"""Experiments with tree inference: the patent's example, time against tree shape and threads, decision vs
combining time, and the benchmark against XGBoost, LightGBM and scikit-learn; figure and benchmark producers.

Every timing alternates the contenders (:func:`dtlab.experiments.timing.paired_times`)
and reports medians; thread counts are stated on both sides of every ratio.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import numpy as np

from ..backend import cpu_cores
from ..experiments.registry import RunContext, register_benchmark, register_figure
from ..experiments.timing import comparison, load_average, machine_threads, numba_threads, paired_times
from ..trees.synthetic import random_grid_tree
from .forest import Forest
from .patent import patent_example
from .plots import benchmark_captions, figure_captions
from .reference import bitmask_steps, identifier_string

CPU_METHODS = ("traversal", "bitmask", "quickscorer")
#: Methods the benchmark times on 2% of the rows (they evaluate every node or every false test).
SUBSET_METHODS = ("bitmask", "quickscorer")
#: Benchmark sizes: rows predicted, rows trained on, trees, features (issue #11: 10^6 x 28, 100 trees).
BENCH = {"small": dict(n_rows=200_000, n_train=20_000, n_trees=100, n_features=28),
         "paper": dict(n_rows=1_000_000, n_train=100_000, n_trees=100, n_features=28)}


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


def time_vs_depth(depths: Sequence[int] = (2, 4, 6, 8, 10, 12), n_trees: int = 20, n_rows: int = 20_000,
                  n_features: int = 28, methods: Sequence[str] = CPU_METHODS, threads: int = 1,
                  repeats: int = 3, seed: int = 0, progress: bool = False) -> list[dict]:
    """Nanoseconds per tree and row of each method against depth (complete random trees), on ``threads``.

    Returns
    -------
    list of dict: ``depth``, ``nodes_per_tree``, ``method``, ``ns_per_tree_row``, ``seconds``, ``threads``.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_rows, n_features)).astype(np.float32)
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
                          progress: bool = False) -> list[dict]:
    """Tree-rows per second of each method with 1 .. all numba threads."""
    forest = random_forest_of_depth(depth, n_trees, n_features, seed)
    X = forest.prepare(np.random.default_rng(seed).normal(size=(n_rows, n_features)).astype(np.float32))
    rows = []
    for threads in _progress(range(1, machine_threads() + 1), progress, "threads"):
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
    from .assignment import ASSIGNMENTS, timed_phases

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


# ------------------------------------------------------------------ the benchmark against the peers
def _peer_models(depth: int, n_train: int, n_trees: int, n_features: int, seed: int):
    """The same task learnt by XGBoost, LightGBM and a scikit-learn random forest (``depth``, ``n_trees``)."""
    import lightgbm as lgb
    import xgboost as xgb
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train, n_features)).astype(np.float32)
    y = (X[:, :6].sum(axis=1) + X[:, 6] * X[:, 7] + rng.normal(size=n_train) > 0).astype(int)
    booster = xgb.train({"objective": "binary:logistic", "max_depth": depth, "eta": 0.1, "seed": seed,
                         "nthread": cpu_cores()}, xgb.DMatrix(X, y), n_trees)
    light = lgb.train({"objective": "binary", "max_depth": depth, "num_leaves": 2 ** depth, "verbose": -1,
                       "seed": seed, "min_data_in_leaf": 5}, lgb.Dataset(X, y), n_trees)
    forest = RandomForestClassifier(n_trees, max_depth=depth, random_state=seed, n_jobs=cpu_cores()).fit(X, y)
    return booster, light, forest


def _set_threads(booster, light_params: dict, rf, n: int) -> None:
    booster.set_param({"nthread": n})
    light_params["num_threads"] = n
    rf.set_params(n_jobs=n)


def benchmark_vs_peers(scale: str = "small", depths: Sequence[int] = (6, 8), repeats: int = 5, seed: int = 0,
                       progress: bool = False) -> dict:
    """dtlab's CPU methods against XGBoost ``inplace_predict``, LightGBM ``predict`` and scikit-learn's random
    forest ``predict_proba`` on the same models, per core and whole machine.

    Predictions of every method are checked first against the peer's (1e-6
    relative, on 5 000 rows).  The traversal is timed on all rows, alternating
    with the peer; bitmask and QuickScorer (10-100x slower: they evaluate every
    node / every false test) on 2% of the rows, and again on all rows only
    if they come within 2x of the traversal.  Speedups are peer seconds / dtlab
    seconds of the fastest method timed on all rows.
    """
    size = BENCH[scale]
    n, k = size["n_rows"], size["n_trees"]
    X = np.random.default_rng(seed + 1).normal(size=(n, size["n_features"])).astype(np.float32)
    out: dict[str, Any] = {"n_rows": n, "n_trees": k, "n_features": size["n_features"], "cases": {},
                           "comparisons": []}
    for depth in _progress(depths, progress, "depths"):
        booster, light, rf = _peer_models(depth, size["n_train"], k, size["n_features"], seed)
        forests = {"xgboost": Forest(booster), "lightgbm": Forest(light), "sklearn": Forest(rf)}
        lparams: dict = {}
        peers = {"xgboost": ("XGBoost inplace_predict (margin)",
                             lambda b=booster: b.inplace_predict(X, predict_type="margin")),
                 "lightgbm": ("LightGBM predict (raw_score)",
                              lambda b=light, p=lparams: b.predict(X, raw_score=True, **p)),
                 "sklearn": ("scikit-learn RandomForestClassifier.predict_proba", lambda r=rf: r.predict_proba(X))}
        for name, forest in forests.items():
            expected = peers[name][1]()
            for m in CPU_METHODS:
                got = forest.predict(X[:5_000], method=m)
                np.testing.assert_allclose(got, expected[:5_000], rtol=1e-6, atol=1e-6 * k)
            case: dict[str, Any] = {}
            for mode, threads in (("per_core", 1), ("whole_machine", machine_threads())):
                _set_threads(booster, lparams, rf, threads)
                with numba_threads(threads):
                    Xp = forest.prepare(X)
                    # the methods that evaluate every node are 10-100x slower: timed on 2% of the rows
                    small = Xp[: max(n // 50, 1)]
                    rate = {m: small.shape[0] * k / statistics.median(t) for m, t in zip(
                        SUBSET_METHODS, paired_times([lambda m=m, f=forest, s=small: f.raw_sum(s, m)
                                                      for m in SUBSET_METHODS], repeats=max(repeats // 2, 1)))}
                    fns = [peers[name][1], lambda f=forest, x=Xp: f.raw_sum(x, "traversal")]
                    best = max(rate, key=rate.get)
                    if rate[best] > 0.5 * n * k / statistics.median(paired_times(fns[1:], repeats=1, warmup=0)[0]):
                        fns.append(lambda m=best, f=forest, x=Xp: f.raw_sum(x, m))  # a contender: full size
                    times = [statistics.median(t) for t in paired_times(fns, repeats=repeats)]
                full = {"traversal": times[1], **({best: times[2]} if len(times) > 2 else {})}
                winner = min(full, key=full.get)
                case[mode] = {"threads": threads, "peer_seconds": times[0],
                              "peer_tree_rows_per_second": n * k / times[0],
                              "traversal_tree_rows_per_second": n * k / times[1],
                              **{f"{m}_tree_rows_per_second": r for m, r in rate.items()},
                              "subset_rows": int(small.shape[0]), "best_method": winner}
                out["comparisons"].append(comparison(peers[name][0], mode, full[winner], times[0], threads,
                                                     threads, case=f"{name} depth {depth}", method=winner,
                                                     n_rows=n, n_trees=k))
            out["cases"][f"{name}_depth{depth}"] = case
    return out


def goals(result: dict) -> dict:
    """The issue's speed goals read from a :func:`benchmark_vs_peers` result."""
    def speedups(peer_prefix):
        return [c["speedup"] for c in result["comparisons"] if c["peer"].startswith(peer_prefix)]

    xgb, skl = speedups("XGBoost"), speedups("scikit-learn")
    return {"xgboost_min_speedup": min(xgb), "sklearn_min_speedup": min(skl),
            "goal_met_xgboost_1_5x": bool(min(xgb) >= 1.5), "goal_met_sklearn_3x": bool(min(skl) >= 3.0)}


# ------------------------------------------------------------------ producers
@register_figure("inference_patent", technique="inference", captions=figure_captions,
                 description="JP5863426B2 Fig. 1 stepped: per-level OR table and final AND for 16 leaves")
def _patent_figure(ctx: RunContext) -> dict:
    from .plots import plot_patent_table

    tables = patent_tables()
    ctx.savefig(plot_patent_table(tables), "inference_patent_example")
    return {"and": tables["and"], "class": tables["class"]}


@register_figure("inference_shapes", technique="inference", captions=figure_captions,
                 description="Time per tree-row against depth / nodes per tree, throughput against threads, "
                             "decision vs combining time of the patent's thread assignments")
def _shapes_figure(ctx: RunContext) -> dict:
    from .plots import plot_phases, plot_threads, plot_time_vs_depth

    load_before = load_average()
    depth_rows = time_vs_depth(n_rows=ctx.pick(20_000, 200_000), seed=ctx.seed)
    thread_rows = throughput_vs_threads(n_rows=ctx.pick(100_000, 1_000_000), seed=ctx.seed)
    phase_rows = decision_vs_combining(seed=ctx.seed)
    ctx.savefig(plot_time_vs_depth(depth_rows), "inference_time_vs_depth")
    ctx.savefig(plot_threads(thread_rows), "inference_threads")
    ctx.savefig(plot_phases(phase_rows), "inference_phases")
    return {"time_vs_depth": depth_rows, "threads": thread_rows, "phases": phase_rows,
            "load_average_before": load_before, "load_average_after": load_average()}


@register_benchmark("inference_vs_peers", technique="inference", captions=benchmark_captions,
                    description="100 trees of depth 6 and 8 on 28 features: dtlab CPU methods vs XGBoost "
                                "inplace_predict, LightGBM predict, scikit-learn random forest (same models)")
def _benchmark(ctx: RunContext) -> dict:
    from .plots import plot_benchmark

    load_before = load_average()
    result = benchmark_vs_peers(ctx.scale, repeats=ctx.pick(3, 7), seed=ctx.seed)
    ctx.savefig(plot_benchmark(result), "inference_benchmark")
    return {**result, **goals(result), "cores": cpu_cores(), "load_average_before": load_before,
            "load_average_after": load_average(),
            "goal": "best dtlab CPU method >= 1.5x XGBoost inplace_predict and >= 3x scikit-learn predict, "
                    "per core and whole machine"}
