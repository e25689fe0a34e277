"""The computations of notebook 08 as a lesson: what two Dask workers exchange, stepped by hand on eight rows,
and a cluster that later cells always reach through its live client.

* :func:`hist_exchange` / :func:`exact_exchange`: the data-parallel histogram search (each worker's
  histogram of its rows, added up) and the feature-parallel exact search (each worker's best split of its
  columns, the best kept, the winner's row sides sent as bits: the swGBDT paper's Sect. 5.4 across
  machines), on a tiny input; the notebook holds their split against a fit on the cluster.
* :class:`ClusterLesson`: a :class:`dtlab.distributed.cluster.ClusterSession` whose ``start`` also runs a
  probe fit (hist, an eval set) on the new cluster and keeps it: test loss against rounds and time per
  tree of every cluster started, measured.  ``client`` is read from the session when asked, so a cell that
  runs after another Start uses the new cluster.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from dtlab.boosting import GBDTClassifier
from dtlab.boosting.datasets import holdout_split, synthetic
from dtlab.distributed.cluster import ClusterSession
from dtlab.distributed.dask_executor import alive_workers

#: The tiny input: eight rows, two integer features (each value its own histogram bin), binary labels.
TINY_X = np.array([[0, 3], [1, 2], [2, 1], [3, 0], [0, 0], [1, 1], [2, 2], [3, 3]], dtype=np.float32)
TINY_Y = np.array([0, 0, 1, 1, 0, 1, 1, 1], dtype=np.int32)
#: The tiny fits' parameters: one split, every margin at 0 (g = 0.5 - y, h = 0.25), a side needs one row.
TINY_PARAMS = dict(n_estimators=1, max_depth=1, learning_rate=1.0, base_score=0.5, reg_lambda=1.0,
                   min_child_weight=0.25)


def _gradients(y) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y, dtype=np.float64)
    return 0.5 - y, np.full(len(y), 0.25)


def _score(gl, hl, g, h, reg_lambda):
    gr, hr = g - gl, h - hl
    return gl * gl / (hl + reg_lambda) + gr * gr / (hr + reg_lambda) - g * g / (h + reg_lambda)


def hist_exchange(X=TINY_X, y=TINY_Y, parts: int = 2) -> list[dict[str, Any]]:
    """Each part's histogram of (g, h) over the values of every feature (one bin per value), and their sum.

    The rows are cut into ``parts`` consecutive parts (one per worker).  Returns one dict per (feature, bin):
    ``feature, bin, G part k, H part k`` for every part, ``G, H`` (the sums the workers add up).
    """
    X = np.asarray(X)
    g, h = _gradients(y)
    cuts = [k * len(X) // parts for k in range(parts + 1)]
    out = []
    for f in range(X.shape[1]):
        for v in np.unique(X[:, f]):
            entry: dict[str, Any] = {"feature": f, "bin": float(v)}
            for k in range(parts):
                rows = np.arange(cuts[k], cuts[k + 1])
                rows = rows[X[rows, f] == v]
                entry[f"G part {k}"], entry[f"H part {k}"] = float(g[rows].sum()), float(h[rows].sum())
            entry["G"] = sum(entry[f"G part {k}"] for k in range(parts))
            entry["H"] = sum(entry[f"H part {k}"] for k in range(parts))
            out.append(entry)
    return out


def best_of_histogram(table: list[dict[str, Any]], reg_lambda: float = 1.0,
                      min_child_weight: float = 0.25) -> dict[str, Any]:
    """The best split of a summed histogram (:func:`hist_exchange`): cumulative sums over each feature's
    bins, the gain (the bracket of Eq. 1) at every boundary; ``feature, threshold`` (the midpoint between
    neighbouring bins), ``gain``."""
    best = {"feature": -1, "threshold": np.nan, "gain": -np.inf}
    for f in sorted({e["feature"] for e in table}):
        rows = [e for e in table if e["feature"] == f]
        G, H = sum(e["G"] for e in rows), sum(e["H"] for e in rows)
        gl = hl = 0.0
        for a, b in zip(rows, rows[1:]):
            gl, hl = gl + a["G"], hl + a["H"]
            if hl >= min_child_weight and H - hl >= min_child_weight:
                gain = _score(gl, hl, G, H, reg_lambda)
                if gain > best["gain"]:
                    best = {"feature": f, "threshold": (a["bin"] + b["bin"]) / 2, "gain": float(gain)}
    return best


def exact_exchange(X=TINY_X, y=TINY_Y, workers: int = 2) -> dict[str, Any]:
    """The feature-parallel exact search on the tiny input: worker ``w`` holds every row of its slice of the
    columns, finds its best split (sorted rows, prefix sums), the client keeps the best, and the rows' sides
    of the winning split go to every worker as one bit per row.

    Returns
    -------
    dict: ``proposals`` (one dict per worker: ``worker, features, feature, threshold, gain``), ``best`` (the
    kept one), ``sides`` (the bits, 1 = left, row order), ``side_bytes`` (the bits packed)
    """
    from workbench.boosting.lesson import best_split, exact_steps

    X = np.asarray(X)
    cuts = [w * X.shape[1] // workers for w in range(workers + 1)]
    proposals = []
    for w in range(workers):
        mine = range(cuts[w], cuts[w + 1])
        best = {"feature": -1, "threshold": np.nan, "gain": -np.inf}
        for f in mine:
            b = best_split(exact_steps(X[:, f], y))
            if b["gain"] > best["gain"]:
                best = {"feature": f, "threshold": b["threshold"], "gain": b["gain"]}
        proposals.append({"worker": w, "features": list(mine), **best})
    kept = max(proposals, key=lambda p: p["gain"])
    sides = (X[:, kept["feature"]] < kept["threshold"]).astype(np.uint8)
    return {"proposals": proposals, "best": kept, "sides": sides.tolist(), "side_bytes": len(np.packbits(sides))}


def tiny_on_cluster(client, split_method: str, X=TINY_X, y=TINY_Y, parts: int = 2) -> dict[str, Any]:
    """The root split of one depth-1 tree fitted on the cluster (the rows in ``parts`` chunks) and in this
    process: ``feature, threshold, gain`` of each, and the bytes per level the cluster fit exchanged."""
    import dask.array as da

    chunk = -(-len(X) // parts)
    there = GBDTClassifier(**TINY_PARAMS, split_method=split_method, executor=client).fit(
        da.from_array(np.asarray(X), chunks=(chunk, -1)), da.from_array(np.asarray(y), chunks=chunk))
    here = GBDTClassifier(**TINY_PARAMS, split_method=split_method).fit(X, y)

    def root(model):
        t = model.trees_[0]
        return {"feature": int(t.feature[0]), "threshold": float(t.threshold[0]), "gain": float(t.gain[0])}

    return {"cluster": root(there), "one process": root(here), "level_bytes": list(there.dask_stats_["level_bytes"]),
            "loop": there.dask_stats_["loop"]}


class ClusterLesson:
    """A LocalCluster for the notebook: ``start`` (the Start button) closes the running cluster, starts one
    and runs a probe fit on it; ``client`` is the running cluster's client, read when asked.

    Parameters
    ----------
    probe_rows, probe_trees, max_depth : the probe fit (hist; 28 features; an eval set of a fifth as many rows)
    processes, dashboard : as :class:`dtlab.distributed.cluster.ClusterSession`
    """

    def __init__(self, probe_rows: int = 20_000, probe_trees: int = 8, max_depth: int = 6, *,
                 processes: bool = True, dashboard: bool = True, seed: int = 0):
        self.session = ClusterSession(processes=processes, dashboard=dashboard)
        self.probe_trees, self.max_depth = probe_trees, max_depth
        X, y = synthetic(probe_rows + probe_rows // 4, 28, seed=seed)
        self.data = holdout_split(X, y, fraction=0.2)
        self.probes: list[dict[str, Any]] = []

    @property
    def client(self):
        """The running cluster's ``distributed.Client`` (None before the first start and after ``close``)."""
        return self.session.client

    @property
    def dashboard_link(self) -> str | None:
        return self.client.dashboard_link if self.client is not None and self.session.dashboard else None

    def start(self, n_workers: int, threads_per_worker: int = 1) -> dict[str, Any]:
        """Start a cluster of ``n_workers`` x ``threads_per_worker`` and probe it: one untimed fit of one tree
        (the workers load their kernels), then the timed probe fit.  Returns the probe (also kept in
        ``probes``): ``workers, threads, seconds, per_tree_ms, work_seconds, loop, test_loss`` (per round)."""
        import dask.array as da

        self.session.start(int(n_workers), int(threads_per_worker))
        client = self.client
        workers = len(alive_workers(client))
        X_train, y_train, X_test, y_test = self.data
        chunk = -(-len(X_train) // (2 * workers))
        Xd = da.from_array(X_train, chunks=(chunk, -1)).persist()
        yd = da.from_array(y_train, chunks=chunk).persist()
        params = dict(max_depth=self.max_depth, split_method="hist", executor=client)
        GBDTClassifier(n_estimators=1, **params).fit(Xd, yd)
        model = GBDTClassifier(n_estimators=self.probe_trees, **params)
        start = time.perf_counter()
        model.fit(Xd, yd, eval_set=[(X_test, y_test)])
        seconds = time.perf_counter() - start
        probe = {"workers": workers, "threads": int(threads_per_worker), "rows": int(len(X_train)),
                 "seconds": seconds, "per_tree_ms": seconds / self.probe_trees * 1e3,
                 "work_seconds": float(model.dask_stats_["work_seconds"]), "loop": model.dask_stats_["loop"],
                 "test_loss": [float(v) for v in model.evals_result_["validation_0"]["logloss"]]}
        self.probes.append(probe)
        return probe

    def close(self) -> None:
        """Close the running cluster (idempotent); the probes stay."""
        self.session.close()
