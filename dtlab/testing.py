"""Helpers for dtlab's tests (and for anyone testing a new kernel against the house rules).

Random data, random trees and forests, and the assertion every kernel test
makes: the same result on every backend that can run here (the CPU, and CUDA
under numba's simulator or on a real GPU).  Nothing here is imported by the
package itself.  Foundation: this module imports no technique (a technique's
own test helpers live in its package, e.g. :func:`dtlab.evolution.testing.random_individuals`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from .trees.synthetic import random_grid_tree

__all__ = ["TEST_BACKENDS", "assert_same_on_backends", "available_backends", "random_data", "random_grid_tree",
           "random_sklearn_trees", "random_sorted_segment"]

#: The backends a kernel test runs on (CUDA is skipped where it cannot run).
TEST_BACKENDS = ("cpu", "cuda")


def random_data(rng: np.random.Generator, n_samples: int, n_features: int, n_classes: int, dtype=np.float32,
                levels: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Random features and class codes.

    Parameters
    ----------
    rng : numpy Generator
    n_samples, n_features, n_classes : int
    dtype : float32 or float64
    levels : int, optional
        Draw features from ``levels`` integer values instead of [0, 1), so
        that many values tie (and fall exactly on thresholds).

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), ``dtype``
    y : ndarray of shape (n_samples,), int32 codes in ``0..n_classes-1``
    """
    if levels:
        X = rng.integers(0, levels, size=(n_samples, n_features)).astype(dtype)
    else:
        X = rng.random((n_samples, n_features)).astype(dtype)
    y = rng.integers(0, n_classes, size=n_samples).astype(np.int32)
    return X, y


def random_sorted_segment(rng: np.random.Generator, trial: int) -> tuple[int, int, int, np.ndarray]:
    """A random length ``n``, a segment ``[s, e)`` of at least two rows, and float32 values sorted on it
    (ties on odd trials), random elsewhere: ``(n, s, e, xs)``, what a split scan of one node reads."""
    n = int(rng.integers(4, 70))
    s = int(rng.integers(0, n - 2))
    e = int(rng.integers(s + 2, n + 1))
    xs = rng.random(n).astype(np.float32)
    seg = rng.integers(0, 8, e - s).astype(np.float32) if trial % 2 else rng.random(e - s).astype(np.float32)
    xs[s:e] = np.sort(seg)
    return n, s, e, xs


def random_sklearn_trees(rng: np.random.Generator, X: np.ndarray, y: np.ndarray, n_trees: int,
                         max_depths: Sequence[int | None] = (1, 3, 6, None)) -> list:
    """Fitted scikit-learn classification trees on bootstrap samples, with depths drawn from ``max_depths``."""
    from sklearn.tree import DecisionTreeClassifier

    trees = []
    for _ in range(n_trees):
        rows = rng.integers(0, X.shape[0], size=X.shape[0])
        depth = max_depths[int(rng.integers(0, len(max_depths)))]
        seed = int(rng.integers(0, 2**31 - 1))
        trees.append(DecisionTreeClassifier(max_depth=depth, random_state=seed).fit(X[rows], y[rows]))
    return trees


def available_backends(backends: Sequence[str] = TEST_BACKENDS) -> list[str]:
    """The subset of ``backends`` that can run on this machine (CUDA needs a GPU or the simulator)."""
    from .backend import cuda_status

    return [b for b in backends if b != "cuda" or cuda_status()[0]]


def assert_same_on_backends(compute: Callable[[str], Any], backends: Sequence[str] = TEST_BACKENDS,
                            equal: Callable[[Any, Any], bool] | None = None) -> Any:
    """Run ``compute(backend)`` on every available backend and assert every result equals the first.

    Parameters
    ----------
    compute : callable taking a backend name
    backends : backend names to try; unavailable ones are left out
    equal : callable, optional
        Comparison of two results (default: exact, ``numpy.array_equal`` on
        arrays, ``FlatTree.equals`` on trees, ``==`` otherwise).

    Returns
    -------
    The first backend's result.
    """
    equal = equal or _exactly_equal
    runs = available_backends(backends)
    if not runs:
        raise AssertionError(f"none of the backends {list(backends)} can run here")
    first = compute(runs[0])
    for name in runs[1:]:
        other = compute(name)
        assert equal(first, other), f"backend {name!r} differs from {runs[0]!r}: {other!r} != {first!r}"
    return first


def _exactly_equal(a: Any, b: Any) -> bool:
    if hasattr(a, "equals"):
        return bool(a.equals(b))
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_exactly_equal(p, q) for p, q in zip(a, b))
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return bool(np.array_equal(a, b))
    return bool(a == b)
