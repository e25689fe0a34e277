"""Shared helpers (imported by the test modules of this folder) for the GDT tests: random data and random populations of trees."""

import numpy as np

from dtlab.evolution.individual import Individual
from dtlab.evolution.operators import grow_tree


def random_data(rng, n_samples, n_features, n_classes, dtype=np.float32, levels=None):
    """Random features (optionally on a few discrete levels, to create ties) and class codes."""
    if levels:
        X = rng.integers(0, levels, size=(n_samples, n_features)).astype(dtype)
    else:
        X = rng.random((n_samples, n_features)).astype(dtype)
    y = rng.integers(0, n_classes, size=n_samples).astype(np.int32)
    return X, y


def random_trees(rng, X, y, n_classes, n_trees, max_depth=5) -> list[Individual]:
    """Trees grown from mixed dipoles on random subsamples (also single leaves)."""
    trees = []
    for _ in range(n_trees):
        m = int(rng.integers(1, X.shape[0] + 1))
        rows = rng.choice(X.shape[0], size=m, replace=False)
        trees.append(grow_tree(X[rows], y[rows], n_classes, int(rng.integers(0, max_depth + 1)), 2, rng))
    return trees
