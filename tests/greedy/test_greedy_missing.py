"""Missing values (NaN) in the greedy trees: each split learns where they go, as scikit-learn's trees do (>= 1.3).

Compared with scikit-learn node for node -- feature, threshold, children, the missing direction of every
split, node values -- on data with ties and NaN in every pattern (a few, most, a whole column, a column whose
present values are all equal), with integer targets so that every sum is exact on both sides and the same
splits win.  inf is refused with a clear error at fit and at predict.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn import tree as sk

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from workbench.greedy.compare import same_tree

#: dtlab's threshold of scikit-learn's "every present value left, the missing ones right" split (threshold inf
#: there): the largest float32, the same test for every finite float32 value, and a finite FlatTree.
F32_MAX = float(np.finfo(np.float32).max)
METHODS = ["naive", "incremental", "vectorized"]


def _data(seed, n=60, n_features=4, missing=0.3, levels=5):
    """Features with ties (integer levels) and one of 2-decimal values, NaN in a share ``missing`` of the cells."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, levels, size=(n, n_features)).astype(float)
    X[:, -1] = np.round(rng.normal(size=n), 2)
    X[rng.random(X.shape) < missing] = np.nan
    return X, rng


def assert_same_tree_as_sklearn(ours, theirs):
    """Same nodes, tests, children, missing directions and node values as the fitted scikit-learn tree."""
    t, a = theirs.tree_, ours.tree_
    assert a.n_nodes == t.node_count
    np.testing.assert_array_equal(a.left, t.children_left)
    np.testing.assert_array_equal(a.right, t.children_right)
    split = t.children_left != -1
    np.testing.assert_array_equal(a.feature[split], t.feature[split])
    expected = np.where(np.isposinf(t.threshold), F32_MAX, t.threshold)
    np.testing.assert_array_equal(a.threshold[split], expected[split])
    np.testing.assert_array_equal(a.missing_left[split], t.missing_go_to_left[split].astype(bool))
    if a.task == "regression":
        np.testing.assert_allclose(a.value[:, 0], t.value[:, 0, 0], rtol=1e-12, atol=1e-12)
    else:  # scikit-learn stores class fractions, dtlab class counts
        np.testing.assert_allclose(a.value, t.value[:, 0, :] * t.weighted_n_node_samples[:, None], rtol=1e-12)


def _twins(est, **params):
    ours = est(**params, random_state=0, backend="cpu")
    theirs_params = {k: v for k, v in params.items() if k != "method"}
    theirs = (sk.DecisionTreeRegressor if est is DecisionTreeRegressor else sk.DecisionTreeClassifier)(
        **theirs_params, random_state=0)
    return ours, theirs


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("missing", [0.05, 0.3, 0.8])
@pytest.mark.parametrize("min_samples_leaf", [1, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_regressor_grows_sklearns_tree_with_missing_values(method, missing, min_samples_leaf, seed):
    X, rng = _data(seed, missing=missing)
    y = rng.integers(0, 20, size=len(X)).astype(float)  # exact sums: the same gains to the bit
    ours, theirs = _twins(DecisionTreeRegressor, method=method, min_samples_leaf=min_samples_leaf)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert_same_tree_as_sklearn(ours, theirs)
    X_new, _ = _data(seed + 100, n=200, missing=missing)
    np.testing.assert_array_equal(ours.predict(X_new), theirs.predict(X_new))
    np.testing.assert_array_equal(ours.apply(X_new), theirs.apply(X_new))


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("missing", [0.05, 0.3, 0.8])
@pytest.mark.parametrize("min_samples_leaf", [1, 4])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_classifier_grows_sklearns_tree_with_missing_values(criterion, missing, min_samples_leaf, seed):
    X, rng = _data(seed, missing=missing)
    y = rng.integers(0, 3, size=len(X))
    ours, theirs = _twins(DecisionTreeClassifier, criterion=criterion, min_samples_leaf=min_samples_leaf)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert_same_tree_as_sklearn(ours, theirs)
    X_new, _ = _data(seed + 100, n=200, missing=missing)
    np.testing.assert_array_equal(ours.predict_proba(X_new), theirs.predict_proba(X_new))


@pytest.mark.parametrize("est", [DecisionTreeRegressor, DecisionTreeClassifier])
def test_columns_all_missing_or_constant_but_for_missing(est):
    """A column with no present value never splits; one whose present values are all equal splits only
    present-against-missing (scikit-learn's inf threshold)."""
    X, rng = _data(5, n=80, missing=0.1)
    X[:, 0] = np.nan
    X[:, 1] = np.where(rng.random(80) < 0.5, np.nan, 7.0)
    y = (np.isnan(X[:, 1]) * 3 + rng.integers(0, 2, size=80)).astype(float)  # the missing ones differ
    ours, theirs = _twins(est, max_depth=3)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert_same_tree_as_sklearn(ours, theirs)
    split = ours.tree_.left != -1
    assert 0 not in ours.tree_.feature[split]
    assert ours.tree_.feature[0] == 1 and ours.tree_.threshold[0] == F32_MAX and not ours.tree_.missing_left[0]


def test_sklearn_trees_grown_on_missing_values_import_as_flat_trees():
    """scikit-learn's inf threshold imports as the largest float32: the same tree as dtlab's, the same answers."""
    from dtlab.trees import FlatTree

    X, rng = _data(5, n=80, missing=0.1)
    X[:, 1] = np.where(rng.random(80) < 0.5, np.nan, 7.0)
    y = (np.isnan(X[:, 1]) * 3 + rng.integers(0, 2, size=80)).astype(float)
    ours, theirs = _twins(DecisionTreeRegressor, max_depth=3)
    imported = FlatTree.from_sklearn(theirs.fit(X, y))
    assert np.isposinf(theirs.tree_.threshold).any()
    assert same_tree(imported, ours.fit(X, y).tree_)
    split = imported.left != -1  # (a leaf's direction means nothing; scikit-learn leaves whatever it had)
    np.testing.assert_array_equal(imported.missing_left[split], ours.tree_.missing_left[split])
    np.testing.assert_array_equal(imported.predict(X.astype(np.float32)), theirs.predict(X))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40), n_features=st.integers(1, 4),
       missing=st.sampled_from([0.0, 0.1, 0.5, 0.95]), levels=st.integers(1, 6), classify=st.booleans(),
       min_samples_leaf=st.integers(1, 5), max_depth=st.sampled_from([None, 1, 3]))
def test_property_same_tree_as_sklearn(seed, n, n_features, missing, levels, classify, min_samples_leaf,
                                       max_depth):
    X, rng = _data(seed, n, n_features, missing, levels)
    if classify:
        y = rng.integers(0, 3, size=n)
        ours, theirs = _twins(DecisionTreeClassifier, min_samples_leaf=min_samples_leaf, max_depth=max_depth)
    else:
        y = rng.integers(0, 6, size=n).astype(float)
        ours, theirs = _twins(DecisionTreeRegressor, min_samples_leaf=min_samples_leaf, max_depth=max_depth)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert_same_tree_as_sklearn(ours, theirs)


@pytest.mark.parametrize("seed", range(3))
def test_every_search_grows_one_tree_with_missing_values(seed):
    """Real values, leaves of >= 5 rows (no tied gains): the incremental search adds the vectorised one's
    numbers in its order (the same tree to the bit); the naive one sums in row order (values to rounding)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(300, 4))
    X[rng.random(X.shape) < 0.25] = np.nan
    y = rng.normal(size=300)
    trees = [DecisionTreeRegressor(method=m, min_samples_leaf=5, random_state=seed).fit(X, y).tree_ for m in METHODS]
    assert trees[1].equals(trees[2])
    assert same_tree(trees[0], trees[2], value_rtol=1e-12)
    np.testing.assert_array_equal(trees[0].missing_left, trees[2].missing_left)


def test_every_search_agrees_on_integer_targets_with_ties_and_missing_values():
    X, rng = _data(8, n=150, missing=0.3, levels=4)
    y = rng.integers(0, 6, size=150).astype(float)
    trees = [DecisionTreeRegressor(method=m, random_state=3).fit(X, y).tree_ for m in METHODS]
    assert trees[0].equals(trees[1]) and trees[1].equals(trees[2])


@pytest.mark.parametrize("est", [DecisionTreeRegressor, DecisionTreeClassifier])
def test_nan_at_predict_after_a_fit_without_nan_goes_to_the_larger_child(est):
    """As scikit-learn: a split that saw no missing value sends NaN to the side that got more training rows."""
    X, rng = _data(3, n=100, missing=0.0)
    y = rng.integers(0, 3, size=100).astype(float)
    ours, theirs = _twins(est, max_depth=4)
    ours.fit(X, y)
    theirs.fit(X, y)
    assert_same_tree_as_sklearn(ours, theirs)
    t = ours.tree_
    split = t.left != -1
    n_node = ours.node_n_samples_ if hasattr(ours, "node_n_samples_") else t.value.sum(axis=1)
    np.testing.assert_array_equal(t.missing_left[split], (n_node[t.left] > n_node[t.right])[split])
    X_new, _ = _data(4, n=200, missing=0.4)
    np.testing.assert_array_equal(ours.predict(X_new), theirs.predict(X_new))


@pytest.mark.parametrize("est", [DecisionTreeRegressor, DecisionTreeClassifier])
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_inf_is_a_clear_error_at_fit_and_predict(est, value):
    X, rng = _data(0, missing=0.2)
    y = rng.integers(0, 2, size=len(X)).astype(float)
    bad = X.copy()
    bad[3, 1] = value
    with pytest.raises(ValueError, match="inf"):
        est().fit(bad, y)
    fitted = est().fit(X, y)
    with pytest.raises(ValueError, match="inf"):
        fitted.predict(bad)
    assert fitted.predict(X).shape == (len(X),)  # NaN at predict is fine


def test_gain_ratio_refuses_missing_values_with_the_reason():
    X, rng = _data(0, missing=0.2)
    y = rng.integers(0, 2, size=len(X))
    with pytest.raises(ValueError, match="gain_ratio.*missing values"):
        DecisionTreeClassifier(criterion="gain_ratio").fit(X, y)
    clf = DecisionTreeClassifier(criterion="gain_ratio", pruning="pessimistic").fit(np.nan_to_num(X), y)
    assert clf.predict(X).shape == (len(X),)  # NaN at predict follows the larger child


@pytest.mark.parametrize("est", [DecisionTreeRegressor, DecisionTreeClassifier])
def test_missing_values_on_backends(backend, est):
    """The CUDA search (simulated without a GPU) has no missing-value scans yet: NaN at fit is a clear error
    there, never a silently different tree; a tree grown on CUDA takes NaN at predict as the CPU's does."""
    X, rng = _data(11, n=40, missing=0.3)
    y = rng.integers(0, 3, size=len(X)).astype(float)
    if backend == "cuda":
        with pytest.raises(ValueError, match="backend='cuda' does not take missing values"):
            est(max_depth=4, backend=backend).fit(X, y)
    else:
        est(max_depth=4, backend=backend).fit(X, y)
    X_full, _ = _data(11, n=40, missing=0.0)
    cpu = est(max_depth=4, min_samples_leaf=2, random_state=0, backend="cpu").fit(X_full, y)
    other = est(max_depth=4, min_samples_leaf=2, random_state=0, backend=backend).fit(X_full, y)
    assert other.backend_ == backend and other.tree_.equals(cpu.tree_)
    np.testing.assert_array_equal(other.predict(X), cpu.predict(X))


@pytest.mark.parametrize("est,module", [(DecisionTreeRegressor, "regressor"), (DecisionTreeClassifier, "classifier")])
def test_auto_backend_grows_trees_with_missing_values_on_the_cpu(est, module, monkeypatch):
    """backend="auto" asks for a CUDA search only where X has no missing value (none exists for NaN yet)."""
    import importlib

    mod = importlib.import_module(f"dtlab.greedy.{module}")
    asked = []
    resolve = mod.resolve_backend

    def spy(backend, *arrays, has_cuda=True):
        asked.append(has_cuda)
        return resolve(backend, *arrays, has_cuda=has_cuda)

    monkeypatch.setattr(mod, "resolve_backend", spy)
    X, rng = _data(2, n=40, missing=0.2)
    y = rng.integers(0, 2, size=40).astype(float)
    assert est(max_depth=2).fit(X, y).backend_ == "cpu"
    est(max_depth=2).fit(np.nan_to_num(X), y)
    assert asked == [False, True]
