"""Exact TreeSHAP against the Shapley definition (every subset) and against XGBoost's pred_contribs."""

import itertools
import math

import numpy as np
import pytest

from dtlab.boosting import GBDTClassifier, GBDTRegressor
from dtlab.trees.shap import node_means, tree_shap


def _expectation(forest, cover, root, x, subset):
    """E[tree(x) | x_S]: features in S follow x, the others both children weighted by cover (the
    path-dependent value function TreeSHAP explains)."""
    def walk(node):
        if forest.left[node] == -1:
            return forest.value[node, 0]
        a, b = forest.left[node], forest.right[node]
        f = forest.feature[node]
        if f in subset:
            v = x[f]
            go_left = forest.missing_left[node] if np.isnan(v) else v <= forest.threshold[node]
            return walk(a if go_left else b)
        return (walk(a) * cover[a] + walk(b) * cover[b]) / cover[node]
    return walk(root)


def brute_force_shap(ensemble, cover, x):
    forest = ensemble.forest
    d = ensemble.n_features
    phi = np.zeros(d + 1)
    for t in range(forest.n_trees):
        root = forest.node_offset[t]
        for i in range(d):
            others = [f for f in range(d) if f != i]
            for r in range(d):
                for subset in itertools.combinations(others, r):
                    weight = math.factorial(r) * math.factorial(d - r - 1) / math.factorial(d)
                    with_i = _expectation(forest, cover, root, x, set(subset) | {i})
                    phi[i] += weight * (with_i - _expectation(forest, cover, root, x, set(subset)))
        phi[d] += _expectation(forest, cover, root, x, set())
    phi[d] += ensemble.base[0]
    return phi


@pytest.mark.parametrize("missing", [0.0, 0.2])
def test_tree_shap_is_the_shapley_value_of_every_subset(rng, missing):
    X = rng.normal(size=(300, 4)).astype(np.float32)
    X[rng.random(X.shape) < missing] = np.nan
    y = np.nan_to_num(X[:, 0]) * np.nan_to_num(X[:, 1]) + np.sin(np.nan_to_num(X[:, 2]))
    m = GBDTRegressor(n_estimators=3, max_depth=4, learning_rate=0.5).fit(X, y)
    ens = m.to_ensemble()
    cover = np.concatenate([t.cover for t in m.trees_])
    got = tree_shap(ens, cover, X[:12])[:, 0, :]
    for row in range(12):
        np.testing.assert_allclose(got[row], brute_force_shap(ens, cover, X[row].astype(np.float64)), rtol=1e-9,
                                   atol=1e-9)


def test_node_means_weigh_leaves_by_cover(rng):
    X = rng.normal(size=(200, 3)).astype(np.float32)
    m = GBDTRegressor(n_estimators=1, max_depth=3).fit(X, X[:, 0])
    tree = m.trees_[0]
    means = node_means(m.to_ensemble().forest, tree.cover)
    leaves = tree.left == -1
    assert means[0] == pytest.approx((tree.value[leaves] * tree.cover[leaves]).sum() / tree.cover[leaves].sum())


@pytest.mark.parametrize("n_classes", [0, 2, 3])
def test_contributions_equal_xgboosts_pred_contribs(rng, n_classes):
    """dtlab's exact method grows XGBoost's trees; on the same trees the contributions are XGBoost's."""
    xgb = pytest.importorskip("xgboost")
    n = 500  # distinct values in every column (no ties between candidate thresholds), NaN holes
    X = (rng.permuted(np.tile(np.arange(n, dtype=np.float32), (5, 1)), axis=1).T / n * 4 - 2).astype(np.float32)
    z = 2 * X[:, 0] + np.sin(3 * X[:, 1]) + X[:, 2] * X[:, 3] + 0.3 * rng.normal(size=n)
    X[rng.random(X.shape) < 0.15] = np.nan
    kw = dict(n_estimators=5, max_depth=4, learning_rate=0.3, base_score=0.5)
    if n_classes == 0:
        ours = GBDTRegressor(**kw).fit(X, z)
        peer = xgb.XGBRegressor(tree_method="exact", n_jobs=1, **kw).fit(X, z)
    else:
        y = np.digitize(np.nan_to_num(X[:, 0]), [-0.5, 0.5][:n_classes - 1])
        ours = GBDTClassifier(**kw).fit(X, y)
        peer = xgb.XGBClassifier(tree_method="exact", n_jobs=1, **kw).fit(X, y)
    theirs = peer.get_booster().predict(xgb.DMatrix(X, missing=np.nan), pred_contribs=True)
    mine = ours.predict(X, pred_contribs=True)
    assert mine.shape == theirs.shape
    np.testing.assert_allclose(mine, theirs, rtol=1e-4, atol=2e-5)
    margin = ours.predict(X) if n_classes == 0 else ours.decision_function(X)
    np.testing.assert_allclose(mine.sum(axis=-1), margin, rtol=1e-5, atol=1e-5)


def test_apply_gives_each_trees_leaf(rng):
    X = rng.normal(size=(300, 4)).astype(np.float32)
    m = GBDTClassifier(n_estimators=4, max_depth=3).fit(X, (X[:, 0] > 0).astype(int))
    leaves = m.apply(X)
    assert leaves.shape == (300, 4) and leaves.dtype == np.int32
    total = sum(m.trees_[t].value[leaves[:, t]].astype(np.float64) for t in range(4))
    np.testing.assert_allclose(total + m.base_margin_, m.decision_function(X), rtol=1e-5, atol=1e-5)
    assert all((m.trees_[t].left[leaves[:, t]] == -1).all() for t in range(4))
