"""Bad input: a clear error, or the well-defined single-leaf tree."""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from dtlab.greedy import DecisionTreeClassifier, DecisionTreeRegressor

ESTIMATORS = [DecisionTreeRegressor, DecisionTreeClassifier]


def _data(n=20):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, 3)), rng.integers(0, 2, n).astype(float)


@pytest.mark.parametrize("method", ["naive", "incremental", "vectorized"])
def test_nan_in_y(method):
    X, y = _data()
    y[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DecisionTreeRegressor(method=method).fit(X, y)
    with pytest.raises(ValueError, match="NaN"):
        DecisionTreeClassifier().fit(X, y)


@pytest.mark.parametrize("method", ["naive", "incremental", "vectorized"])
def test_constant_y_is_one_leaf(method):
    X, _ = _data()
    est = DecisionTreeRegressor(method=method).fit(X, np.full(20, 0.08))
    assert est.tree_.n_nodes == 1
    np.testing.assert_allclose(est.predict(X), 0.08)
    clf = DecisionTreeClassifier().fit(X, np.full(20, "a"))
    assert clf.tree_.n_nodes == 1 and (clf.predict(X) == "a").all()


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_single_row_is_one_leaf(est_cls):
    est = est_cls().fit([[1.0, 2.0]], [3])
    assert est.tree_.n_nodes == 1
    assert est.predict([[5.0, 5.0]])[0] == 3


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_max_depth_zero_is_one_leaf(est_cls):
    X, y = _data()
    est = est_cls(max_depth=0).fit(X, y)
    assert est.tree_.n_nodes == 1
    assert est.tree_.value.shape[0] == 1


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_non_numeric_columns(est_cls):
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": ["x", "y", "z"]})
    with pytest.raises(TypeError, match="non-numeric"):
        est_cls().fit(frame, [0, 1, 0])
    with pytest.raises(TypeError, match="numeric"):
        est_cls().fit(np.array([["1", "a"], ["2", "b"]], dtype=object), [0, 1])


@pytest.mark.parametrize("est_cls", ESTIMATORS)
def test_other_bad_input(est_cls):
    X, y = _data()
    X_inf = X.copy()
    X_inf[0, 0] = np.inf  # NaN is a missing value (test_greedy_missing.py); inf is an error
    with pytest.raises(ValueError, match="contains inf"):
        est_cls().fit(X_inf, y)
    with pytest.raises(ValueError, match="must match"):
        est_cls().fit(X, y[:-1])
    with pytest.raises(ValueError, match="Reshape your data"):
        est_cls().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="requires y"):
        est_cls().fit(X, None)
    with pytest.raises(ValueError, match="Complex"):
        est_cls().fit(X.astype(complex), y)
    with pytest.raises(ValueError, match="at least 1"):
        est_cls().fit(np.empty((0, 3)), [])
    with pytest.raises(ValueError, match="float32"):
        est_cls().fit(np.full((2, 1), 1e300), [0, 1])
    with pytest.raises(NotFittedError):
        est_cls().predict(X)
    est = est_cls(max_depth=2).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    for params, error in [(dict(max_depth=-1), ValueError), (dict(max_depth=1.5), TypeError),
                          (dict(min_samples_leaf=0), ValueError), (dict(min_samples_split=1), ValueError),
                          (dict(backend="tpu"), ValueError)]:
        with pytest.raises(error):
            est_cls(**params).fit(X, y)


def test_bad_choices():
    X, y = _data()
    with pytest.raises(ValueError, match="method"):
        DecisionTreeRegressor(method="fast").fit(X, y)
    with pytest.raises(ValueError, match="criterion"):
        DecisionTreeClassifier(criterion="mse").fit(X, y)
    with pytest.raises(ValueError, match="pruning"):
        DecisionTreeClassifier(pruning="reduced_error").fit(X, y)
    with pytest.raises(ValueError, match="confidence"):
        DecisionTreeClassifier(pruning="pessimistic", confidence=0.9).fit(X, y)


def test_nan_at_predict_follows_the_majority_side():
    X = np.array([[0.0], [1.0], [2.0], [3.0], [4.0]])
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0])
    est = DecisionTreeRegressor(max_depth=1).fit(X, y)
    assert est.predict([[np.nan]])[0] == 0.0  # 3 training rows went left
