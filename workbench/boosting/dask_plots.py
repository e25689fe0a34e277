"""Plots of GBDT on a Dask cluster: time and AUC against the Dask peers, time per tree against workers
(measured and modelled), bytes per level; their captions (numbers read from the results)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.plotting import new_axes, new_figure
from workbench.text import count, threads


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


def plot_dask_scaling(result: dict[str, Any], ax=None, workers: str = "processes x 1 thread"):
    """Time per tree against workers: measured (filled markers, solid), modelled (open markers, dashed);
    ``workers`` says what a worker was (the x label)."""
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
    ax.set(xlabel=f"Dask workers ({workers})", ylabel="ms per tree (log)",
           title=f"{result['rows']:,} x {result['n_features']} rows, depth {result['max_depth']}: time per tree")
    ax.legend(fontsize=8)
    return fig


def plot_level_bytes(result: dict[str, Any], ax=None):
    """Bytes per tree at each depth on the most workers measured: histograms (hist) against row sides (exact)."""
    fig, ax = new_axes(ax)
    for i, (method, r) in enumerate(result["split_methods"].items()):
        m = r["measured"][-1]
        what = "histograms and node sums" if method == "hist" else "rows' sides (1 bit per row) up and down"
        depths = [d for d, b in enumerate(m["level_bytes"]) if b > 0]  # nothing sent: no point on a log axis
        ax.plot(depths, [m["level_bytes"][d] for d in depths], "o-", color=f"C{i}",
                label=f"{method}: {what}, {m['workers']} workers")
    ax.set_yscale("log")
    ax.set(xlabel="depth (0: the root)", ylabel="bytes per tree (log)", title="What crosses the network per level")
    ax.legend(fontsize=8)
    return fig


def plot_cluster_probes(probes: list[dict[str, Any]]):
    """The probe fit of every cluster started (:class:`workbench.boosting.dask_lesson.ClusterLesson`): test
    log loss against rounds (one line each; the model does not depend on the cluster, so they coincide) and
    ms per tree against workers (one filled point per start: every point measured)."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(10.0, 3.6))
    for i, p in enumerate(probes):
        rounds = np.arange(1, len(p["test_loss"]) + 1)
        ax1.plot(rounds, p["test_loss"], "o-", ms=7 - 4 * i / max(len(probes), 1), color=f"C{i % 10}",
                 label=f"start {i + 1}: {count(p['workers'], 'worker')} x {threads(p['threads'])}")
    ax1.set(xlabel="boosting round", ylabel="test log loss",
            title=f"Probe fit (hist, {probes[-1]['rows']:,} rows) on each cluster")
    ax1.legend(fontsize=8)
    for n in sorted({p["threads"] for p in probes}):
        sel = [p for p in probes if p["threads"] == n]
        latest = {p["workers"]: p["per_tree_ms"] for p in sel}  # the last start of each size, joined by a line
        ax2.plot(sorted(latest), [latest[w] for w in sorted(latest)], "-", color=f"C{n - 1}", lw=1)
        ax2.plot([p["workers"] for p in sel], [p["per_tree_ms"] for p in sel], "o", ms=8, color=f"C{n - 1}",
                 label=f"{threads(n)} per worker (measured)")
    for i, p in enumerate(probes):
        ax2.annotate(f" {i + 1}", (p["workers"], p["per_tree_ms"]), fontsize=8)
    ax2.set(xlabel="workers", ylabel="ms per tree", ylim=(0, max(p["per_tree_ms"] for p in probes) * 1.25),
            xticks=sorted({p["workers"] for p in probes} | {1}), title="Time per tree of each start (numbered)")
    ax2.legend(fontsize=8)
    for ax in (ax1, ax2):
        ax.title.set_fontsize(9)
    return fig


def plot_dask_lesson(result: dict[str, Any]):
    """Time per tree against workers (measured and modelled) beside the bytes per level, from
    :func:`workbench.boosting.dask_bench.dask_scaling` run on threads of one process."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(10.0, 3.9))
    plot_dask_scaling(result, ax=ax1, workers="threads of one process x 1 thread; beyond 2: modelled")
    plot_level_bytes(result, ax=ax2)
    ax2.set_title(f"What crosses the network per level ({result['n_features']} features)")
    for ax in (ax1, ax2):
        ax.title.set_fontsize(9)
        ax.xaxis.label.set_fontsize(9)
    for text in ax1.get_legend().get_texts():
        text.set_fontsize(7)
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
