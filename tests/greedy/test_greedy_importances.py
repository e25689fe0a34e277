"""feature_importances_ of the greedy trees: scikit-learn's impurity decrease, on the same tree."""

import numpy as np
import pytest

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor
from workbench.greedy.compare import compare_with_sklearn, sklearn_twin


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
@pytest.mark.parametrize("max_depth", [3, None])
def test_classifier_importances_are_sklearns(criterion, max_depth):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(600, 5))
    y = (X[:, 0] + 0.7 * X[:, 2] ** 2 + rng.normal(scale=0.6, size=600) > 0.6).astype(int) + (X[:, 3] > 1)
    est = DecisionTreeClassifier(criterion=criterion, max_depth=max_depth, random_state=0)
    assert compare_with_sklearn(est, X, y)["same_tree"]  # fits est too
    theirs = sklearn_twin(est).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, theirs.feature_importances_, rtol=1e-9, atol=1e-12)
    assert est.feature_importances_.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("max_depth,min_samples_leaf", [(4, 1), (None, 5)])
def test_regressor_importances_are_sklearns(max_depth, min_samples_leaf):
    # continuous data, leaves of >= 5 rows or a shallow tree: no tied gains, one tree (test_greedy_regressor)
    rng = np.random.default_rng(4)
    X = rng.normal(size=(500, 4))
    y = 2 * X[:, 1] + np.sin(3 * X[:, 0]) + rng.normal(scale=0.3, size=500)
    est = DecisionTreeRegressor(max_depth=max_depth, min_samples_leaf=min_samples_leaf, random_state=0)
    assert compare_with_sklearn(est, X, y)["same_tree"]  # fits est too
    theirs = sklearn_twin(est).fit(X, y)
    np.testing.assert_allclose(est.feature_importances_, theirs.feature_importances_, rtol=1e-7, atol=1e-12)


def test_pruned_tree_importances_and_a_single_leaf():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(300, 3))
    y = (rng.random(300) < 0.5).astype(int)  # noise: pruning removes splits
    full = DecisionTreeClassifier(random_state=0).fit(X, y)
    pruned = DecisionTreeClassifier(pruning="pessimistic", random_state=0).fit(X, y)
    assert pruned.tree_.n_nodes < full.tree_.n_nodes
    imp = pruned.feature_importances_
    assert imp.shape == (3,) and np.all(imp >= 0) and imp.sum() in (0.0, pytest.approx(1.0))
    stump = DecisionTreeRegressor().fit(X, np.ones(300))
    np.testing.assert_array_equal(stump.feature_importances_, np.zeros(3))
