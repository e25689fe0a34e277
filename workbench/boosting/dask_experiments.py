"""The Dask benchmark of GBDT (``python -m workbench bench --only boosting_dask``): dtlab hist and exact against
``xgboost.dask`` and LightGBM's Dask classifier on one LocalCluster, and the time per tree against workers.

Registered beside the technique's own producers (:mod:`workbench.catalog` lists this module).
Sizes: the issue's (500,000 x 28 rows, depth 6, 40 trees) at ``--scale paper``; at the default scale a
size this 2-core machine runs in a few minutes.
"""

from __future__ import annotations

from typing import Any

from workbench.boosting import dask_plots
from workbench.boosting.dask_bench import dask_scaling, dask_vs_peers
from workbench.goals import Goal, Rule, contender_spreads
from workbench.registry import RunContext, register_benchmark
from workbench.timing import MIN_RUNS, load_average

#: Rows (training), trees and timed rounds (the project's least number of alternating runs) by scale; the issue's
#: sizes are the paper scale.
SIZES = {"small": dict(n_samples=100_000, n_estimators=20, repeats=MIN_RUNS, scaling_rows=60_000, scaling_trees=10),
         "paper": dict(n_samples=500_000, n_estimators=40, repeats=MIN_RUNS, scaling_rows=500_000, scaling_trees=40)}
#: The goal: dtlab hist's time at most the faster peer's, at equal AUC (within this).
AUC_TOLERANCE = 0.002
PEERS = ("xgboost.dask hist", "lightgbm.dask")


def goal(vs_peers: dict[str, Any]) -> dict[str, Any] | None:
    """The issue's goal over the whole spread: dtlab hist's slowest run against the fastest run of any peer (the
    peer of that run is ``peer``), at an AUC within :data:`AUC_TOLERANCE` of every peer's."""
    runs = vs_peers["runs"]
    peers = [p for p in PEERS if p in runs]
    if "dtlab hist" not in runs or not peers:
        return None
    peer = min(peers, key=lambda p: min(runs[p]["seconds"]))
    ours = runs["dtlab hist"]
    diff = ours["auc"] - runs[peer]["auc"]
    same_auc = all(abs(ours["auc"] - runs[p]["auc"]) <= AUC_TOLERANCE for p in peers)
    return {"peer": peer, "dtlab_max": max(ours["seconds"]), "peer_min": min(runs[peer]["seconds"]),
            "auc_difference": diff, "met": max(ours["seconds"]) <= min(runs[peer]["seconds"]) and same_auc}


def _judge(results: dict[str, Any]) -> tuple[bool, str] | None:
    g = goal(results["vs_peers"])
    if g is None:
        return None
    return g["met"], (f"slowest dtlab hist run {g['dtlab_max']:.2f} s against {g['peer']}'s fastest "
                      f"{g['peer_min']:.2f} s; AUC difference {g['auc_difference']:+.4f}")


GOAL = Goal(
    statement=f"dtlab hist's time at most every peer's ({', '.join(PEERS)}) over the whole spread (its slowest "
              f"run against the fastest run of any peer), at equal test AUC (within {AUC_TOLERANCE} of each)",
    rules=(Rule("faster peer", "dtlab hist's slowest run <= the fastest run of any peer, AUC within "
                f"{AUC_TOLERANCE} of each peer's", _judge),),
    history=(("2026-12-01", "dtlab hist's time at most the faster peer's, at equal AUC, over the whole spread",
              "the issue's goal, first set with the benchmark (012af73)"),
             ("2026-12-04", "the fastest run of any peer, not the fastest run of the peer with the faster median",
              "a peer with the slower median may hold the single fastest run: the old reading could call the goal "
              "met with a peer's run ahead of dtlab's slowest")))


def _spreads(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Every contender's seconds of every timed run (and its AUC)."""
    return contender_spreads(results["vs_peers"]["runs"])


@register_benchmark("boosting_dask", technique="boosting", goal=GOAL, spreads=_spreads,
                    description="GBDT on a Dask LocalCluster (2 processes x 1 thread): dtlab hist and exact "
                                "against xgboost.dask (hist) and lightgbm.dask, time and test AUC; time per tree "
                                "against workers, measured (1, 2) and modelled",
                    captions=dask_plots.dask_captions)
def _dask_benchmark(ctx: RunContext) -> dict:
    size = SIZES[ctx.scale]
    out: dict[str, Any] = {"load_average_before": load_average()}
    out["vs_peers"] = dask_vs_peers(size["n_samples"], n_estimators=size["n_estimators"], max_depth=6,
                                    n_workers=2, repeats=size["repeats"], seed=ctx.seed)
    out["goal"] = goal(out["vs_peers"])
    out["scaling"] = dask_scaling(size["scaling_rows"], n_estimators=size["scaling_trees"], max_depth=6,
                                  seed=ctx.seed)
    out["load_average_after"] = load_average()
    ctx.savefig(dask_plots.dask_figures(out["vs_peers"], out["scaling"]), "boosting_dask")
    return out
