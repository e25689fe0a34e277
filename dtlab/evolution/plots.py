"""Figures of the GDT experiments and their captions, from data (slug ``evolution``).

One function per figure kind, each with a title, axis labels with units and a
legend; functions take an optional ``ax`` and return the figure.  They take
the DataFrames of :mod:`dtlab.evolution.experiments` (or results read back
from ``results.json``) and never import an experiment; constants such as the
ideal tree size are passed in.  Trees are drawn with
:func:`dtlab.plotting.draw_tree`.  The ``*_captions`` functions turn a
producer's recorded results into the README caption of each figure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plotting import new_axes, new_figure
from ..plotting.text import MODE_WORDS, by_mode, comparison_phrase, count, threads

__all__ = ["PHASE_LABELS", "baseline_captions", "cart_captions", "convergence_captions", "pareto_front",
           "plot_accuracy_size", "plot_baselines", "plot_cart_comparison", "plot_convergence", "plot_device_scaling",
           "plot_evaluator_speedups", "plot_generation_breakdown", "plot_throughput", "quality_captions",
           "throughput_captions"]

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


def plot_convergence(history, metric: str = "best_fitness", ax=None, title: str | None = None,
                     ideal_nodes: int | None = None):
    """Best fitness (or size, ...) per generation on a log x axis, one line per (rows, noise attributes).

    Lines are means over the seeds in ``history`` (the paper's Fig. 11 and 12
    average 5-10 runs); a run that stopped early keeps its final value.

    Parameters
    ----------
    history : DataFrame
        ``history`` of :func:`dtlab.evolution.experiments.chess_runs` (columns
        ``generation, n_samples, noise_attrs, seed`` and ``metric``).
    metric : str
        A history column, e.g. ``"best_fitness"`` or ``"best_size"``.
    ideal_nodes : int, optional
        Size of the ideal tree, drawn as a reference line on a ``best_size`` plot.
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
    if metric == "best_size" and ideal_nodes is not None:
        ax.axhline(ideal_nodes, color="0.3", lw=0.8, ls=":", label=f"ideal tree ({ideal_nodes} nodes)")
    ax.set_xscale("log")
    ax.set(xlabel="generation + 1 (log scale)", ylabel=_METRIC_LABELS.get(metric, metric),
           title=title or f"GDT on Chess3x3: {_METRIC_LABELS.get(metric, metric).split(' (')[0]} per generation")
    ax.grid(True, which="major", alpha=0.3)
    # where the curves are not: sizes fall towards the ideal from above, fitness rises to the upper right
    ax.legend(fontsize=7, loc={"best_size": "lower left", "best_fitness": "lower right"}.get(metric, "best"),
              framealpha=0.9)
    return fig


def plot_cart_comparison(table, ax=None, title: str | None = None):
    """Tree size (log scale) and test accuracy of GDT and CART per dataset, side by side.

    Parameters
    ----------
    table : DataFrame from :func:`dtlab.evolution.experiments.cart_comparison`
    ax : a pair of axes, optional
    """
    if ax is None:
        fig, (ax_size, ax_acc) = new_figure(1, 2, figsize=(9.5, 4.0))
    else:
        ax_size, ax_acc = ax
        fig = ax_size.figure
    summary = table.groupby(["dataset", "method"], sort=False)[["n_nodes", "test_accuracy", "fit_seconds"]].mean()
    datasets = list(dict.fromkeys(table.dataset))
    methods = list(dict.fromkeys(table.method))
    width = 0.8 / len(methods)
    x = np.arange(len(datasets))
    for j, method in enumerate(methods):
        label = method
        if "threads" in table:
            label += f" ({threads(table.threads[table.method == method].iloc[0])})"
        nodes = [summary.loc[(d, method), "n_nodes"] for d in datasets]
        acc = [100 * summary.loc[(d, method), "test_accuracy"] for d in datasets]
        secs = [summary.loc[(d, method), "fit_seconds"] for d in datasets]
        bars = ax_size.bar(x + j * width, nodes, width, label=label, color=f"C{j}")
        for rect, n in zip(bars, nodes):
            ax_size.annotate(f"{n:.0f}", (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                             ha="center", va="bottom", fontsize=7)
        bars = ax_acc.bar(x + j * width, acc, width, label=label, color=f"C{j}")
        for rect, a, s in zip(bars, acc, secs):
            # inside the bar's top: the axis stops at 100 %, an accuracy cannot go above it
            ax_acc.annotate(f"{a:.1f}%\n{s:.2g} s", (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                            xytext=(0, -3), textcoords="offset points", ha="center", va="top", fontsize=7,
                            rotation=90)
    for axis in (ax_size, ax_acc):
        axis.set_xticks(x + width * (len(methods) - 1) / 2, datasets)
    ax_size.legend(fontsize=8)  # one legend: both panels share the methods and colours
    ax_size.set_yscale("log")
    ax_size.set(ylabel="tree size (nodes, log scale)", xlabel="dataset", title="tree size")
    low = min(100 * table.test_accuracy.min() - 5, 90)
    ax_acc.set_ylim(max(low, 0), 100)
    ax_acc.set(ylabel="test accuracy (%)", xlabel="dataset", title="test accuracy (labels: accuracy, fit time)")
    fig.suptitle(title or "GDT (evolutionary) vs scikit-learn CART (greedy, unpruned)")
    return fig


def plot_throughput(table, ax=None, title: str | None = None):
    """Tree-rows per second of each evaluation method (log scale), per core and whole machine, threads labelled.

    Parameters
    ----------
    table : DataFrame from :func:`dtlab.evolution.throughput.evaluator_throughput`
        Columns ``method, mode, threads, tree_rows_per_s, n_trees, n_samples``.
    """
    fig, ax = new_axes(ax, figsize=(7.2, 3.8))
    methods = list(dict.fromkeys(table.method))
    y = np.arange(len(methods))
    height = 0.38
    for j, mode in enumerate(MODE_WORDS):
        part = table[table["mode"] == mode].set_index("method").loc[methods]
        bars = ax.barh(y + (0.5 - j) * height, part.tree_rows_per_s, height, color=f"C{j}",
                       label=f"{MODE_WORDS[mode]}")
        for rect, n in zip(bars, part.threads):
            ax.annotate(f" {threads(n)}", (rect.get_width(), rect.get_y() + rect.get_height() / 2), va="center",
                        ha="left", fontsize=7)
    ax.set_yticks(y, methods)
    ax.set_xscale("log")
    ax.margins(x=0.25)
    ax.set(xlabel="throughput (tree-rows per second, log scale)", ylabel="method",
           title=title or f"GDT fitness evaluation, {int(table.n_trees.iloc[0])} trees x "
                          f"{int(table.n_samples.iloc[0]):,} rows (bar labels: threads)")
    ax.legend(fontsize=7, loc="upper right")
    return fig


# ---------------------------------------------------------------- captions
def convergence_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the convergence figures: what each configuration reached, and when."""
    runs = results["runs"]
    configs = list(dict.fromkeys((r["n_samples"], r["noise_attrs"]) for r in runs))
    seeds = len({r["seed"] for r in runs})
    grid = "; ".join(f"{n:,} objects with {count(k, 'noise attribute')}" for n, k in configs)
    ideal = [r for r in runs if r["ideal"]]
    reached = "; ".join(
        f"{n:,} objects, {k} noise: " + ", ".join(
            f"generation {r['first_ideal_generation']}" if r["first_ideal_generation"] >= 0 else "never"
            for r in runs if (r["n_samples"], r["noise_attrs"]) == (n, k))
        for n, k in configs)
    return {
        "evolution_convergence_fitness": (
            f"GDT on Chess3x3: best fitness per generation, mean of {seeds} run(s) per configuration ({grid}); "
            f"the paper's Fig. 11 analogue."),
        "evolution_convergence_size": (
            f"Size of the best tree per generation (Fig. 12 analogue): {len(ideal)} of {len(runs)} runs ended with "
            f"the ideal {results['ideal_nodes']}-node tree. First generation whose best tree was ideal: "
            f"{reached}."),
    }


def baseline_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the Table 4 figures and of the evolved tree."""
    from .device_plots import baseline_captions as table_captions

    tree = results["chess_tree"]
    return {**table_captions(results),
            "evolution_chess_tree": (f"The tree GDT evolved on Chess3x3 ({tree['n_samples']:,} rows): "
                                     f"{tree['n_nodes']} nodes, {tree['n_leaves']} leaves"
                                     + (", the ideal structure." if tree["ideal"] else ", not the ideal structure."))}


def cart_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the GDT / CART comparison and of the evolved tree, from the recorded table."""
    table = results["table"]
    threads_of = {r["method"]: r.get("threads") for r in table}
    parts = []
    for row in results["summary"]:
        n_train = next(r["n_train"] for r in table if r["dataset"] == row["dataset"])
        parts.append(f"{row['dataset']} ({n_train:,} training rows): {row['gdt_nodes']:.0f} against "
                     f"{row['cart_nodes']:.0f} nodes, test accuracy {100 * row['gdt_test_accuracy']:.1f}% against "
                     f"{100 * row['cart_test_accuracy']:.1f}%")
    fit_threads = (f" Fit times label the bars (GDT {threads(threads_of['GDT'])}, CART {threads(threads_of['CART'])})."
                   if threads_of.get("GDT") else "")
    tree = results["chess_tree"]
    return {
        "evolution_vs_cart": ("GDT against scikit-learn's unpruned CART (Table 4 analogue), GDT first: "
                              + "; ".join(parts) + "." + fit_threads),
        "evolution_chess_tree": (f"The tree GDT evolved on Chess3x3 ({tree['n_samples']:,} rows): {tree['n_nodes']} "
                                 f"nodes, {tree['n_leaves']} leaves"
                                 + (", the ideal structure." if tree["ideal"] else ", not the ideal structure.")),
    }


def throughput_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of the throughput figure: each speedup with its threads."""
    comparisons = results["comparisons"]
    first = comparisons[0]
    parts = []
    for peer in dict.fromkeys(e["peer"] for e in comparisons):
        modes = by_mode(comparisons, peer=peer)
        notes = {e.get("peer_note") for e in modes.values()} - {None}
        parts.append(f"against the {peer}, {', '.join(comparison_phrase(modes[m]) for m in MODE_WORDS)}"
                     + (f" ({'; '.join(sorted(notes))})" if notes else ""))
    return {"evolution_evaluator_throughput": (
        f"GDT fitness evaluation of {first['n_trees']} evolved trees on {first['n_samples']:,} rows (tree-rows per "
        f"second), speedup of dtlab's batched numba evaluator " + "; ".join(parts)
        + ". scikit-learn's apply only finds leaves (no class counts, no draws).")}


def quality_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text for the quality benchmark (no figure): ideal trees found, the timed run, real data against CART."""
    chess = "; ".join(
        f"{r['n_samples']:,} rows, {count(r['noise_attrs'], 'noise attribute')}: "
        f"{r['ideal_runs']} of {r['runs']} runs ideal"
        + (f" (first ideal generation {r['first_ideal_generation_min']}-{r['first_ideal_generation_max']})"
           if r["first_ideal_generation_min"] >= 0 else "")
        for r in results["chess_summary"])
    real = "; ".join(f"{r['dataset']}: {r['gdt_nodes']:.0f} against {r['cart_nodes']:.0f} nodes, test accuracy "
                     f"{r['accuracy_difference_points']:+.1f} points" for r in results["real_data"])
    t = results.get("threads", {})
    run_threads = f" on {threads(t['gdt'])}" if "gdt" in t else ""
    return {"evolution_quality": (
        f"GDT on Chess3x3: {chess}. A run on 100,000 rows reached the ideal tree in "
        f"{results['run_100k_to_ideal_generations']} generations and {results['run_100k_to_ideal_seconds']:.1f} s"
        f"{run_threads}. GDT against unpruned CART on real data: {real}.")}


from .device_plots import (  # noqa: E402  (the device and baseline figures, kept in their own module)
    PHASE_LABELS,
    pareto_front,
    plot_accuracy_size,
    plot_baselines,
    plot_device_scaling,
    plot_evaluator_speedups,
    plot_generation_breakdown,
)
