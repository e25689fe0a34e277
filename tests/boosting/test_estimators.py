"""The estimators' API: early stopping, evals_result_, importances, JSON, pandas, PackedForest, progress bar."""

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.trees import PackedForest
from tests.boosting.conftest import tie_free


def test_predictions_are_the_packed_forest_walked(rng):
    X, y = tie_free(rng, n=300, missing=0.2)
    m = GBDTRegressor(n_estimators=5, max_depth=3).fit(X, y)
    forest = m.forest_
    assert isinstance(forest, PackedForest) and forest.n_trees == 5
    forest.validate(X.shape[1])
    # a plain walk of the packed arrays (x <= threshold, NaN by missing_left) gives the same sum
    total = np.full(X.shape[0], m.base_margin_, np.float64)
    for row in range(X.shape[0]):
        for t in range(forest.n_trees):
            node = forest.node_offset[t]
            while forest.left[node] != -1:
                x = X[row, forest.feature[node]]
                go_left = forest.missing_left[node] if np.isnan(x) else x <= forest.threshold[node]
                node = forest.left[node] if go_left else forest.right[node]
            total[row] += forest.value[node, 0]
    np.testing.assert_allclose(m.predict(X), total, rtol=1e-5, atol=1e-5)


def test_eval_set_early_stopping_and_best_iteration(rng):
    X, y = tie_free(rng, n=800, task="classification")
    Xv, yv = tie_free(rng, n=400, task="classification")
    yv = rng.permutation(yv)  # a validation set unrelated to X: its loss rises early
    m = GBDTClassifier(n_estimators=200, max_depth=4, learning_rate=0.5, early_stopping_rounds=3)
    m.fit(X, y, eval_set=[(Xv, yv)])
    curve = m.evals_result_["validation_0"]["logloss"]
    assert len(curve) < 200 and len(curve) == m.best_iteration_ + 4
    assert curve[m.best_iteration_] == min(curve)
    full = GBDTClassifier(n_estimators=m.best_iteration_ + 1, max_depth=4, learning_rate=0.5).fit(X, y)
    np.testing.assert_allclose(m.predict_proba(Xv), full.predict_proba(Xv), atol=1e-6)


def test_evals_result_is_the_loss_of_the_predictions(rng):
    X, y = tie_free(rng, n=400)
    m = GBDTRegressor(n_estimators=6, max_depth=3).fit(X, y, eval_set=[(X[:100], y[:100])])
    rmse = m.evals_result_["validation_0"]["rmse"]
    assert len(rmse) == 6 and rmse[-1] < rmse[0]
    assert rmse[-1] == pytest.approx(np.sqrt(np.mean((m.predict(X[:100]) - y[:100]) ** 2)), rel=1e-5)


def test_feature_importances_are_normalised_gain(rng):
    X, y = tie_free(rng, n=500)
    m = GBDTRegressor(n_estimators=10, max_depth=3).fit(X, y)
    imp = m.feature_importances_
    assert imp.shape == (5,) and imp.sum() == pytest.approx(1.0)
    assert np.argmax(imp) == 0  # y leans on feature 0 most
    assert imp[4] < 0.05  # feature 4 is noise


@pytest.mark.parametrize("cls", [GBDTRegressor, GBDTClassifier])
def test_json_round_trip(rng, tmp_path, cls):
    task = "regression" if cls is GBDTRegressor else "classification"
    X, y = tie_free(rng, n=300, missing=0.1, task=task)
    m = cls(n_estimators=4, max_depth=3).fit(X, y)
    path = tmp_path / "model.json"
    m.save_json(path)
    back = cls.load_json(path)
    np.testing.assert_array_equal(back.predict(X), m.predict(X))
    np.testing.assert_array_equal(back.feature_importances_, m.feature_importances_)
    with pytest.raises(ValueError, match="not a"):
        (GBDTClassifier if cls is GBDTRegressor else GBDTRegressor).load_json(path)


def test_pandas_input_and_feature_names(rng):
    pd = pytest.importorskip("pandas")
    X, y = tie_free(rng, n=300, task="classification")
    frame = pd.DataFrame(X, columns=[f"c{i}" for i in range(5)])
    m = GBDTClassifier(n_estimators=3, max_depth=3).fit(frame, pd.Series(y))
    assert list(m.feature_names_in_) == [f"c{i}" for i in range(5)]
    np.testing.assert_array_equal(m.predict(frame), GBDTClassifier(n_estimators=3, max_depth=3).fit(X, y).predict(X))


def test_string_labels_and_multiclass_proba(rng):
    X, _ = tie_free(rng, n=300, d=4)
    y = np.array(["a", "b", "c"])[np.digitize(X[:, 0], [-0.7, 0.7])]
    m = GBDTClassifier(n_estimators=5, max_depth=3).fit(X, y)
    p = m.predict_proba(X)
    assert p.shape == (300, 3) and np.allclose(p.sum(axis=1), 1.0)
    assert (m.predict(X) == y).mean() > 0.95
    assert len(m.trees_) == 15  # one tree per class and round


def test_verbose_shows_a_progress_bar(rng, capsys):
    X, y = tie_free(rng, n=100)
    GBDTRegressor(n_estimators=3, max_depth=2, verbose=True).fit(X, y)
    assert "GBDT" in capsys.readouterr().err


def test_n_jobs_does_not_change_the_model(rng):
    X, y = tie_free(rng, n=400, missing=0.1)
    a = GBDTRegressor(n_estimators=4, max_depth=4, n_jobs=1).fit(X, y)
    b = GBDTRegressor(n_estimators=4, max_depth=4, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_sparse_with_empty_columns_and_stored_nan(rng):
    import scipy.sparse

    X = rng.normal(size=(200, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.5] = np.nan
    X[:, 0] = np.nan  # an empty first column
    X[:, 4] = np.nan  # and an empty last one
    y = (np.nan_to_num(X[:, 1]) + np.nan_to_num(X[:, 2]) > 0).astype(int)
    rows, cols = np.nonzero(~np.isnan(X))
    sparse = scipy.sparse.csc_matrix((X[rows, cols], (rows, cols)), shape=X.shape)
    stored_nan = sparse.copy()
    stored_nan.data[::7] = np.nan  # explicitly stored NaN entries are missing as well
    a = GBDTClassifier(n_estimators=4, max_depth=3).fit(sparse, y)
    b = GBDTClassifier(n_estimators=4, max_depth=3).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert a.feature_importances_[0] == 0 and a.feature_importances_[4] == 0
    order = np.lexsort((rows, cols))  # the CSC's storage order: by column, then row
    dense_nan = X.copy()
    dense_nan[rows[order][::7], cols[order][::7]] = np.nan
    c = GBDTClassifier(n_estimators=4, max_depth=3).fit(stored_nan, y)
    d = GBDTClassifier(n_estimators=4, max_depth=3).fit(dense_nan, y)
    np.testing.assert_array_equal(c.predict_proba(dense_nan), d.predict_proba(dense_nan))
