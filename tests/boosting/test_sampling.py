"""subsample, colsample_bytree, colsample_bylevel: seeded, order-independent draws; the same model for a seed
on any thread count and on the CPU and CUDA paths."""

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.boosting.sampling import Sampler, feature_sample, row_sample, uniforms
from tests.boosting.conftest import tie_free


def test_draws_are_a_function_of_seed_tree_and_index():
    u = uniforms(7, 3, 0, 10_000)
    assert ((u >= 0) & (u < 1)).all() and abs(u.mean() - 0.5) < 0.02
    np.testing.assert_array_equal(uniforms(7, 3, 0, 500), u[:500])  # a row's draw depends on its index only
    assert not np.array_equal(uniforms(8, 3, 0, 500), u[:500]) and not np.array_equal(uniforms(7, 4, 0, 500), u[:500])
    rows = row_sample(7, 3, 10_000, 0.3)
    assert abs(rows.mean() - 0.3) < 0.02
    assert row_sample(7, 3, 10, 1.0) is None


def test_draws_are_pinned_to_the_bit():
    """The draws of a seed never change (models are reproducible across versions): splitmix64's mix
    (:func:`dtlab._hashing.mix64`, the finaliser alone) over (seed, tree, level, index)."""
    from dtlab._hashing import mix64

    z = np.array([0, 1, 0x9E3779B97F4A7C15, 2**64 - 1], np.uint64)
    ref = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    ref = (ref ^ (ref >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    np.testing.assert_array_equal(mix64(z), ref ^ (ref >> np.uint64(31)))
    bits = uniforms(7, 3, 2, 4).view(np.uint64)
    np.testing.assert_array_equal(bits, np.array([0x3FD48B286CC55D72, 0x3FB5AA98FC8142D0, 0x3FE5D2B936A242B4,
                                                  0x3FE684BFBE19705D], np.uint64))


def test_feature_draws_nest_and_count_as_xgboost():
    tree = feature_sample(1, 0, 0, None, 10, 0.5)
    assert tree.sum() == 5
    level = feature_sample(1, 0, 1, tree, 10, 0.5)
    assert level.sum() == round(2.5) and not (level & ~tree).any()  # among the tree's features
    assert feature_sample(1, 0, 0, None, 3, 0.01).sum() == 1  # never none
    assert feature_sample(1, 0, 0, None, 10, 1.0) is None


def test_sampler_zeroes_the_left_out_rows():
    s = Sampler(5, 0.5, 1.0, 1.0, 1000, 4)
    g, h = np.ones(1000, np.float32), np.ones(1000, np.float32)
    s.start_tree(2, g, h)
    out = ~row_sample(5, 2, 1000, 0.5)
    assert (g[out] == 0).all() and (h[out] == 0).all() and (g[~out] == 1).all()
    assert not s.samples_features


@pytest.mark.parametrize("split_method", ["exact", "hist"])
def test_same_seed_same_model_on_every_thread_count_and_backend(rng, split_method):
    X, y = tie_free(rng, n=60, missing=0.1)  # small: the simulator runs a Python thread per CUDA thread
    kw = dict(n_estimators=3, max_depth=3, subsample=0.6, colsample_bytree=0.8, colsample_bylevel=0.7,
              random_state=11, split_method=split_method, max_bins=16)
    one = GBDTRegressor(n_jobs=1, backend="cpu", **kw).fit(X, y)
    two = GBDTRegressor(n_jobs=2, backend="cpu", **kw).fit(X, y)
    gpu = GBDTRegressor(backend="cuda", **kw).fit(X, y)  # numba's simulator here
    for other in (two, gpu):
        for a, b in zip(one.trees_, other.trees_):
            np.testing.assert_array_equal(a.feature, b.feature)
            np.testing.assert_array_equal(a.threshold, b.threshold)
            np.testing.assert_array_equal(a.value, b.value)
    again = GBDTRegressor(n_jobs=1, backend="cpu", **kw).fit(X, y)
    np.testing.assert_array_equal(one.predict(X), again.predict(X))
    other_seed = GBDTRegressor(n_jobs=1, backend="cpu", **{**kw, "random_state": 12}).fit(X, y)
    assert not np.array_equal(one.predict(X), other_seed.predict(X))


def test_column_sample_restricts_the_features(rng):
    X, y = tie_free(rng, n=300, d=8)
    m = GBDTRegressor(n_estimators=6, max_depth=3, colsample_bytree=0.25, random_state=3).fit(X, y)
    for t, tree in enumerate(m.trees_):
        allowed = feature_sample(m.random_state, t, 0, None, 8, 0.25)
        used = tree.feature[tree.left != -1]
        assert allowed[used].all() and len(set(used)) <= 2


def test_subsample_leaves_rows_out(rng):
    """With subsample, a tree's leaf covers only count sampled rows' hessians (squared error: h = 1 each)."""
    X, y = tie_free(rng, n=500)
    m = GBDTRegressor(n_estimators=3, max_depth=2, subsample=0.4, random_state=9).fit(X, y)
    for t, tree in enumerate(m.trees_):
        assert tree.cover[0] == pytest.approx(row_sample(9, t, 500, 0.4).sum())


def test_random_state_none_draws_a_fresh_seed_and_rejects_bad_fractions(rng):
    X, y = tie_free(rng, n=200, task="classification")
    a = GBDTClassifier(n_estimators=2, subsample=0.5).fit(X, y).predict_proba(X)
    b = GBDTClassifier(n_estimators=2, subsample=0.5).fit(X, y).predict_proba(X)
    assert not np.array_equal(a, b)
    for bad in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError):
            GBDTClassifier(subsample=bad).fit(X, y)
        with pytest.raises(ValueError):
            GBDTClassifier(colsample_bytree=bad).fit(X, y)
