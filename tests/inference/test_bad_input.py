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
    from sklearn.ensemble import AdaBoostRegressor
    from sklearn.linear_model import LinearRegression

    X = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(TypeError, match="supported: .*RandomForestClassifier"):
        Forest(AdaBoostRegressor(n_estimators=2).fit(X, X[:, 0]))
    with pytest.raises(TypeError, match="supported: .*RandomForest"):
        Forest(LinearRegression().fit(X, X[:, 0]))
    with pytest.raises(TypeError, match="unsupported model type int; supported: FlatTree"):
        Forest(3)


