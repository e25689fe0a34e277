"""On the real sets, test AUC within 0.002 of XGBoost's exact method with the same parameters; the histogram
search on XGBoost hist's cut points grows XGBoost hist's trees (HIGGS and the benchmark's held-out set)."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from dtlab.boosting import GBDTClassifier
from dtlab.datasets import load_a9a, load_diabetes_prediction, load_higgs

xgb = pytest.importorskip("xgboost")


def _split(name):
    if name == "a9a":
        train, test = load_a9a("train"), load_a9a("test")
        return train.X, (train.y > 0).astype(int), test.X, (test.y > 0).astype(int)
    d = load_higgs() if name == "higgs" else load_diabetes_prediction(n_samples=30_000)
    n = d.X.shape[0]
    cut = int(0.7 * n)
    return d.X[:cut], d.y[:cut], d.X[cut:], d.y[cut:]


@pytest.mark.parametrize("name", ["a9a", "higgs", "diabetes"])
def test_auc_within_0002_of_xgboost_exact(name):
    X, y, Xt, yt = _split(name)
    params = dict(n_estimators=20, max_depth=6, learning_rate=0.3, base_score=0.5)
    ours = GBDTClassifier(**params).fit(X, y)
    peer = xgb.XGBClassifier(tree_method="exact", n_jobs=2, **params).fit(X, y)
    auc_ours = roc_auc_score(yt, ours.predict_proba(Xt)[:, 1])
    auc_peer = roc_auc_score(yt, peer.predict_proba(Xt)[:, 1])
    assert auc_ours > 0.75
    assert abs(auc_ours - auc_peer) < 0.002
    # in fact the same model up to float rounding
    np.testing.assert_allclose(ours.predict_proba(Xt), peer.predict_proba(Xt), atol=1e-4)


def _cut_points_of_xgboost(X, y, max_bin):
    """XGBoost hist's cut points of every feature, as dtlab's cuts (``x < cut`` left): ``get_quantile_cut``'s
    values less the first (below every value) and the last (above every value)."""
    ptr, values = xgb.QuantileDMatrix(X, y, max_bin=max_bin).get_quantile_cut()
    cuts = [values[ptr[f]:ptr[f + 1]].astype(np.float32) for f in range(X.shape[1])]
    for f, c in enumerate(cuts):
        assert c[0] < np.nanmin(X[:, f]) and c[-1] > np.nanmax(X[:, f])
    return [c[1:-1] for c in cuts]


@pytest.mark.parametrize("name", ["higgs", "heldout", "higgs_nan", "heldout_nan"])
def test_hist_on_xgboosts_cut_points_grows_xgboost_hists_trees(name, monkeypatch):
    """dtlab hist and XGBoost hist differ only in where the cut points lie (order statistics at equal steps
    here, XGBoost's quantile sketch there): given XGBoost's cuts, dtlab's histogram search grows XGBoost hist's
    trees -- every split, threshold and leaf -- at the benchmark's settings.  So the test AUC between them
    (0.7845 against 0.7902 on the benchmark's HIGGS split; +0.0014 +- 0.0013 for dtlab over 20 shuffled
    splits) is the cut placement's: XGBoost's own AUC on that split moves by 0.0055 from max_bin 255 to 256.

    ``*_nan``: a tenth of the values (train and test) missing, drawn by a seeded generator.  Both scans and
    their order are XGBoost's: "missing right" from the lowest bin up, keeping the first of equal gains, then
    "missing left" from the highest bin down, keeping the first there too -- the highest of tied bins, which
    decides the threshold where a node's rows leave bins empty (370 nodes of these 40 trees on HIGGS, 367 on
    the held-out set)."""
    from dtlab.boosting import booster
    from dtlab.boosting.hist import HistSearch
    from workbench.boosting.bench import heldout
    from workbench.boosting.compare import against_xgboost

    if name.startswith("higgs"):
        d = load_higgs()
        X, y = d.X.astype(np.float32), d.y
    else:
        X, y = heldout(15_000)
    if name.endswith("_nan"):
        X = X.copy()
        X[np.random.default_rng(0).random(X.shape) < 0.1] = np.nan
    cut = int(0.75 * X.shape[0])
    X, y, Xt = X[:cut], y[:cut], X[cut:]
    if not hasattr(xgb.DMatrix, "get_quantile_cut"):
        pytest.skip("XGBoost without get_quantile_cut (before 2.0)")
    cuts = _cut_points_of_xgboost(X, y, 255)  # 254 inner cuts: dtlab's most at max_bins=256
    monkeypatch.setitem(booster.SPLIT_METHODS, ("hist", "cpu"),
                        lambda data, backend, n_workers, max_bins: HistSearch(data, n_workers, max_bins, cuts=cuts))
    params = dict(n_estimators=40, max_depth=6, learning_rate=0.3, reg_lambda=1.0, min_child_weight=1.0)
    ours = GBDTClassifier(**params, split_method="hist", max_bins=256, backend="cpu", n_jobs=1).fit(X, y)
    peer = xgb.XGBClassifier(**params, tree_method="hist", max_bin=255, base_score=float(np.mean(y)),
                             n_jobs=1).fit(X, y)
    got = against_xgboost(ours, peer, X)
    assert got["same_trees"] == got["n_trees"] == 40, got["differences"]
    np.testing.assert_allclose(ours.predict_proba(Xt), peer.predict_proba(Xt), atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["higgs", "heldout"])
def test_hist_mean_auc_within_0002_of_the_best_peer(name):
    """dtlab hist's test AUC, averaged over seeded shuffled 75/25 splits (``MEAN_AUC_SPLITS``, as
    boosting_vs_peers judges it), is at least the better of LightGBM's and XGBoost hist's averages less 0.002,
    at the benchmark's settings (depth 6, 40 rounds, learning rate 0.3, one thread).  One split cannot decide
    it: dtlab hist - LightGBM varies by 0.005 between HIGGS splits.  HIGGS: the subset's 10,984 rows; held-out:
    20,000 of the benchmark's 80,000 rows (``heldout(60_000)``) per split."""
    pytest.importorskip("lightgbm")  # the contender imports it
    from workbench.boosting.bench import MEAN_AUC_SPLITS, heldout
    from workbench.boosting.experiments import mean_auc_over_splits

    if name == "higgs":
        d = load_higgs()
        X, y = d.X.astype(np.float32), d.y
    else:
        X, y = heldout(60_000)
    mean = mean_auc_over_splits(X, y, ("dtlab hist", "LightGBM", "XGBoost hist"), *MEAN_AUC_SPLITS[name])
    assert mean["dtlab hist"] >= max(mean["LightGBM"], mean["XGBoost hist"]) - 0.002, mean


@pytest.mark.slow
def test_exact_grows_xgboost_exacts_first_tree_at_500000_rows():
    """At the paper's scale (the project's synthetic rows, 500,000 x 28 for training, depth 6) dtlab exact
    grows XGBoost exact's first tree.  It used not to: node 37 split at -0.3680168 against XGBoost's
    -0.3679922.  Near-equal gains there are decided in float32 (XGBoost's ``loss_chg``): the two candidates
    tie at 86.203125 with XGBoost's gradients and the scan from the largest value keeps the higher threshold;
    dtlab's first gradients were a few float32 steps off, from a base margin computed as the float64 logit
    rather than XGBoost's float32 ``-logf(1/p - 1)``, enough to part them by one step.  One tree suffices
    (12 s); the 40-tree benchmark model agrees on all 40 trees, predictions within 3e-7."""
    from dtlab.boosting.datasets import holdout_split, synthetic
    from workbench.boosting.compare import against_xgboost

    X, y = synthetic(int(500_000 / 0.75), seed=0)
    X, y, _, _ = holdout_split(X, y)
    params = dict(n_estimators=1, max_depth=6, learning_rate=0.3)
    ours = GBDTClassifier(**params, split_method="exact", n_jobs=2).fit(X, y)
    peer = xgb.XGBClassifier(**params, tree_method="exact", n_jobs=2, base_score=float(np.mean(y))).fit(X, y)
    got = against_xgboost(ours, peer, X)
    assert got["same_trees"] == 1, got["differences"]
    assert got["max_prediction_difference"] < 1e-6
