"""The defaults a user of XGBoost 2 / LightGBM tries first: split_method="auto", the familiar parameter names."""

import numpy as np
import pandas as pd
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from tests.boosting.conftest import tie_free


def _same_model(a, b, X):
    np.testing.assert_array_equal(a.forest_.threshold, b.forest_.threshold)
    np.testing.assert_array_equal(a.forest_.value, b.forest_.value)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_lossguide_with_max_leaves_fits_with_the_defaults(rng):
    X, y = tie_free(rng, n=500, task="classification")
    m = GBDTClassifier(grow_policy="lossguide", max_leaves=8, n_estimators=5).fit(X, y)
    assert m.split_method_ == "hist"
    forest = m.forest_
    ends = np.append(forest.node_offset[1:], len(forest.left))
    leaves = [int((forest.left[start:end] == -1).sum()) for start, end in zip(forest.node_offset, ends)]
    assert max(leaves) <= 8 and max(leaves) > 2
    _same_model(m, GBDTClassifier(grow_policy="lossguide", max_leaves=8, n_estimators=5,
                                  split_method="hist").fit(X, y), X)


def test_a_pandas_categorical_column_fits_with_the_defaults(rng):
    X, y = tie_free(rng, n=400, task="classification")
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    frame["colour"] = pd.Categorical(rng.choice(["red", "green", "blue"], size=len(frame)))
    m = GBDTClassifier(n_estimators=5).fit(frame, y)
    assert m.split_method_ == "hist" and m.categorical_.any()
    _same_model(m, GBDTClassifier(n_estimators=5, split_method="hist").fit(frame, y), frame)
    with pytest.raises(ValueError, match="categorical features need split_method='hist'"):
        GBDTClassifier(n_estimators=5, split_method="exact").fit(frame, y)


def test_auto_runs_exact_where_exact_serves_and_grows_its_trees(rng):
    X, y = tie_free(rng, n=400, missing=0.1)
    m = GBDTRegressor(n_estimators=5).fit(X, y)
    assert m.split_method_ == "exact"
    _same_model(m, GBDTRegressor(n_estimators=5, split_method="exact").fit(X, y), X)


@pytest.mark.parametrize("method", ["exact", "hist"])
def test_xgboosts_tree_method_is_split_method(rng, method):
    X, y = tie_free(rng, n=400)
    by_alias = GBDTRegressor(n_estimators=4, tree_method=method).fit(X, y)
    assert by_alias.split_method_ == method
    _same_model(by_alias, GBDTRegressor(n_estimators=4, split_method=method).fit(X, y), X)


def test_max_bin_is_max_bins(rng):
    X, y = tie_free(rng, n=400)
    by_alias = GBDTRegressor(n_estimators=4, split_method="hist", max_bin=16).fit(X, y)
    _same_model(by_alias, GBDTRegressor(n_estimators=4, split_method="hist", max_bins=16).fit(X, y), X)


@pytest.mark.parametrize("params, message", [
    (dict(tree_method="approx"), "no counterpart"),
    (dict(tree_method="gpu_hist"), "tree_method must be one of"),
    (dict(split_method="exact", tree_method="hist"), "disagree"),
    (dict(max_bins=32, max_bin=64), "disagree"),
    (dict(max_bin=1), "max_bin must be >= 2"),
    (dict(split_method="approx"), "split_method must be one of"),
    (dict(dask_hist_loop="ring"), "dask_hist_loop must be one of"),
    (dict(split_method="exact", grow_policy="lossguide", max_leaves=8), "needs split_method='hist'"),
])
def test_conflicting_or_unknown_names_are_clear_errors(rng, params, message):
    X, y = tie_free(rng, n=100)
    with pytest.raises(ValueError, match=message):
        GBDTRegressor(n_estimators=2, **params).fit(X, y)
