"""Plots of the GDT experiments (:mod:`dtlab.experiments.gdt`).

One function per figure kind, each with a title, axis labels with units and a
legend; functions take an optional ``ax`` and return the figure.  Trees are
drawn with :func:`dtlab.plotting.draw_tree`.
"""

from __future__ import annotations

import numpy as np

from .plotting import new_axes

_METRIC_LABELS = {
    "best_fitness": "best fitness (accuracy - alpha * (size - 1), unitless)",
    "best_size": "best tree size (nodes)",
    "best_accuracy": "best training accuracy (fraction)",
    "mean_fitness": "mean fitness of the population (unitless)",
}


def _filled(history, metric: str, last_generation: int):
    """Metric per generation of one run, carried forward after the run stopped (its best stays the best)."""
    values = history.set_index("generation")[metric]
    return values.reindex(np.arange(last_generation + 1)).ffill()


def plot_convergence(history, metric: str = "best_fitness", ax=None, title: str | None = None):
    """Best fitness (or size, ...) per generation on a log x axis, one line per (rows, noise attributes).

    Lines are means over the seeds in ``history`` (the paper's Fig. 11 and 12
    average 5-10 runs); a run that stopped early keeps its final value.

    Parameters
    ----------
    history : DataFrame
        ``history`` of :func:`dtlab.experiments.gdt.chess_runs` (columns
        ``generation, n_samples, noise_attrs, seed`` and ``metric``).
    metric : str
        A history column, e.g. ``"best_fitness"`` or ``"best_size"``.
    """
    if metric not in history.columns:
        raise ValueError(f"history has no column {metric!r}; columns are {list(history.columns)}")
    fig, ax = new_axes(ax, figsize=(7.0, 4.4))
    last = int(history.generation.max())
    configs = history[["n_samples", "noise_attrs"]].drop_duplicates().sort_values(["n_samples", "noise_attrs"])
    styles = ["-", "--", ":", "-."]
    sizes = sorted(configs.n_samples.unique())
    for i, (n, noise) in enumerate(configs.itertuples(index=False)):
        part = history[(history.n_samples == n) & (history.noise_attrs == noise)]
        runs = [_filled(run, metric, last) for _, run in part.groupby("seed")]
        mean = np.mean(np.vstack([r.to_numpy() for r in runs]), axis=0)
        generations = np.arange(last + 1) + 1  # +1: generation 0 on a log axis
        ax.plot(generations, mean, ls=styles[sizes.index(n) % len(styles)], color=f"C{i % 10}",
                label=f"{n:,} objects, {2 + noise} attributes ({noise} noise), {len(runs)} run(s)")
    if metric == "best_size":
        ax.axhline(17, color="0.3", lw=0.8, ls=":", label="ideal tree (17 nodes)")
    ax.set_xscale("log")
    ax.set(xlabel="generation + 1 (log scale)", ylabel=_METRIC_LABELS.get(metric, metric),
           title=title or f"GDT on Chess3x3: {_METRIC_LABELS.get(metric, metric).split(' (')[0]} per generation")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    return fig


def plot_cart_comparison(table, ax=None, title: str | None = None):
    """Tree size (log scale) and test accuracy of GDT and CART per dataset, side by side.

    Parameters
    ----------
    table : DataFrame from :func:`dtlab.experiments.gdt.cart_comparison`
    ax : a pair of axes, optional
    """
    import matplotlib.pyplot as plt

    if ax is None:
        fig, (ax_size, ax_acc) = plt.subplots(1, 2, figsize=(9.5, 4.0), layout="constrained")
    else:
        ax_size, ax_acc = ax
        fig = ax_size.figure
    summary = table.groupby(["dataset", "method"], sort=False)[["n_nodes", "test_accuracy", "fit_seconds"]].mean()
    datasets = list(dict.fromkeys(table.dataset))
    methods = list(dict.fromkeys(table.method))
    width = 0.8 / len(methods)
    x = np.arange(len(datasets))
    for j, method in enumerate(methods):
        nodes = [summary.loc[(d, method), "n_nodes"] for d in datasets]
        acc = [100 * summary.loc[(d, method), "test_accuracy"] for d in datasets]
        secs = [summary.loc[(d, method), "fit_seconds"] for d in datasets]
        bars = ax_size.bar(x + j * width, nodes, width, label=method, color=f"C{j}")
        for rect, n in zip(bars, nodes):
            ax_size.annotate(f"{n:.0f}", (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                             ha="center", va="bottom", fontsize=7)
        bars = ax_acc.bar(x + j * width, acc, width, label=method, color=f"C{j}")
        for rect, a, s in zip(bars, acc, secs):
            ax_acc.annotate(f"{a:.1f}%\n{s:.1f}s", (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                            ha="center", va="bottom", fontsize=6)
    for axis in (ax_size, ax_acc):
        axis.set_xticks(x + width * (len(methods) - 1) / 2, datasets)
        axis.legend(fontsize=8)
    ax_size.set_yscale("log")
    ax_size.set(ylabel="tree size (nodes, log scale)", xlabel="dataset", title="tree size")
    low = min(100 * table.test_accuracy.min() - 5, 90)
    ax_acc.set_ylim(max(low, 0), 112)  # headroom for the bar labels
    ax_acc.legend(fontsize=8, loc="upper right", ncols=len(methods))
    ax_acc.set(ylabel="test accuracy (%)", xlabel="dataset", title="test accuracy (labels: accuracy, fit time)")
    fig.suptitle(title or "GDT (evolutionary) vs scikit-learn CART (greedy, unpruned)")
    return fig


def plot_throughput(table, ax=None, title: str | None = None):
    """Tree-rows per second of each evaluation method (log scale), labelled with the cpu evaluator's speedup.

    Parameters
    ----------
    table : DataFrame from :func:`dtlab.experiments.gdt.evaluator_throughput`
    """
    fig, ax = new_axes(ax, figsize=(6.4, 3.6))
    y = np.arange(len(table))
    bars = ax.barh(y, table.tree_rows_per_s, color=[f"C{i}" for i in range(len(table))],
                   label="tree-rows per second")
    for rect, speedup in zip(bars, table.speedup_of_cpu):
        ax.annotate(f"cpu is {speedup:.1f}x" if speedup != 1 else "reference",
                    (rect.get_width(), rect.get_y() + rect.get_height() / 2), va="center", ha="left", fontsize=7)
    ax.set_yticks(y, table.method)
    ax.set_xscale("log")
    ax.set(xlabel="throughput (tree-rows per second, log scale)", ylabel="method",
           title=title or f"GDT fitness evaluation, {int(table.n_trees.iloc[0])} trees x "
                          f"{int(table.n_samples.iloc[0]):,} rows")
    ax.legend(fontsize=7, loc="lower right")
    return fig
