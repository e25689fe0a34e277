"""Synthetic trees: random, usually unbalanced FlatTrees for the tests and benchmarks of tree kernels."""

from __future__ import annotations

import numpy as np

from .flat import FlatTree


def random_grid_tree(rng: np.random.Generator, n_features: int, max_depth: int, grid: np.ndarray,
                     p_split: float = 0.8, n_outputs: int = 1):
    """A random, usually unbalanced FlatTree whose thresholds are values of ``grid`` (so data on the grid tie).

    Every node above ``max_depth`` splits with probability ``p_split`` (the
    root always does when ``max_depth >= 1``); missing values go left or right
    at random; leaf values are random normals.
    """
    feature, threshold, left, right, missing_left = [], [], [], [], []
    pending = [(0, -1, False)]
    while pending:
        depth, parent, is_right = pending.pop()
        i = len(feature)
        if parent >= 0:
            (right if is_right else left)[parent] = i
        split = depth < max_depth and (depth == 0 or rng.random() < p_split)
        feature.append(int(rng.integers(0, n_features)) if split else -1)
        threshold.append(float(rng.choice(grid)) if split else 0.0)
        missing_left.append(bool(rng.random() < 0.5))
        left.append(-1)
        right.append(-1)
        if split:
            pending.append((depth + 1, i, True))
            pending.append((depth + 1, i, False))
    value = rng.normal(size=(len(feature), n_outputs))
    return FlatTree(feature=feature, threshold=threshold, left=left, right=right, value=value,
                    n_features=n_features, task="regression" if n_outputs == 1 else "classification",
                    missing_left=np.asarray(missing_left))
