"""DecisionTreeClassifier: CART against scikit-learn, C4.5 gain ratio and pessimistic pruning."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

from dtlab.datasets import chess3x3
from dtlab.greedy import DecisionTreeClassifier
from dtlab.greedy.pruning import added_errors, leaf_error_estimate, pessimistic_prune
from dtlab.trees import FlatTree
from workbench.greedy.compare import compare_with_sklearn, same_tree, sklearn_twin


@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_same_tree_as_sklearn_on_continuous_data(criterion):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 4))
    y = (X[:, 0] + 0.5 * X[:, 1] ** 2 + rng.normal(scale=0.5, size=500) > 0.5).astype(int)
    est = DecisionTreeClassifier(criterion=criterion, random_state=0)
    result = compare_with_sklearn(est, X, y)
    assert result["same_tree"] and result["n_nodes"] == result["n_nodes_sklearn"]
    theirs = sklearn_twin(est).fit(X, y)
    X_new = rng.normal(size=(300, 4))
    np.testing.assert_array_equal(est.predict(X_new), theirs.predict(X_new))
    np.testing.assert_allclose(est.predict_proba(X_new), theirs.predict_proba(X_new), atol=1e-12)


def test_same_tree_as_sklearn_on_chess3x3():
    X, y = chess3x3(20_000, noise_attrs=2, seed=4)
    y = y.copy()
    y[::17] = 1 - y[::17]  # label noise: a deep tree
    result = compare_with_sklearn(DecisionTreeClassifier(random_state=1), X, y)
    assert result["same_tree"] and result["n_nodes"] > 100


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 80), n_features=st.integers(1, 4), n_classes=st.integers(1, 4), seed=st.integers(0, 2**16),
       max_depth=st.one_of(st.none(), st.integers(1, 5)), min_samples_leaf=st.integers(1, 3),
       criterion=st.sampled_from(["gini", "entropy"]))
def test_property_same_tree_as_sklearn_even_with_ties(n, n_features, n_classes, seed, max_depth, min_samples_leaf,
                                                       criterion):
    """Class counts are exact, and ties between features follow scikit-learn's draws."""
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, n_features)).astype(float)
    y = rng.integers(0, n_classes, size=n)
    est = DecisionTreeClassifier(criterion=criterion, max_depth=max_depth, min_samples_leaf=min_samples_leaf,
                                 random_state=seed).fit(X, y)
    theirs = sklearn_twin(est).fit(X, y)
    assert same_tree(est.tree_, FlatTree.from_sklearn(theirs))
    np.testing.assert_array_equal(est.predict(X), theirs.predict(X))


def test_labels_kept_and_probabilities():
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    y = np.array(["b", "a", "b", "c"])
    est = DecisionTreeClassifier().fit(X, y)
    np.testing.assert_array_equal(est.classes_, ["a", "b", "c"])
    np.testing.assert_array_equal(est.predict(X), y)
    proba = est.predict_proba(X)
    assert proba.shape == (4, 3) and np.allclose(proba.sum(axis=1), 1)
    assert est.score(X, y) == 1.0
    assert est.tree_.value.sum(axis=1)[0] == 4  # class counts, not fractions


def test_gain_ratio_learns_chess3x3():
    X, y = chess3x3(4000, noise_attrs=3, seed=2)
    est = DecisionTreeClassifier(criterion="gain_ratio", min_samples_leaf=2, random_state=0).fit(X, y)
    assert est.score(X, y) == 1.0
    assert set(est.tree_.feature[est.tree_.feature >= 0]) <= {0, 1}  # never splits on noise


def test_gain_ratio_prefers_balanced_split_among_high_gain():
    # feature 0 isolates one row of class 1 (small gain); feature 1 separates
    # the classes perfectly but unevenly; feature 2 almost as well but evenly
    y = np.array([0] * 6 + [1] * 4)
    X = np.column_stack([
        np.r_[np.zeros(9), 1.0],
        np.r_[np.zeros(6), np.ones(4)],
        np.r_[np.zeros(5), np.ones(5)],
    ])
    est = DecisionTreeClassifier(criterion="gain_ratio", max_depth=1).fit(X, y)
    assert est.tree_.feature[0] == 1
    ent = DecisionTreeClassifier(criterion="entropy", max_depth=1).fit(X, y)
    assert ent.tree_.feature[0] == 1


# --------------------------------------------------------------- pruning
def test_added_errors_hand_computed():
    cf = 0.25
    # e = 0: N (1 - CF^(1/N))
    assert added_errors(6, 0, cf) == pytest.approx(6 * (1 - 0.25 ** (1 / 6)))
    assert added_errors(2, 0, cf) == pytest.approx(1.0)
    assert added_errors(5, 0, cf) == pytest.approx(1.21071, abs=1e-5)
    # normal approximation with continuity correction, z = 0.6745 for CF = 0.25
    z = norm.ppf(0.75)
    assert z == pytest.approx(0.6744898, abs=1e-6)
    assert 7 * 0.334571 - 1 == pytest.approx(added_errors(7, 1, cf), abs=1e-4)  # U = 0.334571 by hand
    assert 1 + added_errors(2, 1, cf) == pytest.approx(1.791494, abs=1e-5)
    assert 2 + added_errors(8, 2, cf) == pytest.approx(3.44467, abs=1e-4)
    # e + 0.5 >= N: at most N - e
    assert added_errors(3, 2.6, cf) == pytest.approx(0.4)


def _stump(root_counts, left_counts, right_counts):
    return FlatTree(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                    value=[root_counts, left_counts, right_counts], n_features=1, task="classification",
                    classes=np.array([0, 1]))


def test_pessimistic_pruning_hand_computed_cases():
    # root [6, 1] -> [5, 0] + [1, 1]: leaf estimate 7 * 0.3346 = 2.342 <= subtree
    # 1.2107 + 1.7915 + 0.1 = 3.102: pruned to a leaf
    tree = _stump([6, 1], [5, 0], [1, 1])
    assert leaf_error_estimate(np.array([6, 1])) == pytest.approx(2.342, abs=1e-3)
    assert leaf_error_estimate(np.array([5, 0])) + leaf_error_estimate(np.array([1, 1])) == pytest.approx(
        3.0022, abs=1e-3)
    pruned = pessimistic_prune(tree)
    assert pruned.n_nodes == 1 and pruned.value[0].tolist() == [6, 1]
    # root [6, 2] -> [6, 0] + [0, 2]: leaf 3.4447 > subtree 1.2378 + 1.0 + 0.1: kept
    tree = _stump([6, 2], [6, 0], [0, 2])
    assert pessimistic_prune(tree).equals(tree)
    # smaller CF = more pessimistic about the subtree: still a valid, no larger tree
    assert pessimistic_prune(tree, confidence=0.01).n_nodes <= tree.n_nodes


def test_pruning_never_grows_and_helps_on_noise():
    X, y = chess3x3(3000, seed=3)
    y = y.copy()
    noisy = np.random.default_rng(0).random(len(y)) < 0.1
    y[noisy] = 1 - y[noisy]
    X_test, y_test = chess3x3(3000, seed=4)
    full = DecisionTreeClassifier(random_state=0).fit(X, y)
    pruned = DecisionTreeClassifier(pruning="pessimistic", random_state=0).fit(X, y)
    assert pruned.tree_.n_nodes < full.tree_.n_nodes
    assert pruned.unpruned_tree_.equals(full.tree_)
    assert pruned.score(X_test, y_test) >= full.score(X_test, y_test)
    for cf in (0.05, 0.25, 0.5):
        assert pessimistic_prune(full.tree_, cf).n_nodes <= full.tree_.n_nodes


def test_pruning_refuses_regression_trees():
    tree = FlatTree.leaf([1.0], n_features=1, task="regression")
    with pytest.raises(ValueError, match="classification"):
        pessimistic_prune(tree)
