"""DecisionTreeRegressor: the three split searches, and scikit-learn's tree."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from dtlab.datasets import load_diabetes_prediction
from dtlab.greedy import DecisionTreeRegressor
from dtlab.trees import FlatTree
from workbench.greedy.compare import compare_with_sklearn, same_tree, sklearn_twin, tie_report

METHODS = ["naive", "incremental", "vectorized"]


def _continuous(seed, n=300, n_features=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, n_features)), rng.normal(size=n)


@pytest.mark.parametrize("seed", range(4))
def test_methods_grow_the_same_tree(seed):
    # real-valued data and leaves of >= 5 rows: no tied gains, one greedy tree
    X, y = _continuous(seed)
    trees = [DecisionTreeRegressor(method=m, min_samples_leaf=5, random_state=seed).fit(X, y).tree_
             for m in METHODS]
    # incremental and vectorised add the same numbers in the same order: identical to the bit
    assert trees[1].equals(trees[2])
    # naive sums in another order: the same tests, values equal to rounding
    assert same_tree(trees[0], trees[2], value_rtol=1e-12)


def test_methods_agree_on_integer_targets_with_ties(rng):
    X = rng.integers(0, 4, size=(150, 3)).astype(float)
    y = rng.integers(0, 6, size=150).astype(float)
    trees = [DecisionTreeRegressor(method=m, random_state=3).fit(X, y).tree_ for m in METHODS]
    assert trees[0].equals(trees[1]) and trees[1].equals(trees[2])


@pytest.mark.parametrize("max_depth,min_samples_leaf", [(None, 5), (4, 1), (8, 7), (None, 12)])
def test_same_tree_as_sklearn_without_ties(max_depth, min_samples_leaf):
    # continuous data and leaves of >= 5 rows (or shallow trees): no two candidate
    # splits of a node have the same gain, so the tree is unique
    X, y = _continuous(11, n=600, n_features=5)
    est = DecisionTreeRegressor(max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=0)
    result = compare_with_sklearn(est, X, y)
    assert result["same_tree"]
    assert result["n_nodes"] == result["n_nodes_sklearn"]
    assert result["max_abs_prediction_diff"] < 1e-9
    theirs = sklearn_twin(est).fit(X, y)
    X_new = np.random.default_rng(1).normal(size=(200, 5))
    np.testing.assert_allclose(est.predict(X_new), theirs.predict(X_new), rtol=0, atol=1e-9)


def test_same_tree_as_sklearn_with_tied_gains_on_integer_targets(rng):
    # integer targets make every sum exact, so ties are broken exactly as
    # scikit-learn breaks them with the same random_state
    X = rng.integers(0, 5, size=(400, 4)).astype(float)
    y = rng.integers(0, 30, size=400).astype(float)
    for seed in (0, 1, 2):
        est = DecisionTreeRegressor(random_state=seed)
        assert compare_with_sklearn(est, X, y)["same_tree"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 80), n_features=st.integers(1, 4), seed=st.integers(0, 2**16),
       max_depth=st.one_of(st.none(), st.integers(0, 6)), min_samples_leaf=st.integers(1, 4),
       min_samples_split=st.integers(2, 6), levels=st.integers(2, 10))
def test_property_same_tree_as_sklearn(n, n_features, seed, max_depth, min_samples_leaf, min_samples_split, levels):
    """Random small data with many ties (integer features and targets): always scikit-learn's tree."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, n_features)).astype(float)
    y = rng.integers(-5, 5, size=n).astype(float)
    est = DecisionTreeRegressor(max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                min_samples_split=min_samples_split, random_state=seed)
    est.fit(X, y)
    if max_depth == 0:
        assert est.tree_.n_nodes == 1
        return
    theirs = sklearn_twin(est).fit(X, y)
    assert same_tree(est.tree_, FlatTree.from_sklearn(theirs))


@settings(max_examples=25, deadline=None)
@given(n=st.integers(2, 60), n_features=st.integers(1, 3), seed=st.integers(0, 2**16),
       max_depth=st.integers(1, 5))
def test_property_incremental_equals_vectorized_on_real_targets(n, n_features, seed, max_depth):
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, n_features)), 1)
    y = rng.normal(size=n)
    a = DecisionTreeRegressor(method="incremental", max_depth=max_depth, random_state=seed).fit(X, y)
    b = DecisionTreeRegressor(method="vectorized", max_depth=max_depth, random_state=seed).fit(X, y)
    assert a.tree_.equals(b.tree_)


def test_same_seed_same_tree():
    X, y = _continuous(2)
    y = np.round(y)  # ties between features: the seed decides them
    a = DecisionTreeRegressor(random_state=5).fit(X, y).tree_
    b = DecisionTreeRegressor(random_state=5).fit(X, y).tree_
    assert a.equals(b)


def test_thresholds_are_float32_midpoints():
    X = np.array([[0.1], [0.2], [0.3], [0.4]])
    y = np.array([0.0, 0.0, 1.0, 1.0])
    tree = DecisionTreeRegressor(max_depth=1).fit(X, y).tree_
    x32 = X.astype(np.float32).ravel()
    assert tree.threshold[0] == np.float64(x32[1]) / 2 + np.float64(x32[2]) / 2
    assert tree.threshold[0] == DecisionTreeRegressor(max_depth=1).fit(X, y).tree_.threshold[0]


def test_sklearn_conventions():
    X, y = _continuous(0, n=100)
    est = DecisionTreeRegressor(max_depth=3, method="incremental")
    assert est.get_params()["method"] == "incremental"
    twin = clone(est).set_params(method="vectorized")
    twin.fit(X, y)
    assert isinstance(twin.tree_, FlatTree) and twin.tree_.task == "regression"
    assert twin.tree_.value.shape == (twin.tree_.n_nodes, 1)
    assert isinstance(twin.node_impurity_, np.ndarray) and isinstance(twin.node_n_samples_, np.ndarray)
    assert twin.node_n_samples_[0] == 100
    assert 0 < twin.score(X, y) <= 1
    assert twin.get_depth() == 3 and twin.get_n_leaves() == twin.tree_.n_leaves
    leaves = twin.apply(X)
    np.testing.assert_array_equal(twin.predict(X), twin.tree_.value[leaves, 0])


@pytest.fixture(scope="module")
def diabetes():
    return load_diabetes_prediction(target="age")


@pytest.mark.parametrize("max_depth", [5, 10])
def test_diabetes_same_tree_as_sklearn(diabetes, max_depth):
    est = DecisionTreeRegressor(max_depth=max_depth, random_state=0)
    result = compare_with_sklearn(est, diabetes.X, diabetes.y)
    assert result["same_tree"], result
    assert result["n_nodes"] == result["n_nodes_sklearn"]
    assert result["train_mse"] == pytest.approx(result["train_mse_sklearn"], rel=1e-12)


def test_diabetes_unlimited_depth_differs_only_by_exactly_equal_gains(diabetes):
    """Fully grown on all 100,000 rows: the same training MSE; where the trees differ,
    every first point of difference is a choice between splits of exactly equal gain
    (checked in rational arithmetic), so the node counts differ only by how ties went."""
    est = DecisionTreeRegressor(random_state=0)
    result = compare_with_sklearn(est, diabetes.X, diabetes.y)
    assert result["train_mse"] == pytest.approx(result["train_mse_sklearn"], rel=1e-6)
    theirs = sklearn_twin(est).fit(diabetes.X, diabetes.y)
    report = tie_report(est.tree_, FlatTree.from_sklearn(theirs), diabetes.X, diabetes.y)
    if result["same_tree"]:
        assert report.empty
    else:
        assert len(report) > 0
        assert report["exactly_equal"].all(), report[~report["exactly_equal"]]
        assert set(report["kind"]) <= {"same partition", "equal gain", "pure node"}


def test_tie_report_finds_an_exact_tie():
    # two features separate the same row: both splits have the same gain
    X = np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    y = np.array([3.0, 0.0, 1.0, 2.0])
    ours = DecisionTreeRegressor(max_depth=1, random_state=0).fit(X, y).tree_
    other_feature = 1 - ours.feature[0]
    other = FlatTree(feature=[other_feature, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                     value=ours.value, n_features=2, task="regression")
    report = tie_report(ours, other, X, y)
    assert len(report) == 1 and report.loc[0, "kind"] == "same partition" and report.loc[0, "exactly_equal"]
    assert tie_report(ours, ours, X, y).empty
    # a different split of another gain is reported as such
    stump = FlatTree(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                     value=ours.value, n_features=2, task="regression")
    X2 = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    report = tie_report(stump, FlatTree(feature=[1, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1],
                                        right=[2, -1, -1], value=ours.value, n_features=2, task="regression"), X2, y)
    assert report.loc[0, "kind"] == "different gain" and not report.loc[0, "exactly_equal"]


def test_exact_gain_decimal_and_binary():
    y = np.array([0.1, 0.2, 0.3])
    left = np.array([True, False, False])
    # decimal values 1/10 | 2/10, 3/10: B_L^2/n_L + B_R^2/n_R - B^2/n
    from fractions import Fraction

    from workbench.greedy.compare import exact_gain

    expected = Fraction(1, 100) + Fraction(1, 4) / 2 - Fraction(36, 100) / 3
    assert exact_gain(y, left) == expected
    assert exact_gain(y, left, values="binary") != expected
    assert exact_gain(y, None) == 0


def test_naive_differs_from_vectorized_only_by_exact_ties(diabetes):
    """Fully grown on 5,000 diabetes rows the naive search (sums in row order) may rank
    splits of exactly equal gain differently; nothing else differs."""
    X, y = diabetes.X[:5_000], diabetes.y[:5_000]
    naive = DecisionTreeRegressor(method="naive", random_state=0).fit(X, y).tree_
    vectorized = DecisionTreeRegressor(method="vectorized", random_state=0).fit(X, y).tree_
    report = tie_report(naive, vectorized, X, y)
    assert report["exactly_equal"].all()
    for depth in (5, 10):
        a = DecisionTreeRegressor(method="naive", max_depth=depth, random_state=0).fit(X, y).tree_
        b = DecisionTreeRegressor(method="vectorized", max_depth=depth, random_state=0).fit(X, y).tree_
        assert same_tree(a, b)
