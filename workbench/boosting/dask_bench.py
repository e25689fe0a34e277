"""GBDT on a Dask cluster, measured: dtlab hist and exact against ``xgboost.dask`` and LightGBM's Dask
classifier on one ``LocalCluster``, and the time per tree against the number of workers (measured, then
modelled).

Every contender is timed as a user calls it on a Dask array already on the
cluster (``fit`` of the Dask estimator, its own conversions -- XGBoost's
``DaskDMatrix`` -- included), in alternation (a, b, c, d, a, b, ...) after one
untimed round, and scored by test AUC on held-out rows.  The cluster is worker
processes with one thread each.

The scaling model: a fit's wall time is the workers' compute (the slowest
part's seconds per round, summed), the communication (each round's wall time
beyond its slowest part) and the client's own work (the rest: summing
histograms, scans, decisions).  Compute is modelled as one worker's divided by
``W`` (the rows, or columns, split evenly), communication and the client's
work as ``a + b W`` (one more message, one more histogram to add per worker),
fitted to the measured worker counts; the error at the measured points is
reported with the curve, drawn as modelled beyond them.
"""

from __future__ import annotations

import statistics
import time
from typing import Any, Sequence

import numpy as np

from dtlab.boosting.datasets import holdout_split, synthetic

__all__ = ["ScalingModel", "dask_contenders", "dask_scaling", "dask_vs_peers"]


#: The entries of a dtlab fit's ``dask_stats_`` the benchmark keeps with each timed run.
STATS_KEPT = ("loop", "round_seconds", "work_seconds", "exchange_seconds", "round_trips", "bytes_received")


def _auc(y, p) -> float:
    from sklearn.metrics import roc_auc_score

    return float(roc_auc_score(y, p))


def dask_contenders(n_estimators: int, max_depth: int, learning_rate: float = 0.3, max_bins: int = 256):
    """``{label: fit(client, Xd, yd) -> predict_proba(X) callable}``: dtlab hist and exact, XGBoost's and
    LightGBM's Dask estimators where installed, the same depth, rounds, learning rate and bins."""
    from dtlab.boosting import GBDTClassifier

    def dtlab(split_method):
        def fit(client, Xd, yd):
            m = GBDTClassifier(n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate,
                               split_method=split_method, max_bins=max_bins, executor=client).fit(Xd, yd)
            return lambda X: m.predict_proba(X)[:, 1], m

        return fit

    out = {"dtlab hist": dtlab("hist"), "dtlab exact": dtlab("exact")}
    try:
        import xgboost.dask as xd

        def xgb(client, Xd, yd):
            m = xd.DaskXGBClassifier(n_estimators=n_estimators, max_depth=max_depth, learning_rate=learning_rate,
                                     tree_method="hist", max_bin=max_bins, reg_lambda=1.0, min_child_weight=1.0)
            m.client = client
            m.fit(Xd, yd)
            return lambda X: m.get_booster().inplace_predict(X), m

        out["xgboost.dask hist"] = xgb
    except ImportError:
        pass
    try:
        import lightgbm as lgb

        def lgbm(client, Xd, yd):
            m = lgb.DaskLGBMClassifier(client=client, n_estimators=n_estimators, max_depth=max_depth,
                                       num_leaves=2 ** max_depth, learning_rate=learning_rate, max_bin=max_bins - 1,
                                       reg_lambda=1.0, min_child_weight=1.0, min_child_samples=1, verbose=-1)
            m.fit(Xd, yd)
            local = m.to_local()
            return lambda X: local.predict_proba(X)[:, 1], m

        out["lightgbm.dask"] = lgbm
    except ImportError:
        pass
    return out


def dask_vs_peers(n_samples: int, n_features: int = 28, n_estimators: int = 40, max_depth: int = 6,
                  n_workers: int = 2, repeats: int = 3, contenders: Sequence[str] | None = None,
                  seed: int = 0) -> dict[str, Any]:
    """Time and test AUC of each contender on one ``LocalCluster`` (``n_workers`` processes x 1 thread).

    Returns
    -------
    dict with ``rows``, ``params`` and ``runs``: ``{label: {"seconds": [...], "median", "auc"}}`` (dtlab's
    runs also ``"dask_stats"``: the :data:`STATS_KEPT` of each timed fit)
    """
    import dask.array as da

    from dtlab.distributed.cluster import local_cluster

    X, y = synthetic(n_samples + n_samples // 4, n_features, seed=seed)
    X_train, y_train, X_test, y_test = holdout_split(X, y, fraction=0.2)
    made = dask_contenders(n_estimators, max_depth)
    labels = [k for k in made if contenders is None or k in contenders]
    runs = {k: {"seconds": []} for k in labels}
    chunk = -(-X_train.shape[0] // (4 * n_workers))
    with local_cluster(n_workers=n_workers, threads_per_worker=1, processes=True) as client:
        Xd = da.from_array(X_train, chunks=(chunk, -1)).persist()
        yd = da.from_array(y_train, chunks=chunk).persist()
        for round_index in range(repeats + 1):  # round 0: warm-up (JIT compilation on the workers), untimed
            for k in labels:
                start = time.perf_counter()
                proba, model = made[k](client, Xd, yd)
                seconds = time.perf_counter() - start
                if round_index:
                    runs[k]["seconds"].append(seconds)
                    stats = getattr(model, "dask_stats_", None)
                    if stats is not None:  # where dtlab's time went: the loop, rounds, own work, exchanges
                        runs[k].setdefault("dask_stats", []).append(
                            {q: stats[q] for q in STATS_KEPT if q in stats} | {"seconds": seconds})
                runs[k]["auc"] = _auc(y_test, proba(X_test))
    for k in labels:
        runs[k]["median"] = statistics.median(runs[k]["seconds"])
    return {"rows": int(X_train.shape[0]), "n_features": n_features, "n_workers": n_workers,
            "threads_per_worker": 1, "repeats": repeats,
            "params": {"n_estimators": n_estimators, "max_depth": max_depth, "learning_rate": 0.3, "max_bins": 256},
            "runs": runs}


class ScalingModel:
    """Seconds of a fit on ``W`` workers: ``compute_1 / W + (a + b W)`` (see the module docstring).

    Parameters
    ----------
    compute_1 : float, the workers' compute seconds with one worker
    a, b : float, communication and client seconds ``a + b W``
    """

    def __init__(self, compute_1: float, a: float, b: float):
        self.compute_1, self.a, self.b = compute_1, a, b

    @classmethod
    def fit(cls, measured: list[dict]) -> "ScalingModel":
        """From measured fits: ``{"workers", "seconds", "work_seconds"}`` (one with 1 worker at least)."""
        one = [m for m in measured if m["workers"] == 1]
        compute_1 = float(np.median([m["work_seconds"] for m in one]))
        w = np.array([m["workers"] for m in measured], float)
        rest = np.array([m["seconds"] - m["work_seconds"] for m in measured])
        b, a = np.polyfit(w, rest, 1) if np.ptp(w) > 0 else (0.0, float(rest.mean()))
        return cls(compute_1, float(a), float(max(b, 0.0)))

    def seconds(self, n_workers: float) -> float:
        return self.compute_1 / n_workers + self.a + self.b * n_workers


def dask_scaling(n_samples: int, n_features: int = 28, n_estimators: int = 40, max_depth: int = 6,
                 measured_workers: Sequence[int] = (1, 2), modelled_workers: Sequence[int] = (4, 8, 16),
                 split_methods: Sequence[str] = ("hist", "exact"), repeats: int = 2, processes: bool = True,
                 seed: int = 0):
    """Time per tree of dtlab on ``W`` worker processes (1 thread each; ``processes=False``: threads of this
    process, faster to start): measured, then modelled.

    Returns
    -------
    dict: ``{split_method: {"measured": [{"workers", "seconds", "work_seconds", "per_tree", "level_bytes"}],
    "modelled": [{"workers", "per_tree"}], "fit_error": max relative error at the measured points}}``
    """
    import dask.array as da

    from dtlab.boosting import GBDTClassifier
    from dtlab.distributed.cluster import local_cluster

    X, y = synthetic(n_samples, n_features, seed=seed)
    out: dict[str, Any] = {}
    measured: dict[str, list] = {m: [] for m in split_methods}
    for w in measured_workers:
        chunk = -(-n_samples // (4 * w))
        with local_cluster(n_workers=w, threads_per_worker=1, processes=processes) as client:
            Xd, yd = da.from_array(X, chunks=(chunk, -1)).persist(), da.from_array(y, chunks=chunk).persist()
            for method in split_methods:
                runs = []
                for r in range(repeats + 1):
                    m = GBDTClassifier(n_estimators=n_estimators, max_depth=max_depth, split_method=method,
                                       executor=client)
                    start = time.perf_counter()
                    m.fit(Xd, yd)
                    if r:
                        runs.append((time.perf_counter() - start, m.dask_stats_))
                seconds, stats = sorted(runs, key=lambda t: t[0])[len(runs) // 2]
                measured[method].append({"workers": w, "seconds": seconds, "work_seconds": stats["work_seconds"],
                                         "round_seconds": stats["round_seconds"], "per_tree": seconds / n_estimators,
                                         "level_bytes": _bytes_per_level(stats["level_bytes"], n_estimators)})
    for method in split_methods:
        model = ScalingModel.fit(measured[method])
        errors = [abs(model.seconds(m["workers"]) - m["seconds"]) / m["seconds"] for m in measured[method]]
        out[method] = {"measured": measured[method], "fit_error": float(max(errors)),
                       "model": {"compute_1": model.compute_1, "a": model.a, "b": model.b},
                       "modelled": [{"workers": w, "per_tree": model.seconds(w) / n_estimators}
                                    for w in modelled_workers]}
    return {"rows": n_samples, "n_features": n_features, "n_estimators": n_estimators, "max_depth": max_depth,
            "split_methods": out}


def _bytes_per_level(level_bytes: list, n_trees: int) -> list[float]:
    """Mean bytes per tree at each depth, from ``(depth, bytes)`` entries of a fit."""
    depth = max((d for d, _ in level_bytes), default=-1) + 1
    totals = np.zeros(depth)
    for d, b in level_bytes:
        totals[d] += b
    return (totals / max(n_trees, 1)).tolist()
