"""Helpers for GDT's tests: random individuals (the technique's own part of :mod:`dtlab.testing`)."""

from __future__ import annotations

import numpy as np

from .operators import grow_dipole_tree


def random_individuals(rng: np.random.Generator, X: np.ndarray, y: np.ndarray, n_classes: int, n_trees: int,
                       max_depth: int = 5) -> list:
    """GDT individuals grown from mixed dipoles on random subsamples of ``(X, y)`` (one-leaf trees too).

    Returns
    -------
    list of :class:`~dtlab.evolution.individual.Individual` (breadth-first, not evaluated)
    """
    trees = []
    for _ in range(n_trees):
        m = int(rng.integers(1, X.shape[0] + 1))
        rows = rng.choice(X.shape[0], size=m, replace=False)
        trees.append(grow_dipole_tree(X[rows], y[rows], n_classes, int(rng.integers(0, max_depth + 1)), 2, rng))
    return trees
