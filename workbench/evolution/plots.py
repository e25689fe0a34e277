"""Figures of GDT (slug ``evolution``), from data: convergence, evaluators, devices, the host loop, Table 4.

One function per figure kind, each with a title, axis labels with units and a
legend; each takes an optional ``ax`` where it draws one panel and returns
the figure.  They take the DataFrames of :mod:`workbench.evolution.experiments`
(or results read back from ``results.json``) and never import an experiment.
Measured values are drawn with filled markers and solid lines, modelled ones
with open markers and dashed lines ("modelled" in the legend), bounds as
plain lines.  Captions are :mod:`workbench.evolution.captions`.
"""

from __future__ import annotations

import numpy as np

from dtlab.plotting import new_axes, new_figure
from workbench.text import MODE_WORDS, threads

__all__ = ["PHASE_LABELS", "plot_accuracy_size", "plot_amdahl", "plot_baselines", "plot_convergence",
           "plot_convergence_pair", "plot_device_counts", "plot_device_scaling", "plot_evaluator_speedups",
           "plot_generation", "plot_generation_breakdown", "plot_host_loop", "plot_throughput"]

_METRIC_LABELS = {
    "best_fitness": "best fitness (accuracy - alpha * (size - 1), unitless)",
    "best_size": "best tree size (nodes)",
    "best_accuracy": "best training accuracy (fraction)",
    "mean_fitness": "mean fitness of the population (unitless)",
}

#: Phases of a generation in stacking order (the host's, then the devices'), and their legend words.
PHASE_LABELS = {"operators": "host: selection, crossover, mutation", "packing": "host: packing the batch",
                "statistics": "host: statistics, fitness, pruning", "loop": "host: history, stopping rules",
                "prepare": "host: batch preparation (masks)", "merge": "host: merging partial statistics",
                "dispatch": "handing work to devices and back", "transfer": "transfers / cluster round trip",
                "kernel": "kernels (slowest device)"}
_HOST = ("operators", "packing", "statistics", "loop", "prepare", "merge")


def _filled(history, metric: str, last_generation: int):
    """Metric per generation of one run, carried forward after the run stopped (its best stays the best)."""
    values = history.set_index("generation")[metric]
    return values.reindex(np.arange(last_generation + 1)).ffill()


def _first_ideal(run, ideal) -> int | None:
    """The first generation of one run's history whose best tree ``ideal`` accepts, or None."""
    if ideal is None:
        return None
    hit = run[ideal(run).to_numpy(bool)]
    return int(hit.generation.iloc[0]) if len(hit) else None


def _draw_convergence(ax, history, metric: str, last: int, ideal=None, colors=None, reference: bool = False):
    """One line per (rows, noise attributes) of ``history`` (mean over seeds), and a dot per run where ``ideal``
    first accepted its best tree; ``reference``: thin grey lines without dots (another history, for comparison)."""
    configs = history[["n_samples", "noise_attrs"]].drop_duplicates().sort_values(["n_samples", "noise_attrs"])
    styles = ["-", "--", ":", "-."]
    sizes = sorted(configs.n_samples.unique())
    for i, (n, noise) in enumerate(configs.itertuples(index=False)):
        part = history[(history.n_samples == n) & (history.noise_attrs == noise)]
        runs = [run for _, run in part.groupby("seed")]
        mean = np.mean(np.vstack([_filled(run, metric, last).to_numpy() for run in runs]), axis=0)
        words = f"{n:,} objects, {2 + noise} attributes ({noise} noise), {len(runs)} run(s)"
        if reference:
            ax.plot(np.arange(last + 1) + 1, mean, color="0.65", lw=0.9, ls=styles[sizes.index(n) % len(styles)],
                    label=f"{words} (the sweep, grey)", zorder=1)
            continue
        color = (colors or {}).get((n, noise), f"C{i % 10}")
        ax.plot(np.arange(last + 1) + 1, mean, ls=styles[sizes.index(n) % len(styles)], color=color, label=words,
                zorder=2)
        for run in runs:
            g = _first_ideal(run, ideal)
            if g is not None:
                ax.scatter([g + 1], [run.set_index("generation")[metric].loc[g]], color=color, s=30, zorder=3,
                           edgecolor="k", lw=0.6)


def _convergence_axes(ax, metric: str, ideal_nodes: int | None, title: str | None, marked: bool) -> None:
    if metric == "best_size" and ideal_nodes is not None:
        ax.axhline(ideal_nodes, color="0.3", lw=0.8, ls=":", label=f"ideal tree ({ideal_nodes} nodes)")
    if marked:  # a legend entry for the dots
        ax.scatter([], [], color="0.5", s=30, edgecolor="k", lw=0.6, label="first generation with the ideal tree")
    ax.set_xscale("log")
    ax.set(xlabel="generation + 1 (log scale)", ylabel=_METRIC_LABELS.get(metric, metric),
           title=title or f"GDT on Chess3x3: {_METRIC_LABELS.get(metric, metric).split(' (')[0]} per generation")
    ax.grid(True, which="major", alpha=0.3)


def _legend_below(fig, ax) -> None:
    """The legend of ``ax`` below the figure's axes, two columns: the curves cross the whole plot area."""
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncols=2, fontsize=7.5, frameon=False)


def plot_convergence(history, metric: str = "best_fitness", ax=None, title: str | None = None,
                     ideal_nodes: int | None = None, ideal=None):
    """Best fitness (or size, ...) per generation on a log x axis, one line per (rows, noise attributes).

    Lines are means over the seeds in ``history`` (``chess_runs``' history: ``generation, n_samples,
    noise_attrs, seed`` and ``metric``); a run that stopped early keeps its final value.  ``ideal_nodes``
    draws the ideal tree's size as a reference line on a ``best_size`` plot; ``ideal`` (e.g.
    ``experiments.reached_ideal``: history rows -> booleans) marks with a dot, on every run, the first
    generation whose best tree is the ideal one.
    """
    if metric not in history.columns:
        raise ValueError(f"history has no column {metric!r}; columns are {list(history.columns)}")
    own = ax is None
    fig, ax = new_axes(ax, figsize=(7.0, 4.8))
    _draw_convergence(ax, history, metric, int(history.generation.max()), ideal)
    _convergence_axes(ax, metric, ideal_nodes, title, ideal is not None)
    if own:
        _legend_below(fig, ax)
    else:
        ax.legend(fontsize=7, framealpha=0.9)
    return fig


def plot_convergence_pair(history, reference=None, ideal_nodes: int | None = None, ideal=None, ax=None,
                          title: str | None = None):
    """Best fitness (left) and best tree size (right) per generation, side by side (the paper's Fig. 11 and 12).

    ``history`` as for :func:`plot_convergence`, drawn in colour with a dot at each run's first ideal
    generation (``ideal``, as there); ``reference`` (optional): another history drawn as thin grey
    lines, e.g. the sweep the reader compares a new configuration with.  With ``ax`` (one axes, as
    :func:`workbench.widgets.live_figure` hands its ``draw``) that axes' figure is used: the axes is
    replaced by the two panels.
    """
    if ax is None:
        fig = new_figure(1, 2, figsize=(10.0, 5.0))[0]
    else:
        fig = ax.figure
        ax.remove()
        fig.set_size_inches(10.0, 5.0)
        fig.subplots(1, 2)
    last = int(max(history.generation.max(), reference.generation.max() if reference is not None else 0))
    for panel, metric in zip(fig.axes, ("best_fitness", "best_size")):
        if reference is not None and len(reference):
            _draw_convergence(panel, reference, metric, last, reference=True)
        _draw_convergence(panel, history, metric, last, ideal)
        _convergence_axes(panel, metric, ideal_nodes if metric == "best_size" else None,
                          _METRIC_LABELS[metric].split(" (")[0] + " per generation", ideal is not None)
    _legend_below(fig, fig.axes[1])
    if title:
        fig.suptitle(title)
    return fig


def plot_throughput(table, ax=None, title: str | None = None):
    """Tree-rows per second of each evaluation method (log scale), per core and whole machine, threads labelled.

    ``table``: ``evaluator_throughput``'s (``method, mode, threads, tree_rows_per_s, n_trees, n_samples``).
    """
    fig, ax = new_axes(ax, figsize=(7.2, 3.8))
    methods = list(dict.fromkeys(table.method))
    y = np.arange(len(methods))
    height = 0.38
    for j, mode in enumerate(MODE_WORDS):
        part = table[table["mode"] == mode].set_index("method").loc[methods]
        bars = ax.barh(y + (0.5 - j) * height, part.tree_rows_per_s, height, color=f"C{j}", label=MODE_WORDS[mode])
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


def plot_evaluator_speedups(table, ax=None, title: str | None = None):
    """Fig. 9: speedup of each evaluator over the NumPy reference against rows (log-log), with its spread.

    ``table``: ``evaluator_speedups``' (``method, devices, threads, n_samples, seconds_min/max,
    speedup_over_reference``).
    """
    fig, ax = new_axes(ax, figsize=(7.0, 4.2))
    for i, ((method, d), part) in enumerate(table[table.method != "NumPy reference"].groupby(["method", "devices"],
                                                                                            sort=False)):
        y = part.speedup_over_reference
        spread = [y - y * part.seconds / part.seconds_max, y * part.seconds / part.seconds_min - y]
        label = f"{method} x{d}" + (f" ({threads(part.threads.iloc[0])})" if method != "GPUs" else "")
        ax.errorbar(part.n_samples, y, yerr=spread, marker="o", color=f"C{i}", capsize=2, label=label)
    ax.axhline(1, color="0.4", lw=0.8, ls=":", label="NumPy reference (1 thread)")
    ax.set(xscale="log", yscale="log", xlabel="rows of Chess3x3 (log scale)",
           ylabel="speedup over the NumPy reference (x, log scale)",
           title=title or f"GDT fitness evaluation of {int(table.n_trees.iloc[0])} evolved trees per batch")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


_SOURCE_STYLES = {"measured": dict(ls="-", marker="o"), "modelled": dict(ls="--", marker="o", mfc="none"),
                  "bound": dict(ls=":", lw=1.2)}


def _curve(ax, part, x: str, color: str, label: str) -> None:
    for source, style in _SOURCE_STYLES.items():
        rows = part[part.source == source].sort_values(x)
        if len(rows):
            ax.plot(rows[x], rows.speedup, color=color, **style, label=f"{label} ({source})")


def plot_device_scaling(curves, ax=None, title: str | None = None, kind: str = "CPU workers"):
    """Fig. 10: speedup over one device against rows, one colour per device count (``device_scaling``'s curves)."""
    fig, ax = new_axes(ax, figsize=(7.0, 4.2))
    for i, d in enumerate(sorted(curves.n_devices.unique())):
        _curve(ax, curves[curves.n_devices == d], "n_samples", f"C{i}", f"{d} {kind if d > 1 else kind[:-1]}")
    ax.set(xscale="log", xlabel="rows of Chess3x3 (log scale)", ylabel="speedup over one device (x)",
           title=title or f"GDT evaluation on several devices ({kind}, one thread each)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6, ncols=2)
    return fig


def _speedup_against_devices(ax, curves, generation=None) -> None:
    """Speedup over one device against devices: the evaluation per method, the whole generation, perfect scaling."""
    top = float(max(curves.n_devices.max(), generation.n_devices.max() if generation is not None else 1))
    ax.plot([1, top], [1, top], color="0.75", lw=0.8, label="perfect scaling")
    methods = list(dict.fromkeys(curves.method)) if "method" in curves else [None]
    for j, method in enumerate(methods):
        part = curves if method is None else curves[curves.method == method]
        color = "C0" if j == 0 else "C2"
        for source, style in _SOURCE_STYLES.items():
            rows = part[part.source == source].sort_values("n_devices")
            if len(rows):
                words = {"measured": "measured", "modelled": "modelled: each device its own compute, as GPUs",
                         "bound": "this machine's bound"}[source]
                ax.plot(rows.n_devices, rows.speedup, color=color, **style,
                        label=f"evaluation{', ' + method if method else ''} ({words})")
    if generation is not None and len(generation):
        for source, words in (("measured", "whole generation (measured)"),
                              ("modelled", "whole generation, Amdahl's law from its host share (modelled)")):
            rows = generation[generation.source == source].sort_values("n_devices")
            if len(rows):
                ax.plot(rows.n_devices, rows.speedup, color="C3", **_SOURCE_STYLES[source], label=words)
        limit = float(generation.limit.iloc[0])
        if limit <= 1.6 * top:
            ax.axhline(limit, color="C3", lw=0.8, ls=":", label=f"Amdahl's limit 1 / host share = {limit:.2f}x")
    ax.set_xticks(range(1, int(top) + 1))
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)


def plot_device_counts(curves, breakdown=None, generation=None, title: str | None = None):
    """The device-count panel: speedup against devices for one data size, and time per generation by phase.

    Left: ``curves`` (``device_scaling``'s, one ``n_samples``; a ``method`` column tells CPU workers from
    GPUs) -- the evaluation of one batch, measured filled, modelled open, the hardware bound a dotted line,
    perfect scaling grey -- and, when ``generation`` is given (``amdahl.amdahl_curves``' rows), the whole
    generation's speedup, measured (filled) and by Amdahl's law (open), with its limit.  Right, when
    ``breakdown`` is given (``generation_breakdown``'s rows): milliseconds per generation by phase.
    """
    fig, axes = new_figure(1, 2 if breakdown is not None else 1, figsize=(11.5 if breakdown is not None else 6.0, 4.6),
                           squeeze=False)
    ax = axes[0][0]
    _speedup_against_devices(ax, curves, generation)
    n = int(curves.n_samples.iloc[0])
    gpus = "method" in curves and "GPUs" in set(curves.method)
    ax.set(xlabel="devices (CPU workers, one thread each" + ("; GPUs)" if gpus else ")"),
           ylabel="speedup over one device (x)", title=f"{n:,} rows: speedup against devices")
    ax.legend(fontsize=6.5, loc="upper left")
    if breakdown is not None:
        plot_generation_breakdown(breakdown, ax=axes[0][1])
    if title:
        fig.suptitle(title)
    return fig


def plot_amdahl(breakdown, generation, title: str | None = None):
    """Why small data scale poorly: the host's share of a generation by size, and Amdahl's law against devices.

    Left: each generation's time by phase as a share of the whole (host phases hatched; total milliseconds
    above each bar), one bar per (rows, evaluator).  Right: the whole generation's speedup over one device
    against devices, one colour per size: measured (filled), Amdahl's law from the size's host share (open,
    dashed), its limit ``1 / host share`` (dotted).  ``breakdown``: ``generation_breakdown``'s rows of
    several sizes; ``generation``: ``amdahl.amdahl_curves``' of the same.
    """
    fig, (ax_share, ax) = new_figure(1, 2, figsize=(11.5, 4.6), width_ratios=(1.1, 1.0))
    table = breakdown.sort_values(["n_samples", "devices"]).reset_index(drop=True)
    x = np.arange(len(table))
    totals = table.total.to_numpy(float)
    bottom = np.zeros(len(table))
    for i, (phase, label) in enumerate(PHASE_LABELS.items()):
        share = 100 * table[phase].to_numpy(float) / totals if phase in table else np.zeros(len(table))
        ax_share.bar(x, share, 0.6, bottom=bottom, label=label, color=f"C{i}", hatch="//" if phase in _HOST else None,
                     edgecolor="white", lw=0)
        bottom += share
    for xi, total, h in zip(x, totals, table.host_share):
        ax_share.annotate(f"{1000 * total:.1f} ms\nhost {100 * h:.0f}%", (xi, 100), ha="center", va="bottom",
                          fontsize=7)
    ax_share.set_xticks(x, [f"{n:,} rows\n{e}" for n, e in zip(table.n_samples, table.evaluator)], fontsize=7)
    ax_share.set_ylim(0, 115)
    ax_share.set_yticks(range(0, 101, 20))
    ax_share.set(ylabel="share of a generation (%)", title="Where a generation's time goes, by size")
    ax_share.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=3, frameon=False)
    top = float(generation.n_devices.max())
    ax.plot([1, top], [1, top], color="0.75", lw=0.8, label="perfect scaling")
    for i, (n, part) in enumerate(generation.groupby("n_samples")):
        color = f"C{(i + 4) % 10}"
        for source, words in (("measured", "measured"), ("modelled", "Amdahl's law (modelled)")):
            rows = part[part.source == source].sort_values("n_devices")
            if len(rows):
                ax.plot(rows.n_devices, rows.speedup, color=color, **_SOURCE_STYLES[source],
                        label=f"{n:,} rows, {words}")
        limit = float(part.limit.iloc[0])
        if limit <= top + 0.5:
            ax.axhline(limit, color=color, lw=0.8, ls=":", label=f"{n:,} rows: limit 1 / host share = {limit:.1f}x")
    ax.set_xticks(range(1, int(top) + 1))
    ax.set_ylim(0, top + 0.5)
    ax.set(xlabel="devices (CPU workers, one thread each)", ylabel="speedup of a whole generation (x)",
           title="A generation's speedup over one device")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=6.5, loc="upper left")
    fig.suptitle(title or "Amdahl's law: the host's share of a generation caps the speedup of more devices")
    return fig


def plot_generation_breakdown(table, ax=None, title: str | None = None):
    """Milliseconds per generation by phase, one stacked bar per evaluator; the host's phases hatched.

    ``table``: ``generation_breakdown``'s rows (the phases of :data:`PHASE_LABELS`, ``total``, ``host_share``).
    """
    fig, ax = new_axes(ax, figsize=(7.6, 4.2))
    x = np.arange(len(table))
    bottom = np.zeros(len(table))
    for i, (phase, label) in enumerate(PHASE_LABELS.items()):
        ms = 1000 * table[phase].to_numpy(float) if phase in table else np.zeros(len(table))
        ax.bar(x, ms, 0.6, bottom=bottom, label=label, color=f"C{i}", hatch="//" if phase in _HOST else None,
               edgecolor="white", lw=0)
        bottom += ms
    for xi, total, share in zip(x, bottom, table.host_share if "host_share" in table else [None] * len(x)):
        note = f"{total:.2f} ms" + (f"\nhost {100 * share:.0f}%" if share is not None else "")
        ax.annotate(note, (xi, total), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, table.evaluator, fontsize=7)
    ax.set_ylim(0, bottom.max() * 1.45)
    ax.set(ylabel="milliseconds per generation", xlabel="evaluator (devices: one thread each)",
           title=title or f"Where a GDT generation's time goes ({int(table.n_samples.iloc[0]):,} rows)")
    ax.legend(fontsize=6, loc="upper left", ncols=2)
    return fig


def plot_host_loop(results, ax=None, title: str | None = None):
    """Seconds per ``fit`` on each case: the recorded Python host loop against the compiled one (median, spread)."""
    fig, ax = new_axes(ax, figsize=(7.0, 3.8))
    cases = list(results["cases"])
    x = np.arange(len(cases))
    for j, (who, label) in enumerate((("baseline", f"Python host loop ({results['baseline_source']})"),
                                      ("now", "compiled host loop")), start=0):
        med = np.array([results["cases"][c][who]["median"] for c in cases])
        low = med - np.array([results["cases"][c][who]["min"] for c in cases])
        high = np.array([results["cases"][c][who]["max"] for c in cases]) - med
        ax.bar(x + (j - 0.5) * 0.38, med, 0.38, yerr=[low, high], capsize=3, color=f"C{j}", label=label)
    goal = results["cases"][cases[0]].get("goal_seconds")
    if goal:
        ax.plot([-0.45, 0.45], [goal, goal], color="k", ls="--", lw=1, label=f"goal: {goal:g} s")
    ax.set_xticks(x, [f"{results['cases'][c]['n_samples']:,} rows x {results['cases'][c]['generations']:,} "
                      "generations" for c in cases])
    ax.set(ylabel="seconds per fit (median; bars: min-max)",
           title=title or f"GDT fit on {threads(results['threads'])}: the host loop compiled")
    ax.legend(fontsize=7)
    return fig


def plot_baselines(summary, title: str | None = None):
    """Tree size (bars, log scale) and test accuracy (median and min-max over seeds) of every method per dataset.

    ``summary``: ``baseline_summary``'s.
    """
    datasets = list(dict.fromkeys(summary.dataset))
    methods = list(dict.fromkeys(summary.method))
    fig, (ax_size, ax_acc) = new_figure(1, 2, figsize=(12.0, 4.8))
    width = 0.8 / len(methods)
    x = np.arange(len(datasets))
    for j, method in enumerate(methods):
        part = summary[summary.method == method].set_index("dataset").reindex(datasets)
        offset = x - 0.4 + width * (j + 0.5)
        ax_size.bar(offset, part.n_nodes, width, color=f"C{j % 10}", hatch="//" if j >= 10 else None, label=method)
        acc = 100 * part.test_accuracy
        ax_acc.errorbar(offset, acc, yerr=[acc - 100 * part.test_accuracy_min, 100 * part.test_accuracy_max - acc],
                        fmt="o", ms=4, color=f"C{j % 10}", capsize=2, lw=0.8)
    names = [d + ("\n(held out)" if bool(summary[summary.dataset == d].held_out.iloc[0]) else "") for d in datasets]
    for axis in (ax_size, ax_acc):
        axis.set_xticks(x, names)
        axis.grid(True, axis="y", alpha=0.3)
    ax_size.set(yscale="log", ylabel="tree size (nodes, log scale)", title="tree size (median over seeds)")
    ax_acc.set(ylabel="test accuracy (%)", title="test accuracy (median; bars: min-max over seeds)")
    fig.legend(*ax_size.get_legend_handles_labels(), loc="outside lower center", ncols=min(len(methods), 5),
               fontsize=7)
    fig.suptitle(title or "GDT (defaults fixed) against tuned and optimal trees on the same splits")
    return fig


def plot_accuracy_size(summary, fronts=None, title: str | None = None):
    """Test accuracy against tree size per dataset, one marker per method; the Pareto front joined.

    ``summary``: ``baseline_summary``'s; ``fronts`` (optional): the GDT runs' fronts
    (``front_table`` rows), drawn per seed as thin grey lines -- every size a GDT run offers.
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    datasets = list(dict.fromkeys(summary.dataset))
    methods = list(dict.fromkeys(summary.method))
    fig, axes = new_figure(1, len(datasets), figsize=(3.4 * len(datasets) + 1.8, 4.0), squeeze=False)
    markers = "osD^vP*Xh<>p"
    for ax, name in zip(axes[0], datasets):
        part = summary[summary.dataset == name]
        if fronts is not None and len(fronts):
            for _, run in fronts[fronts.dataset == name].groupby("seed"):
                ax.plot(run.n_nodes, 100 * run.test_accuracy, color="0.6", lw=0.7, alpha=0.7,
                        label="GDT runs' fronts (test accuracy of each front tree)")
        for _, row in part.iterrows():
            j = methods.index(row.method)
            ax.scatter(row.n_nodes, 100 * row.test_accuracy, marker=markers[j % len(markers)], color=f"C{j % 10}",
                       s=55 if row.pareto else 30, edgecolor="k" if row.pareto else "none", label=row.method, zorder=3)
        front = part[part.pareto].sort_values("n_nodes")
        ax.step(front.n_nodes, 100 * front.test_accuracy, where="post", color="0.3", lw=0.8, ls=":")
        ax.set(xscale="log", title=name + (" (held out)" if bool(part.held_out.iloc[0]) else ""),
               xlabel="tree size (nodes, log scale)")
        low, high = part.n_nodes.min(), part.n_nodes.max()
        middle, half = np.sqrt(low * high), max(np.sqrt(high / low) * 1.4, np.sqrt(10))
        ax.set_xlim(middle / half, middle * half)  # at least a decade, so the log axis gets labelled ticks
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("test accuracy (%)")
    handles = {h.get_label(): h for ax in axes[0] for h in ax.collections + ax.lines}
    labels = [m for m in methods if m in handles] + [k for k in handles if k.startswith("GDT runs'")]
    fig.legend([handles[k] for k in labels], labels, fontsize=7, loc="outside right center")
    fig.suptitle(title or "Accuracy against size (medians over seeds; edged markers and dotted line: the Pareto front)")
    return fig


def plot_generation(step, title: str | None = None):
    """GDT's one generation on three trees (``walkthrough.one_generation``'s step): generation g above, g + 1 below.

    Each tree is drawn with its tests and its leaves' class and object count; the titles give its size,
    accuracy and fitness, eq. (1), and for generation g the selection's rank and draws, for g + 1 what the
    operators made of it.
    """
    from dtlab.plotting import draw_tree

    fig, axes = new_figure(2, 3, figsize=(11.0, 6.6))
    sel = step.selection
    for ax, tree, (_, row) in zip(axes[0], step.parent_trees, sel.iterrows()):
        draw_tree(tree, ax=ax, title=(f"{row.tree}: {row.nodes} nodes, fitness {row.fitness:.3f}\n"
                                      f"rank {row['rank']}, drawn {row.drawn}x" + (", elite" if row.elite else "")))
    for ax, tree, ind, label in zip(axes[1], step.child_trees, step.children, step.child_labels):
        name, _, what = label.partition(": ")
        draw_tree(tree, ax=ax, title=f"{name}: {what}\n{ind.n_nodes} nodes, fitness {ind.fitness:.3f}")
    for ax in axes.flat:
        ax.title.set_fontsize(8.5)
    fig.suptitle(title or f"One GDT generation on {step.X.shape[0]} rows of Chess3x3: generation g (top), "
                          f"g + 1 (bottom); leaves: majority class and objects", fontsize=10)
    return fig
