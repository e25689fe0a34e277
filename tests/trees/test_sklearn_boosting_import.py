"""Forest over scikit-learn's gradient boosting: raw predictions equal to its decision_function / predict."""

import numpy as np
import pytest
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingClassifier,
    HistGradientBoostingRegressor,
)
from sklearn.linear_model import LinearRegression

from dtlab.inference import Forest


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 5))
    z = X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.normal(size=400)
    return X, z


def _raw(est, X):
    return est.decision_function(X) if hasattr(est, "decision_function") else est.predict(X)


@pytest.mark.parametrize("make", [
    lambda: GradientBoostingRegressor(n_estimators=30, max_depth=3, random_state=0),
    lambda: GradientBoostingRegressor(n_estimators=20, loss="quantile", alpha=0.8, random_state=0),
    lambda: GradientBoostingRegressor(n_estimators=20, init="zero", subsample=0.7, random_state=0),
    lambda: GradientBoostingClassifier(n_estimators=25, max_depth=2, learning_rate=0.2, random_state=0),
    lambda: GradientBoostingClassifier(n_estimators=15, random_state=0, n_iter_no_change=3, validation_fraction=0.3),
], ids=["squared", "quantile", "zero-init", "binary", "early-stopped"])
def test_gradient_boosting_binary_and_regression(make, data):
    X, z = data
    est = make()
    est.fit(X, z > 0 if "Classifier" in type(est).__name__ else z)
    forest = Forest(est)
    for method in ("traversal", "bitmask", "quickscorer"):
        np.testing.assert_allclose(forest.predict(X, method=method), _raw(est, X), rtol=1e-12, atol=1e-12)


def test_gradient_boosting_multiclass(data):
    X, z = data
    y = np.digitize(z, [-0.5, 0.5])
    est = GradientBoostingClassifier(n_estimators=10, max_depth=3, random_state=0).fit(X, y)
    raw = Forest(est).predict(X)
    assert raw.shape == (400, 3)
    np.testing.assert_allclose(raw, est.decision_function(X), rtol=1e-12, atol=1e-12)


def test_gradient_boosting_with_an_init_estimator_is_refused(data):
    X, z = data
    est = GradientBoostingRegressor(n_estimators=3, init=LinearRegression()).fit(X, z)
    with pytest.raises(TypeError, match="depends on X"):
        Forest(est)


@pytest.mark.parametrize("cls, target", [(HistGradientBoostingRegressor, "z"), (HistGradientBoostingClassifier, "bin"),
                                         (HistGradientBoostingClassifier, "multi")])
def test_hist_gradient_boosting_with_missing_values(cls, target, data):
    X, z = data
    X = X.copy()
    X[np.random.default_rng(2).random(X.shape) < 0.15] = np.nan
    y = {"z": z, "bin": z > 0, "multi": np.digitize(z, [-0.5, 0.5])}[target]
    est = cls(max_iter=30, max_leaf_nodes=15, random_state=0).fit(X, y)
    raw = Forest(est).predict(X)
    np.testing.assert_allclose(raw, _raw(est, X), rtol=1e-12, atol=1e-12)
    assert raw.dtype == np.float64


def test_hist_gradient_boosting_categorical_features():
    """Integer categories through scikit-learn's encoder: the same raw values, unknown and non-integer
    categories and NaN on the missing side as scikit-learn sends them."""
    rng = np.random.default_rng(3)
    n = 2000
    cat = rng.choice([0, 2, 3, 5, 7, 8, 11, 40], size=n)
    num = rng.normal(size=n)
    effect = {0: 1.0, 2: -1.0, 3: 0.5, 5: -2.0, 7: 2.0, 8: 0.0, 11: -0.5, 40: 1.5}
    y = np.vectorize(effect.get)(cat) + 0.5 * num + 0.2 * rng.normal(size=n)
    X = np.column_stack([num, cat.astype(float), rng.integers(0, 3, n).astype(float)])
    X[rng.random(n) < 0.05, 1] = np.nan
    est = HistGradientBoostingRegressor(max_iter=20, categorical_features=[1, 2], random_state=0).fit(X, y)
    forest = Forest(est)
    assert forest.ensemble.categorical is not None and forest.ensemble.categorical.n_nodes > 0
    probe = X.copy()
    probe[:50, 1] = rng.choice([1.0, 4.0, 6.5, 100.0, -3.0, 2.5], size=50)  # unknown, non-integer, negative
    np.testing.assert_allclose(forest.predict(probe), est.predict(probe), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="categorical splits"):
        forest.predict(probe, method="bitmask")


def test_hist_gradient_boosting_with_string_categories_is_refused():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": rng.normal(size=200), "c": pd.Categorical(rng.choice(["x", "y", "z"], 200))})
    est = HistGradientBoostingRegressor(max_iter=3, categorical_features="from_dtype").fit(X, rng.normal(size=200))
    with pytest.raises(TypeError, match="non-negative integers"):
        Forest(est)
