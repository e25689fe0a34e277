"""Clear errors for bad input and bad parameters."""

import numpy as np
import pytest
import scipy.sparse

from dtlab.boosting import GBDTClassifier, GBDTRegressor


@pytest.fixture
def data(rng):
    return rng.normal(size=(50, 3)).astype(np.float32), (rng.random(50) > 0.5).astype(int)


def test_inf_is_refused(data):
    X, y = data
    X[3, 1] = np.inf
    with pytest.raises(ValueError, match="inf"):
        GBDTClassifier(n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="inf"):
        GBDTClassifier(n_estimators=2).fit(scipy.sparse.csr_matrix(X), y)


def test_shape_mismatch(data):
    X, y = data
    with pytest.raises(ValueError, match="rows"):
        GBDTRegressor(n_estimators=2).fit(X, y[:-1])
    m = GBDTRegressor(n_estimators=2).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        m.predict(X[:, :2])


def test_empty_matrix(data):
    X, y = data
    with pytest.raises(ValueError):
        GBDTRegressor(n_estimators=2).fit(np.empty((0, 3)), [])
    with pytest.raises(ValueError):
        GBDTRegressor(n_estimators=2).fit(np.empty((5, 0)), np.zeros(5))


@pytest.mark.parametrize("param, value, error", [
    ("max_depth", 0, ValueError), ("max_depth", None, TypeError), ("n_estimators", 0, ValueError),
    ("learning_rate", 0.0, ValueError), ("reg_lambda", -1.0, ValueError), ("gamma", -0.1, ValueError),
    ("min_child_weight", -1.0, ValueError), ("split_method", "approx", ValueError), ("max_bins", 300, ValueError),
])
def test_bad_parameters(data, param, value, error):
    X, y = data
    with pytest.raises(error, match=param):
        GBDTClassifier(**{"n_estimators": 2, param: value}).fit(X, y)


def test_continuous_labels_and_single_class_are_refused(data):
    X, _ = data
    with pytest.raises(ValueError, match="continuous|Unknown label"):
        GBDTClassifier(n_estimators=2).fit(X, np.linspace(0, 1, 50))
    with pytest.raises(ValueError, match="one class"):
        GBDTClassifier(n_estimators=2).fit(X, np.ones(50))


def test_base_score_of_logistic_is_a_probability(data):
    X, y = data
    with pytest.raises(ValueError, match="probability"):
        GBDTClassifier(n_estimators=2, base_score=1.5).fit(X, y)


def test_early_stopping_needs_an_eval_set(data):
    X, y = data
    with pytest.raises(ValueError, match="eval_set"):
        GBDTClassifier(n_estimators=2, early_stopping_rounds=2).fit(X, y)
