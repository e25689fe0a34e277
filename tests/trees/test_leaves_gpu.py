"""Traversal on a real GPU (make gpu-check): large inputs, device-resident arrays."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeClassifier

from dtlab import FlatTree
from dtlab.datasets import chess3x3
from dtlab.trees import apply

pytestmark = pytest.mark.gpu


def test_gpu_traversal_matches_cpu_on_a_million_rows():
    X, y = chess3x3(1_000_000, noise_attrs=4, seed=2)
    tree = FlatTree.from_sklearn(DecisionTreeClassifier(random_state=0, max_depth=12).fit(X[:50_000], y[:50_000]))
    assert np.array_equal(apply(tree, X, backend="cuda"), apply(tree, X, backend="cpu"))


def test_gpu_traversal_accepts_device_arrays():
    cupy = pytest.importorskip("cupy")
    X, y = chess3x3(100_000, seed=3)
    tree = FlatTree.from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    assert np.array_equal(apply(tree, cupy.asarray(X), backend="auto"), apply(tree, X, backend="cpu"))
