"""Categorical splits in a forest: the bitsets, the walk against its plain reference, CPU against CUDA, and
Forest over LightGBM and XGBoost models with categorical splits."""

import numpy as np
import pytest

from dtlab.inference import Forest
from dtlab.trees.categorical import CategoricalSplits, reference_leaves


def test_bitsets_from_sets():
    cs = CategoricalSplits.from_sets(np.array([7, 2]), [np.array([0, 33]), np.array([5])], np.array([True, False]),
                                     known=[np.array([0, 1, 33]), np.array([5, 6])])
    assert cs.node.tolist() == [2, 7]  # sorted, sets follow their node
    assert cs.left_categories(0).tolist() == [5] and cs.out_left.tolist() == [False, True]
    # node 7 knows 0, 1, 33; unknown categories inside its bitset (two words: 0..63) go the out_left way (left)
    left7 = cs.left_categories(1)
    assert 0 in left7 and 33 in left7 and 1 not in left7 and 2 in left7 and 40 in left7 and left7.max() == 63
    assert cs.offset.tolist() == [0, 1, 3]


def test_validate_refuses_leaves_and_bad_offsets():
    from dtlab.trees import PackedForest

    forest = PackedForest.from_arrays([3], np.array([0, -1, -1]), np.zeros(3), np.array([1, -1, -1]),
                                      np.array([2, -1, -1]), value=np.zeros((3, 1)))
    CategoricalSplits.from_sets(np.array([0]), [np.array([1])], np.array([False])).validate(forest)
    with pytest.raises(ValueError, match="leaf"):
        CategoricalSplits.from_sets(np.array([1]), [np.array([1])], np.array([False])).validate(forest)
    bad = CategoricalSplits(np.array([0]), np.array([0, 2]), np.zeros(1, np.uint32), np.array([False]))
    with pytest.raises(ValueError, match="offset"):
        bad.validate(forest)


@pytest.fixture
def lgb_model(rng):
    lgb = pytest.importorskip("lightgbm")
    n = 3000
    cats = rng.integers(0, 30, n)
    x = rng.normal(size=n)
    y = rng.normal(size=30)[cats] * 2 + 0.5 * x
    X = np.column_stack([x, cats.astype(float), rng.integers(0, 5, n).astype(float)])
    X[rng.random(n) < 0.05, 1] = np.nan
    model = lgb.LGBMRegressor(n_estimators=20, num_leaves=12, verbose=-1, min_data_per_group=5,
                              cat_smooth=1.0).fit(X, y, categorical_feature=[1, 2])
    return model, X


def probes(rng, X):
    P = X[:400].copy()
    P[:60, 1] = rng.choice([np.nan, -0.5, -1.0, -7.0, 2.5, 29.9, 31.0, 64.0, 1e6, 0.0], size=60)
    return P


def test_forest_reads_lightgbm_categorical_splits(lgb_model, rng):
    model, X = lgb_model
    forest = Forest(model)
    cat = forest.ensemble.categorical
    assert cat is not None and cat.n_nodes > 0
    P = probes(rng, X)
    np.testing.assert_allclose(forest.predict(P), model.predict(P, raw_score=True), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(forest.predict(P, backend="cuda"), model.predict(P, raw_score=True), rtol=1e-12,
                               atol=1e-12)
    leaves = forest.apply(P)
    np.testing.assert_array_equal(
        leaves + forest.ensemble.forest.node_offset[:-1],
        reference_leaves(forest.ensemble.forest, cat, cat.prepare(P)))
    np.testing.assert_array_equal(forest.apply(P, backend="cuda"), leaves)


def test_forest_reads_xgboost_categorical_splits(rng):
    xgb = pytest.importorskip("xgboost")
    n = 3000
    cats = rng.integers(0, 25, n)
    x = rng.normal(size=n)
    y = (rng.normal(size=25)[cats] + 0.5 * x > 0).astype(int)
    X = np.column_stack([x, cats.astype(float)]).astype(np.float32)
    X[rng.random(n) < 0.05, 1] = np.nan
    dtrain = xgb.DMatrix(X, label=y, feature_types=["q", "c"], enable_categorical=True)
    for onehot in (1, 64):  # partitions, and one category against the rest
        booster = xgb.train({"objective": "binary:logistic", "tree_method": "hist", "max_depth": 4,
                             "max_cat_to_onehot": onehot}, dtrain, num_boost_round=15)
        forest = Forest(booster)
        assert forest.ensemble.categorical is not None
        P = probes(rng, X).astype(np.float32)
        theirs = booster.predict(xgb.DMatrix(P, feature_types=["q", "c"], enable_categorical=True),
                                 output_margin=True)
        np.testing.assert_allclose(forest.predict(P), theirs, rtol=1e-5, atol=1e-5)


def test_threshold_methods_refuse_categorical_models(lgb_model):
    model, X = lgb_model
    with pytest.raises(ValueError, match="traversal"):
        Forest(model).predict(X[:5], method="quickscorer")
