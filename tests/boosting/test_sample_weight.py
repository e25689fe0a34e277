"""sample_weight in fit and in eval_set: XGBoost's exact trees with weights, weight 0 = a removed row."""

import numpy as np
import pytest
import scipy.sparse

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from tests.boosting.conftest import assert_same_tree, tie_free, xgb_tree_nodes

XGB_COMMON = dict(tree_method="exact", max_depth=4, learning_rate=0.3, reg_lambda=1.0, n_estimators=6, n_jobs=2)


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_weighted_regressor_reproduces_xgboost_exact(rng, missing):
    xgb = pytest.importorskip("xgboost")
    X, y = tie_free(rng, missing=missing)
    w = rng.uniform(0.2, 3.0, size=len(y)).astype(np.float32)
    ours = GBDTRegressor(n_estimators=6, max_depth=4, base_score=0.5).fit(X, y, sample_weight=w)
    peer = xgb.XGBRegressor(**XGB_COMMON, base_score=0.5).fit(X, y, sample_weight=w)
    for t in range(6):
        assert_same_tree(ours.trees_[t], xgb_tree_nodes(peer.get_booster(), t), X)
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), atol=1e-5)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_weighted_classifier_reproduces_xgboost_exact(rng, n_classes):
    xgb = pytest.importorskip("xgboost")
    X, z = tie_free(rng, n=500, missing=0.1)
    y = np.digitize(X[:, 0] + 0.5 * np.nan_to_num(X[:, 1]), [-0.5, 0.5][:n_classes - 1])
    w = rng.choice([0.5, 1.0, 2.0, 4.0], size=len(y)).astype(np.float32)
    kw = dict(n_estimators=4, max_depth=3, learning_rate=0.3, min_child_weight=0.5, base_score=0.5)
    ours = GBDTClassifier(**kw).fit(X, y, sample_weight=w)
    peer = xgb.XGBClassifier(tree_method="exact", n_jobs=2, **kw).fit(X, y, sample_weight=w)
    for t in range(len(ours.trees_)):
        assert_same_tree(ours.trees_[t], xgb_tree_nodes(peer.get_booster(), t), X)
    np.testing.assert_allclose(ours.predict_proba(X), peer.predict_proba(X), atol=1e-5)


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_zero_weight_is_a_removed_row_and_integer_weight_a_repeated_one(rng, split_method):
    X, y = tie_free(rng, n=300, missing=0.1)
    w = rng.integers(0, 4, size=len(y))
    kw = dict(n_estimators=5, max_depth=3, split_method=split_method)
    weighted = GBDTRegressor(**kw).fit(X, y, sample_weight=w)
    repeated = GBDTRegressor(**kw).fit(np.repeat(X, w, axis=0), np.repeat(y, w))
    for a, b in zip(weighted.trees_, repeated.trees_):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.threshold, b.threshold)
    np.testing.assert_allclose(weighted.predict(X), repeated.predict(X), rtol=1e-6, atol=1e-6)
    sparse = GBDTRegressor(**kw).fit(scipy.sparse.csr_matrix(np.nan_to_num(X)), y, sample_weight=w)
    assert len(sparse.trees_) == 5


def test_weights_change_the_model_and_the_base_score(rng):
    X, y = tie_free(rng, n=300, task="classification")
    w = np.where(y == 1, 5.0, 1.0)
    plain = GBDTClassifier(n_estimators=3, max_depth=2).fit(X, y)
    weighted = GBDTClassifier(n_estimators=3, max_depth=2).fit(X, y, sample_weight=w)
    p = np.average(y, weights=w)
    assert weighted.base_margin_ == pytest.approx(np.log(p / (1 - p)))
    assert weighted.predict_proba(X)[:, 1].mean() > plain.predict_proba(X)[:, 1].mean()


def test_eval_set_weights_are_the_recorded_loss(rng):
    X, y = tie_free(rng, n=400)
    Xv, yv = X[:100], y[:100]
    wv = rng.uniform(0, 2, 100)
    m = GBDTRegressor(n_estimators=4, max_depth=3).fit(X, y, eval_set=[(Xv, yv), (Xv, yv)],
                                                       sample_weight_eval_set=[None, wv])
    rec = m.evals_result_
    pred = m.predict(Xv).astype(np.float64)
    assert rec["validation_1"]["rmse"][-1] == pytest.approx(np.sqrt(np.average((pred - yv) ** 2, weights=wv)),
                                                             rel=1e-5)
    assert rec["validation_0"]["rmse"][-1] == pytest.approx(np.sqrt(np.mean((pred - yv) ** 2)), rel=1e-5)
    with pytest.raises(ValueError, match="sample_weight_eval_set has 1 entries for 2"):
        GBDTRegressor(n_estimators=1).fit(X, y, eval_set=[(Xv, yv), (Xv, yv)], sample_weight_eval_set=[wv])


@pytest.mark.parametrize("bad, match", [(np.full(10, -1.0), "non-negative"), (np.zeros(10), "zero everywhere"),
                                        (np.full(9, 1.0), "shape"), (np.full(10, np.nan), "finite")])
def test_bad_weights(bad, match):
    X = np.arange(20, dtype=np.float32).reshape(10, 2)
    with pytest.raises(ValueError, match=match):
        GBDTRegressor(n_estimators=1).fit(X, np.arange(10.0), sample_weight=bad)


def test_the_callers_weights_are_not_changed(rng):
    X, y = tie_free(rng, n=100)
    w = rng.uniform(0, 1, 100)
    w[:5] = 0.0
    before = w.copy()
    GBDTRegressor(n_estimators=2, subsample=0.5, random_state=0).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(w, before)
