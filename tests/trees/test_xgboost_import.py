"""XGBoost models Forest reads equal XGBoost's own margins (dart, several outputs, forests, every objective's
base_score link); what it cannot read is refused at load, never predicted wrong."""

import json

import numpy as np
import pytest

from dtlab.inference import Forest
from dtlab.trees.ensemble import ModelFormatError
from dtlab.trees.xgboost_import import IDENTITY_OBJECTIVES, LOG_OBJECTIVES, LOGIT_OBJECTIVES

xgb = pytest.importorskip("xgboost")

METHODS = ("traversal", "bitmask", "quickscorer")


def assert_close_to(ours, theirs, forest):
    """1e-6 relative, with the absolute slack of a float32 sum of the leaves' magnitudes (the rule of
    tests/inference/test_peers.py)."""
    v = np.abs(forest.ensemble.forest.value)
    off = forest.ensemble.forest.node_offset
    magnitude = forest.ensemble.scale * sum(v[a:b].max() for a, b in zip(off[:-1], off[1:]))
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6 * max(magnitude, 1e-30))


def assert_margins(forest, booster, X):
    """Forest's prediction, by every method, equals ``Booster.predict(output_margin=True)`` and
    ``inplace_predict`` (default iteration range: every tree)."""
    for expected in (booster.predict(xgb.DMatrix(X), output_margin=True),
                     booster.inplace_predict(X, predict_type="margin")):
        for method in METHODS:
            assert_close_to(forest.predict(X, method=method), expected, forest)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    X = np.round(rng.normal(size=(500, 4)), 1).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2 - np.nan_to_num(X[:, 2]) + 0.3 * rng.normal(size=500)
    return X, y


def _labels(y, task):
    if task == "binary":
        return (y > np.median(y)).astype(int), {"objective": "binary:logistic"}
    if task == "multiclass":
        return np.digitize(y, np.quantile(y, [0.33, 0.66])), {"objective": "multi:softprob", "num_class": 3}
    return y, {"objective": "reg:squarederror"}


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
@pytest.mark.parametrize("dart", [{"rate_drop": 0.4}, {"rate_drop": 0.5, "normalize_type": "forest",
                                                       "sample_type": "weighted", "one_drop": 1}])
def test_dart_predicts_as_xgboost(data, task, dart):
    X, y = data
    y, params = _labels(y, task)
    booster = xgb.train({**params, "booster": "dart", **dart, "max_depth": 4, "eta": 0.3, "nthread": 1, "seed": 1},
                        xgb.DMatrix(X, y), 12)
    weights = json.loads(booster.save_raw("json"))["learner"]["gradient_booster"]["weight_drop"]
    assert len(set(weights)) > 1  # trees were dropped: the weights matter
    forest = Forest(booster)
    assert_margins(forest, booster, X)
    assert_margins(Forest(booster.save_raw("json")), booster, X)  # the model JSON reads the same


@pytest.mark.parametrize("booster_kind", ["gbtree", "dart"])
def test_wrapper_stopped_early_predicts_its_best_iteration(data, booster_kind):
    X, y = data
    dart = {"rate_drop": 0.3} if booster_kind == "dart" else {}
    model = xgb.XGBRegressor(booster=booster_kind, max_depth=4, learning_rate=0.9, n_estimators=60,
                             early_stopping_rounds=2, n_jobs=1, random_state=0, **dart)
    model.fit(X[:250], y[:250], eval_set=[(X[250:], y[250:])], verbose=False)
    assert model.best_iteration + 1 < model.get_booster().num_boosted_rounds()
    forest = Forest(model)
    assert forest.n_trees == model.best_iteration + 1
    assert_close_to(forest.predict(X), model.predict(X, output_margin=True), forest)


@pytest.mark.parametrize("params", [
    {"objective": "reg:squarederror"},  # one tree per target and round
    {"objective": "reg:squarederror", "multi_strategy": "multi_output_tree", "tree_method": "hist"},  # vector leaves
    {"objective": "reg:quantileerror", "quantile_alpha": [0.2, 0.5, 0.8]},
], ids=["one_output_per_tree", "multi_output_tree", "quantiles"])
def test_several_targets(data, params):
    X, y = data
    target = y if "quantile_alpha" in params else np.c_[y, np.nan_to_num(X[:, 3])]
    booster = xgb.train({**params, "max_depth": 4, "nthread": 1}, xgb.DMatrix(X, target), 6)
    forest = Forest(booster)
    assert forest.n_outputs == (3 if "quantile_alpha" in params else 2)
    assert_margins(forest, booster, X)


@pytest.mark.parametrize("task", ["regression", "multiclass"])
def test_num_parallel_tree(data, task):
    """Boosted random forests: every tree of an iteration adds into its class (tree_info)."""
    X, y = data
    y, params = _labels(y, task)
    booster = xgb.train({**params, "num_parallel_tree": 3, "subsample": 0.6, "colsample_bynode": 0.7,
                         "max_depth": 4, "nthread": 1}, xgb.DMatrix(X, y), 4)
    assert_margins(Forest(booster), booster, X)


@pytest.mark.parametrize("objective", LOGIT_OBJECTIVES + LOG_OBJECTIVES + IDENTITY_OBJECTIVES)
def test_base_score_link_of_every_known_objective(data, objective):
    """The table of base_score links against XGBoost: a wrong link would shift every margin."""
    X, y = data
    positive = np.exp(y / 4)
    params = {"objective": objective, "max_depth": 3, "nthread": 1}
    label = {"binary": (y > 0).astype(int), "reg:logistic": (y > 0) * 0.8 + 0.1, "multi": np.digitize(y, [-1, 1]),
             "rank": (y > 0).astype(int), "count": np.round(positive)}
    dtrain = xgb.DMatrix(X, next((v for k, v in label.items() if objective.startswith(k)), positive))
    if objective.startswith("multi"):
        params["num_class"] = 3
    if objective.startswith("rank"):
        dtrain.set_group([250, 250])
    if objective == "reg:quantileerror":
        params["quantile_alpha"] = 0.3
    if objective == "survival:aft":
        dtrain = xgb.DMatrix(X)
        dtrain.set_float_info("label_lower_bound", positive)
        dtrain.set_float_info("label_upper_bound", positive * 1.5)
    if objective == "reg:linear":  # the old name of reg:squarederror, found in old model files
        booster = xgb.train({**params, "objective": "reg:squarederror"}, dtrain, 3)
        doc = json.loads(booster.save_raw("json"))
        doc["learner"]["objective"]["name"] = "reg:linear"
        assert_margins(Forest(doc), booster, X)
        return
    booster = xgb.train(params, dtrain, 3)
    assert_margins(Forest(booster), booster, X)


def _model(data, **params):
    X, y = data
    y = (y > 0).astype(int) if params.get("objective") == "binary:logistic" else y
    booster = xgb.train({"max_depth": 3, "nthread": 1, **params}, xgb.DMatrix(X, y), 3)
    return json.loads(booster.save_raw("json"))


def test_gblinear_and_unknown_objectives_are_refused(data):
    X, y = data
    linear = xgb.train({"booster": "gblinear", "nthread": 1}, xgb.DMatrix(X, y), 2)
    with pytest.raises(ModelFormatError, match="booster 'gblinear' is not supported"):
        Forest(linear)
    doc = _model(data)
    doc["learner"]["objective"]["name"] = "reg:something_new"
    with pytest.raises(ModelFormatError, match="objective 'reg:something_new' is not supported"):
        Forest(doc)


def test_dart_weights_must_match_the_trees(data):
    doc = _model(data, booster="dart", rate_drop=0.5)
    short = json.loads(json.dumps(doc))
    short["learner"]["gradient_booster"]["weight_drop"].pop()
    with pytest.raises(ModelFormatError, match="weight_drop has 2 weights for 3 trees"):
        Forest(short)
    for bad in (float("nan"), float("inf")):
        doc["learner"]["gradient_booster"]["weight_drop"][1] = bad
        with pytest.raises(ModelFormatError, match=f"tree 1: dart weight_drop {bad} is not finite"):
            Forest(doc)


def test_tree_info_outside_the_outputs_is_refused(data):
    """A tree's class was read modulo the classes: now an out-of-range one is an error, not another class."""
    X, y = data
    booster = xgb.train({"objective": "multi:softprob", "num_class": 3, "max_depth": 2, "nthread": 1},
                        xgb.DMatrix(X, np.digitize(y, [-1, 1])), 2)
    doc = json.loads(booster.save_raw("json"))
    doc["learner"]["gradient_booster"]["model"]["tree_info"][4] = 4
    with pytest.raises(ModelFormatError, match="tree_column"):
        Forest(doc)


def test_base_score_outside_the_link_is_refused(data):
    doc = _model(data, objective="binary:logistic")
    for bad, message in (("[1.5E0]", "not a probability"), ("[0E0]", "not a probability")):
        doc["learner"]["learner_model_param"]["base_score"] = bad
        with pytest.raises(ModelFormatError, match=message):
            Forest(doc)


@pytest.mark.filterwarnings("ignore:.*manually specified the `updater`")
def test_pruned_trees_with_deleted_nodes(data):
    """``process_type="update"`` with the prune updater leaves deleted nodes in the arrays (num_deleted): unreached
    leaves, dropped at import (bitmask and quickscorer counted them as leaves and were off by up to 4)."""
    X, y = data
    booster = xgb.train({"max_depth": 5, "nthread": 1}, xgb.DMatrix(X, y), 3)
    pruned = xgb.train({"process_type": "update", "updater": "prune", "gamma": 20, "max_depth": 5, "nthread": 1},
                       xgb.DMatrix(X, y), 3, xgb_model=booster)
    trees = json.loads(pruned.save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    assert all(int(t["tree_param"]["num_deleted"]) > 0 for t in trees)
    assert_margins(Forest(pruned), pruned, X)


def test_text_dump_of_a_multiclass_forest(data):
    """get_dump lists an iteration's num_parallel_tree trees of class 0, then of class 1, ... (not round robin)."""
    from dtlab.trees.xgboost_import import from_xgboost_dump

    X, y = data
    y, params = _labels(y, "multiclass")
    booster = xgb.train({**params, "num_parallel_tree": 2, "subsample": 0.7, "max_depth": 3, "nthread": 1},
                        xgb.DMatrix(X, y), 3)
    forest = Forest(from_xgboost_dump(booster.get_dump(dump_format="json"), X.shape[1],
                                      Forest(booster).ensemble.base, n_outputs=3, num_parallel_tree=2))
    assert_margins(forest, booster, X)
