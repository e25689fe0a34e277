"""FlatTree: validation, JSON round trip, sklearn import, traversal on every backend."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

from dtlab import FlatTree
from dtlab.datasets import chess3x3
from dtlab.trees import TreeValidationError, apply, apply_reference


def stump(**overrides):
    arrays = dict(feature=[0, -1, -1], threshold=[0.5, 0, 0], left=[1, -1, -1], right=[2, -1, -1],
                  value=[[2, 2], [2, 0], [0, 2]], n_features=1)
    arrays.update(overrides)
    return FlatTree(**arrays)


def test_stump_predicts_by_threshold():
    tree = stump()
    X = np.array([[0.1], [0.5], [0.9]], dtype=np.float32)
    assert apply(tree, X, backend="cpu").tolist() == [1, 1, 2]
    assert tree.predict(X, backend="cpu").tolist() == [0, 0, 1]
    assert tree.n_leaves == 2 and tree.max_depth == 1


@pytest.mark.parametrize("overrides, message", [
    (dict(left=[1, -1, -1], right=[-1, -1, -1]), "exactly one child"),
    (dict(left=[1, -1, -1], right=[5, -1, -1]), "out of range"),
    (dict(left=[1, 0, -1], right=[2, 2, -1], feature=[0, 0, -1]), "cycle"),
    (dict(left=[1, 2, -1], right=[2, 2, -1], feature=[0, 0, -1]), "parents"),
    (dict(feature=[3, -1, -1]), "feature index out of range"),
    (dict(threshold=[np.nan, 0, 0]), "finite"),
    (dict(value=[[1, 1], [1, 0]]), "value must have shape"),
    (dict(feature=[], threshold=[], left=[], right=[], value=np.zeros((0, 2))), "at least one node"),
])
def test_malformed_trees_are_rejected(overrides, message):
    with pytest.raises(TreeValidationError, match=message):
        stump(**overrides)


def test_unreachable_cycle_is_rejected():
    # nodes 3 and 4 point at each other, away from the root
    with pytest.raises(TreeValidationError):
        FlatTree(feature=[0, -1, -1, 0, 0], threshold=[0.5] * 5, left=[1, -1, -1, 4, 3], right=[2, -1, -1, 4, 3],
                 value=np.ones((5, 2)), n_features=1)


def test_json_round_trip_is_exact(tmp_path):
    X, y = chess3x3(2000, noise_attrs=1, seed=3)
    tree = FlatTree.from_sklearn(DecisionTreeClassifier(random_state=0).fit(X, y))
    path = tmp_path / "tree.json"
    tree.save(path)
    loaded = FlatTree.load(path)
    assert loaded.equals(tree)
    assert np.array_equal(loaded.classes, tree.classes)
    assert "pickle" not in path.read_text()


def test_load_rejects_bad_files(tmp_path):
    with pytest.raises(FileNotFoundError):
        FlatTree.load(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        FlatTree.load(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(ValueError, match="not a FlatTree document"):
        FlatTree.load(tmp_path / "other.json")


def test_from_sklearn_rejects_unfitted_and_other_objects():
    with pytest.raises(TypeError, match="fitted scikit-learn decision tree"):
        FlatTree.from_sklearn(DecisionTreeClassifier())
    with pytest.raises(TypeError):
        FlatTree.from_sklearn(object())


def test_traversal_input_is_validated():
    tree = stump()
    with pytest.raises(ValueError, match="2 features, but 1 were expected"):
        apply(tree, np.zeros((3, 2)), backend="cpu")
    with pytest.raises(ValueError, match="2-D"):
        apply(tree, np.zeros(3), backend="cpu")
    with pytest.raises(ValueError, match="inf"):
        apply(tree, np.array([[np.inf]]), backend="cpu")
    with pytest.raises(TypeError, match="numeric"):
        apply(tree, np.array([["a"]]), backend="cpu")
    with pytest.raises(ValueError, match="backend must be one of"):
        apply(tree, np.zeros((1, 1)), backend="gpu")


def test_nan_follows_missing_direction(backend):
    X = np.array([[np.nan], [0.2]], dtype=np.float64)
    assert apply(stump(), X, backend=backend).tolist() == [1, 1]
    assert apply(stump(missing_left=[False, True, True]), X, backend=backend).tolist() == [2, 1]


def test_empty_input_gives_empty_output(backend):
    assert apply(stump(), np.zeros((0, 1), np.float32), backend=backend).shape == (0,)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_backends_agree_with_sklearn_and_reference(backend, dtype):
    X, y = chess3x3(3000, noise_attrs=3, seed=11)
    sk = DecisionTreeClassifier(random_state=0, max_depth=8).fit(X, y)
    tree = FlatTree.from_sklearn(sk)
    rows = X[:200].astype(dtype)  # the simulator is slow; keep it tiny
    expected = sk.apply(rows)
    assert np.array_equal(apply(tree, rows, backend=backend), expected)
    assert np.array_equal(apply_reference(tree, rows), expected)
    assert np.array_equal(tree.predict(rows, backend=backend), sk.predict(rows))
    np.testing.assert_allclose(tree.predict_proba(rows, backend=backend), sk.predict_proba(rows))


def test_regression_tree_import_predicts_like_sklearn(backend):
    X, y = chess3x3(2000, noise_attrs=2, seed=5)
    target = X[:, 0] * 2.0 + y
    sk = DecisionTreeRegressor(max_depth=6, random_state=0).fit(X, target)
    tree = FlatTree.from_sklearn(sk)
    assert tree.task == "regression" and tree.n_outputs == 1
    assert np.array_equal(tree.predict(X[:150], backend=backend), sk.predict(X[:150]))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_samples=st.integers(2, 60), n_features=st.integers(1, 4), max_depth=st.integers(1, 6),
       n_classes=st.integers(2, 3), seed=st.integers(0, 2**31 - 1))
def test_property_traversal_matches_sklearn_on_random_trees(n_samples, n_features, max_depth, n_classes, seed):
    rng = np.random.default_rng(seed)
    # Few distinct values so rows often land exactly on thresholds (the <= edge).
    X = rng.integers(0, 5, size=(n_samples, n_features)).astype(np.float32) / 4
    y = rng.integers(0, n_classes, size=n_samples)
    sk = DecisionTreeClassifier(max_depth=max_depth, random_state=seed % 1000).fit(X, y)
    tree = FlatTree.from_sklearn(sk)
    X_test = np.vstack([X, rng.random((20, n_features)).astype(np.float32)])
    expected = sk.apply(X_test)
    cpu = apply(tree, X_test, backend="cpu")
    assert np.array_equal(cpu, expected)
    assert np.array_equal(apply(tree, X_test, backend="cuda"), cpu)
    assert np.array_equal(tree.predict(X_test, backend="cpu"), sk.predict(X_test))
