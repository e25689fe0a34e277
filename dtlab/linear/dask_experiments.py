"""The Dask benchmark of TRON (``python -m dtlab bench --only linear_dask``): dtlab's distributed Newton
method against ``dask_ml.linear_model.LogisticRegression`` on one LocalCluster (2 processes x 1 thread).

Both minimise the same objective: dask-ml's ``sum loss + (1/C) w.w / 2`` is LIBLINEAR's ``w.w / 2 + C sum
loss`` divided by C, so the same ``C`` is passed to both (no intercept on either side).  Each contender is
timed as a user calls ``fit`` on Dask arrays already on the cluster, in alternation, after one untimed
round; the objective of each solution is computed in LIBLINEAR's form on the client.  Both are reported at
their default tolerance, and dtlab's tolerance is tightened until its objective is at or below dask-ml's
(the time to the same objective).  a9a and the synthetic sparse set (10^6 x 10^5 at ``--scale paper``).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
import scipy.sparse

from ..experiments.registry import RunContext, register_benchmark
from ..experiments.timing import load_average
from .dask_plots import dask_ml_captions, plot_dask_ml
from .experiments import PAPER_C, load
from .synthetic import make_sparse_classification

#: The synthetic set by scale: the issue's 10^6 x 10^5 at the paper scale.
SYNTHETIC = {"small": dict(n_samples=200_000, n_features=20_000, nnz_per_row=10.0),
             "paper": dict(n_samples=1_000_000, n_features=100_000, nnz_per_row=12.0)}
#: dtlab's tolerances tried in turn until its objective is at or below dask-ml's.
TOLERANCES = (0.1, 0.01, 0.001, 1e-4, 1e-5)


def liblinear_objective(X: Any, y_pm: np.ndarray, w: np.ndarray, C: float) -> float:
    """``w.w / 2 + C sum log(1 + exp(-y x.w))``."""
    return float(0.5 * w @ w + C * np.logaddexp(0.0, -y_pm * np.asarray(X @ w).ravel()).sum())


def _dask_rows(X: Any, n_chunks: int):
    """X as a Dask array of ``n_chunks`` row blocks (CSR blocks stay CSR)."""
    import dask
    import dask.array as da

    step = -(-X.shape[0] // n_chunks)
    blocks = []
    for a in range(0, X.shape[0], step):
        block = X[a:a + step]
        blocks.append(da.from_delayed(dask.delayed(block), shape=block.shape, dtype=np.float64,
                                      meta=block[:0] if scipy.sparse.issparse(block) else np.empty((0, X.shape[1]))))
    return da.concatenate(blocks, axis=0)


def dask_ml_comparison(X: Any, y: np.ndarray, C: float = PAPER_C, repeats: int = 3, n_workers: int = 2) -> dict:
    """Seconds and objective of dtlab (default tolerance, and the tolerance reaching dask-ml's objective)
    and of dask-ml's default solver, each ``fit`` on the same Dask arrays."""
    import dask.array as da

    from ..distributed.cluster import local_cluster
    from .estimators import TronLogisticRegression

    y01 = (np.asarray(y) > 0).astype(np.int64)
    y_pm = np.where(y01 > 0, 1.0, -1.0)
    out: dict[str, Any] = {"rows": int(X.shape[0]), "n_features": int(X.shape[1]), "C": C, "n_workers": n_workers}
    with local_cluster(n_workers=n_workers, threads_per_worker=1, processes=True) as client:
        Xd = _dask_rows(X, 2 * n_workers).persist()
        yd = da.from_array(y01, chunks=(Xd.chunks[0],)).persist()

        def dtlab(tol):
            return lambda: TronLogisticRegression(C=C, tol=tol, executor=client).fit(Xd, yd).coef_[0]

        def dask_ml():
            from dask_ml.linear_model import LogisticRegression

            return np.asarray(LogisticRegression(C=C, fit_intercept=False).fit(Xd, yd).coef_).ravel()

        contenders = {"dtlab TRON (tol 0.1)": dtlab(0.1)}
        try:
            import dask_ml  # noqa: F401

            contenders["dask-ml LogisticRegression (admm)"] = dask_ml
        except ImportError:
            out["dask_ml"] = "not installed"
        runs = {k: {"seconds": []} for k in contenders}
        for r in range(repeats + 1):
            for k, fit in contenders.items():
                try:
                    start = time.perf_counter()
                    w = fit()
                    seconds = time.perf_counter() - start
                except Exception as exc:  # a peer that cannot fit this data: said so in the results
                    runs[k] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                    contenders = {c: f for c, f in contenders.items() if c != k}
                    break
                if r:
                    runs[k]["seconds"].append(seconds)
                runs[k]["objective"] = liblinear_objective(X, y_pm, w, C)
        peer = runs.get("dask-ml LogisticRegression (admm)", {})
        if "objective" in peer:  # dtlab's time to dask-ml's objective: tighter tolerances until reached
            for tol in TOLERANCES[1:]:
                if runs["dtlab TRON (tol 0.1)"]["objective"] <= peer["objective"]:
                    break
                key = f"dtlab TRON (tol {tol:g})"
                fit = dtlab(tol)
                fit()
                runs[key] = {"seconds": []}
                for _ in range(repeats):
                    start = time.perf_counter()
                    w = fit()
                    runs[key]["seconds"].append(time.perf_counter() - start)
                runs[key]["objective"] = liblinear_objective(X, y_pm, w, C)
                if runs[key]["objective"] <= peer["objective"]:
                    break
    for r in runs.values():
        if r.get("seconds"):
            r["median"] = statistics.median(r["seconds"])
    out["runs"] = runs
    return out


def goal(entry: dict) -> dict | None:
    """Faster than dask-ml at equal or lower objective, over the whole spread of the timed runs."""
    runs = entry["runs"]
    peer = runs.get("dask-ml LogisticRegression (admm)", {})
    if "objective" not in peer:
        return None
    ours = [k for k, r in runs.items() if k.startswith("dtlab") and r.get("objective", np.inf) <= peer["objective"]]
    if not ours:
        return {"met": False, "why": "no dtlab run reached dask-ml's objective"}
    k = ours[0]
    return {"dtlab": k, "met": max(runs[k]["seconds"]) < min(peer["seconds"]),
            "dtlab_max": max(runs[k]["seconds"]), "peer_min": min(peer["seconds"])}


@register_benchmark("linear_dask", technique="linear",
                    description="TRON on a Dask LocalCluster (2 processes x 1 thread) against dask-ml's "
                                "LogisticRegression: time and objective on a9a and the synthetic sparse set",
                    captions=dask_ml_captions)
def _dask_ml_benchmark(ctx: RunContext) -> dict:
    out: dict[str, Any] = {"load_average_before": load_average(), "sets": {}}
    sets = {"a9a": load("a9a"), "synthetic": make_sparse_classification(**SYNTHETIC[ctx.scale], seed=ctx.seed)}
    for name, (X, y) in sets.items():
        entry = dask_ml_comparison(scipy.sparse.csr_matrix(X), y)
        entry["goal"] = goal(entry)
        out["sets"][name] = entry
    out["load_average_after"] = load_average()
    ctx.savefig(plot_dask_ml(out["sets"]), "linear_dask")
    return out
