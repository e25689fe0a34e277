"""Forest.predict equals each library's own raw prediction on random models (depth 1-12, ties, NaN)."""

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from dtlab.inference import Forest

METHODS = ("traversal", "bitmask", "quickscorer")
SETTINGS = dict(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def training_data(rng, n, n_features, nan_features=(0,)):
    """Rounded values (many ties), NaN in ``nan_features`` only."""
    X = np.round(rng.normal(size=(n, n_features)), 1).astype(np.float32)
    for f in nan_features:
        X[rng.random(n) < 0.2, f] = np.nan
    y = np.nan_to_num(X[:, 0]) + X[:, 1] ** 2 - X[:, 2] + 0.3 * rng.normal(size=n)
    return X, y


def with_ties(rng, X, thresholds_by_feature, p_nan=0.1):
    """Test rows: X, then copies whose values are the model's thresholds exactly; NaN anywhere."""
    X = X.copy()
    rows = X[: len(X) // 2].copy()
    for f, th in thresholds_by_feature.items():
        th = np.asarray(th, np.float64)
        th = th[np.abs(th) <= np.finfo(X.dtype).max]  # LightGBM's 1e300 ("every present value left") is inf in float32
        if len(th):
            rows[:, f] = rng.choice(th.astype(X.dtype), rows.shape[0])
    out = np.vstack([X, rows])
    out[rng.random(out.shape) < p_nan] = np.nan
    return out


def forest_thresholds(forest, transform=lambda t: t):
    f = forest.ensemble.forest
    internal = f.left != -1
    finite = np.isfinite(f.threshold)  # scikit-learn's NaN-only splits have threshold inf
    return {j: transform(f.threshold[internal & finite & (f.feature == j)]) for j in range(forest.n_features)}


def assert_close_to(ours, theirs, forest):
    """1e-6 relative, with the absolute slack of a float32 sum of the leaves' magnitudes."""
    v = np.abs(forest.ensemble.forest.value)
    magnitude = forest.ensemble.scale * sum(v[a:b].max() for a, b in zip(forest.ensemble.forest.node_offset[:-1],
                                                                         forest.ensemble.forest.node_offset[1:]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6 * max(magnitude, 1e-30))


@settings(**SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 12),
       objective=st.sampled_from(["reg:squarederror", "binary:logistic", "multi:softprob", "count:poisson"]))
def test_xgboost(seed, depth, objective):
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(seed)
    X, y = training_data(rng, 400, 5)
    params = {"objective": objective, "max_depth": depth, "eta": 0.3, "nthread": 1, "seed": seed,
              "base_score": float(rng.uniform(0.2, 0.8))}
    if objective == "binary:logistic":
        y = (y > np.median(y)).astype(int)
    elif objective == "multi:softprob":
        y = np.digitize(y, np.quantile(y, [0.33, 0.66]))
        params["num_class"] = 3
    elif objective == "count:poisson":
        y = rng.poisson(np.exp(np.clip(y, -2, 2) / 2))
    booster = xgb.train(params, xgb.DMatrix(X, y), int(rng.integers(1, 12)))
    forest = Forest(booster)
    Xt = with_ties(rng, X, forest_thresholds(forest, lambda t: np.nextafter(t.astype(np.float32), np.inf)))
    expected = booster.predict(xgb.DMatrix(Xt), output_margin=True)
    np.testing.assert_array_equal(booster.inplace_predict(Xt, predict_type="margin"), expected)
    for method in METHODS:
        assert_close_to(forest.predict(Xt, method=method), expected, forest)
    from dtlab.trees.xgboost_import import from_xgboost_dump

    if objective == "reg:squarederror":  # the text dump, base score given by hand
        dump = Forest(from_xgboost_dump(booster.get_dump(dump_format="json"), 5,
                                        forest.ensemble.base[0]))
        assert_close_to(dump.predict(Xt), expected, forest)


@settings(**SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 12), zero_as_missing=st.booleans(),
       objective=st.sampled_from(["regression", "binary", "multiclass"]), rf=st.booleans())
@example(seed=10000001, depth=3, zero_as_missing=False, objective="multiclass", rf=False)  # a 1e300 threshold
def test_lightgbm(seed, depth, zero_as_missing, objective, rf):
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(seed)
    X, y = training_data(rng, 400, 5)
    X[rng.random(X.shape) < 0.1] = 0.0
    params = {"objective": objective, "max_depth": depth, "num_leaves": min(2 ** depth, 200), "verbose": -1,
              "min_data_in_leaf": 3, "zero_as_missing": zero_as_missing, "seed": seed, "num_threads": 1}
    if rf:
        params.update(boosting="rf", bagging_fraction=0.7, bagging_freq=1)
    if objective == "binary":
        y = (y > np.median(y)).astype(int)
    elif objective == "multiclass":
        y = np.digitize(y, np.quantile(y, [0.33, 0.66]))
        params["num_class"] = 3
    booster = lgb.train(params, lgb.Dataset(X, y), int(rng.integers(1, 10)))
    forest = Forest(booster)
    Xt = with_ties(rng, X, forest_thresholds(forest))
    Xt[rng.random(Xt.shape) < 0.05] = 0.0
    for dtype in (np.float32, np.float64):
        expected = booster.predict(Xt.astype(dtype), raw_score=True)
        for method in METHODS:
            assert_close_to(forest.predict(Xt.astype(dtype), method=method), expected, forest)


@settings(**SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), depth=st.integers(1, 12), classifier=st.booleans(),
       kind=st.sampled_from(["tree", "forest", "extra"]))
def test_sklearn(seed, depth, classifier, kind):
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        RandomForestClassifier,
        RandomForestRegressor,
    )
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    rng = np.random.default_rng(seed)
    X, y = training_data(rng, 300, 5)
    if classifier:
        y = np.digitize(y, np.quantile(y, [0.5, 0.8]))
    cls = {("tree", True): DecisionTreeClassifier, ("tree", False): DecisionTreeRegressor,
           ("forest", True): RandomForestClassifier, ("forest", False): RandomForestRegressor,
           ("extra", True): ExtraTreesClassifier, ("extra", False): ExtraTreesRegressor}[kind, classifier]
    kw = {} if kind == "tree" else {"n_estimators": int(rng.integers(1, 8))}
    model = cls(max_depth=depth, random_state=seed, **kw).fit(X if kind != "extra" else np.nan_to_num(X), y)
    forest = Forest(model)
    Xt = with_ties(rng, X, forest_thresholds(forest, lambda t: t.astype(np.float32)),
                   p_nan=0.1 if kind != "extra" else 0.0)
    if kind == "extra":
        Xt = np.nan_to_num(Xt)
    expected = model.predict_proba(Xt) if classifier else model.predict(Xt)
    for method in METHODS:
        np.testing.assert_allclose(forest.predict(Xt, method=method), expected, rtol=1e-12, atol=1e-15)


def test_dtlab_estimator_and_flat_tree():
    from dtlab.greedy import DecisionTreeClassifier

    rng = np.random.default_rng(0)
    X, y = training_data(rng, 300, 4, nan_features=())
    y = (y > 0).astype(int)
    model = DecisionTreeClassifier(max_depth=6).fit(X, y)
    for method in METHODS:
        np.testing.assert_allclose(Forest(model).predict(X, method=method), model.predict_proba(X), rtol=1e-12)
        np.testing.assert_allclose(Forest(model.tree_).predict(X, method=method), model.predict_proba(X),
                                   rtol=1e-12)


def test_model_files_and_wrappers(tmp_path):
    """Saved JSON files and the scikit-learn-style wrappers read the same as the boosters."""
    import json

    xgb = pytest.importorskip("xgboost")
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(1)
    X, y = training_data(rng, 300, 4)
    booster = xgb.train({"max_depth": 4, "nthread": 1}, xgb.DMatrix(X, y), 5)
    booster.save_model(tmp_path / "model.json")
    light = lgb.LGBMRegressor(n_estimators=5, num_leaves=8, verbose=-1).fit(X, y)
    (tmp_path / "light.json").write_text(json.dumps(light.booster_.dump_model()))
    wrapped = xgb.XGBRegressor(n_estimators=5, max_depth=3, n_jobs=1).fit(X, y)
    cases = [(Forest(str(tmp_path / "model.json")), booster.inplace_predict(X, predict_type="margin")),
             (Forest(tmp_path / "light.json"), light.predict(X, raw_score=True)),
             (Forest(light), light.predict(X, raw_score=True)),
             (Forest(wrapped), wrapped.predict(X, output_margin=True))]
    for forest, expected in cases:
        assert_close_to(forest.predict(X, method="traversal"), expected, forest)
