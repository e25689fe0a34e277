"""Plots of TRON on a Dask cluster against dask-ml: seconds per fit and the objective reached; captions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.plotting import new_figure


def plot_dask_ml(sets: dict[str, Any]):
    """Per dataset: median seconds of each contender's fit (fastest to slowest as error bars, on a log axis: the
    contenders are orders of magnitude apart), the objective reached after each bar."""
    fig, axes = new_figure(1, len(sets), figsize=(6.4 * len(sets), 3.8), squeeze=False)
    for ax, (name, entry) in zip(axes[0], sets.items()):
        runs = {k: r for k, r in entry["runs"].items() if r.get("seconds")}
        labels = sorted(runs, key=lambda k: (not k.startswith("dtlab"), k))
        med = np.array([runs[k]["median"] for k in labels])
        low = np.array([min(runs[k]["seconds"]) for k in labels])
        high = np.array([max(runs[k]["seconds"]) for k in labels])
        colours = ["C0" if k.startswith("dtlab") else "C1" for k in labels]
        ax.barh(labels, med, xerr=[med - low, high - med], color=colours, capsize=3)
        for y, k in enumerate(labels):
            n = len(runs[k]["seconds"])
            ax.annotate(f" {runs[k]['median']:.3g} s, f = {runs[k]['objective']:.7g}" + (", 1 run" if n == 1 else "")
                        + (f", max_iter {runs[k]['max_iter']}" if "max_iter" in runs[k] else ""),
                        (high[y], y), va="center", fontsize=7.5, annotation_clip=False)
        ax.invert_yaxis()
        ax.set_xscale("log")
        if labels:
            ax.set_xlim(low.min() / 2, high.max() * 1000)  # room for the notes after the slowest bar
        ax.set_xlabel("seconds per fit (log; median, bars: fastest to slowest)", fontsize=8)
        ax.set_title(f"{name}: {entry['rows']:,} x {entry['n_features']:,}, C = {entry['C']:g}; "
                     f"{entry['n_workers']} workers", fontsize=9)
        ax.tick_params(labelsize=8)
    return fig


def dask_ml_captions(results: dict[str, Any]) -> dict[str, str]:
    sets = results.get("sets") or {}
    if not sets:
        return {}
    parts = []
    for name, entry in sets.items():
        runs = "; ".join(f"{k} {r['median']:.2f} s ({len(r['seconds'])} run{'s' * (len(r['seconds']) > 1)}), "
                         f"f = {r['objective']:.6g}" + (f", then failed: {r['error']}" if "error" in r else "")
                         + (f", max_iter capped at {r['max_iter']} of its default {r['default_max_iter']} "
                            f"(a {r['budget_seconds']:g} s budget)" if "max_iter" in r else "")
                         if r.get("seconds") else
                         f"{k}: {r.get('error', 'not run')}" for k, r in entry["runs"].items())
        g = entry.get("goal")
        verdict = "" if not g else " Goal (faster than dask-ml at equal or lower objective) in this run: " + "; ".join(
            f"against {peer}: {'met' if v['met'] else 'not met'}"
            + (f" ({v['dtlab']}: slowest {v['dtlab_max']:.2f} s against its fastest {v['peer_min']:.2f} s)"
               if "dtlab" in v else f" ({v.get('why', '')})") for peer, v in g["solvers"].items()) + "."
        parts.append(f"{name} ({entry['rows']:,} x {entry['n_features']:,}): {runs}.{verdict}")
    return {"linear_dask": "TRON on a Dask LocalCluster (2 worker processes x 1 thread) against dask-ml's "
                           "LogisticRegression (same C, no intercept, no normalisation; sparse rows as CSR blocks "
                           "for dtlab, pydata sparse COO blocks for dask-ml; objective in LIBLINEAR's form; median of "
                           f"up to {results.get('repeats', 5)} alternating fits after an untimed max_iter=1 fit, a fit "
                           f"slower than {results.get('slow_seconds', 60):g} s timed once): "
                           + " ".join(parts)}
