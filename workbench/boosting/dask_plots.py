"""Plots of GBDT on a Dask cluster: time and AUC against the Dask peers, time per tree against workers
(measured and modelled), bytes per level; their captions (numbers read from the results)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.plotting import new_axes, new_figure


def plot_dask_vs_peers(result: dict[str, Any], ax=None):
    """Median seconds of each contender's fit (bars, the spread of the timed runs as error bars), test AUC
    written on each bar."""
    fig, ax = new_axes(ax, figsize=(6.4, 3.8))
    runs = result["runs"]
    labels = list(runs)
    med = np.array([runs[k]["median"] for k in labels])
    lo = med - np.array([min(runs[k]["seconds"]) for k in labels])
    hi = np.array([max(runs[k]["seconds"]) for k in labels]) - med
    bars = ax.barh(labels, med, xerr=[lo, hi], color=[f"C{i}" for i in range(len(labels))], capsize=3)
    for rect, k, right in zip(bars, labels, med + hi):
        # written past the slowest run's error bar, not across it
        ax.annotate(f" AUC {runs[k]['auc']:.4f}", (right, rect.get_y() + rect.get_height() / 2),
                    xytext=(4, 0), textcoords="offset points", va="center", fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, max(med + hi) * 1.45)
    p = result["params"]
    ax.set(xlabel="seconds per fit (median; bars: fastest to slowest run)",
           title=f"{result['rows']:,} x {result['n_features']} rows, depth {p['max_depth']}, {p['n_estimators']} "
                 f"trees; LocalCluster {result['n_workers']} processes x 1 thread")
    ax.title.set_fontsize(9)
    return fig


def plot_dask_scaling(result: dict[str, Any], ax=None):
    """Time per tree against workers: measured (filled markers, solid), modelled (open markers, dashed)."""
    fig, ax = new_axes(ax)
    for i, (method, r) in enumerate(result["split_methods"].items()):
        w = [m["workers"] for m in r["measured"]]
        t = [m["per_tree"] * 1e3 for m in r["measured"]]
        ax.plot(w, t, "o-", color=f"C{i}", label=f"dtlab {method} (measured)")
        mw = [w[-1]] + [m["workers"] for m in r["modelled"]]
        mt = [t[-1]] + [m["per_tree"] * 1e3 for m in r["modelled"]]
        ax.plot(mw, mt, "o--", mfc="none", color=f"C{i}",
                label=f"dtlab {method} (modelled; error at measured points {r['fit_error']:.0%})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set(xlabel="Dask workers (processes x 1 thread)", ylabel="ms per tree (log)",
           title=f"{result['rows']:,} x {result['n_features']} rows, depth {result['max_depth']}: time per tree")
    ax.legend(fontsize=8)
    return fig


def plot_level_bytes(result: dict[str, Any], ax=None):
    """Bytes per tree at each depth on the most workers measured: histograms (hist) against row sides (exact)."""
    fig, ax = new_axes(ax)
    for i, (method, r) in enumerate(result["split_methods"].items()):
        m = r["measured"][-1]
        what = "histograms and node sums" if method == "hist" else "rows' sides (1 bit per row) up and down"
        ax.plot(range(len(m["level_bytes"])), m["level_bytes"], "o-", color=f"C{i}",
                label=f"{method}: {what}, {m['workers']} workers")
    ax.set_yscale("log")
    ax.set(xlabel="depth (0: the root)", ylabel="bytes per tree (log)", title="What crosses the network per level")
    ax.legend(fontsize=8)
    return fig


def dask_figures(vs_peers: dict[str, Any], scaling: dict[str, Any]):
    fig, axes = new_figure(1, 3, figsize=(16.5, 4.4))
    plot_dask_vs_peers(vs_peers, ax=axes[0])
    plot_dask_scaling(scaling, ax=axes[1])
    plot_level_bytes(scaling, ax=axes[2])
    return fig


def dask_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``boosting_dask`` from its results: times, AUCs, the goal and the scaling model."""
    vs, sc = results.get("vs_peers"), results.get("scaling")
    if not vs:
        return {}
    runs = vs["runs"]
    parts = [f"{k} {r['median']:.2f} s (AUC {r['auc']:.4f})" for k, r in runs.items()]
    text = (f"GBDT on a Dask LocalCluster ({vs['n_workers']} worker processes x 1 thread), {vs['rows']:,} x "
            f"{vs['n_features']} rows, depth {vs['params']['max_depth']}, {vs['params']['n_estimators']} trees, "
            f"median of {vs['repeats']} alternating runs: " + "; ".join(parts) + ".")
    goal = results.get("goal")
    if goal:
        text += (f" Goal (dtlab hist's slowest run at most the fastest run of any peer, here {goal['peer']}'s, at "
                 "equal AUC +-0.002) in this "
                 "run (the verdict over every run on this code: Goals above): "
                 f"{'met' if goal['met'] else 'not met'} (slowest dtlab hist run {goal['dtlab_max']:.2f} s against "
                 f"the peer's fastest {goal['peer_min']:.2f} s; AUC difference {goal['auc_difference']:+.4f}).")
    if sc:
        for method, r in sc["split_methods"].items():
            text += (f" {method}: " + ", ".join(f"{m['per_tree'] * 1e3:.0f} ms/tree on {m['workers']}"
                                                 for m in r["measured"])
                     + " measured; " + ", ".join(f"{m['per_tree'] * 1e3:.0f} on {m['workers']}" for m in r["modelled"])
                     + f" modelled (compute / W + a + b W; error at the measured points {r['fit_error']:.0%}).")
    return {"boosting_dask": text}
