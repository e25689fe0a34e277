"""Node-wise growth: depthwise equal to the level-wise grower, lossguide against XGBoost and LightGBM."""

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.boosting.booster import tree_grower
from dtlab.boosting.grower import ColumnData, grow_boosted_tree
from dtlab.boosting.hist import HistSearch
from dtlab.boosting.lossguide import LossguideSearch
from dtlab.boosting.lossguide_grower import grow_lossguide_tree


def few_values(rng, n=800, d=4, levels=40, missing=0.0):
    """Columns of at most ``levels`` distinct values: every library's histogram has a bin per value."""
    X = (rng.integers(0, levels, size=(n, d)) / levels * 4 - 2).astype(np.float32)
    z = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    if missing:
        X[rng.random((n, d)) < missing] = np.nan
    return X, z.astype(np.float32)


def same_partition(tree, other, X, node=0, rows=None, other_node=0):
    """Whether two trees split the training rows the same way at every node (thresholds may differ between
    libraries' bins; the rows each side gets may not)."""
    rows = np.arange(X.shape[0]) if rows is None else rows
    leaf_a, leaf_b = tree["left"][node] == -1, other["left"][other_node] == -1
    if leaf_a or leaf_b:
        return leaf_a and leaf_b
    if tree["feature"][node] != other["feature"][other_node]:
        return False
    sides = []
    for t, k in ((tree, node), (other, other_node)):
        x = X[rows, t["feature"][k]]
        sides.append(np.where(np.isnan(x), t["missing_left"][k], x < t["threshold"][k]))
    a, b = sides
    if (a == ~b).all() and not (a == b).all():  # the same partition, sides swapped
        return (same_partition(tree, other, X, tree["left"][node], rows[a], other["right"][other_node])
                and same_partition(tree, other, X, tree["right"][node], rows[~a], other["left"][other_node]))
    if not (a == b).all():
        return False
    return (same_partition(tree, other, X, tree["left"][node], rows[a], other["left"][other_node])
            and same_partition(tree, other, X, tree["right"][node], rows[~a], other["right"][other_node]))


def as_dict(t):
    return {"feature": t.feature, "threshold": t.threshold, "left": t.left, "right": t.right,
            "missing_left": t.missing_left}


def xgb_as_dict(tree_json):
    return {"feature": np.asarray(tree_json["split_indices"]),
            "threshold": np.asarray(tree_json["split_conditions"], np.float32),
            "left": np.asarray(tree_json["left_children"]), "right": np.asarray(tree_json["right_children"]),
            "missing_left": np.asarray(tree_json["default_left"], bool)}


@pytest.mark.parametrize("missing", [0.0, 0.2])
@pytest.mark.parametrize("n_workers", [1, 2])
def test_depthwise_lossguide_is_the_level_wise_tree(rng, missing, n_workers):
    X, y = few_values(rng, levels=300, missing=missing)
    data = ColumnData.from_input(X)
    g = (0.5 - y).astype(np.float32)
    h = rng.uniform(0.5, 1.5, size=len(y)).astype(np.float32)
    kw = dict(max_depth=5, learning_rate=0.3, reg_lambda=1.0, gamma=0.5, min_child_weight=1.0)
    level, leaf_level = grow_boosted_tree(HistSearch(data, n_workers, 64), g, h, **kw)
    search = LossguideSearch(data, n_workers, 64, np.zeros(4, bool), 4)
    node, leaf_node = grow_lossguide_tree(search, g, h, "depthwise", max_leaves=0, **kw)
    for field in ("feature", "threshold", "missing_left", "left", "right", "value", "gain", "cover"):
        np.testing.assert_array_equal(getattr(level, field), getattr(node, field), err_msg=field)
    np.testing.assert_array_equal(leaf_level, leaf_node)


def test_lossguide_is_xgboosts_lossguide(rng):
    xgb = pytest.importorskip("xgboost")
    import json

    X, y = few_values(rng, n=1500, levels=30, missing=0.1)
    kw = dict(n_estimators=5, learning_rate=0.3, reg_lambda=1.0, min_child_weight=1.0, max_depth=0, max_leaves=12)
    ours = GBDTRegressor(split_method="hist", grow_policy="lossguide", base_score=0.0, **kw).fit(X, y)
    peer = xgb.XGBRegressor(tree_method="hist", grow_policy="lossguide", base_score=0.0, max_bin=256, n_jobs=1,
                            **kw).fit(X, y)
    trees = json.loads(peer.get_booster().save_raw("json"))["learner"]["gradient_booster"]["model"]["trees"]
    for ours_t, theirs in zip(ours.trees_, trees):
        assert (ours_t.left == -1).sum() == 12
        assert same_partition(as_dict(ours_t), xgb_as_dict(theirs), X)
    np.testing.assert_allclose(ours.predict(X), peer.predict(X), rtol=1e-4, atol=1e-4)


def test_lossguide_against_lightgbm_num_leaves(rng):
    lgb = pytest.importorskip("lightgbm")
    X, y = few_values(rng, n=2000, levels=50)
    kw = dict(n_estimators=10, learning_rate=0.2)
    ours = GBDTRegressor(split_method="hist", grow_policy="lossguide", max_depth=0, max_leaves=15, reg_lambda=0.0,
                         min_child_weight=1e-3, base_score=float(np.mean(y)), **kw).fit(X, y)
    peer = lgb.LGBMRegressor(num_leaves=15, min_child_samples=1, min_child_weight=1e-3, reg_lambda=0.0,
                             max_bin=255, verbose=-1, **kw).fit(X, y)
    assert all((t.left == -1).sum() == 15 for t in ours.trees_)
    # the same first tree: LightGBM's leaves (its init score folded in) on our leaves' rows
    ours_leaf = ours.apply(X)[:, 0]
    theirs_leaf = peer.predict(X, pred_leaf=True)[:, 0]
    pairs = {(a, b) for a, b in zip(ours_leaf, theirs_leaf)}
    assert len(pairs) == 15  # one LightGBM leaf per dtlab leaf: the same partition of the rows
    gap = np.abs(ours.predict(X) - peer.predict(X)).max()
    assert gap < 1e-3 * np.abs(y).max()


def test_max_leaves_and_depth_bound_the_tree(rng):
    X, y = few_values(rng)
    for leaves, depth in ((4, 0), (30, 3), (7, 2)):
        m = GBDTRegressor(n_estimators=2, split_method="hist", grow_policy="lossguide", max_leaves=leaves,
                          max_depth=depth).fit(X, y)
        for t in m.trees_:
            n_leaves = int((t.left == -1).sum())
            assert n_leaves <= leaves if leaves else True
            d = np.zeros(t.n_nodes, int)
            for k in range(t.n_nodes):
                if t.left[k] != -1:
                    d[t.left[k]] = d[t.right[k]] = d[k] + 1
            assert depth == 0 or d.max() <= depth
    one = GBDTRegressor(n_estimators=1, split_method="hist", grow_policy="lossguide", max_leaves=2).fit(X, y)
    assert one.trees_[0].n_nodes == 3


@pytest.mark.parametrize("params, match", [
    (dict(grow_policy="lossguide", split_method="exact"), "split_method='hist'"),
    (dict(split_method="hist", max_leaves=8), "applies to grow_policy='lossguide'"),
    (dict(split_method="hist", grow_policy="lossguide", max_depth=0), "needs max_leaves"),
    (dict(split_method="hist", grow_policy="leafwise"), "grow_policy must be one of")])
def test_bad_growth_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        GBDTRegressor(**params).fit(np.eye(4, dtype=np.float32), np.arange(4.0))


def test_lossguide_same_model_on_the_cuda_path_and_threads(rng):
    X, y = few_values(rng, n=300, levels=20, missing=0.1)
    yc = (y > np.median(y)).astype(int)
    kw = dict(n_estimators=3, split_method="hist", grow_policy="lossguide", max_leaves=6, max_bins=32,
              colsample_bylevel=0.75, random_state=2)
    cpu = GBDTClassifier(backend="cpu", n_jobs=2, **kw).fit(X, yc)
    gpu = GBDTClassifier(backend="cuda", **kw).fit(X, yc)
    for a, b in zip(cpu.trees_, gpu.trees_):
        for field in ("feature", "threshold", "left", "value"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


def test_tree_grower_chooses_the_finder(rng):
    X, y = few_values(rng, n=100)
    data = ColumnData.from_input(X)
    from dtlab.backend import resolve_backend

    params = dict(max_depth=3, learning_rate=0.3, reg_lambda=1.0, gamma=0.0, min_child_weight=1.0,
                  split_method="hist", max_bins=64, grow_policy="depthwise", max_leaves=0, max_cat_to_onehot=4)
    cpu = resolve_backend("cpu")
    assert isinstance(tree_grower(data, params, cpu, 1)[0], HistSearch)
    assert isinstance(tree_grower(data, {**params, "grow_policy": "lossguide"}, cpu, 1)[0], LossguideSearch)
    assert isinstance(tree_grower(data, params, cpu, 1, np.array([0, 1, 0, 0], bool))[0], LossguideSearch)
