"""sample_weight on backend="cuda" (simulated unless on a GPU): the weighted scan kernels grow the CPU's weighted
tree -- features, thresholds, values, n_node_samples, weighted counts and impurities -- which is scikit-learn's."""

import numpy as np
import pytest

from dtlab.backend import cuda_status
from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from dtlab.greedy.builder import as_float32_features, build_greedy_tree
from dtlab.trees import FlatTree
from workbench.greedy.compare import same_tree, sklearn_twin

pytestmark = pytest.mark.skipif(not cuda_status()[0], reason="cuda backend unavailable")

TASKS = [("regression", "squared_error"), ("classification", "gini"), ("classification", "entropy")]


def _data(task, seed, n=48, integer=True):
    """Tiny data; ``integer``: integer targets and weights (and a weight of 0.5), so every sum is exact and the
    device's block scans give the CPU's scores to the bit, ties included."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 5, size=(n, 3)).astype(float)
    X[:, 2] = np.round(rng.normal(size=n), 2)
    y = rng.integers(0, 9, size=n).astype(float) if task == "regression" else rng.integers(0, 3, size=n)
    w = rng.integers(0, 4, size=n) * 0.5 if integer else rng.uniform(0.1, 3.0, size=n)
    if not integer:
        y = y + rng.normal(scale=0.1, size=n) if task == "regression" else y
        X[:, :2] += rng.normal(scale=0.01, size=(n, 2))  # distinct values: no two features cut the same rows
    return X, y, w


def _grow(X, y, w, task, criterion, backend, **params):
    classes = np.unique(y) if task == "classification" else None
    return build_greedy_tree(as_float32_features(X), y, task=task, criterion=criterion, backend=backend,
                             classes=classes, sample_weight=w, random_state=0, **params)


def _assert_same_grown(cuda, cpu):
    assert cuda.tree.equals(cpu.tree)  # features, thresholds, children, values, missing directions: bit for bit
    np.testing.assert_array_equal(cuda.n_node_samples, cpu.n_node_samples)
    np.testing.assert_array_equal(cuda.weighted_n_node_samples, cpu.weighted_n_node_samples)
    np.testing.assert_array_equal(cuda.impurity, cpu.impurity)


@pytest.mark.parametrize("task,criterion", TASKS)
def test_cuda_grows_the_cpu_weighted_tree_to_the_bit(task, criterion):
    X, y, w = _data(task, 0)
    for params in (dict(max_depth=3), dict(min_samples_leaf=5)):
        cpu = _grow(X, y, w, task, criterion, "cpu", **params)
        cuda = _grow(X, y, w, task, criterion, "cuda", **params)
        assert cuda.tree.n_nodes > 5  # a real tree, not a stump
        _assert_same_grown(cuda, cpu)


@pytest.mark.parametrize("task,criterion", TASKS)
def test_cuda_real_weights_grow_the_cpu_and_sklearn_tree(task, criterion):
    # real weights: the device adds in another order, so scores may differ in the last bit; with no near-tie the
    # tree is the same, and the node statistics (computed on the host in the CPU's order) are the CPU's bits
    X, y, w = _data(task, 3, integer=False)
    cpu = _grow(X, y, w, task, criterion, "cpu", max_depth=3, min_samples_leaf=4)
    cuda = _grow(X, y, w, task, criterion, "cuda", max_depth=3, min_samples_leaf=4)
    _assert_same_grown(cuda, cpu)
    Est = DecisionTreeRegressor if task == "regression" else DecisionTreeClassifier
    params = dict(max_depth=3, min_samples_leaf=4, random_state=0)
    if task == "classification":
        params["criterion"] = criterion
    est = Est(backend="cuda", **params).fit(X, y, sample_weight=w)
    assert est.backend_ == "cuda"
    theirs = sklearn_twin(est).fit(X, y, sample_weight=w)
    assert same_tree(est.tree_, FlatTree.from_sklearn(theirs))
    np.testing.assert_allclose(est.node_impurity_, theirs.tree_.impurity, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("task,criterion", TASKS)
def test_cuda_zero_weights_are_dropped_rows(task, criterion):
    X, y, w = _data(task, 5)
    assert (w == 0).any()
    weighted = _grow(X, y, w, task, criterion, "cuda", max_depth=3)
    kept = w > 0
    dropped = _grow(X[kept], y[kept], w[kept], task, criterion, "cuda", max_depth=3)
    _assert_same_grown(weighted, dropped)


def test_cuda_integer_weights_are_repeated_rows():
    X, y, _ = _data("classification", 6)
    counts = np.random.default_rng(6).integers(0, 4, size=len(y))
    weighted = DecisionTreeClassifier(max_depth=3, random_state=0, backend="cuda").fit(X, y, sample_weight=counts)
    repeated = DecisionTreeClassifier(max_depth=3, random_state=0, backend="cuda").fit(np.repeat(X, counts, axis=0),
                                                                           np.repeat(y, counts))
    np.testing.assert_array_equal(weighted.predict_proba(X), repeated.predict_proba(X))


@pytest.mark.parametrize("module,Est", [("regressor", DecisionTreeRegressor), ("classifier", DecisionTreeClassifier)])
def test_auto_may_pick_cuda_for_a_weighted_fit(monkeypatch, module, Est):
    # the simulator never makes "auto" pick CUDA, so the test reads what the estimator tells resolve_backend:
    # a weighted fit has a CUDA implementation wherever the unweighted one has
    import importlib

    mod = importlib.import_module(f"dtlab.greedy.{module}")
    said = []
    real = mod.resolve_backend

    def spy(backend, *arrays, has_cuda=True):
        said.append(has_cuda)
        return real(backend, *arrays, has_cuda=has_cuda)

    monkeypatch.setattr(mod, "resolve_backend", spy)
    X, y, w = _data("classification", 7)
    Est(max_depth=2).fit(X, y, sample_weight=w)
    Est(max_depth=2).fit(X, y)
    assert said == [True, True]


def test_weighted_cuda_refuses_what_it_cannot_grow():
    X, y, w = _data("classification", 8)
    with pytest.raises(ValueError, match="gain_ratio.*CPU only"):
        DecisionTreeClassifier(criterion="gain_ratio", backend="cuda").fit(X, y, sample_weight=w)
    Xm = X.copy()
    Xm[0, 0] = np.nan
    with pytest.raises(ValueError, match="missing values"):
        DecisionTreeClassifier(backend="cuda").fit(Xm, y, sample_weight=w)
    with pytest.raises(ValueError, match="CPU only"):
        DecisionTreeRegressor(method="incremental", backend="cuda").fit(X, y.astype(float), sample_weight=w)
    # "auto" grows these on the CPU, weighted as asked
    assert DecisionTreeClassifier(criterion="gain_ratio").fit(X, y, sample_weight=w).backend_ == "cpu"
    assert DecisionTreeClassifier().fit(Xm, y, sample_weight=w).backend_ == "cpu"
