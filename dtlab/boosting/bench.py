"""The CPU benchmark's data, its check that dtlab exact grows XGBoost exact's trees, and its goals.

Data sets: the project's ``synthetic`` rows (:func:`~dtlab.boosting.datasets.synthetic`), the HIGGS
subset, and ``heldout``: a scikit-learn ``make_classification`` set with several informative features and
label noise, fixed here once (:data:`HELDOUT`) and never used to tune dtlab, so the goals are also judged on
data the project did not choose.

A long run splits by environment (each part into its own ``--out`` folder), e.g. the paper scale's exact
pair alone: ``DTLAB_BOOSTING_CONTENDERS="dtlab exact,XGBoost exact" DTLAB_MODES=per_core python -m dtlab
bench --scale paper --only boosting_vs_peers --out figures/paper_exact_per_core``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..experiments.timing import MODES, goal_met

#: The held-out set: make_classification with these settings (training rows by scale, 25% more for the test).
HELDOUT = dict(n_features=32, n_informative=12, n_redundant=6, n_repeated=0, n_clusters_per_class=3,
               flip_y=0.08, class_sep=0.8, random_state=2026)
HELDOUT_ROWS = {"small": 60_000, "paper": 500_000}
#: Equal test AUC, as the goals require it: within this of the peer's.
AUC_TOLERANCE = 0.002


def heldout(n_train: int) -> tuple[np.ndarray, np.ndarray]:
    """``(X float32, y int32)`` of :data:`HELDOUT` with ``n_train / 0.75`` rows (the last quarter for testing)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=int(n_train / 0.75), **HELDOUT)
    return X.astype(np.float32), y.astype(np.int32)


def selected(variable: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """The comma-separated names in environment ``variable`` (each must be one of ``default``), else all."""
    text = os.environ.get(variable, "").strip()
    if not text:
        return default
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in default]
    if unknown:
        raise ValueError(f"{variable}: unknown {unknown}; choose from {default}")
    return names


def exact_agreement(models: dict, X: np.ndarray) -> dict[str, Any]:
    """dtlab exact's trees against XGBoost exact's, fitted on the same training rows ``X`` from the same base
    score, per mode (:func:`~dtlab.boosting.compare.against_xgboost`): they should be the same trees up to
    float rounding of the sums (ties of gains)."""
    from .compare import against_xgboost

    out = {}
    for mode in MODES:
        ours, peer = models.get(("dtlab exact", mode)), models.get(("XGBoost exact", mode))
        if ours is None or peer is None:
            continue
        got = against_xgboost(ours, peer, X)
        first = min(got["differences"], default=None)
        out[mode] = {"n_trees": got["n_trees"], "same_trees": got["same_trees"],
                     "first_differing_tree": first,
                     "first_difference": got["differences"].get(first) if first is not None else None,
                     "max_probability_difference": got["max_prediction_difference"],
                     "base_margin_dtlab": float(ours.base_margin_),
                     "base_score_xgboost": float(peer.get_params()["base_score"])}
    return out


def goals_of(comparisons: list[dict[str, Any]], limits: dict) -> dict[str, dict[str, Any]]:
    """Each goal per data set and mode: met over the whole spread and at equal AUC, and by how much it is off."""
    out = {}
    for c in comparisons:
        limit = limits.get((c["dtlab"], c["peer_name"]))
        if limit is None:
            continue
        worst = c.get("time_ratio_spread", [1 / c["speedup"]] * 2)[1]
        same_auc = abs(c["auc_dtlab"] - c["auc_peer"]) <= AUC_TOLERANCE
        out[f"{c['dataset']}: {c['dtlab']} / {c['peer_name']} time <= {limit} ({c['mode']})"] = {
            "met": bool(goal_met(c, max_time_ratio=limit) and same_auc), "limit": limit,
            "median_time_ratio": 1 / c["speedup"], "worst_time_ratio": worst, "same_auc": bool(same_auc),
            "off_by": max(worst - limit, 0.0), "n_samples": c.get("n_samples")}
    return out
