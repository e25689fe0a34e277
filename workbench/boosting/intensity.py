"""Arithmetic intensity of the exact search: the swGBDT paper's roofline estimate (its Eq. 4-6) and the
counts of dtlab's kernels, next to the time they take.

The paper models one training round on CSC data with ``nnz`` entries and
``n_split`` candidate splits as ``W = 19.5 nnz + 37 n_split`` floating-point
operations (Eq. 4) and ``Q = 22 nnz + 32.5 n_split`` 8-byte words moved
(Eq. 5), so ``I = W / (8 Q)`` flops per byte (Eq. 6; 0.129 at ``n_split =
0.9 nnz``): far below any ridge point, the search is memory bound.

dtlab's exact search is counted from its loops (:data:`BYTES`,
:data:`FLOPS`, per entry and pass; not hardware counters): the prefix pass
reads a row id, the row's g and h and writes two prefix sums; each ranking
pass (one per missing direction) reads the prefix sums and two neighbouring
values, writes and re-reads a proxy, with about 12 flops (two shifts, two
differences, two squares, two divisions, two ``+ lambda``, a sum and the
tie test); a partition reads a row id, a value and the row's side and writes
the entry twice (output and scratch; half of it copied back).  The counts of
a fit (:attr:`ExactSearch.work <dtlab.boosting.exact.ExactSearch>`) and its
time give the bytes per second it moves, to compare with a plain copy's.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

#: Bytes per entry of each pass of the exact search (see the module docstring).
BYTES = {"prefix": 4 + 8 + 16, "rank": 16 + 8 + 8 + 8, "partition": 8 + 1 + 8 + 8 + 8}
#: Floating-point operations per entry of each pass.
FLOPS = {"prefix": 2, "rank": 12, "partition": 0}


def paper_model(nnz: float, n_split: float) -> dict[str, float]:
    """The paper's Eq. 4-6: flops ``W``, bytes ``8 Q`` and intensity ``I = W / (8 Q)`` of one round."""
    w = 19.5 * nnz + 37.0 * n_split
    q = 22.0 * nnz + 32.5 * n_split
    return {"flops": w, "bytes": 8.0 * q, "intensity": w / (8.0 * q)}


def counted(work: dict[str, int]) -> dict[str, float]:
    """Bytes, flops and intensity of dtlab's exact search from its work counts (``scanned``, ``ranked``,
    ``partitioned`` entries)."""
    b = (work["scanned"] * BYTES["prefix"] + work["ranked"] * BYTES["rank"]
         + work["partitioned"] * BYTES["partition"])
    f = work["scanned"] * FLOPS["prefix"] + work["ranked"] * FLOPS["rank"]
    return {"flops": float(f), "bytes": float(b), "intensity": f / b if b else 0.0}


def copy_bandwidth(n_bytes: int = 1 << 27, repeats: int = 5) -> float:
    """Bytes per second of a plain large copy (read + write counted), the machine's practical memory speed."""
    src = np.ones(n_bytes // 8)
    dst = np.empty_like(src)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(dst, src)
        best = min(best, time.perf_counter() - start)
    return 2 * n_bytes / best


def intensity_of_fit(X, y, *, n_trees: int = 10, max_depth: int = 6, n_workers: int = 1) -> dict[str, Any]:
    """Fit the exact search on (X, y) and report the paper's estimate next to the counted and timed kernels.

    Returns
    -------
    dict: ``paper`` (Eq. 4-6 with the entries scanned and candidates ranked per round), ``dtlab`` (counted
    bytes, flops,
    intensity per round), ``seconds_per_round``, ``achieved_bytes_per_second``,
    ``achieved_flops_per_second``, ``copy_bytes_per_second``, ``nnz``, ``n_split``
    """
    from dtlab.boosting.booster import SPLIT_METHODS
    from dtlab.boosting.estimators import GBDTClassifier
    from dtlab.boosting.exact import ExactSearch
    from workbench.timing import numba_threads

    searches: list[ExactSearch] = []
    factory = SPLIT_METHODS["exact", "cpu"]

    def keep(data, backend, workers, max_bins):
        searches.append(factory(data, backend, workers, max_bins))
        return searches[-1]

    est = GBDTClassifier(n_estimators=n_trees, max_depth=max_depth, n_jobs=n_workers, backend="cpu")
    SPLIT_METHODS["exact", "cpu"] = keep
    try:
        with numba_threads(n_workers):
            est.fit(X[:200], y[:200])  # compile outside the timing
            searches.clear()
            start = time.perf_counter()
            est.fit(X, y)
            seconds = time.perf_counter() - start
    finally:
        SPLIT_METHODS["exact", "cpu"] = factory
    search = searches[-1]
    nnz = int(search.rows0.shape[0])
    per_round = {k: v / n_trees for k, v in search.work.items()}
    ours = counted(per_round)
    n_split = per_round["ranked"]  # candidates evaluated per round
    # the paper's nnz counts the entries one round reads; a level-wise round reads them once per level
    return {"nnz": nnz, "n_split": float(n_split), "paper": paper_model(per_round["scanned"], n_split),
            "dtlab": ours,
            "seconds_per_round": seconds / n_trees, "n_workers": n_workers,
            "achieved_bytes_per_second": ours["bytes"] * n_trees / seconds,
            "achieved_flops_per_second": ours["flops"] * n_trees / seconds,
            "copy_bytes_per_second": copy_bandwidth()}
