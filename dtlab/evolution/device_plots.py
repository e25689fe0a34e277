"""Figures of GDT on devices and of the baseline comparison, and their captions (re-exported by :mod:`.plots`).

Like :mod:`.plots`: each function takes the DataFrames of
:mod:`dtlab.evolution.scaling` / :mod:`dtlab.evolution.baselines` (or results
read back from ``results.json``), draws one figure with a title, units and a
legend, and never imports an experiment.  Modelled values are drawn dashed
with open markers and say "modelled" in the legend.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..plotting import new_axes, new_figure
from ..plotting.text import speedup

__all__ = ["PHASE_LABELS", "baseline_captions", "device_captions", "pareto_front", "plot_accuracy_size",
           "plot_baselines", "plot_device_scaling", "plot_evaluator_speedups", "plot_generation_breakdown"]

#: Phases of a generation, in stacking order, and their legend words.
PHASE_LABELS = {"host_operators": "host: selection, crossover, mutation", "prepare": "host: batch preparation",
                "transfer": "transfers / cluster round trip", "kernel": "kernels (slowest device)",
                "merge": "host: merging partial statistics", "dispatch": "handing work to devices and back"}


def plot_evaluator_speedups(table, ax=None, title: str | None = None):
    """Speedup of each evaluator over the NumPy reference against rows (log-log): the paper's Fig. 9 analogue.

    Parameters
    ----------
    table : DataFrame from :func:`dtlab.evolution.scaling.evaluator_speedups`
    """
    fig, ax = new_axes(ax, figsize=(7.0, 4.2))
    for i, (method, part) in enumerate(table[table.method != "NumPy reference"].groupby("method", sort=False)):
        threads = int(part.threads.iloc[0])
        ax.plot(part.n_samples, part.speedup_over_reference, marker="o", color=f"C{i}",
                label=f"{method} ({threads} thread{'s' if threads != 1 else ''})"
                if not method.startswith("GPU") else method)
    ax.axhline(1, color="0.4", lw=0.8, ls=":", label="NumPy reference (1 thread)")
    ax.set(xscale="log", yscale="log", xlabel="rows of Chess3x3 (log scale)",
           ylabel="speedup over the NumPy reference (x, log scale)",
           title=title or f"GDT fitness evaluation of {int(table.n_trees.iloc[0])} evolved trees per batch")
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7)
    return fig


def plot_device_scaling(curves, ax=None, title: str | None = None, kind: str = "CPU workers"):
    """Speedup over one device against rows, one colour per device count: the paper's Fig. 10 analogue.

    Measured points: solid lines, filled markers.  Modelled: dashed lines,
    open markers, "(modelled)" in the legend.

    Parameters
    ----------
    curves : DataFrame from :func:`dtlab.evolution.scaling.device_scaling` (``n_samples, n_devices,
        speedup, source``)
    """
    fig, ax = new_axes(ax, figsize=(7.0, 4.2))
    for i, d in enumerate(sorted(curves.n_devices.unique())):
        for source, style in (("measured", dict(ls="-", marker="o")),
                              ("modelled", dict(ls="--", marker="o", mfc="none"))):
            part = curves[(curves.n_devices == d) & (curves.source == source)].sort_values("n_samples")
            if len(part):
                device = kind if d > 1 else kind[:-1] if kind.endswith("s") else kind
                ax.plot(part.n_samples, part.speedup, color=f"C{i}", **style,
                        label=f"{d} {device}" + (" (modelled)" if source == "modelled" else " (measured)"))
    ax.set(xscale="log", xlabel="rows of Chess3x3 (log scale)", ylabel="speedup over one device (x)",
           title=title or f"GDT evaluation on several devices ({kind}, one thread each)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, ncols=2)
    return fig


def plot_generation_breakdown(table, ax=None, title: str | None = None):
    """Milliseconds per generation by phase, one stacked bar per evaluator.

    Parameters
    ----------
    table : DataFrame from :func:`dtlab.evolution.scaling.generation_breakdown`
    """
    fig, ax = new_axes(ax, figsize=(7.2, 4.0))
    x = np.arange(len(table))
    bottom = np.zeros(len(table))
    for i, (phase, label) in enumerate(PHASE_LABELS.items()):
        ms = 1000 * table[phase].to_numpy(float)
        ax.bar(x, ms, 0.6, bottom=bottom, label=label, color=f"C{i}")
        bottom += ms
    for xi, total in zip(x, bottom):
        ax.annotate(f"{total:.1f} ms", (xi, total), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, table.evaluator)
    ax.set_ylim(0, bottom.max() * 1.35)
    ax.set(ylabel="milliseconds per generation", xlabel="evaluator (devices: one thread each)",
           title=title or f"Where a GDT generation's time goes ({int(table.n_samples.iloc[0]):,} rows)")
    ax.legend(fontsize=7, loc="upper left", ncols=2)
    return fig


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both size (smaller) and accuracy (larger), by size."""
    order = sorted(range(len(points)), key=lambda i: (points[i][0], -points[i][1]))
    front, best = [], -np.inf
    for i in order:
        if points[i][1] > best:
            front.append(i)
            best = points[i][1]
    return front


def plot_baselines(summary, title: str | None = None):
    """Tree size (bars, log scale) and test accuracy (mean and spread over seeds) of every method per dataset.

    Parameters
    ----------
    summary : DataFrame from :func:`dtlab.evolution.baselines.baseline_summary`
    """
    datasets = list(dict.fromkeys(summary.dataset))
    methods = list(dict.fromkeys(summary.method))
    fig, (ax_size, ax_acc) = new_figure(1, 2, figsize=(11.0, 4.6))
    width = 0.8 / len(methods)
    x = np.arange(len(datasets))
    for j, method in enumerate(methods):
        part = summary[summary.method == method].set_index("dataset").reindex(datasets)
        offset = x - 0.4 + width * (j + 0.5)
        ax_size.bar(offset, part.n_nodes, width, color=f"C{j}", label=method)
        ax_acc.errorbar(offset, 100 * part.test_accuracy, yerr=100 * part.test_accuracy_std, fmt="o", ms=4,
                        color=f"C{j}", capsize=2, lw=0.8)
    names = [d + ("\n(held out)" if bool(summary[summary.dataset == d].held_out.iloc[0]) else "") for d in datasets]
    for axis in (ax_size, ax_acc):
        axis.set_xticks(x, names)
        axis.grid(True, axis="y", alpha=0.3)
    ax_size.set(yscale="log", ylabel="tree size (nodes, log scale)", title="tree size (mean over seeds)")
    ax_acc.set(ylabel="test accuracy (%)", title="test accuracy (mean; bars: standard deviation over seeds)")
    fig.legend(*ax_size.get_legend_handles_labels(), loc="outside lower center", ncols=min(len(methods), 4),
               fontsize=8)
    fig.suptitle(title or "GDT (defaults fixed) against tuned baselines on the same splits")
    return fig


def plot_accuracy_size(summary, title: str | None = None):
    """Test accuracy against tree size per dataset, one marker per method; the Pareto front joined.

    Parameters
    ----------
    summary : DataFrame from :func:`dtlab.evolution.baselines.baseline_summary` (``dataset, method,
        n_nodes, test_accuracy, pareto``)
    """
    from matplotlib.ticker import FuncFormatter, NullFormatter

    datasets = list(dict.fromkeys(summary.dataset))
    methods = list(dict.fromkeys(summary.method))
    fig, axes = new_figure(1, len(datasets), figsize=(3.3 * len(datasets) + 1.5, 3.8), squeeze=False)
    markers = "osD^vP*Xh"
    for ax, name in zip(axes[0], datasets):
        part = summary[summary.dataset == name]
        for _, row in part.iterrows():
            j = methods.index(row.method)
            ax.scatter(row.n_nodes, 100 * row.test_accuracy, marker=markers[j % len(markers)], color=f"C{j}",
                       s=55 if row.pareto else 30, edgecolor="k" if row.pareto else "none", label=row.method)
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
    handles = {h.get_label(): h for ax in axes[0] for h in ax.collections}
    fig.legend([handles[m] for m in methods if m in handles], [m for m in methods if m in handles], fontsize=7,
               loc="outside right center")
    fig.suptitle(title or "Accuracy against size (edged markers and dotted line: the Pareto front)")
    return fig


# ---------------------------------------------------------------- captions
def _rows(n: int) -> str:
    return f"{n:,} rows"


def device_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the device figures from the recorded tables."""
    speed = results["evaluator_speedups"]
    largest = max(r["n_samples"] for r in speed)
    at = {r["method"]: r for r in speed if r["n_samples"] == largest}
    best = max((r for r in at.values() if r["method"] != "NumPy reference"), key=lambda r: r["speedup_over_reference"])
    curves = results["device_scaling"]
    measured = [r for r in curves if r["source"] == "measured" and r["n_devices"] > 1 and r["n_samples"] == largest]
    modelled = [r for r in curves if r["source"] == "modelled" and r["n_devices"] > 1 and r["n_samples"] == largest]
    breakdown = results["generation_breakdown"]
    parts = "; ".join(f"{r['evaluator']}: {1000 * r['total']:.1f} ms, of which host operators "
                      f"{1000 * r['host_operators']:.1f} ms and kernels {1000 * r['kernel']:.1f} ms"
                      for r in breakdown)
    return {
        "evolution_evaluator_speedups": (
            f"Speedup of each evaluator over the NumPy reference as Chess3x3 grows (Fig. 9 analogue, "
            f"{speed[0]['n_trees']} evolved trees per batch): at {_rows(largest)}, "
            + ", ".join(f"{m} {speedup(r['speedup_over_reference'])}" for m, r in at.items()
                        if m != "NumPy reference")
            + f"; the fastest is {best['method']}."),
        "evolution_device_scaling": (
            f"Speedup over one device as the data grow (Fig. 10 analogue), {results['kind']} with one thread each: "
            + "; ".join(f"{r['n_devices']} devices measured {speedup(r['speedup'])}" for r in measured)
            + ("; " if measured else "") + "; ".join(f"{r['n_devices']} devices modelled {speedup(r['speedup'])}"
                                                   for r in modelled)
            + f" at {_rows(largest)}. The model (dashed, open markers) is fitted to the measured kernel, transfer "
              f"and merge times and assumes each device brings its own compute, as a GPU does; this machine's "
              f"{results['cores']} cores run the kernel at {results['probe']['throughput_ratio']:.2f}x one core's "
              f"rate when all are busy (separate processes), which bounds what any number of workers measures here."),
        "evolution_generation_time": (
            f"Milliseconds per GDT generation by phase ({_rows(breakdown[0]['n_samples'])}, mean of "
            f"{breakdown[0]['generations']} generations): {parts}."),
    }


def baseline_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of the Table 4 figures: accuracy and size of every method, who is on the Pareto front."""
    by_dataset: dict[str, list] = {}
    for row in results["summary"]:
        by_dataset.setdefault(row["dataset"], []).append(row)
    parts = []
    for name, rows in by_dataset.items():
        gdt = next((r for r in rows if r["method"] == "GDT"), None)
        front = [r["method"] for r in rows if r["pareto"]]
        held = " (held out: no part in choosing GDT's defaults)" if rows[0]["held_out"] else ""
        parts.append(f"{name}{held}: GDT {gdt['n_nodes']:.0f} nodes, {100 * gdt['test_accuracy']:.1f}%; "
                     + ", ".join(f"{r['method']} {r['n_nodes']:.0f} / {100 * r['test_accuracy']:.1f}%"
                                 for r in rows if r["method"] != "GDT")
                     + f"; Pareto front: {', '.join(front)}")
    skipped = results.get("skipped", {})
    note = (" Not run: " + "; ".join(f"{m} ({why})" for m, why in skipped.items()) + ".") if skipped else ""
    text = (f"Table 4, honestly: GDT with its defaults held fixed against tuned baselines on the same splits "
            f"(mean of {results['n_seeds']} seed(s), nodes / test accuracy). " + " ".join(p + "." for p in parts)
            + note)
    return {"evolution_vs_cart": text, "evolution_accuracy_size": text}
