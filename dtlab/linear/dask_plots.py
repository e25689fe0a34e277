"""Plots of TRON on a Dask cluster against dask-ml: seconds per fit and the objective reached; captions."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plotting import new_figure


def plot_dask_ml(sets: dict[str, Any]):
    """Per dataset: median seconds of each contender's fit (spread as error bars), the objective on the bar."""
    fig, axes = new_figure(1, len(sets), figsize=(6.0 * len(sets), 3.6), squeeze=False)
    for ax, (name, entry) in zip(axes[0], sets.items()):
        runs = {k: r for k, r in entry["runs"].items() if r.get("seconds")}
        labels = list(runs)
        med = np.array([runs[k]["median"] for k in labels])
        err = [med - [min(runs[k]["seconds"]) for k in labels], [max(runs[k]["seconds"]) for k in labels] - med]
        bars = ax.barh(labels, med, xerr=err, color=[f"C{i}" for i in range(len(labels))], capsize=3)
        for rect, k in zip(bars, labels):
            ax.annotate(f" f = {runs[k]['objective']:.6g}", (rect.get_width(), rect.get_y() + rect.get_height() / 2),
                        va="center", fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0, float(np.max(med + err[1])) * 1.6 if labels else 1)
        ax.set(xlabel="seconds per fit (median; bars: fastest to slowest)",
               title=f"{name}: {entry['rows']:,} x {entry['n_features']:,}, C = {entry['C']:g}; "
                     f"{entry['n_workers']} workers")
        ax.title.set_fontsize(9)
    return fig


def dask_ml_captions(results: dict[str, Any]) -> dict[str, str]:
    sets = results.get("sets") or {}
    if not sets:
        return {}
    parts = []
    for name, entry in sets.items():
        runs = "; ".join(f"{k} {r['median']:.2f} s ({len(r['seconds'])} run{'s' * (len(r['seconds']) > 1)}), "
                         f"f = {r['objective']:.6g}" if r.get("seconds") else
                         f"{k}: {r.get('error', 'not run')}" for k, r in entry["runs"].items())
        g = entry.get("goal")
        verdict = "" if not g else " Goal (faster than dask-ml at equal or lower objective): " + "; ".join(
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
