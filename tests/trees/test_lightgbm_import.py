"""LightGBM models Forest reads equal LightGBM's raw score (objectives, boosting kinds, stopped early); linear
trees and malformed dumps are refused at load."""

import json

import numpy as np
import pytest

from dtlab.inference import Forest
from dtlab.trees.ensemble import ModelFormatError

lgb = pytest.importorskip("lightgbm")


def assert_raw(forest, booster, X):
    """1e-6 relative, with the absolute slack of a float32 sum of the leaves' magnitudes (the rule of
    tests/inference/test_peers.py), on float32 and float64 X."""
    v = np.abs(forest.ensemble.forest.value)
    off = forest.ensemble.forest.node_offset
    atol = 1e-6 * max(sum(v[a:b].max() for a, b in zip(off[:-1], off[1:])), 1e-30)
    for dtype in (np.float32, np.float64):
        expected = booster.predict(X.astype(dtype), raw_score=True)
        np.testing.assert_allclose(forest.predict(X.astype(dtype)), expected, rtol=1e-6, atol=atol)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(5)
    X = np.round(rng.normal(size=(600, 4)), 1)
    X[rng.random(X.shape) < 0.1] = np.nan
    y = np.nan_to_num(X[:, 0]) * 2 + np.nan_to_num(X[:, 1]) ** 2 - np.nan_to_num(X[:, 2]) + 0.3 * rng.normal(size=600)
    return X, y


PARAMS = {"num_leaves": 8, "min_data_in_leaf": 5, "verbose": -1, "num_threads": 1, "seed": 0}


@pytest.mark.parametrize("objective", ["regression", "regression_l1", "huber", "quantile", "poisson", "gamma",
                                       "tweedie", "binary", "xentropy", "multiclass", "multiclassova", "lambdarank"])
def test_raw_score_of_each_objective(data, objective):
    """The raw score is the sum of the leaves whatever the objective (its transform is not part of it)."""
    X, y = data
    params = {**PARAMS, "objective": objective}
    label = {"binary": (y > 0).astype(int), "xentropy": 1 / (1 + np.exp(-y)), "lambdarank": np.digitize(y, [0, 2]),
             "multiclass": np.digitize(y, [-1, 1]), "multiclassova": np.digitize(y, [-1, 1])}.get(objective, y)
    if objective in ("poisson", "gamma", "tweedie"):
        label = np.exp(y / 4)
    if objective.startswith("multiclass"):
        params["num_class"] = 3
    dataset = lgb.Dataset(X, label, group=[300, 300] if objective == "lambdarank" else None)
    booster = lgb.train(params, dataset, 6)
    assert_raw(Forest(booster), booster, X)


@pytest.mark.parametrize("boosting", [{"boosting": "dart", "drop_rate": 0.5},
                                      {"boosting": "rf", "bagging_fraction": 0.7, "bagging_freq": 1},
                                      {"data_sample_strategy": "goss"}], ids=["dart", "rf", "goss"])
def test_boosting_kinds(data, boosting):
    """dart's rescaled trees are final in the dump; rf's raw score is the sum (its average_output divides only
    the transformed prediction: the mean over the iterations)."""
    X, y = data
    booster = lgb.train({**PARAMS, **boosting, "objective": "regression"}, lgb.Dataset(X, y), 8)
    forest = Forest(booster)
    assert_raw(forest, booster, X)
    if boosting.get("boosting") == "rf":
        assert booster.dump_model()["average_output"]
        np.testing.assert_allclose(forest.predict(X) / 8, booster.predict(X), rtol=1e-6, atol=1e-9)


def test_stopped_early_predicts_the_best_iteration(data):
    """Booster.predict and dump_model() both stop at best_iteration (the default num_iteration)."""
    X, y = data
    booster = lgb.train({**PARAMS, "learning_rate": 0.9, "objective": "regression"}, lgb.Dataset(X[:300], y[:300]),
                        200, valid_sets=[lgb.Dataset(X[300:], y[300:])],
                        callbacks=[lgb.early_stopping(2, verbose=False)], keep_training_booster=True)
    assert 0 < booster.best_iteration < booster.current_iteration()
    forest = Forest(booster)
    assert forest.n_trees == booster.best_iteration
    assert_raw(forest, booster, X)


def test_linear_trees_are_refused(data, tmp_path):
    """linear_tree=True: a linear model in each leaf, which dtlab's constant leaves cannot predict (before, Forest
    read the leaves' constants and was off by about 2)."""
    X, y = data
    booster = lgb.train({**PARAMS, "linear_tree": True, "objective": "regression"}, lgb.Dataset(X, y), 4)
    path = tmp_path / "linear.json"
    path.write_text(json.dumps(booster.dump_model()))
    for model in (booster, booster.dump_model(), path):
        with pytest.raises(ModelFormatError, match="linear_tree=True"):
            Forest(model)


def test_trees_must_be_whole_iterations(data):
    X, y = data
    booster = lgb.train({**PARAMS, "objective": "multiclass", "num_class": 3}, lgb.Dataset(X, np.digitize(y, [0, 1])),
                        2)
    dump = booster.dump_model()
    dump["tree_info"].pop()
    with pytest.raises(ModelFormatError, match="5 trees are not whole iterations of num_tree_per_iteration 3"):
        Forest(dump)
