"""The "SIMD decision tree" project's timing sweep: training time against rows, every method in alternation.

The project timed its C regression tree (naive and incremental searches, with and without SIMD) on 5,000,
25,000 and 100,000 rows of the Kaggle diabetes data (predict age).  :func:`timing_vs_size` redoes that with
dtlab's three searches and scikit-learn: at each size every contender's ``fit`` takes its turn in each round,
so all of them meet the same load of a shared machine, and every contender states its threads.  Used by
:mod:`workbench.greedy.experiments` (the ``greedy_regression_timing`` figure) and notebook 02.
"""

from __future__ import annotations

import time
from typing import Any, Sequence

import numpy as np

from dtlab.datasets import load_diabetes_prediction
from dtlab.greedy.regressor import DecisionTreeRegressor
from workbench.timing import machine_threads, numba_threads

__all__ = ["METHODS", "PROJECT_REPORTED_SECONDS", "timing_vs_size"]

#: Training times the C project reported (seconds; Intel i5-10310U, AVX2, its own depth limit).
PROJECT_REPORTED_SECONDS = {
    ("naive", "SIMD"): {5_000: 9.31, 25_000: 496.74},
    ("naive", "sequential"): {5_000: 52.92},
    ("incremental", "SIMD"): {25_000: 6.15, 100_000: 112.58},
    ("incremental", "sequential"): {25_000: 32.75, 100_000: 555.77},
}

METHODS = ("naive", "incremental", "vectorized", "sklearn")


def _estimator(method: str, max_depth: int | None, seed: int):
    if method == "sklearn":
        from sklearn.tree import DecisionTreeRegressor as SkRegressor

        return SkRegressor(max_depth=max_depth, random_state=seed)
    return DecisionTreeRegressor(max_depth=max_depth, method=method, random_state=seed, backend="cpu")


def timing_vs_size(sizes: Sequence[int] = (5_000, 25_000, 100_000), methods: Sequence[str] = METHODS,
                   max_depth: int | None = None, naive_max_rows: int | None = 25_000, repeats: int = 3,
                   seed: int = 0):
    """Training time against training-set size on the project's task (age from the other columns).

    At each size every contender's ``fit`` is timed in alternation (one fit of each in turn, ``repeats``
    rounds), so that all of them meet the same load of a shared machine.  The naive, incremental and
    scikit-learn fits run on one thread (none has a parallel mode); the vectorised search, whose kernels are
    parallel, is timed twice: on one numba thread (per core, beside the others) and on every numba thread
    (the whole machine), so a ratio of one line to another never sets two threads against one unseen.

    Parameters
    ----------
    sizes : sequence of int
        Numbers of rows (the first rows of the data, as the project used).
    methods : sequence of {"naive", "incremental", "vectorized", "sklearn"}
    max_depth : int or None
        Depth limit of every tree (None: fully grown).
    naive_max_rows : int or None
        The naive search is O(n^2) per feature and node: sizes above this are
        skipped for it (reported with ``skipped=True``); None runs all sizes.
    repeats : int
        Alternating rounds per size (median and spread over them), after the
        fit on 200 rows that keeps numba's compilation out of the numbers; the
        naive search takes part in the first round only above 5,000 rows (one
        of its fits there takes as long as many of the others').

    Returns
    -------
    pandas.DataFrame
        One row per size and contender: ``n_samples``, ``method``, ``threads``
        (the threads the fit ran on), ``contender`` (method and threads, e.g.
        ``"vectorized, 2 threads"``), ``seconds`` (median; NaN when skipped),
        ``seconds_min``, ``seconds_max`` (the spread), ``runs``, ``n_nodes``,
        ``skipped``, ``max_depth``.
    """
    import pandas as pd

    data = load_diabetes_prediction(target="age")
    for method in methods:  # compile (or load numba's cache) before any timing
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from {METHODS}")
        _estimator(method, max_depth, seed).fit(data.X[:200], data.y[:200])
    rows = []
    for n in sizes:
        X, y = data.X[:n], data.y[:n]
        contenders = []  # (method, threads, estimator, rounds)
        for method in methods:
            thread_counts = sorted({1, machine_threads()}) if method == "vectorized" else [1]
            for n_threads in thread_counts:
                if method == "naive" and naive_max_rows is not None and n > naive_max_rows:
                    rows.append(_timing_row(n, method, n_threads, [], None, max_depth))
                    continue
                slow = method == "naive" and n > 5_000
                contenders.append((method, n_threads, _estimator(method, max_depth, seed), 1 if slow else repeats))
        seconds = _alternating_fits(contenders, X, y)
        for (method, n_threads, est, _), times in zip(contenders, seconds):
            n_nodes = est.tree_.node_count if method == "sklearn" else est.tree_.n_nodes
            rows.append(_timing_row(n, method, n_threads, times, int(n_nodes), max_depth))
    frame = pd.DataFrame(rows)
    frame["max_depth"] = pd.Series([max_depth] * len(frame), dtype=object)
    return frame


def _alternating_fits(contenders: list[tuple], X: np.ndarray, y: np.ndarray) -> list[list[float]]:
    """Seconds of each contender's fits, in rounds of one fit each (a contender leaves after its rounds)."""
    times: list[list[float]] = [[] for _ in contenders]
    for r in range(max((c[3] for c in contenders), default=0)):
        for (_, n_threads, est, rounds), bucket in zip(contenders, times):
            if r < rounds:
                with numba_threads(n_threads):
                    start = time.perf_counter()
                    est.fit(X, y)
                    bucket.append(time.perf_counter() - start)
    return times


def _timing_row(n: int, method: str, n_threads: int, times: list[float], n_nodes: int | None,
                max_depth: int | None) -> dict[str, Any]:
    skipped = not times
    return dict(n_samples=n, method=method, threads=n_threads,
                contender=f"{method}, {n_threads} thread{'s' if n_threads > 1 else ''}",
                seconds=np.nan if skipped else float(np.median(times)),
                seconds_min=np.nan if skipped else min(times), seconds_max=np.nan if skipped else max(times),
                runs=len(times), n_nodes=np.nan if skipped else n_nodes, skipped=skipped, max_depth=max_depth)
