"""``method="auto"``: pick the fastest method for a forest's shape by measuring it, once.

The choice depends on the tree shape (depth, leaves per tree, so words per
identifier), the number of trees and the input dtype: a walk does ``depth``
dependent loads per tree and row, the patent's bitmask evaluates every one of
the ``n_leaves - 1`` tests, QuickScorer visits the tests that are false.
Measuring beats a model of that: the first ``predict(method="auto")`` of a
shape times each method on :data:`CALIBRATION_ROWS` synthetic rows (drawn
around the forest's own thresholds, so paths spread over the tree) with the
current number of numba threads (a clearly slower method is timed once),
keeps the fastest and caches it per key ``(max depth, log2 of nodes per tree, words per identifier, n_trees bucket,
dtype, threads)`` for the life of the process (:data:`CACHE`).  The calibration
costs a few milliseconds after compilation.
"""

from __future__ import annotations

import math
import time

import numba
import numpy as np

#: Rows the calibration times each method on.
CALIBRATION_ROWS = 512
#: A method whose first timing is this many times the best so far is not timed again.
DROP_FACTOR = 8.0
#: The methods ``auto`` chooses among on the CPU.
CANDIDATES = ("traversal", "bitmask", "quickscorer")
#: (shape key) -> chosen method.
CACHE: dict[tuple, str] = {}


def shape_key(forest, dtype) -> tuple:
    """The cache key of a forest's shape (see module docstring)."""
    ens = forest.ensemble
    nodes_per_tree = ens.forest.n_nodes / ens.forest.n_trees
    words = int(forest._shape.n_words)
    return (forest.max_depth, int(round(math.log2(max(nodes_per_tree, 1)))), words,
            int(round(math.log2(ens.forest.n_trees))), np.dtype(dtype).name, numba.get_num_threads())


def calibration_rows(forest, dtype, n_rows: int = CALIBRATION_ROWS, seed: int = 0) -> np.ndarray:
    """Synthetic rows whose values are the forest's thresholds of each feature, jittered (NaN-free)."""
    rng = np.random.default_rng(seed)
    f = forest.ensemble.forest
    internal = f.left != -1
    X = rng.normal(size=(n_rows, forest.n_features))
    for j in range(forest.n_features):
        th = f.threshold[internal & (f.feature == j)]
        if th.size:
            X[:, j] = rng.choice(th, n_rows) + rng.normal(scale=1e-3 * (np.abs(th).max() + 1), size=n_rows)
    return X.astype(dtype)


def measure(forest, X: np.ndarray, methods=CANDIDATES, repeats: int = 3) -> dict[str, float]:
    """Median seconds of each method's ``raw_sum`` on prepared rows ``X`` (after an untimed run on 8 rows).

    A method whose first run takes :data:`DROP_FACTOR` times the best so far
    keeps that one timing: on deep trees the all-node methods are far slower
    and timing them again would make the calibration cost seconds.
    """
    out: dict[str, float] = {}
    for m in methods:
        forest.raw_sum(X[:8], m)  # compiles, builds the layout
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            forest.raw_sum(X, m)
            times.append(time.perf_counter() - start)
            if out and times[0] > DROP_FACTOR * min(out.values()):
                break
        out[m] = float(np.median(times))
    return out


def choose(forest, dtype) -> str:
    """The fastest CPU method for the forest's shape (measured once per shape key, then cached)."""
    key = shape_key(forest, dtype)
    if key not in CACHE:
        seconds = measure(forest, calibration_rows(forest, dtype))
        CACHE[key] = min(seconds, key=seconds.get)
    return CACHE[key]
