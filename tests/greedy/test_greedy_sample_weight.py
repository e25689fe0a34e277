"""sample_weight of the greedy trees: scikit-learn's weighted tree on every search path, zero and integer weights,
importances, bad weights."""

import numpy as np
import pytest

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from dtlab.greedy.compare import compare_with_sklearn, same_tree, sklearn_twin
from dtlab.trees import FlatTree

METHODS = ["naive", "incremental", "vectorized"]


def regression_data(n=600, missing=0.0, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    y = X[:, 0] + np.sin(2 * X[:, 1]) + rng.normal(scale=0.3, size=n)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    w = rng.uniform(0.0, 3.0, size=n)
    w[rng.random(n) < 0.1] = 0.0  # some rows weigh nothing
    return X, y, w


def classification_data(n=300, missing=0.0, seed=1):
    X, _, w = regression_data(n, missing, seed)
    rng = np.random.default_rng(seed + 10)
    y = (np.nan_to_num(X[:, 0]) + np.nan_to_num(X[:, 1]) + rng.normal(scale=0.5, size=n) > 0).astype(int)
    y += np.nan_to_num(X[:, 2]) > 1
    return X, y, w


@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("method", METHODS)
def test_weighted_regressor_is_sklearns_tree(method, missing):
    X, y, w = regression_data(missing=missing)
    # leaves of >= 10 rows: no two features split a node into the same two sets (a tie scikit-learn breaks by rounding)
    est = DecisionTreeRegressor(method=method, max_depth=5, min_samples_leaf=10, random_state=0, backend="cpu")
    result = compare_with_sklearn(est, X, y, sample_weight=w)
    assert result["same_tree"], result
    assert result["max_abs_prediction_diff"] < 1e-12
    theirs = sklearn_twin(est).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(est.node_n_samples_, theirs.tree_.n_node_samples)
    np.testing.assert_allclose(est.node_weighted_n_samples_, theirs.tree_.weighted_n_node_samples, rtol=1e-12)
    np.testing.assert_allclose(est.node_impurity_, theirs.tree_.impurity, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.feature_importances_, theirs.feature_importances_, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("missing", [0.0, 0.15])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_weighted_classifier_is_sklearns_tree(criterion, missing):
    X, y, w = classification_data(missing=missing)
    est = DecisionTreeClassifier(criterion=criterion, min_samples_leaf=10, random_state=0, backend="cpu").fit(
        X, y, sample_weight=w)
    theirs = sklearn_twin(est).fit(X, y, sample_weight=w)
    ours, sk = est.tree_, FlatTree.from_sklearn(theirs)
    # scikit-learn can split a node of one class: its impurity, from counts and a total weight summed in different
    # orders, rounds to ~1e-16 > EPSILON.  Such a split changes no prediction; dtlab's impurity of one class is 0.
    pure_splits = [i for i in range(sk.n_nodes) if sk.left[i] >= 0 and np.count_nonzero(sk.value[i]) == 1]
    assert all(theirs.tree_.impurity[i] < 1e-12 for i in pure_splits)
    assert ours.n_nodes == sk.n_nodes - 2 * len(pure_splits)  # (a pure node's descendants are pure splits too)
    if not pure_splits:
        assert same_tree(ours, sk)
    fresh = np.random.default_rng(9).normal(size=(3000, X.shape[1]))
    fresh[np.random.default_rng(8).random(fresh.shape) < missing] = np.nan
    for data in (X, fresh):
        np.testing.assert_allclose(est.predict_proba(data), theirs.predict_proba(data), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(est.feature_importances_, theirs.feature_importances_, rtol=1e-7, atol=1e-12)


def test_three_search_methods_grow_one_weighted_tree():
    # incremental and vectorised sum in the same order: one tree to the bit, grown to full depth (ties included)
    for missing in (0.0, 0.15):
        X, y, w = regression_data(missing=missing, seed=5)
        trees = [DecisionTreeRegressor(method=m, random_state=0, backend="cpu").fit(X, y, sample_weight=w).tree_
                 for m in ("incremental", "vectorized")]
        assert trees[0].equals(trees[1])
    # the naive search sums each side afresh in row order: the same tree where no two splits tie
    trees = [DecisionTreeRegressor(method=m, min_samples_leaf=10, random_state=0, backend="cpu").fit(
        X, y, sample_weight=w).tree_ for m in METHODS]
    assert same_tree(trees[0], trees[1]) and same_tree(trees[1], trees[2])


def test_parallel_weighted_scan_is_the_serial_one(monkeypatch):
    from dtlab.greedy import _rules

    X, y, w = classification_data(seed=4)
    serial = DecisionTreeClassifier(random_state=0, backend="cpu").fit(X, y, sample_weight=w)
    monkeypatch.setattr(_rules, "PARALLEL_MIN_WORK", 1)
    parallel = DecisionTreeClassifier(random_state=0, backend="cpu").fit(X, y, sample_weight=w)
    assert serial.tree_.equals(parallel.tree_)
    Xr, yr, wr = regression_data(seed=4)
    monkeypatch.setattr(_rules, "PARALLEL_MIN_WORK", 1)
    a = DecisionTreeRegressor(random_state=0, backend="cpu").fit(Xr, yr, sample_weight=wr)
    monkeypatch.setattr(_rules, "PARALLEL_MIN_WORK", 10**12)
    b = DecisionTreeRegressor(random_state=0, backend="cpu").fit(Xr, yr, sample_weight=wr)
    assert a.tree_.equals(b.tree_)


@pytest.mark.parametrize("Est", [DecisionTreeRegressor, DecisionTreeClassifier])
def test_zero_weights_drop_rows_and_integer_weights_repeat_them(Est):
    X, y, _ = classification_data(n=120, seed=7)
    counts = np.random.default_rng(2).integers(0, 4, size=len(y))
    weighted = Est(random_state=0, backend="cpu").fit(X, y, sample_weight=counts)
    repeated = Est(random_state=0, backend="cpu").fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    method = "predict_proba" if Est is DecisionTreeClassifier else "predict"
    np.testing.assert_allclose(getattr(weighted, method)(X), getattr(repeated, method)(X), rtol=1e-12)
    kept = counts > 0
    dropped = Est(random_state=0, backend="cpu").fit(X[kept], y[kept], sample_weight=counts[kept])
    assert weighted.tree_.equals(dropped.tree_)


def test_unit_weights_are_the_unweighted_tree_and_a_weight_scale_changes_nothing():
    X, y, _ = regression_data(seed=3)
    plain = DecisionTreeRegressor(random_state=0).fit(X, y)
    ones = DecisionTreeRegressor(random_state=0).fit(X, y, sample_weight=np.ones(len(y)))
    assert plain.tree_.equals(ones.tree_)
    Xc, yc, w = classification_data(seed=3)
    a = DecisionTreeClassifier(random_state=0).fit(Xc, yc, sample_weight=w)
    b = DecisionTreeClassifier(random_state=0).fit(Xc, yc, sample_weight=4 * w)  # powers of 2: exact
    np.testing.assert_array_equal(a.predict_proba(Xc), b.predict_proba(Xc))


def test_weights_change_the_tree():
    # a weight on one class moves the majority of a leaf: the weights are used, not ignored
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array([0, 0, 1, 1])
    est = DecisionTreeClassifier(max_depth=0).fit(X, y, sample_weight=[1, 1, 1, 5])
    assert est.predict([[0.0]])[0] == 1
    np.testing.assert_allclose(est.predict_proba([[0.0]]), [[2 / 8, 6 / 8]])
    reg = DecisionTreeRegressor(max_depth=0).fit(X, [0.0, 0.0, 1.0, 3.0], sample_weight=[1, 1, 0, 2])
    assert reg.predict([[0.0]])[0] == pytest.approx(1.5)


@pytest.mark.parametrize("bad,match", [
    (-np.ones(10), "negative"),
    (np.r_[np.nan, np.ones(9)], "NaN"),
    (np.r_[np.inf, np.ones(9)], "inf"),
    (np.ones(11), r"shape \(10,\)"),
    (np.ones((10, 2)), r"shape \(10,\)"),
    (np.zeros(10), "zero everywhere"),
    (["a"] * 10, "numbers"),
])
@pytest.mark.parametrize("Est", [DecisionTreeRegressor, DecisionTreeClassifier])
def test_bad_weights_are_clear_errors(Est, bad, match):
    X = np.arange(20.0).reshape(10, 2)
    y = np.arange(10) % 2
    with pytest.raises(ValueError, match=match):
        Est().fit(X, y, sample_weight=bad)


def test_weights_refused_where_not_implemented():
    X, y, w = classification_data(n=60)
    with pytest.raises(ValueError, match="gain_ratio"):
        DecisionTreeClassifier(criterion="gain_ratio", backend="cpu").fit(np.nan_to_num(X), y, sample_weight=w)
    with pytest.raises(ValueError, match="CPU only"):
        DecisionTreeClassifier(backend="cuda").fit(np.nan_to_num(X), y, sample_weight=w)
    # "auto" picks the CPU for a weighted fit
    assert DecisionTreeRegressor().fit(np.nan_to_num(X), y.astype(float), sample_weight=w).backend_ == "cpu"
