"""On the real sets, test AUC within 0.002 of XGBoost's exact method with the same parameters."""

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
