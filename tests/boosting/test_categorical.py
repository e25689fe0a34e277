"""Native categorical splits: the partition search against brute force and LightGBM, pandas categories,
integer codes, the model file, the CUDA path."""

import itertools

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.boosting._categorical_splits import left_bins


def brute_force(hg, hh, n_bins, lam, mcw):
    """The best split over every subset of the present categories (missing rows: none here)."""
    present = [b for b in range(n_bins) if hh[b] > 0]
    G, H = hg.sum(), hh.sum()
    best = (0.0, None)
    for r in range(1, len(present)):
        for left in itertools.combinations(present, r):
            gl, hl = hg[list(left)].sum(), hh[list(left)].sum()
            if hl < mcw or H - hl < mcw:
                continue
            gain = gl * gl / (hl + lam) + (G - gl) ** 2 / (H - hl + lam) - G * G / (H + lam)
            if gain > best[0] + 1e-9:
                best = (gain, set(left))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_partition_search_is_the_best_of_every_subset(seed):
    """Fisher's result: with lambda = 0 the best of the G/H-sorted prefixes is the best of all 2^(m-1) splits."""
    rng = np.random.default_rng(seed)
    m = 7
    hg = np.append(rng.normal(size=m), 0.0)
    hh = np.append(rng.uniform(0.5, 2.0, size=m), 0.0)
    chosen, miss_left, gain = left_bins(hg, hh, m, hg.sum(), hh.sum(), False, 0.0, 0.0, 4)
    ref_gain, ref_left = brute_force(hg, hh, m, 0.0, 0.0)
    assert gain == pytest.approx(ref_gain, rel=1e-12)
    assert set(chosen.tolist()) in (ref_left, set(range(m)) - ref_left)


def test_one_hot_tries_each_category_alone():
    hg = np.array([3.0, -1.0, -1.0, 0.5, 0.0])
    hh = np.array([1.0, 1.0, 1.0, 1.0, 0.0])
    chosen, _, gain = left_bins(hg, hh, 4, hg.sum(), hh.sum(), False, 1.0, 0.0, 4)
    assert chosen.tolist() == [0]
    G, H = hg.sum(), hh.sum()
    assert gain == pytest.approx(9 / 2 + (G - 3) ** 2 / (H - 1 + 1) - G * G / (H + 1))


def categorical_data(rng, n=3000, n_cats=12, missing=0.05):
    cats = rng.integers(0, n_cats, n)
    effect = rng.normal(size=n_cats) * 2
    x = rng.normal(size=n)
    y = effect[cats] + 0.5 * x + 0.2 * rng.normal(size=n)
    X = np.column_stack([x, cats.astype(np.float64)])
    X[rng.random(n) < missing, 1] = np.nan
    return X, y


def test_a_stump_splits_the_categories_as_lightgbm(rng):
    """One split on one categorical feature, regularisation that LightGBM adds switched off: the same set."""
    lgb = pytest.importorskip("lightgbm")
    X, y = categorical_data(rng, missing=0.0)
    X = X[:, 1:]
    ours = GBDTRegressor(n_estimators=1, max_depth=1, split_method="hist", categorical_features=[0], reg_lambda=0.0,
                         min_child_weight=0.0, learning_rate=1.0, base_score=float(y.mean())).fit(X, y)
    peer = lgb.LGBMRegressor(n_estimators=1, num_leaves=2, learning_rate=1.0, reg_lambda=0.0, min_child_samples=1,
                             min_child_weight=0.0, min_data_per_group=1, cat_smooth=0.0, cat_l2=0.0,
                             max_cat_threshold=64, max_cat_to_onehot=4, verbose=-1).fit(X, y, categorical_feature=[0])
    node = peer.booster_.dump_model()["tree_info"][0]["tree_structure"]
    theirs = {int(c) for c in str(node["threshold"]).split("||")}
    mine = set(ours.trees_[0].categories[0].tolist())
    assert mine == theirs or mine == set(range(12)) - theirs
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), rtol=1e-6, atol=1e-6)


def test_categorical_model_fits_as_well_as_lightgbm_and_better_than_codes(rng):
    lgb = pytest.importorskip("lightgbm")
    X, y = categorical_data(rng, n=6000, n_cats=20)  # one draw of the categories' effects: train, then test
    X, Xt, y, yt = X[:4000], X[4000:], y[:4000], y[4000:]
    kw = dict(n_estimators=30, learning_rate=0.2)
    ours = GBDTRegressor(max_depth=3, split_method="hist", categorical_features=[1], **kw).fit(X, y)
    codes = GBDTRegressor(max_depth=3, split_method="hist", categorical_features=None, **kw).fit(X, y)
    peer = lgb.LGBMRegressor(num_leaves=8, max_depth=3, min_child_samples=1, min_data_per_group=1, cat_smooth=1.0,
                             verbose=-1, **kw).fit(X, y, categorical_feature=[1])

    def rmse(m):
        return float(np.sqrt(np.mean((m.predict(Xt) - yt) ** 2)))

    assert rmse(ours) < 0.95 * rmse(codes)
    assert rmse(ours) < 1.05 * rmse(peer)


def test_pandas_categories_by_value_unseen_ones_go_right(rng):
    pd = pytest.importorskip("pandas")
    X, y = categorical_data(rng, n=1500, n_cats=6, missing=0.1)
    names = np.array(["a", "b", "c", "d", "e", "f"], dtype=object)
    col = pd.Categorical([names[int(v)] if v == v else None for v in X[:, 1]])
    df = pd.DataFrame({"x": X[:, 0], "c": col})
    m = GBDTRegressor(n_estimators=5, max_depth=3, split_method="hist").fit(df, y)
    assert m.categorical_.tolist() == [False, True] and m.categories_ == {1: list("abcdef")}
    coded = GBDTRegressor(n_estimators=5, max_depth=3, split_method="hist", categorical_features=[1]).fit(X, y)
    np.testing.assert_array_equal(m.predict(df), coded.predict(X))
    # other categories' order at predict: matched by value
    reordered = df.assign(c=df["c"].cat.reorder_categories(list("fedcba")))
    np.testing.assert_array_equal(m.predict(reordered), m.predict(df))
    # a category never seen in fit goes right at every categorical node: as a code beyond every set
    unseen = df.iloc[:3].assign(c=pd.Categorical(["zz"] * 3))
    beyond = X[:3].copy()
    beyond[:, 1] = 40
    np.testing.assert_array_equal(m.predict(unseen), coded.predict(beyond))
    with pytest.raises(ValueError, match="fitted without them"):
        GBDTRegressor(n_estimators=1, split_method="hist").fit(X, y).predict(df)


def test_categorical_contributions_and_model_file(rng, tmp_path):
    X, y = categorical_data(rng, n=800, n_cats=9)
    yc = (y > 0).astype(int)
    m = GBDTClassifier(n_estimators=6, max_depth=3, split_method="hist", categorical_features=[1],
                       max_cat_to_onehot=2).fit(X, yc)
    assert any(t.categories for t in m.trees_)
    contrib = m.predict(X, pred_contribs=True)
    np.testing.assert_allclose(contrib.sum(axis=1), m.decision_function(X), rtol=1e-5, atol=1e-5)
    path = tmp_path / "m.json"
    m.save_json(path)
    back = GBDTClassifier.load_json(path)
    np.testing.assert_array_equal(back.predict_proba(X), m.predict_proba(X))
    from dtlab.inference import Forest

    np.testing.assert_allclose(Forest(str(path)).predict(X), m.decision_function(X), rtol=1e-6, atol=1e-6)


def test_categorical_same_model_on_the_cuda_path(rng):
    X, y = categorical_data(rng, n=400, n_cats=7)
    kw = dict(n_estimators=3, max_depth=3, split_method="hist", categorical_features=[1], max_bins=32)
    cpu = GBDTRegressor(backend="cpu", **kw).fit(X, y)
    gpu = GBDTRegressor(backend="cuda", **kw).fit(X, y)
    for a, b in zip(cpu.trees_, gpu.trees_):
        np.testing.assert_array_equal(a.feature, b.feature)
        np.testing.assert_array_equal(a.value, b.value)
        assert a.categories.keys() == b.categories.keys()
        for k in a.categories:
            np.testing.assert_array_equal(a.categories[k], b.categories[k])


@pytest.mark.parametrize("bad, match", [(-1.0, "non-negative integer codes"), (1.5, "non-negative integer codes")])
def test_bad_codes_and_exact(rng, bad, match):
    X, y = categorical_data(rng, n=100)
    X[0, 1] = bad
    with pytest.raises(ValueError, match=match):
        GBDTRegressor(split_method="hist", categorical_features=[1]).fit(X, y)
    with pytest.raises(ValueError, match="split_method='hist'"):
        GBDTRegressor(split_method="exact", categorical_features=[1]).fit(np.abs(np.nan_to_num(np.round(X))), y)
    # the default, split_method="auto", takes the histograms for categorical features
    assert GBDTRegressor(categorical_features=[1]).fit(np.abs(np.nan_to_num(np.round(X))), y).split_method_ == "hist"
    with pytest.raises(ValueError, match="categories"):
        GBDTRegressor(split_method="hist", categorical_features=[1], max_bins=4).fit(
            np.abs(np.nan_to_num(np.round(X * 3))), y)
