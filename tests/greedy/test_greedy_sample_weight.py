"""sample_weight of the greedy trees: scikit-learn's weighted tree on every search path, zero and integer weights,
importances, bad weights."""

import numpy as np
import pytest

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from dtlab.trees import FlatTree
from workbench.greedy.compare import compare_with_sklearn, same_tree, sklearn_twin

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

    X, y, w = classification_data(seed=4)
    serial = DecisionTreeClassifier(random_state=0, backend="cpu").fit(X, y, sample_weight=w)
    from dtlab.greedy import _node_rules

    monkeypatch.setattr(_node_rules, "PARALLEL_MIN_WORK", 1)
    parallel = DecisionTreeClassifier(random_state=0, backend="cpu").fit(X, y, sample_weight=w)
    assert serial.tree_.equals(parallel.tree_)
    Xr, yr, wr = regression_data(seed=4)
    monkeypatch.setattr(_node_rules, "PARALLEL_MIN_WORK", 1)
    a = DecisionTreeRegressor(random_state=0, backend="cpu").fit(Xr, yr, sample_weight=wr)
    monkeypatch.setattr(_node_rules, "PARALLEL_MIN_WORK", 10**12)
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
    # C4.5 spreads a row missing the feature over both children by weight: not implemented, with or without weights
    X, y, w = classification_data(n=60, missing=0.1)
    with pytest.raises(ValueError, match="gain_ratio.*missing values"):
        DecisionTreeClassifier(criterion="gain_ratio").fit(X, y, sample_weight=w)


# ---- criterion="gain_ratio" with weights: C4.5's fractional cases ----
def c45_reference(x, y, w, n_classes):
    """Plain C4.5 (release 8) of one feature with case weights: every threshold between distinct values, the
    one of least weighted entropy, its MDL-corrected gain ``H - sum p H_side - log2(tries) / W`` and its ratio to
    the split information, every count a sum of weights.  Returns ``(threshold, gain, ratio)``."""
    def entropy(counts):
        total = sum(counts)
        return -sum(c / total * np.log2(c / total) for c in counts if c > 0)

    order = np.argsort(x, kind="stable")
    x, y, w = x[order], y[order], w[order]
    total = [w[y == c].sum() for c in range(n_classes)]
    cuts = [i for i in range(1, len(x)) if x[i] > x[i - 1]]
    best = None
    for i in cuts:
        left = [w[:i][y[:i] == c].sum() for c in range(n_classes)]
        right = [t - lc for t, lc in zip(total, left)]
        info = sum(left) * entropy(left) + sum(right) * entropy(right)
        if best is None or info < best[0]:
            best = (info, i, left, right)
    _, i, left, right = best
    W, p_l, p_r = sum(total), sum(left) / sum(total), sum(right) / sum(total)
    gain = entropy(total) - p_l * entropy(left) - p_r * entropy(right) - np.log2(len(cuts)) / W
    split_info = -(p_l * np.log2(p_l) + p_r * np.log2(p_r))
    return (x[i - 1] + x[i]) / 2, gain, gain / split_info


def test_weighted_gain_ratio_by_hand():
    # four rows, weights 1, 1, 1, 2: W = 5, classes 2 : 3, three thresholds tried; the best cuts at 1.5 (pure sides)
    from dtlab.greedy._node_rules import FEATURE_THRESHOLD, GAIN_RATIO
    from dtlab.greedy._scans_cpu import SCANS

    xs = np.array([0.0, 1.0, 2.0, 3.0], dtype=np.float32)
    ys = np.array([0, 0, 1, 1], dtype=np.int32)
    ws = np.array([1.0, 1.0, 1.0, 2.0])
    h_node = -(0.4 * np.log2(0.4) + 0.6 * np.log2(0.6))  # 0.97095...
    gain = h_node - np.log2(3) / 5  # pure sides; C4.5's threshold cost log2(tries) / W
    ratio = gain / h_node  # split information of 2 : 3 is the node's entropy again
    scratch = [np.zeros(2) for _ in range(3)]
    best, k, left, got_gain, got_ratio = SCANS["weighted"]["scan_classes"](xs, ys, ws, 0, 4, 4, 1, FEATURE_THRESHOLD,
                                                                           GAIN_RATIO, *scratch)
    assert (k, left) == (2, False)
    assert got_gain == pytest.approx(gain, rel=1e-14) and got_gain == pytest.approx(0.6539580, abs=1e-7)
    assert got_ratio == pytest.approx(ratio, rel=1e-14) and got_ratio == pytest.approx(0.6735236, abs=1e-7)
    est = DecisionTreeClassifier(criterion="gain_ratio").fit(xs[:, None], ys, sample_weight=ws)
    assert est.tree_.threshold[0] == 1.5
    np.testing.assert_array_equal(est.tree_.value, [[2, 3], [2, 0], [0, 3]])


def test_weighted_gain_ratio_is_the_plain_c45_reference():
    # the root of a weighted C4.5 stump: each feature's threshold, gain and ratio as the plain reference computes
    # them, and the feature chosen by C4.5's rule (best ratio among gains >= the mean gain)
    rng = np.random.default_rng(11)
    X = np.round(rng.normal(size=(40, 3)), 1)
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(scale=0.7, size=40) > 0).astype(int)
    w = rng.uniform(0.2, 4.0, size=40)
    ref = [c45_reference(X[:, f], y, w, 2) for f in range(3)]
    gains = [g for _, g, _ in ref if g > 0]
    chosen = max((f for f in range(3) if ref[f][1] > 0 and ref[f][1] >= np.mean(gains) - 1e-3),
                 key=lambda f: ref[f][2])
    est = DecisionTreeClassifier(criterion="gain_ratio", max_depth=1, random_state=0).fit(X, y, sample_weight=w)
    assert est.tree_.feature[0] == chosen
    assert est.tree_.threshold[0] == pytest.approx(ref[chosen][0], abs=1e-6)
    # the weights decide: the same rows unweighted (or weighted otherwise) are scored differently
    unweighted = [c45_reference(X[:, f], y, np.ones(40), 2) for f in range(3)]
    assert not np.allclose([r[2] for r in ref], [r[2] for r in unweighted])


def test_weighted_gain_ratio_zero_weights_drop_rows_and_integer_weights_repeat_them():
    X, y, _ = classification_data(n=200, seed=12)
    X = np.round(X, 1)  # ties between values, so repeated and tied rows meet
    counts = np.random.default_rng(3).integers(0, 4, size=len(y))
    params = dict(criterion="gain_ratio", random_state=0, backend="cpu")
    weighted = DecisionTreeClassifier(**params).fit(X, y, sample_weight=counts)
    repeated = DecisionTreeClassifier(**params).fit(np.repeat(X, counts, axis=0), np.repeat(y, counts))
    assert weighted.tree_.n_nodes > 20
    # the same tree: tests, children and class counts (n_node_samples count rows, so they differ by design)
    for name in ("feature", "threshold", "left", "right", "value"):
        np.testing.assert_array_equal(getattr(weighted.tree_, name), getattr(repeated.tree_, name))
    kept = counts > 0
    dropped = DecisionTreeClassifier(**params).fit(X[kept], y[kept], sample_weight=counts[kept])
    assert weighted.tree_.equals(dropped.tree_)
    # pruned too: C4.5's pessimistic pruning reads the weighted class counts
    pruned = [DecisionTreeClassifier(pruning="pessimistic", **params).fit(*data, **kw).tree_ for data, kw in
              (((X, y), dict(sample_weight=counts)), ((np.repeat(X, counts, axis=0), np.repeat(y, counts)), {}))]
    for name in ("feature", "threshold", "left", "right", "value"):
        np.testing.assert_array_equal(getattr(pruned[0], name), getattr(pruned[1], name))


def test_unit_weights_grow_the_unweighted_gain_ratio_tree():
    X, y, _ = classification_data(n=200, seed=13)
    X = np.nan_to_num(X)
    plain = DecisionTreeClassifier(criterion="gain_ratio", random_state=0).fit(X, y)
    ones = DecisionTreeClassifier(criterion="gain_ratio", random_state=0).fit(X, y, sample_weight=np.ones(len(y)))
    assert plain.tree_.equals(ones.tree_)
    # weights of 1 and 1 + 2**-30 (not all 1: the weighted scans run) give the unweighted tree's tests
    near = DecisionTreeClassifier(criterion="gain_ratio", random_state=0).fit(
        X, y, sample_weight=1.0 + (np.arange(len(y)) % 2) * 2.0**-30)
    assert same_tree(near.tree_, plain.tree_, value_rtol=1e-6)
