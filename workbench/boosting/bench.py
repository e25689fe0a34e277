"""The CPU benchmark's data, its check that dtlab exact grows XGBoost exact's trees, and its goals.

Data sets: the project's ``synthetic`` rows (:func:`~dtlab.boosting.datasets.synthetic`), the HIGGS
subset, and ``heldout``: a scikit-learn ``make_classification`` set with several informative features and
label noise, fixed here once (:data:`HELDOUT`) and never used to tune dtlab, so the goals are also judged on
data the project did not choose.

A long run splits by environment (each part into its own ``--out`` folder), e.g. the paper scale's exact
pair alone: ``DTLAB_BOOSTING_CONTENDERS="dtlab exact,XGBoost exact" DTLAB_MODES=per_core python -m workbench
bench --scale paper --only boosting_vs_peers --out figures/paper_exact_per_core``.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from workbench.goals import Goal, Rule
from workbench.timing import MODES, goal_met

#: The held-out set: make_classification with these settings (training rows by scale, 25% more for the test).
HELDOUT = dict(n_features=32, n_informative=12, n_redundant=6, n_repeated=0, n_clusters_per_class=3,
               flip_y=0.08, class_sep=0.8, random_state=2026)
HELDOUT_ROWS = {"small": 60_000, "paper": 500_000}
#: Equal test AUC, as the goals require it: within this of the peer's.
AUC_TOLERANCE = 0.002
#: Goals (issue #20): dtlab time / peer time at most this in every round, at equal test AUC.
GOALS = {("dtlab exact", "XGBoost exact"): 0.25, ("dtlab hist", "LightGBM"): 1.0}


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
    score, per mode (:func:`~workbench.boosting.compare.against_xgboost`): they should be the same trees up to
    float rounding of the sums (ties of gains)."""
    from workbench.boosting.compare import against_xgboost

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


#: Seeded shuffled 75/25 splits of :func:`workbench.boosting.experiments.mean_auc_over_splits` per data set, and
#: the rows each split draws (None: all).  dtlab hist - LightGBM varies by about 0.005 between single HIGGS
#: splits (0.002 on the held-out set), so 24 splits bring the standard error of the mean difference to about
#: 0.001 (12 to 0.0006 there).
MEAN_AUC_SPLITS = {"higgs": (24, None), "heldout": (12, 20_000), "synthetic": (12, 20_000)}


def goals_of(comparisons: list[dict[str, Any]], limits: dict) -> dict[str, dict[str, Any]]:
    """Each goal per data set and mode: met over the whole spread and at equal AUC, and by how much it is off.

    Equal AUC: where the comparison carries the AUCs averaged over splits (``auc_dtlab_mean``,
    ``auc_peer_mean``), dtlab's at least the peer's less :data:`AUC_TOLERANCE`; otherwise (runs recorded
    before them) the one split's within it."""
    out = {}
    for c in comparisons:
        limit = limits.get((c["dtlab"], c["peer_name"]))
        if limit is None:
            continue
        worst = c.get("time_ratio_spread", [1 / c["speedup"]] * 2)[1]
        if "auc_dtlab_mean" in c:
            same_auc = c["auc_dtlab_mean"] >= c["auc_peer_mean"] - AUC_TOLERANCE
        else:
            same_auc = abs(c["auc_dtlab"] - c["auc_peer"]) <= AUC_TOLERANCE
        out[f"{c['dataset']}: {c['dtlab']} / {c['peer_name']} time <= {limit} ({c['mode']})"] = {
            "met": bool(goal_met(c, max_time_ratio=limit) and same_auc), "limit": limit,
            "median_time_ratio": 1 / c["speedup"], "worst_time_ratio": worst, "same_auc": bool(same_auc),
            "off_by": max(worst - limit, 0.0), "n_samples": c.get("n_samples")}
    return out


def _pair_rule(ours: str, peer: str, limit: float) -> Rule:
    """The rule of one pair of :data:`GOALS`: met on every data set and mode of the run."""
    def judge(results: dict[str, Any]) -> tuple[bool, str] | None:
        goals = goals_of(results["comparisons"], {(ours, peer): limit})
        if not goals:
            return None
        missed = [k for k, g in goals.items() if not g["met"]]
        worst_key = max(goals, key=lambda k: goals[k]["worst_time_ratio"])
        worst = goals[worst_key]
        return not missed, (f"worst round {worst['worst_time_ratio']:.2f} ({worst_key}"
                            f"{'' if worst['same_auc'] else ', different AUC'})"
                            + (f"; missed in {len(missed)} of {len(goals)} data set x mode" if missed else ""))

    return Rule(f"{ours} / {peer} <= {limit:g}", f"{ours}'s time at most {limit:g} x {peer}'s in every round, on "
                f"every data set, per core and whole machine, at equal test AUC (dtlab's mean over seeded splits "
                f"at least the peer's less {AUC_TOLERANCE})", judge)


#: The CPU benchmark's goal, one rule per pair of :data:`GOALS`.
GOAL = Goal(
    statement="; ".join(f"{a} / {b} time <= {v:g} in every round" for (a, b), v in GOALS.items())
              + f", at equal test AUC (dtlab's mean over seeded splits at least the peer's less {AUC_TOLERANCE}), on "
                "every data set, per core and whole machine",
    rules=tuple(_pair_rule(a, b, v) for (a, b), v in GOALS.items()),
    history=(("2026-11-30", "dtlab exact / XGBoost exact time <= 0.33 and dtlab hist / LightGBM <= 1.2 (synthetic "
                            "rows, whole machine, median)", "first set with the benchmark (f35e506)"),
             ("2026-12-01", "<= 0.25 and <= 1.0 in every round, at equal test AUC, on every data set and mode",
              "issue #20's limits, judged over the whole spread (36937f1)"),
             ("2026-12-05", "equal test AUC judged by the mean over seeded splits (dtlab's at least the peer's less "
                            "0.002) instead of one split's AUC within 0.002",
              "one split's AUC moves by 0.005 between HIGGS splits (2890422)")))
