"""The inference benchmark: dtlab's ``Forest.predict`` against every peer's own predict, on the same models.

Each contender is timed as a user calls it (:mod:`dtlab.inference.peers`):
dtlab's ``Forest(model).predict(X, method=...)`` with its input checks,
missing-value rules and final base score included, against XGBoost
``inplace_predict``, LightGBM ``predict``, scikit-learn ``predict_proba`` and
the compiled engines TL2cgen and lleaves.  Every contender's predictions are
checked against dtlab's first.  Contenders alternate (at least
:data:`~dtlab.experiments.timing.MIN_RUNS` rounds), per core (one thread each)
and whole machine (every core each); each comparison keeps the spread of the
ratio over the rounds.  "dtlab" in a comparison is dtlab's best CPU method
(the lowest median) of that case and mode.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import numpy as np

from ..backend import cpu_cores
from ..experiments.timing import MIN_RUNS, comparison, machine_threads, numba_threads, paired_latencies, paired_times
from .forest import Forest
from .peers import Contender, peer_contenders, scratch_dir

CPU_METHODS = ("traversal", "bitmask", "quickscorer")
#: A dtlab method joins the full-size timing if, on a 2% screening slice, it runs at least this share of the
#: fastest method's speed (bitmask and QuickScorer evaluate every node or every false test: much slower
#: on deep trees).
SCREEN_SHARE = 0.5


def train_model(kind: str, n_train: int, n_features: int, seed: int, *, n_trees: int, depth: int | None = None,
                leaves: int | None = None) -> Any:
    """One model of ``kind`` ("xgboost", "lightgbm", "sklearn") on a synthetic binary task.

    ``depth`` bounds the trees (XGBoost's and scikit-learn's depth-wise trees, LightGBM with ``num_leaves =
    2^depth``); ``leaves`` grows LightGBM leaf-wise to that many leaves without a depth bound.
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_train, n_features)).astype(np.float32)
    y = (X[:, :6].sum(axis=1) + X[:, 6] * X[:, 7] + rng.normal(size=n_train) > 0).astype(int)
    if kind == "xgboost":
        import xgboost as xgb

        return xgb.train({"objective": "binary:logistic", "max_depth": depth, "eta": 0.1, "seed": seed,
                          "nthread": cpu_cores()}, xgb.DMatrix(X, y), n_trees)
    if kind == "lightgbm":
        import lightgbm as lgb

        shape = {"num_leaves": leaves, "max_depth": -1} if leaves else {"num_leaves": 2 ** depth, "max_depth": depth}
        return lgb.train({"objective": "binary", **shape, "verbose": -1, "seed": seed, "min_data_in_leaf": 5,
                          "num_threads": cpu_cores()}, lgb.Dataset(X, y), n_trees)
    if kind == "sklearn":
        from sklearn.ensemble import RandomForestClassifier

        return RandomForestClassifier(n_trees, max_depth=depth, random_state=seed, n_jobs=cpu_cores()).fit(X, y)
    raise ValueError(f"unknown model kind {kind!r}")


def dtlab_contenders(forest: Forest, methods: Sequence[str] = CPU_METHODS) -> list[Contender]:
    """``Forest.predict(X, method=m)`` for each method; the threads are numba's, set around the timing."""
    return [Contender(f"dtlab {m}", lambda X, t, m=m: forest.predict(X, method=m)) for m in methods]


def check_predictions(reference: np.ndarray, contender: Contender, X: np.ndarray, threads: int,
                      n_trees: int) -> float:
    """The largest |difference| of ``contender``'s scores from ``reference``; raises where they differ by more
    than float32 sums allow (1e-6 relative, 1e-6 per tree absolute)."""
    got = contender.scores(X, threads)
    np.testing.assert_allclose(got, reference, rtol=1e-6, atol=1e-6 * n_trees,
                               err_msg=f"{contender.name} predicts differently from dtlab")
    return float(np.max(np.abs(got - reference))) if len(got) else 0.0


def _screen(contenders: list[Contender], X: np.ndarray, threads: int) -> list[Contender]:
    """dtlab's methods within :data:`SCREEN_SHARE` of the fastest on a 2% slice (one untimed call first)."""
    part = X[: max(X.shape[0] // 50, 64)]
    seconds = [statistics.median(t) for t in paired_times([lambda c=c: c.predict(part, threads)
                                                            for c in contenders], repeats=3)]
    best = min(seconds)
    return [c for c, s in zip(contenders, seconds) if best >= SCREEN_SHARE * s]


def compare_case(case: str, kind: str, model: Any, X: np.ndarray, *, repeats: int = MIN_RUNS,
                 modes: Sequence[str] = ("per_core", "whole_machine")) -> dict[str, Any]:
    """Every contender on one model: predictions checked, then timed per mode in alternation.

    Returns
    -------
    dict: ``case, kind, n_rows, n_trees, max_depth, compile_seconds`` ({peer: s}), ``skipped`` ({peer:
    why}), ``max_abs_difference`` ({contender: largest |score - dtlab's|}), ``modes`` ({mode: {"threads",
    "seconds" ({contender: median}), "tree_rows_per_second", "best_method"}}), ``comparisons``
    """
    forest = Forest(model)
    n, k = X.shape[0], forest.n_trees
    threads_of = {"per_core": 1, "whole_machine": machine_threads()}
    skipped: dict[str, str] = {}
    out: dict[str, Any] = {"case": case, "kind": kind, "n_rows": int(n), "n_trees": int(k),
                           "max_depth": int(forest.max_depth), "comparisons": [], "modes": {}}
    with scratch_dir() as tmp:
        from pathlib import Path

        peers = peer_contenders(kind, model, X, tuple(sorted(set(threads_of.values()))), Path(tmp), skipped)
        try:
            ours = dtlab_contenders(forest)
            reference = ours[0].scores(X, 1)
            check_rows = X[:5_000]
            out["max_abs_difference"] = {c.name: check_predictions(reference[:5_000], c, check_rows, 1, k)
                                         for c in ours[1:]}
            out["max_abs_difference"].update({c.name: check_predictions(reference, c, X, 1, k) for c in peers})
            out["compile_seconds"] = {c.name: c.compile_seconds for c in peers if c.compile_seconds is not None}
            out["skipped"] = skipped
            for mode in modes:
                threads = threads_of[mode]
                with numba_threads(threads):
                    mine = _screen(ours, X, threads)
                    everyone = mine + peers
                    times = paired_times([lambda c=c, t=threads: c.predict(X, t) for c in everyone], repeats=repeats)
                medians = {c.name: statistics.median(t) for c, t in zip(everyone, times)}
                best = min(mine, key=lambda c: medians[c.name])
                best_times = times[everyone.index(best)]
                out["modes"][mode] = {"threads": threads, "seconds": medians, "best_method": best.name,
                                      "tree_rows_per_second": {c: n * k / s for c, s in medians.items()}}
                for peer, t in zip(peers, times[len(mine):]):
                    out["comparisons"].append(comparison(
                        peer.name, mode, None, None, threads, threads, dtlab_times=best_times, peer_times=t,
                        case=case, method=best.name.removeprefix("dtlab "), n_rows=int(n), n_trees=int(k),
                        max_depth=int(forest.max_depth)))
        finally:
            for c in peers:
                c.close()
    return out


#: The serving case: rows per call.
BATCHES = (1, 4, 16, 64)
#: dtlab methods timed per call (bitmask evaluates every node: not a serving method).
LATENCY_METHODS = ("traversal", "quickscorer")


def latency_case(case: str, kind: str, model: Any, X: np.ndarray, *, batches: Sequence[int] = BATCHES,
                 calls: int = 200, rounds: int = MIN_RUNS) -> dict[str, Any]:
    """p50 and p99 seconds per call of batches of ``batches`` rows, per mode, contenders alternating by round.

    The comparison entries of a batch size compare per-round percentiles: ``dtlab_seconds`` and
    ``peer_seconds`` are the medians over the rounds of each side's p50 (``statistic="p50"``) or p99.

    Returns
    -------
    dict: ``case, kind, n_trees, max_depth, batches`` ({rows: {mode: {contender: {"p50", "p99"}}}}),
    ``comparisons``
    """
    forest = Forest(model)
    k = forest.n_trees
    threads_of = {"per_core": 1, "whole_machine": machine_threads()}
    skipped: dict[str, str] = {}
    out: dict[str, Any] = {"case": case, "kind": kind, "n_trees": int(k), "max_depth": int(forest.max_depth),
                           "batches": {}, "comparisons": []}
    with scratch_dir() as tmp:
        from pathlib import Path

        peers = [c for c in peer_contenders(kind, model, X, tuple(sorted(set(threads_of.values()))), Path(tmp),
                                            skipped) if not c.name.startswith("lleaves")]
        try:
            ours = dtlab_contenders(forest, LATENCY_METHODS)
            reference = ours[0].scores(X[:256], 1)
            for c in ours[1:] + peers:
                check_predictions(reference, c, X[:256], 1, k)
            out["compile_seconds"] = {c.name: c.compile_seconds for c in peers if c.compile_seconds is not None}
            for rows in batches:
                batch = np.ascontiguousarray(X[:rows])
                per_mode = {}
                for mode, threads in threads_of.items():
                    everyone = ours + peers
                    with numba_threads(threads):
                        runs = paired_latencies([lambda c=c, b=batch, t=threads: c.predict(b, t) for c in everyone],
                                                calls=calls, rounds=rounds)
                    pct = {c.name: {q: [float(np.percentile(r, int(q[1:]))) for r in rr] for q in ("p50", "p99")}
                           for c, rr in zip(everyone, runs)}
                    per_mode[mode] = {name: {q: statistics.median(v) for q, v in s.items()} for name, s in pct.items()}
                    for q in ("p50", "p99"):
                        best = min(ours, key=lambda c: statistics.median(pct[c.name][q]))
                        for peer in peers:
                            out["comparisons"].append(comparison(
                                peer.name, mode, None, None, threads, threads, dtlab_times=pct[best.name][q],
                                peer_times=pct[peer.name][q], case=case, batch_rows=int(rows), statistic=q,
                                method=best.name.removeprefix("dtlab "), n_trees=int(k)))
                out["batches"][str(rows)] = per_mode
        finally:
            for c in peers:
                c.close()
    return out


def goal_summary(comparisons: list[dict[str, Any]]) -> dict[str, Any]:
    """dtlab ahead of every peer over the whole spread? The worst round per peer, and the misses."""
    worst: dict[str, float] = {}
    for c in comparisons:
        worst[c["peer"]] = min(worst.get(c["peer"], np.inf), c["speedup_spread"][0])
    misses = [{k: c[k] for k in ("case", "peer", "mode", "speedup", "speedup_spread", "method", "batch_rows",
                                 "statistic") if k in c}
              for c in comparisons if c["speedup_spread"][0] <= 1.0]
    return {"worst_round_speedup": worst, "goal_met": not misses, "misses": misses}
