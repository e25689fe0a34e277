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


@pytest.mark.parametrize("grow_policy, seed", [("depthwise", 0), ("lossguide", 5)])
def test_equal_gains_missing_left_keep_the_cpus_bin(grow_policy, seed):
    """Inputs on which "missing left" candidates tie over a node's empty bins (the highest bin kept, as XGBoost
    hist's downward scan does; the lowest before, another threshold in these trees): the CUDA searches, which
    compile the CPU's scan, keep the same bin."""
    X, y = _tiny(np.random.default_rng(seed))
    kw = dict(n_estimators=2, split_method="hist", max_bins=8)
    if grow_policy == "depthwise":
        est, kw = GBDTRegressor, dict(kw, max_depth=3, min_child_weight=0.0)
    else:
        est, kw, y = GBDTClassifier, dict(kw, grow_policy="lossguide", max_leaves=6), (y > np.median(y)).astype(int)
    cpu = est(backend="cpu", n_jobs=1, **kw).fit(X, y)
    gpu = est(backend="cuda", **kw).fit(X, y)
    assert gpu.backend_ == "cuda"
    for a, b in zip(cpu.trees_, gpu.trees_):
        for field in ("feature", "threshold", "missing_left", "left", "right", "value"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
