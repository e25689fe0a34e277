"""The computations of notebook 05 as a lesson: the exact split search stepped by hand on a tiny input,
loss against rounds, and where the histogram search overtakes the exact one.

* :func:`exact_steps` / :func:`hist_steps`: the swGBDT paper's gain (its Eq. 1, with ``+lambda`` in the
  last denominator) for every candidate of one feature, from prefix sums of ``(g, h)`` along the sorted
  rows (its Algorithm 2: missing rows tried on the left and on the right), and from a histogram of a few
  bins; the notebook checks the exact table's best split against the library's root split.
* :func:`convergence`: train and test log loss after every round, exact and hist, with a share of the
  training labels flipped (label noise).
* :func:`crossover`: time per tree against rows of both searches on 1 and ``W`` feature-parallel workers
  (threads), with irrelevant features added; the worker counts beyond this machine's cores are modelled
  (Amdahl's law fitted to the measured counts), never measured.

Only the library's public API is used: :class:`dtlab.boosting.GBDTClassifier` and its datasets.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from dtlab.boosting import GBDTClassifier
from dtlab.boosting.datasets import synthetic
from workbench.timing import amdahl_fit, load_average, machine_threads, numba_threads, paired_times

#: The tiny input of the stepped example: one feature with two missing values, binary labels.
TINY_X = np.array([3.0, 1.0, np.nan, 7.0, 5.0, 2.0, np.nan, 6.0], dtype=np.float32)
TINY_Y = np.array([1, 0, 1, 1, 1, 0, 0, 1], dtype=np.int32)
#: The bin edges of the tiny histogram (a value below an edge is in the bin left of it).
TINY_EDGES = (2.5, 5.5)
#: Features of :func:`dtlab.boosting.datasets.synthetic` that its labels depend on; the others are noise.
SIGNAL_FEATURES = 6
RESULTS = Path(__file__).resolve().parents[2] / "figures" / "results.json"


def _gradients(y: np.ndarray, base_score: float) -> tuple[np.ndarray, np.ndarray]:
    """Logistic loss at the margin of ``base_score``: ``g = p - y`` (Eq. 2), ``h = p (1 - p)`` (Eq. 3)."""
    p = float(base_score)
    return p - y.astype(np.float64), np.full(len(y), p * (1.0 - p))


def _score(gl: float, hl: float, g: float, h: float, reg_lambda: float) -> float:
    """The bracket of Eq. 1 (XGBoost's ranking, without the factor 1/2), with ``+lambda`` in every denominator."""
    gr, hr = g - gl, h - hl
    return gl * gl / (hl + reg_lambda) + gr * gr / (hr + reg_lambda) - g * g / (h + reg_lambda)


def exact_steps(x=TINY_X, y=TINY_Y, *, reg_lambda: float = 1.0, min_child_weight: float = 0.25,
                base_score: float = 0.5) -> list[dict[str, Any]]:
    """Every present row of one feature in sorted order with the prefix sums of (g, h) and, where the next
    value differs, the candidate threshold (the midpoint, as XGBoost's exact method) and its gain with the
    missing rows on the left and on the right (``nan`` where a side's hessian sum is below
    ``min_child_weight``).

    Returns
    -------
    list of dict: ``row, x, y, g, h, G_L, H_L, threshold, gain (missing left), gain (missing right)``
    """
    x, y = np.asarray(x, dtype=np.float32), np.asarray(y)
    g, h = _gradients(y, base_score)
    present = ~np.isnan(x)
    rows = np.flatnonzero(present)[np.argsort(x[present], kind="stable")]
    G, H = g.sum(), h.sum()
    gm, hm = g[~present].sum(), h[~present].sum()
    gl = np.cumsum(g[rows])
    hl = np.cumsum(h[rows])
    out = []
    for k, r in enumerate(rows):
        entry = {"row": int(r), "x": float(x[r]), "y": int(y[r]), "g": float(g[r]), "h": float(h[r]),
                 "G_L": float(gl[k]), "H_L": float(hl[k]), "threshold": np.nan,
                 "gain (missing left)": np.nan, "gain (missing right)": np.nan}
        if k + 1 < len(rows) and x[rows[k + 1]] != x[r]:
            entry["threshold"] = float((np.float64(x[r]) + np.float64(x[rows[k + 1]])) / 2)
            for side, (a, b) in (("left", (gl[k] + gm, hl[k] + hm)), ("right", (gl[k], hl[k]))):
                if b >= min_child_weight and H - b >= min_child_weight:
                    entry[f"gain (missing {side})"] = _score(a, b, G, H, reg_lambda)
        out.append(entry)
    return out


def hist_steps(x=TINY_X, y=TINY_Y, edges=TINY_EDGES, *, reg_lambda: float = 1.0, min_child_weight: float = 0.25,
               base_score: float = 0.5) -> list[dict[str, Any]]:
    """The same search from a histogram: rows added into bins (a value below ``edges[i]`` in bin ``i`` or
    before; missing rows in a bin of their own), cumulative sums over the bins, and the gain at each edge.

    Returns
    -------
    list of dict: ``bin, values, rows, G, H, G_L, H_L, threshold, gain (missing left), gain (missing right)``
    (the last bin is the missing one, without a threshold)
    """
    x, y = np.asarray(x, dtype=np.float32), np.asarray(y)
    g, h = _gradients(y, base_score)
    present = ~np.isnan(x)
    G, H = g.sum(), h.sum()
    gm, hm = g[~present].sum(), h[~present].sum()
    bins = np.searchsorted(np.asarray(edges, dtype=np.float64), x[present].astype(np.float64), side="right")
    lows = ["-inf", *[f"{e:g}" for e in edges]]
    highs = [*[f"{e:g}" for e in edges], "inf"]
    out, gl, hl = [], 0.0, 0.0
    for b in range(len(edges) + 1):
        inside = np.flatnonzero(present)[bins == b]
        gl, hl = gl + g[inside].sum(), hl + h[inside].sum()
        entry = {"bin": f"[{lows[b]}, {highs[b]})", "rows": len(inside), "G": float(g[inside].sum()),
                 "H": float(h[inside].sum()), "G_L": float(gl), "H_L": float(hl), "threshold": np.nan,
                 "gain (missing left)": np.nan, "gain (missing right)": np.nan}
        if b < len(edges):
            entry["threshold"] = float(edges[b])
            for side, (a, c) in (("left", (gl + gm, hl + hm)), ("right", (gl, hl))):
                if c >= min_child_weight and H - c >= min_child_weight:
                    entry[f"gain (missing {side})"] = _score(a, c, G, H, reg_lambda)
        out.append(entry)
    out.append({"bin": "missing", "rows": int((~present).sum()), "G": float(gm), "H": float(hm), "G_L": np.nan,
                "H_L": np.nan, "threshold": np.nan, "gain (missing left)": np.nan, "gain (missing right)": np.nan})
    return out


def best_split(steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The largest gain of a table of :func:`exact_steps` or :func:`hist_steps`: ``threshold, missing_left,
    gain`` (ties: the first, missing right before left, as the tables list them)."""
    best = {"threshold": np.nan, "missing_left": False, "gain": -np.inf}
    for s in steps:
        for side in ("right", "left"):
            gain = s[f"gain (missing {side})"]
            if not np.isnan(gain) and gain > best["gain"]:
                best = {"threshold": s["threshold"], "missing_left": side == "left", "gain": float(gain)}
    return best


def library_root(x=TINY_X, y=TINY_Y, *, reg_lambda: float = 1.0, min_child_weight: float = 0.25,
                 base_score: float = 0.5) -> dict[str, Any]:
    """The root split dtlab's exact search grows on the tiny input (one tree of depth 1): ``threshold,
    missing_left, gain``, to hold against :func:`best_split` of :func:`exact_steps`."""
    model = GBDTClassifier(n_estimators=1, max_depth=1, split_method="exact", learning_rate=1.0, base_score=base_score,
                           reg_lambda=reg_lambda, min_child_weight=min_child_weight, n_jobs=1)
    tree = model.fit(np.asarray(x, dtype=np.float32)[:, None], np.asarray(y)).trees_[0]
    return {"threshold": float(tree.threshold[0]), "missing_left": bool(tree.missing_left[0]),
            "gain": float(tree.gain[0])}


def flip_labels(y: np.ndarray, share: float, seed: int = 0) -> np.ndarray:
    """``y`` with a ``share`` of its labels (drawn at random, seeded) flipped: label noise."""
    rng = np.random.default_rng(seed + 1)
    out = np.asarray(y).copy()
    flipped = rng.random(len(out)) < share
    out[flipped] = 1 - out[flipped]
    return out


def convergence(rows: int, label_noise: float, *, rounds: int = 40, max_depth: int = 6, learning_rate: float = 0.3,
                n_features: int = 10, test_rows: int = 2_000, pool_rows: int = 100_000,
                seed: int = 0) -> dict[str, Any]:
    """Train and test log loss after every round, exact and hist, with ``label_noise`` of the labels flipped,
    training and test rows alike (independent draws): the noise no model can predict.

    The rows come from one pool of ``pool_rows + test_rows`` rows of one concept: the first ``rows`` train,
    the last ``test_rows`` test, so every size learns the same labels and is scored on the same rows.

    Returns
    -------
    dict: ``rows, label_noise, rounds, max_depth, curves``: ``{method: {"train": [...], "test": [...],
    "best_round", "seconds"}}`` (``best_round`` counts from 1)
    """
    if not 1 <= rows <= pool_rows:
        raise ValueError(f"rows must be in [1, {pool_rows:,}] (the pool), got {rows:,}")
    X, y = synthetic(pool_rows + test_rows, n_features, seed=seed)
    Xtr, ytr = X[:rows], flip_labels(y[:rows], label_noise, seed)
    Xte, yte = X[-test_rows:], flip_labels(y[-test_rows:], label_noise, seed + 1)
    curves = {}
    for method in ("exact", "hist"):
        model = GBDTClassifier(n_estimators=rounds, max_depth=max_depth, learning_rate=learning_rate,
                               split_method=method, n_jobs=1)
        start = time.perf_counter()
        model.fit(Xtr, ytr, eval_set=[(Xtr, ytr), (Xte, yte)])
        seconds = time.perf_counter() - start
        train = [float(v) for v in model.evals_result_["validation_0"]["logloss"]]
        test = [float(v) for v in model.evals_result_["validation_1"]["logloss"]]
        curves[method] = {"train": train, "test": test, "best_round": int(np.argmin(test)) + 1, "seconds": seconds}
    return {"rows": int(rows), "label_noise": float(label_noise), "rounds": int(rounds), "max_depth": int(max_depth),
            "n_features": int(n_features), "curves": curves}


def row_ladder(max_rows: int, min_rows: int = 1_000) -> list[int]:
    """``1,000, 2,000, 5,000, 10,000, ...`` up to ``max_rows`` (included)."""
    sizes = [m * 10 ** e for e in range(3, 9) for m in (1, 2, 5)]
    return sorted({s for s in sizes if min_rows <= s < max_rows} | {int(max_rows)})


def crossover(max_rows: int, noise_features: int, workers: int, *, n_trees: int = 5, max_depth: int = 6,
              repeats: int = 3, gpu: bool | None = None, seed: int = 0) -> dict[str, Any]:
    """Time per tree of dtlab's exact and hist searches against rows (:func:`row_ladder` up to ``max_rows``),
    on 1 worker and on ``min(workers, cores)`` feature-parallel workers (threads), on ``SIGNAL_FEATURES``
    informative features plus ``noise_features`` irrelevant ones; at the largest size every worker count up
    to the cores is measured, and the counts beyond them (up to ``workers``) are modelled by Amdahl's law
    fitted to the measured ones.  ``gpu`` (default: where a real GPU is) adds both searches on the GPU,
    measured.  The median of ``repeats`` fits per point, the contenders alternating (:func:`paired_times`),
    after compiling fits.

    Returns
    -------
    dict: ``points`` (``method, device, workers, rows, ms_per_tree, source`` = "measured" or "modelled"),
    ``crossover`` (:func:`crossover_rows` per worker count measured), ``amdahl`` per method,
    ``parallel_from_rows`` (below it, rows x features is under the library's ``PARALLEL_MIN_WORK``: a fit runs
    its kernels serially whatever the workers asked), ``cores, rows, n_features, n_trees, max_depth,
    load_average``
    """
    from dtlab.backend import real_gpu_available
    from dtlab.boosting.exact import PARALLEL_MIN_WORK

    gpu = real_gpu_available() if gpu is None else gpu
    cores = machine_threads()
    most = min(int(workers), cores)
    n_features = SIGNAL_FEATURES + int(noise_features)
    sizes = row_ladder(max_rows)
    X, y = synthetic(sizes[-1], n_features, seed=seed)
    methods = ("exact", "hist")

    def fit(method: str, w: int, n: int, backend: str = "cpu"):
        def run():
            with numba_threads(w):
                GBDTClassifier(n_estimators=n_trees, max_depth=max_depth, split_method=method, n_jobs=w,
                               backend=backend).fit(X[:n], y[:n])
        return run

    for method in methods:  # compile (or load) every kernel outside the timings: the serial ones on few rows,
        for w in sorted({1, most}):  # the parallel ones, which large fits use, on the largest size
            fit(method, w, min(sizes[0], 500))()
            with numba_threads(w):
                GBDTClassifier(n_estimators=1, max_depth=2, split_method=method, n_jobs=w).fit(X, y)
    points: list[dict[str, Any]] = []
    for n in sizes:
        counts = range(1, most + 1) if n == sizes[-1] else sorted({1, most})
        runs = [(m, w, "cpu") for m in methods for w in counts] + [(m, 1, "cuda") for m in methods if gpu]
        times = paired_times([fit(m, w, n, b) for m, w, b in runs], repeats=repeats, warmup=1 if gpu else 0)
        for (m, w, b), t in zip(runs, times):
            points.append({"method": m, "device": "GPU" if b == "cuda" else "CPU", "workers": w, "rows": n,
                           "ms_per_tree": float(np.median(t)) / n_trees * 1e3, "source": "measured"})
    fits = {}
    for m in methods:
        at = [p for p in points if p["method"] == m and p["device"] == "CPU" and p["rows"] == sizes[-1]]
        serial, parallel = amdahl_fit([p["workers"] for p in at], [p["ms_per_tree"] for p in at])
        fits[m] = {"serial_ms": serial, "parallel_ms": parallel}
        points += [{"method": m, "device": "CPU", "workers": w, "rows": sizes[-1],
                    "ms_per_tree": serial + parallel / w, "source": "modelled"} for w in range(most + 1, workers + 1)]
    return {"points": points, "crossover": {w: crossover_rows(points, w) for w in sorted({1, most})},
            "amdahl": fits, "parallel_min_work": int(PARALLEL_MIN_WORK),
            "parallel_from_rows": -(-PARALLEL_MIN_WORK // n_features), "cores": cores, "workers": int(workers),
            "rows": sizes, "n_features": n_features, "noise_features": int(noise_features), "n_trees": n_trees,
            "max_depth": max_depth, "load_average": load_average()}


def crossover_rows(points: list[dict[str, Any]], workers: int = 1) -> dict[str, Any]:
    """Where hist's measured time per tree falls below exact's on ``workers`` CPU workers: the row count
    interpolated (log-log) between the last size where exact was faster and the first size from which hist
    is faster at every larger size.

    Returns
    -------
    dict: ``rows`` (None outside the measured range), ``where``: "between" (found), "below" (hist faster at
    every size), "above" (exact faster at the largest size)
    """
    at = {(p["method"], p["rows"]): p["ms_per_tree"] for p in points
          if p["device"] == "CPU" and p["workers"] == workers and p["source"] == "measured"}
    sizes = sorted(n for (m, n) in at if m == "exact" and ("hist", n) in at)
    faster = [at["hist", n] < at["exact", n] for n in sizes]
    if not sizes or not faster[-1]:
        return {"rows": None, "where": "above"}
    k = len(faster) - 1
    while k > 0 and faster[k - 1]:
        k -= 1
    if k == 0:
        return {"rows": None, "where": "below"}
    a, b = sizes[k - 1], sizes[k]
    da = np.log(at["exact", a]) - np.log(at["hist", a])  # <= 0: exact faster at a
    db = np.log(at["exact", b]) - np.log(at["hist", b])  # > 0: hist faster at b
    share = -da / (db - da)
    return {"rows": float(np.exp(np.log(a) + share * (np.log(b) - np.log(a)))), "where": "between"}


def recorded_worker_scaling(path: Path = RESULTS) -> dict[str, Any] | None:
    """The static figure ``boosting_worker_scaling`` as recorded in ``figures/results.json``: its rows
    (speedups per method and workers), rows of data, load average and commit; None where not recorded."""
    try:
        entry = json.loads(Path(path).read_text())["figures"]["boosting_worker_scaling"]
    except (OSError, KeyError, ValueError):
        return None
    results = entry.get("results", {})
    if not results.get("rows"):
        return None
    return {"rows": results["rows"], "n_samples": results.get("n_samples"), "load_average": results.get("load_average"),
            "commit": entry.get("run", {}).get("commit")}
