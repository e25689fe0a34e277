"""Clear errors: wrong columns, malformed model files, unsupported models and splits, bad methods."""

import json

import numpy as np
import pytest

from dtlab.inference import Forest
from dtlab.trees.ensemble import ModelFormatError


@pytest.fixture(scope="module")
def xgb_booster():
    xgb = pytest.importorskip("xgboost")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100, 3)).astype(np.float32)
    return xgb.train({"max_depth": 2, "nthread": 1}, xgb.DMatrix(X, X[:, 0]), 2)


def test_wrong_number_of_columns(xgb_booster):
    forest = Forest(xgb_booster)
    with pytest.raises(ValueError, match="4 features, but 3 were expected"):
        forest.predict(np.zeros((5, 4), np.float32))
    with pytest.raises(ValueError, match="2-D"):
        forest.predict(np.zeros(3))


def test_inf_and_method_and_backend(xgb_booster):
    forest = Forest(xgb_booster)
    with pytest.raises(ValueError, match="inf"):
        forest.predict(np.full((2, 3), np.inf))
    with pytest.raises(ValueError, match="method must be one of"):
        forest.predict(np.zeros((2, 3)), method="fastest")
    with pytest.raises(ValueError, match="backend must be one of"):
        forest.predict(np.zeros((2, 3)), backend="tpu")


def test_malformed_model_files(tmp_path, xgb_booster):
    bad = tmp_path / "model.json"
    bad.write_text("{not json")
    with pytest.raises(ModelFormatError, match="malformed"):
        Forest(bad)
    with pytest.raises(ModelFormatError, match="neither a dtlab model file.*XGBoost model"):
        Forest({"something": 1})
    model = json.loads(xgb_booster.save_raw("json"))
    del model["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"]
    with pytest.raises(ModelFormatError, match="malformed XGBoost tree"):
        Forest(model)
    model = json.loads(xgb_booster.save_raw("json"))
    model["learner"]["gradient_booster"]["model"]["trees"][0]["left_children"][0] = 0  # a cycle
    with pytest.raises(ModelFormatError, match="inconsistent XGBoost model"):
        Forest(model)
    with pytest.raises(ModelFormatError, match="cannot read model file"):
        Forest(tmp_path / "missing.json")


def test_unsupported_model_types():
    from sklearn.ensemble import GradientBoostingRegressor
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(TypeError, match="supported: .*RandomForestClassifier"):
        Forest(GradientBoostingRegressor(n_estimators=2).fit(X, X[:, 0]))
    with pytest.raises(TypeError, match="supported: .*RandomForest"):
        Forest(LinearRegression().fit(X, X[:, 0]))
    with pytest.raises(TypeError, match="unsupported model type int; supported: FlatTree"):
        Forest(3)


def test_lightgbm_categorical_split_names_the_feature():
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 5, 300), rng.normal(size=300)])
    y = (X[:, 0] == 2) * 3.0 + X[:, 1]
    booster = lgb.train({"verbose": -1, "min_data_per_group": 5, "cat_smooth": 1}, lgb.Dataset(
        X, y, feature_name=["colour", "size"], categorical_feature=["colour"]), 3)
    with pytest.raises(ModelFormatError, match="categorical split on feature 0 \\('colour'\\)"):
        Forest(booster)


def test_xgboost_categorical_split_is_refused():
    xgb = pytest.importorskip("xgboost")
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"c": pd.Categorical(rng.integers(0, 4, 200)), "x": rng.normal(size=200)})
    y = (df["c"].cat.codes == 1) * 2.0 + df["x"]
    booster = xgb.train({"max_depth": 2, "tree_method": "hist"}, xgb.DMatrix(df, y, enable_categorical=True), 2)
    with pytest.raises(ModelFormatError, match="categorical splits of XGBoost"):
        Forest(booster)
