"""The CUDA split search (simulated unless on a GPU) grows the CPU's tree."""

import numpy as np
import pytest

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor


def _tiny(seed=0, n=24):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 3)).astype(float)
    X[:, 2] = np.round(rng.normal(size=n), 2)
    return X, rng


def test_regressor_same_tree_on_backends(backend):
    X, rng = _tiny()
    y = rng.integers(0, 9, size=len(X)).astype(float)  # exact sums: the same tree to the bit
    cpu = DecisionTreeRegressor(max_depth=3, random_state=0, backend="cpu").fit(X, y)
    other = DecisionTreeRegressor(max_depth=3, random_state=0, backend=backend).fit(X, y)
    assert other.backend_ == backend
    assert other.tree_.equals(cpu.tree_)
    np.testing.assert_array_equal(other.predict(X), cpu.predict(X))


def test_regressor_real_targets_on_backends(backend):
    X, rng = _tiny(1)
    y = rng.normal(size=len(X))
    cpu = DecisionTreeRegressor(max_depth=2, min_samples_leaf=3, random_state=0, backend="cpu").fit(X, y)
    other = DecisionTreeRegressor(max_depth=2, min_samples_leaf=3, random_state=0, backend=backend).fit(X, y)
    np.testing.assert_array_equal(other.tree_.feature, cpu.tree_.feature)
    np.testing.assert_array_equal(other.tree_.threshold, cpu.tree_.threshold)
    np.testing.assert_allclose(other.tree_.value, cpu.tree_.value, rtol=1e-12)


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_classifier_same_tree_on_backends(backend, criterion):
    X, rng = _tiny(2)
    y = rng.integers(0, 3, size=len(X))
    cpu = DecisionTreeClassifier(criterion=criterion, max_depth=2, random_state=0, backend="cpu").fit(X, y)
    other = DecisionTreeClassifier(criterion=criterion, max_depth=2, random_state=0, backend=backend).fit(X, y)
    np.testing.assert_array_equal(other.tree_.feature, cpu.tree_.feature)
    np.testing.assert_array_equal(other.tree_.threshold, cpu.tree_.threshold)
    np.testing.assert_array_equal(other.tree_.value, cpu.tree_.value)
    np.testing.assert_array_equal(other.predict_proba(X), cpu.predict_proba(X))


def test_cpu_only_options_say_so(backend):
    if backend != "cuda":
        pytest.skip("only the cuda backend refuses these")
    X, rng = _tiny()
    y = rng.integers(0, 2, size=len(X))
    with pytest.raises(ValueError, match="CPU only"):
        DecisionTreeRegressor(method="naive", backend="cuda").fit(X, y.astype(float))
    with pytest.raises(ValueError, match="CPU only"):
        DecisionTreeClassifier(criterion="gain_ratio", backend="cuda").fit(X, y)


def test_package_imports_without_numba_cuda():
    import subprocess
    import sys

    code = ("import sys; import dtlab.greedy; from dtlab.greedy import DecisionTreeRegressor; "
            "DecisionTreeRegressor(max_depth=1, backend='cpu').fit([[0.0], [1.0]], [0.0, 1.0]); "
            "assert 'numba.cuda' not in sys.modules and 'cupy' not in sys.modules, sorted(sys.modules)")
    env = {k: v for k, v in __import__('os').environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


@pytest.mark.gpu
@pytest.mark.parametrize("min_samples_leaf", [1, 5])
def test_gpu_grows_the_cpu_trees(min_samples_leaf):
    # thousands of rows: nodes span many 128-thread chunks, some features are constant in deep nodes,
    # and the partition is skipped below nodes whose children cannot split
    rng = np.random.default_rng(7)
    n = 5_000
    X = rng.integers(0, 40, size=(n, 6)).astype(float)
    X[:, 5] = np.round(rng.normal(size=n), 1)
    y = (X[:, 0] * 3 + X[:, 1] + rng.integers(0, 20, n)).astype(float)  # exact sums
    params = dict(max_depth=8, min_samples_leaf=min_samples_leaf, random_state=0)
    cpu = DecisionTreeRegressor(backend="cpu", **params).fit(X, y)
    gpu = DecisionTreeRegressor(backend="cuda", **params).fit(X, y)
    assert gpu.tree_.equals(cpu.tree_)
    # Gini only: its scores are exact-count arithmetic and IEEE divisions on both; entropy calls the device's
    # log, which may differ from the CPU's in the last bit and so break a near-tie the other way
    yc = (X[:, 0] + X[:, 5] * 10 + rng.integers(0, 15, n)) % 4
    cpu = DecisionTreeClassifier(backend="cpu", **params).fit(X, yc)
    gpu = DecisionTreeClassifier(backend="cuda", **params).fit(X, yc)
    assert gpu.tree_.equals(cpu.tree_)
