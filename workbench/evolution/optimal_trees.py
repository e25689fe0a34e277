"""Optimal bounded-depth trees for Table 4: STreeD (``pystreed``) and ConTree (``pycontree``), each in a child process.

Both solvers are C++ extensions that can take long or crash on some inputs, so
every fit runs in a spawned child process with the solver's own time limit; a
crash becomes a reason string and a fresh child, never a dead benchmark.
STreeD binarises each feature at a few quantile thresholds (its default);
ConTree searches thresholds on the continuous features.  Class labels are
passed as codes 0..k-1 (STreeD's solver crashes on -1/+1 float labels).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["OPTIMAL_METHODS", "available", "child_pool", "fit_in_child"]

#: Method name -> (package, depth).
OPTIMAL_METHODS = {f"{solver} depth {d}": (package, d) for solver, package in (("STreeD", "pystreed"),
                                                                                 ("ConTree", "pycontree"))
                   for d in (2, 3, 4)}


def available(package: str) -> str | None:
    """None when ``package`` imports here, else why not (what to install)."""
    try:
        __import__(package)
    except Exception as exc:  # ImportError, or a broken optional dependency (pystreed's scikit-survival)
        return f"{package} is not installed here ({type(exc).__name__}); pip install 'dtlab[peers]'"
    return None


def _fit(package: str, X_train, y_train, X_test, depth: int, time_limit: float) -> dict[str, Any]:
    """Fit one solver in this (child) process; sizes, predictions, whether the tree is proven optimal."""
    classes, codes = np.unique(y_train, return_inverse=True)
    start = time.perf_counter()
    if package == "pystreed":
        from pystreed import STreeDClassifier

        model = STreeDClassifier(max_depth=depth, time_limit=time_limit, random_seed=0).fit(X_train, codes)
        leaves, optimal = int(model.get_n_leaves()), bool(model.fit_result.is_optimal())
        params = f"time limit {time_limit:g} s, 5 quantile thresholds per feature (pystreed's default binarisation)"
    else:
        from pycontree import ConTree

        model = ConTree(max_depth=depth, time_limit=time_limit).fit(np.asarray(X_train, np.float64),
                                                                     codes.astype(np.intc))
        leaves = int(model.get_num_leaf_nodes())
        optimal = time.perf_counter() - start < time_limit  # ConTree returns its best tree when the limit stops it
        params = f"time limit {time_limit:g} s, thresholds on the continuous features"
    seconds = time.perf_counter() - start
    return {"n_leaves": leaves, "n_nodes": 2 * leaves - 1, "fit_seconds": seconds, "proven_optimal": optimal,
            "params": params, "train_pred": classes[np.asarray(model.predict(X_train), np.int64)],
            "test_pred": classes[np.asarray(model.predict(X_test), np.int64)]}


def child_pool():
    """A one-process pool (spawned: the solvers' threads and numba's do not meet)."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    return ProcessPoolExecutor(1, mp_context=get_context("spawn"))


def fit_in_child(pool, method: str, X_train, y_train, X_test, time_limit: float):
    """``(pool, fit)``: the fit of ``method`` (a key of :data:`OPTIMAL_METHODS`) run in the child; a crash gives
    ``fit`` as a reason string and a fresh pool."""
    from concurrent.futures.process import BrokenProcessPool

    package, depth = OPTIMAL_METHODS[method]
    try:
        return pool, pool.submit(_fit, package, X_train, y_train, X_test, depth, time_limit).result()
    except BrokenProcessPool:
        pool.shutdown()
        return child_pool(), f"the {package} solver's process crashed"
