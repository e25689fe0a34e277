"""The CUDA histogram search (numba's simulator without a GPU) grows the CPU's trees, bit for bit."""

import numpy as np
import pytest

from dtlab.backend import cuda_status
from dtlab.boosting import GBDTClassifier, GBDTRegressor

pytestmark = pytest.mark.skipif(not cuda_status()[0], reason="numba.cuda unavailable")


def _tiny(rng, n=30, d=3, missing=0.2):
    X = rng.integers(0, 12, size=(n, d)).astype(np.float32) * 0.5
    X[rng.random((n, d)) < missing] = np.nan
    y = (np.nan_to_num(X[:, 0]) - np.nan_to_num(X[:, 1]) * 0.5 + rng.normal(size=n)).astype(np.float32)
    return X, y


def test_regressor_trees_identical_to_cpu(rng):
    X, y = _tiny(rng)
    kw = dict(n_estimators=2, max_depth=3, split_method="hist", max_bins=8, min_child_weight=0.0)
    cpu = GBDTRegressor(backend="cpu", **kw).fit(X, y)
    gpu = GBDTRegressor(backend="cuda", **kw).fit(X, y)
    assert gpu.backend_ == "cuda" and cpu.trees_[0].n_nodes >= 7  # real trees, not stumps
    for a, b in zip(cpu.trees_, gpu.trees_):
        for field in ("feature", "threshold", "missing_left", "left", "right", "value", "gain"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(cpu.predict(X), gpu.predict(X))


def test_classifier_trees_identical_to_cpu(rng):
    X, y = _tiny(rng, missing=0.0)
    labels = (y > np.median(y)).astype(int)
    kw = dict(n_estimators=2, max_depth=2, split_method="hist", max_bins=8)
    cpu = GBDTClassifier(backend="cpu", **kw).fit(X, labels)
    gpu = GBDTClassifier(backend="cuda", **kw).fit(X, labels)
    np.testing.assert_array_equal(cpu.predict_proba(X), gpu.predict_proba(X))
