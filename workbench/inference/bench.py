"""The inference benchmark: dtlab's ``Forest.predict`` against every peer's own predict, on the same models.

Each contender is timed as a user calls it (:mod:`workbench.inference.peers`):
dtlab's ``Forest(model).predict(X, method=...)`` with its input checks,
missing-value rules and final base score included, against XGBoost
``inplace_predict``, LightGBM ``predict``, scikit-learn ``predict_proba`` and
the compiled engines TL2cgen and lleaves.  Every contender's predictions are
checked against dtlab's first.  Contenders alternate (at least
:data:`~workbench.timing.MIN_RUNS` rounds), per core (one thread each)
and whole machine (every core each); each comparison keeps the spread of the
ratio over the rounds.  "dtlab" in a comparison is ``Forest.predict(X,
method="auto")`` as a user gets it: called once untimed first (the call that
measures the forest's shape and caches its choice, :mod:`dtlab.inference.auto`),
then timed against the peers; the comparison records the method auto chose.
No method is picked from the timed rounds.  The goal (:data:`GOAL`) is judged
by two rules, each on the worst round.
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

import numpy as np

from dtlab.backend import cpu_cores
from dtlab.inference import PARALLEL_MIN_TREE_ROWS, auto
from dtlab.inference.forest import Forest
from workbench.goals import Goal, Rule, worst_round
from workbench.inference.peers import Contender, peer_contenders, scratch_dir
from workbench.timing import MIN_RUNS, comparison, machine_threads, numba_threads, paired_latencies, paired_times

CPU_METHODS = ("traversal", "bitmask", "quickscorer")
#: The timed dtlab contender: ``Forest.predict(X, method="auto")``.
AUTO = "dtlab auto"


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


def auto_contender(forest: Forest) -> Contender:
    """``forest.predict(X, method="auto")``, the call a user makes; the threads are numba's, set around it."""
    return Contender(AUTO, lambda X, t: forest.predict(X, method="auto"))


def auto_choice(forest: Forest, X: np.ndarray) -> str:
    """Call ``forest.predict(X, method="auto")`` once, untimed, as a user's first call, and return its choice.

    That first call measures the forest's shape and caches the method
    (:func:`dtlab.inference.auto.choose`: per shape, dtype and numba threads;
    a batch small enough for the serial kernels is measured on one thread and
    kept by the forest); every later call of this size and thread count runs it.
    """
    forest.predict(X, method="auto")
    dtype = forest.prepare(X[:1]).dtype
    serving = forest._serving_method.get(dtype.char)  # the small-batch path's choice, where it ran
    if serving is not None and X.shape[0] * forest.n_trees < PARALLEL_MIN_TREE_ROWS:
        return serving
    return auto.choose(forest, dtype)  # cached by the call above: read, not measured again


def compare_case(case: str, kind: str, model: Any, X: np.ndarray, *, repeats: int = MIN_RUNS,
                 modes: Sequence[str] = ("per_core", "whole_machine")) -> dict[str, Any]:
    """Every contender on one model: predictions checked, then timed per mode in alternation.

    Returns
    -------
    dict: ``case, kind, n_rows, n_trees, max_depth, compile_seconds`` ({peer: s}), ``skipped`` ({peer:
    why}), ``max_abs_difference`` ({contender: largest |score - dtlab's|}), ``modes`` ({mode: {"threads",
    "seconds" ({contender: median}), "tree_rows_per_second", "auto_method"}}), ``comparisons``
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
            ours = dtlab_contenders(forest)  # every method checked (untimed); only auto's call is timed
            reference = ours[0].scores(X, 1)
            check_rows = X[:5_000]
            out["max_abs_difference"] = {c.name: check_predictions(reference[:5_000], c, check_rows, 1, k)
                                         for c in ours[1:]}
            out["max_abs_difference"].update({c.name: check_predictions(reference, c, X, 1, k) for c in peers})
            out["compile_seconds"] = {c.name: c.compile_seconds for c in peers if c.compile_seconds is not None}
            out["skipped"] = skipped
            mine = auto_contender(forest)
            for mode in modes:
                threads = threads_of[mode]
                with numba_threads(threads):
                    chosen = auto_choice(forest, X)  # made before the timed rounds, as a user's first call
                    everyone = [mine, *peers]
                    times = paired_times([lambda c=c, t=threads: c.predict(X, t) for c in everyone], repeats=repeats)
                medians = {c.name: statistics.median(t) for c, t in zip(everyone, times)}
                out["modes"][mode] = {"threads": threads, "seconds": medians, "auto_method": chosen,
                                      "tree_rows_per_second": {c: n * k / s for c, s in medians.items()}}
                for peer, t in zip(peers, times[1:]):
                    out["comparisons"].append(comparison(
                        peer.name, mode, None, None, threads, threads, dtlab_times=times[0], peer_times=t,
                        case=case, method="auto", auto_choice=chosen, n_rows=int(n), n_trees=int(k),
                        max_depth=int(forest.max_depth)))
        finally:
            for c in peers:
                c.close()
    return out


#: The serving case: rows per call.
BATCHES = (1, 4, 16, 64)


def latency_case(case: str, kind: str, model: Any, X: np.ndarray, *, batches: Sequence[int] = BATCHES,
                 calls: int = 200, rounds: int = MIN_RUNS) -> dict[str, Any]:
    """p50 and p99 seconds per call of batches of ``batches`` rows, per mode, contenders alternating by round.

    The comparison entries of a batch size compare per-round percentiles: ``dtlab_seconds`` and
    ``peer_seconds`` are the medians over the rounds of each side's p50 (``statistic="p50"``) or p99.

    Returns
    -------
    dict: ``case, kind, n_trees, max_depth, batches`` ({rows: {mode: {contender: {"p50", "p99"}}}}),
    ``auto_method`` ({rows: {mode: method auto chose}}), ``comparisons``
    """
    forest = Forest(model)
    k = forest.n_trees
    threads_of = {"per_core": 1, "whole_machine": machine_threads()}
    skipped: dict[str, str] = {}
    out: dict[str, Any] = {"case": case, "kind": kind, "n_trees": int(k), "max_depth": int(forest.max_depth),
                           "batches": {}, "auto_method": {}, "comparisons": []}
    with scratch_dir() as tmp:
        from pathlib import Path

        made = peer_contenders(kind, model, X, tuple(sorted(set(threads_of.values()))), Path(tmp), skipped)
        for c in made:  # lleaves is a batch engine (its worker process gets the rows once): no latency peer
            if c.name.startswith("lleaves"):
                c.close()
        peers = [c for c in made if not c.name.startswith("lleaves")]
        try:
            ours = dtlab_contenders(forest)  # every method checked (untimed); only auto's call is timed
            reference = ours[0].scores(X[:256], 1)
            for c in ours[1:] + peers:
                check_predictions(reference, c, X[:256], 1, k)
            out["compile_seconds"] = {c.name: c.compile_seconds for c in peers if c.compile_seconds is not None}
            mine = auto_contender(forest)
            for rows in batches:
                batch = np.ascontiguousarray(X[:rows])
                per_mode, chosen_of = {}, {}
                for mode, threads in threads_of.items():
                    everyone = [mine, *peers]
                    with numba_threads(threads):
                        chosen = chosen_of[mode] = auto_choice(forest, batch)  # before the timed rounds
                        runs = paired_latencies([lambda c=c, b=batch, t=threads: c.predict(b, t) for c in everyone],
                                                calls=calls, rounds=rounds)
                    pct = {c.name: {q: [float(np.percentile(r, int(q[1:]))) for r in rr] for q in ("p50", "p99")}
                           for c, rr in zip(everyone, runs)}
                    per_mode[mode] = {name: {q: statistics.median(v) for q, v in s.items()} for name, s in pct.items()}
                    for q in ("p50", "p99"):
                        for peer in peers:
                            out["comparisons"].append(comparison(
                                peer.name, mode, None, None, threads, threads, dtlab_times=pct[AUTO][q],
                                peer_times=pct[peer.name][q], case=case, batch_rows=int(rows), statistic=q,
                                method="auto", auto_choice=chosen, n_trees=int(k)))
                out["batches"][str(rows)] = per_mode
                out["auto_method"][str(rows)] = chosen_of
        finally:
            for c in peers:
                c.close()
    return out


def goal_summary(comparisons: list[dict[str, Any]]) -> dict[str, Any]:
    """dtlab ahead of every peer over the whole spread? The worst round per peer, and the misses."""
    worst: dict[str, float] = {}
    for c in comparisons:
        worst[c["peer"]] = min(worst.get(c["peer"], np.inf), worst_round(c))
    misses = [{k: c[k] for k in ("case", "peer", "mode", "speedup", "speedup_spread", "method", "auto_choice",
                                 "batch_rows", "statistic") if k in c}
              for c in comparisons if worst_round(c) <= 1.0]
    return {"worst_round_speedup": worst, "goal_met": not misses, "misses": misses}


#: The original goal's ratios: dtlab at least this many times as fast as the peer whose name starts so.
RATIOS = {"XGBoost": 1.5, "scikit-learn": 3.0}


def _ratios(results: dict[str, Any]) -> tuple[bool, str] | None:
    """>= 1.5x XGBoost inplace_predict and >= 3x scikit-learn, each on the worst round of every comparison."""
    worst: dict[str, dict[str, Any]] = {}
    for c in results["comparisons"]:
        for prefix in RATIOS:
            if c["peer"].startswith(prefix) and (prefix not in worst or worst_round(c) < worst_round(worst[prefix])):
                worst[prefix] = c
    if not worst:
        return None
    words = [f"worst round {worst_round(c):.2f}x {c['peer']} ({c.get('case', '?')}, {c['mode'].replace('_', ' ')}"
             + (f", {c['batch_rows']} rows {c['statistic']}" if "batch_rows" in c else "") + f"; goal {RATIOS[p]:g}x)"
             for p, c in worst.items()]
    return all(worst_round(c) >= RATIOS[p] for p, c in worst.items()), "; ".join(words) + _medians_only(results)


def _every_peer(results: dict[str, Any]) -> tuple[bool, str] | None:
    """Ahead of every peer in every round (worst round above 1x), per core and whole machine."""
    if not results["comparisons"]:
        return None
    summary = goal_summary(results["comparisons"])
    worst = ", ".join(f"{p} {w:.2f}x" for p, w in sorted(summary["worst_round_speedup"].items(), key=lambda i: i[1]))
    return summary["goal_met"], (f"worst round per peer: {worst}" + (
        f"; at or below 1x in {len(summary['misses'])} of {len(results['comparisons'])} comparisons"
        if summary["misses"] else "") + _medians_only(results))


def _medians_only(results: dict[str, Any]) -> str:
    """A note where a run recorded medians only (before the spreads): its verdict reads the medians."""
    return ("" if all("speedup_spread" in c for c in results["comparisons"])
            else "; judged on medians: this run recorded no spread")


#: The inference benchmarks' goal: the issue's ratios and the every-peer rule, judged apart.
GOAL = Goal(
    statement="dtlab's Forest.predict (method='auto', its choice made before the timed rounds) at least 1.5x XGBoost "
              "inplace_predict and 3x scikit-learn, and ahead of every peer, in every round (the worst round "
              "judges), per core and whole machine, with the same predictions",
    rules=(Rule("ratios", ">= 1.5x XGBoost inplace_predict and >= 3x scikit-learn on the worst round", _ratios),
           Rule("every peer", "ahead of every peer (above 1x) in every round", _every_peer)),
    history=(("2026-11-30", "best dtlab CPU method >= 1.5x XGBoost inplace_predict and >= 3x scikit-learn predict, "
                            "per core and whole machine (judged on the median ratio)",
              "the issue's goal, first set (486631b)"),
             ("2026-12-01", "dtlab's best CPU method ahead of every peer in every round, per core and whole machine, "
                            "same predictions",
              "replaced the ratios when TL2cgen and lleaves joined (4d31477); the change was not stated"),
             ("2026-12-04", "both: the ratios (judged on the worst round) and ahead of every peer in every round, "
                            "each judged apart; dtlab is Forest.predict(method='auto') chosen before the timed rounds",
              "an audit found the silent change and a best-of-three dtlab picked from the timed rounds")))
