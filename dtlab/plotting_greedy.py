"""Figures of the greedy inducers (regression tree timing and error against depth)."""

from __future__ import annotations

import numpy as np

from .plotting import new_axes

_STYLE = {
    "naive": dict(color="tab:red", marker="s"),
    "incremental": dict(color="tab:orange", marker="^"),
    "vectorized": dict(color="tab:blue", marker="o"),
    "sklearn": dict(color="tab:green", marker="D"),
}


def plot_timing_vs_size(frame, *, reported: dict | None = None, ax=None, title: str | None = None):
    """Training time against rows, log-log, one line per method.

    Parameters
    ----------
    frame : pandas.DataFrame from :func:`dtlab.experiments.greedy.timing_vs_size`
    reported : dict, optional
        ``{(method, variant): {n_rows: seconds}}`` drawn as open markers (the C
        project's numbers); defaults to the project's reported times.
    """
    from .experiments.greedy import PROJECT_REPORTED_SECONDS

    reported = PROJECT_REPORTED_SECONDS if reported is None else reported
    fig, ax = new_axes(ax, figsize=(9.0, 4.6))
    for method, group in frame.groupby("method", sort=False):
        done = group[~group["skipped"]]
        style = _STYLE.get(method, {})
        label = "scikit-learn" if method == "sklearn" else f"dtlab {method}"
        ax.plot(done["n_samples"], done["seconds"], label=label, **style)
        if group["skipped"].any():
            cap = int(done["n_samples"].max()) if len(done) else 0
            label_note = f"{method}: skipped above {cap:,} rows (O(n$^2$))"
            ax.plot([], [], " ", label=label_note)
    for (method, variant), points in reported.items():
        sizes = sorted(points)
        style = _STYLE.get(method, {})
        ax.plot(sizes, [points[s] for s in sizes], ls=":" if variant == "SIMD" else "--", lw=0.9,
                marker=style.get("marker", "o"), mfc="none", color=style.get("color", "0.4"), alpha=0.7,
                label=f"C project, {method}, {variant} (reported)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    depth = frame["max_depth"].iloc[0] if "max_depth" in frame else None
    depth = "unlimited" if depth is None or (isinstance(depth, float) and np.isnan(depth)) else int(depth)
    ax.set(xlabel="training rows", ylabel="training time (s)",
           title=title or f"Regression tree on the diabetes data (predict age, depth {depth}): time vs rows")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5), framealpha=0.9)
    return fig


def plot_error_vs_depth(frame, *, ax=None, title: str | None = None):
    """Training and held-out mean squared error (years^2) against the depth limit."""
    fig, ax = new_axes(ax)
    depth = frame["max_depth"].astype(float).to_numpy()
    ax.plot(depth, frame["train_mse"], marker="o", color="tab:blue", label="training rows")
    ax.plot(depth, frame["test_mse"], marker="s", color="tab:orange", label="held-out rows")
    best = int(np.nanargmin(frame["test_mse"].to_numpy()))
    ax.axvline(depth[best], color="0.5", ls="--", lw=0.8, label=f"best held-out depth ({depth[best]:.0f})")
    ax.set(xlabel="max_depth (levels)", ylabel="mean squared error (years$^2$)",
           title=title or "Age prediction error against tree depth")
    ax.grid(True, alpha=0.3)
    ax.legend()
    return fig


def plot_speed_ratio(frame, *, ax=None, title: str | None = None):
    """Training time of the vectorised regressor divided by scikit-learn's, per depth (bar chart)."""
    fig, ax = new_axes(ax)
    labels = ["unlimited" if d is None or (isinstance(d, float) and np.isnan(d)) else str(int(d))
              for d in frame["max_depth"]]
    ax.bar(labels, frame["ratio"], color="tab:blue", label="dtlab vectorized / scikit-learn")
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="parity")
    ax.set(xlabel="max_depth", ylabel="time ratio (dtlab / scikit-learn, lower is faster)",
           title=title or "Training time relative to scikit-learn (same tree)")
    ax.legend()
    return fig


def plot_fit_summary(summary, *, ax=None, max_points: int = 3_000):
    """Predicted against true age on held-out rows, with the tree's size and errors in the title.

    Parameters
    ----------
    summary : dict from :func:`dtlab.experiments.greedy.tree_summary`
    """
    fig, ax = new_axes(ax, figsize=(5.2, 4.6))
    y, p = summary["y_test"][:max_points], summary["predicted"][:max_points]
    ax.scatter(y, p, s=6, alpha=0.35, color="tab:blue", label="held-out rows")
    lim = (0, max(float(np.max(y)), float(np.max(p))) * 1.02)
    ax.plot(lim, lim, color="k", lw=0.8, ls="--", label="perfect prediction")
    depth = "unlimited" if summary["max_depth"] is None else summary["max_depth"]
    ax.set(xlim=lim, ylim=lim, xlabel="true age (years)", ylabel="predicted age (years)",
           title=(f"{summary['n_samples']:,} rows, depth {depth}: {summary['n_nodes']:,} nodes, "
                  f"{summary['seconds'] * 1e3:.0f} ms\nMSE train {summary['train_mse']:.0f}, "
                  f"held out {summary['test_mse']:.0f} (years$^2$)"))
    ax.legend(loc="upper left", fontsize=8)
    return fig
