"""Figures of the greedy inducers and their captions, from data (slug ``greedy``).

Each plot takes the DataFrames or dicts that :mod:`workbench.greedy.experiments`
returns (or results read back from ``results.json``) and never imports an
experiment; constants a plot needs, such as the C project's reported times,
are passed in.  The ``*_captions`` functions turn a producer's recorded
results into the README caption of each figure.  The last section draws the
lesson of notebook 02 from :mod:`workbench.greedy.lesson`'s results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.plotting import new_axes
from workbench.text import MODE_WORDS, by_mode, comparison_phrase, speedup, threads

__all__ = ["classifier_speed_captions", "depth_captions", "plot_error_vs_depth", "plot_fit_summary",
           "plot_lane_stages", "plot_scaling", "plot_speedups", "plot_split_steps", "plot_timing_vs_size",
           "regressor_speed_captions", "timing_captions"]

_STYLE = {
    "naive": dict(color="tab:red", marker="s"),
    "incremental": dict(color="tab:orange", marker="^"),
    "vectorized": dict(color="tab:blue", marker="o"),
    "sklearn": dict(color="tab:green", marker="D"),
}


def plot_timing_vs_size(frame, *, reported: dict | None = None, ax=None, title: str | None = None):
    """Training time against rows, log-log, one line per method.

    One line per method and thread count (dashed: more than one thread), the
    medians with the spread of the alternating runs as error bars.

    Parameters
    ----------
    frame : pandas.DataFrame from :func:`workbench.greedy.experiments.timing_vs_size`
    reported : dict, optional
        ``{(method, variant): {n_rows: seconds}}`` drawn as open markers (e.g.
        the C project's reported numbers,
        :data:`workbench.greedy.experiments.PROJECT_REPORTED_SECONDS`).
    """
    fig, ax = new_axes(ax, figsize=(9.0, 4.6))
    single_thread = frame["threads"].min()
    for (method, n_threads), group in frame.groupby(["method", "threads"], sort=False):
        done = group[~group["skipped"]]
        style = dict(_STYLE.get(method, {}), ls="-" if n_threads == single_thread else "--")
        label = ("scikit-learn" if method == "sklearn" else f"dtlab {method}") + f" ({threads(n_threads)})"
        if "seconds_min" in done and len(done):  # the spread of the alternating runs
            spread = [done["seconds"] - done["seconds_min"], done["seconds_max"] - done["seconds"]]
            ax.errorbar(done["n_samples"], done["seconds"], yerr=spread, label=label, capsize=2, **style)
        else:
            ax.plot(done["n_samples"], done["seconds"], label=label, **style)
        if group["skipped"].any():
            cap = int(done["n_samples"].max()) if len(done) else 0
            label_note = f"{method}: skipped above {cap:,} rows (O(n$^2$))"
            ax.plot([], [], " ", label=label_note)
    for (method, variant), points in (reported or {}).items():
        sizes = sorted(points)
        style = _STYLE.get(method, {})
        ax.plot(sizes, [points[s] for s in sizes], ls=":" if variant == "SIMD" else "--", lw=0.9,
                marker=style.get("marker", "o"), mfc="none", color=style.get("color", "0.4"), alpha=0.7,
                label=f"C project, {method}, {variant} (reported, other CPU)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    depth = frame["max_depth"].iloc[0] if "max_depth" in frame else None
    depth = "unlimited" if depth is None or (isinstance(depth, float) and np.isnan(depth)) else int(depth)
    ax.set(xlabel="training rows", ylabel="training time (s)",
           title=title or f"Regression tree, diabetes data (age, depth {depth}): time vs rows")
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


def plot_speedups(comparisons, *, ax=None, title: str | None = None):
    """Speedup of the regressor over scikit-learn per depth: per core and whole machine, threads in the legend.

    Parameters
    ----------
    comparisons : list of dict
        Comparison entries with ``max_depth`` (from
        :func:`workbench.greedy.experiments.regressor_vs_sklearn`).
    """
    fig, ax = new_axes(ax)
    depths = list(dict.fromkeys(e["max_depth"] for e in comparisons))
    labels = ["unlimited" if d is None else str(d) for d in depths]
    x = np.arange(len(depths))
    width = 0.38
    for j, mode in enumerate(MODE_WORDS):
        entries = [by_mode(comparisons, max_depth=d)[mode] for d in depths]
        t = entries[0]["threads"]
        bars = ax.bar(x + (j - 0.5) * width, [e["speedup"] for e in entries], width, color=f"C{j}",
                      label=f"{MODE_WORDS[mode]}: dtlab {threads(t['dtlab'])}, scikit-learn {threads(t['peer'])}")
        for rect, e in zip(bars, entries):
            ax.annotate(speedup(e["speedup"]), (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.axhline(1.0, color="k", ls="--", lw=0.8, label="parity")
    ax.set_ylim(0, 1.5 * max(max(e["speedup"] for e in comparisons), 1.0))  # headroom for the legend
    ax.set_xticks(x, labels)
    ax.set(xlabel="max_depth", ylabel="speedup (scikit-learn time / dtlab time)",
           title=title or "Regression tree training speed relative to scikit-learn")
    ax.legend(fontsize=7, loc="upper left")
    return fig


def plot_fit_summary(summary, *, ax=None, max_points: int = 3_000):
    """Predicted against true age on held-out rows, with the tree's size and errors in the title.

    Parameters
    ----------
    summary : dict from :func:`workbench.greedy.experiments.tree_summary`
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


# ---------------------------------------------------------------- captions
def timing_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``greedy_regression_timing`` from its recorded timings: depth, threads and spreads of the run."""
    rows = [r for r in results["timings"] if not r["skipped"]]
    largest = max(r["n_samples"] for r in rows)
    at = [r for r in rows if r["n_samples"] == largest]
    depth = results.get("max_depth", rows[0].get("max_depth"))
    tree = "fully grown" if depth is None else f"depth {depth}"

    def took(r: dict) -> str:
        name = "scikit-learn" if r["method"] == "sklearn" else f"the {r['method']} search"
        spread = f", {r['seconds_min']:.2f}-{r['seconds_max']:.2f} s" if r.get("runs", 1) > 1 else ""
        return f"{name} {r['seconds']:.2f} s on {threads(r['threads'])}{spread}"

    per_core = {r["method"]: r for r in at if r["threads"] == 1}
    ratio = ""
    if "vectorized" in per_core and "sklearn" in per_core:
        ratio = (f" Per core (1 thread each) the vectorised search fits "
                 f"{speedup(per_core['sklearn']['seconds'] / per_core['vectorized']['seconds'])} as fast as "
                 f"scikit-learn.")
    runs = max(r.get("runs", 1) for r in at)
    return {"greedy_regression_timing": (
        f"Variance-reduction regression tree on the diabetes data (predict age, {tree}): training time of "
        f"the naive, incremental and vectorised split searches and scikit-learn against rows, every fit of a size "
        f"timed in alternation with the others (medians of up to {runs} rounds, spread min-max). At {largest:,} "
        f"rows: " + "; ".join(took(r) for r in at) + "." + ratio + " Open markers: the C project's reported "
        "times (another CPU), for scale only.")}


def depth_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``greedy_regression_depth``."""
    errors = results["errors"]
    deepest = errors[-1]
    return {"greedy_regression_depth": (
        f"Training and held-out mean squared error of the age prediction against the depth limit: the "
        f"held-out error is lowest at depth {results['best_depth']} ({results['best_test_mse']:.0f} years^2); "
        f"at depth {deepest['max_depth']} the training error is {deepest['train_mse']:.0f} and the held-out "
        f"error {deepest['test_mse']:.0f} years^2.")}


def _phrase(entry: dict[str, Any]) -> str:
    """A comparison's speedup with its threads and, where recorded, the spread of its alternating runs."""
    text = comparison_phrase(entry)
    if "speedup_min" in entry:
        text += (f" [{speedup(entry['speedup_min'])}-{speedup(entry['speedup_max'])} over {entry['runs']} "
                 "alternating runs]")
    return text


def regressor_speed_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``greedy_regressor_vs_sklearn``: the speedups per depth with their threads."""
    parts = []
    for depth in dict.fromkeys(e["max_depth"] for e in results["comparisons"]):
        modes = by_mode(results["comparisons"], max_depth=depth)
        parts.append(f"depth {'unlimited' if depth is None else depth}: "
                     + ", ".join(_phrase(modes[m]) for m in MODE_WORDS))
    trees = []
    for r in results["trees"]:
        depth = "unlimited" if r["max_depth"] is None else r["max_depth"]
        if r["same_tree"]:
            trees.append(f"depth {depth} the same tree node for node")
        else:
            why = ("all between splits of exactly equal gain" if r["all_exactly_equal"]
                   else "not all explained by equal gains")
            trees.append(f"depth {depth} {r['n_divergences']} places where the trees part, {why}")
    n = results["trees"][0]["n_samples"]
    return {"greedy_regressor_vs_sklearn": (
        f"Regression tree training speed relative to scikit-learn on {n:,} rows (scikit-learn time / dtlab "
        f"time): " + "; ".join(parts) + ". Against scikit-learn's tree: " + "; ".join(trees) + ".")}


def classifier_speed_captions(results: dict[str, Any]) -> dict[str, str]:
    """Text for the CART classifier benchmark (no figure)."""
    modes = by_mode(results["comparisons"])
    return {"greedy_classifier_vs_sklearn": (
        f"CART (Gini) training on {results['n_samples']:,} Chess3x3 rows against scikit-learn: "
        + ", ".join(_phrase(modes[m]) for m in MODE_WORDS)
        + (f"; {modes['whole_machine']['peer_note']}" if modes["whole_machine"].get("peer_note") else "")
        + (". Same tree." if results["same_tree"] else ". The trees differ."))}


# ---------------------------------------------------------------- the lesson (notebook 02)
def plot_split_steps(steps, naive=None, library: dict | None = None, *, ax=None):
    """The variance reduction of every candidate threshold of the stepped search, the best one marked.

    Parameters
    ----------
    steps : list of dict from :func:`workbench.greedy.lesson.split_steps`
    naive : list of dict from :func:`workbench.greedy.lesson.naive_steps`, optional (open squares on top)
    library : dict from :func:`workbench.greedy.lesson.library_root`, optional (a vertical line)
    """
    fig, ax = new_axes(ax, figsize=(6.4, 3.6))
    cands = [s for s in steps if not np.isnan(s["proxy"])]
    mean_term = steps[-1]["B_L"] ** 2 / steps[-1]["n_L"]  # B_S^2 / n: reduction = proxy - B_S^2 / n
    node_sse = steps[-1]["A_L"] - mean_term
    ax.plot([s["threshold"] for s in cands], [s["reduction"] for s in cands], "o-", color="tab:blue",
            label="incremental: running sums $A_L, B_L$")
    if naive:
        ax.plot([s["threshold"] for s in naive], [s["proxy"] - mean_term for s in naive], "s", mfc="none", ms=11,
                color="tab:red", label="naive: every row summed again")
    best = max(cands, key=lambda s: s["proxy"])
    ax.annotate(f"best: x <= {best['threshold']:.2f}\nreduction {best['reduction']:.0f}",
                (best["threshold"], best["reduction"]), xytext=(10, -30), textcoords="offset points", fontsize=8)
    if library:
        ax.axvline(library["threshold"], color="0.4", ls="--", lw=0.8, label="dtlab's root split (depth 1)")
    ax.set(xlabel="candidate threshold (midpoint of two sorted values)",
           ylabel="variance reduction (years$^2$)",
           title=f"Eight rows: SSE(S) = {node_sse:.0f} years$^2$ before the split")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="lower center")
    return fig


def plot_lane_stages(scan, *, ax=None):
    """The stages of a lane-wise prefix sum as rows of cells, one colour per lane (no curves: a drawing).

    Parameters
    ----------
    scan : dict from :func:`workbench.greedy.lesson.lane_scan`
    """
    from matplotlib.patches import Rectangle

    stages, lane = scan["stages"], scan["lane"]
    n = len(scan["values"])
    fig, ax = new_axes(ax, figsize=(min(1.0 + 0.85 * n, 11.0), 0.75 + 0.62 * len(stages)))
    colours = [f"C{j % 10}" for j in range(scan["lanes"])]
    for r, (name, values) in enumerate(stages):
        y0 = len(stages) - 1 - r
        for i in range(n):
            ax.add_patch(Rectangle((i, y0 + 0.08), 0.94, 0.84, facecolor=colours[lane[i]], alpha=0.22,
                                   edgecolor=colours[lane[i]]))
            ax.text(i + 0.47, y0 + 0.5, f"{values[i]:g}", ha="center", va="center", fontsize=8)
        ax.text(-0.15, y0 + 0.5, name, ha="right", va="center", fontsize=9)
    for j in range(scan["lanes"]):
        cells = np.flatnonzero(lane == j)
        if len(cells) and scan["layout"] == "chunks":
            ax.text(cells.mean() + 0.47, len(stages) + 0.1, f"lane {j}", ha="center", va="bottom", fontsize=8,
                    color=colours[j])
    ax.set_xlim(-0.1, n)
    ax.set_ylim(0, len(stages) + (0.55 if scan["layout"] == "chunks" else 0.1))
    ax.set_axis_off()
    what = ("each lane a chunk of the sorted rows" if scan["layout"] == "chunks"
            else "registers of consecutive rows, colour = lane")
    ax.set_title(f"{scan['lanes']} lanes, {what}: {scan['vector_ops']} vector adds for {n} rows", fontsize=10)
    return fig


_LESSON_STYLE = {
    ("naive", False): dict(color="tab:red", marker="s"),
    ("incremental", False): dict(color="tab:orange", marker="^"),
    ("vectorized", False): dict(color="tab:blue", marker="o"),
    ("vectorized", True): dict(color="tab:purple", marker="o", ls="--"),
    ("sklearn", False): dict(color="tab:green", marker="D"),
}


def _contender_label(method: str, n_threads: int) -> str:
    return ("scikit-learn" if method == "sklearn" else f"dtlab {method}") + f", {threads(n_threads)}"


def plot_scaling(result, *, reported: dict | None = None):
    """Three panels from :func:`workbench.greedy.lesson.scaling`: fit time against rows (log-log; the C
    project's reported times as open markers), speedup over scikit-learn against rows, and the mean squared
    error against the depth limit.  Every filled marker is measured here.

    Parameters
    ----------
    result : dict from :func:`workbench.greedy.lesson.scaling`
    reported : dict, optional
        ``{(method, variant): {rows: seconds}}``, e.g.
        :data:`workbench.greedy.experiments.PROJECT_REPORTED_SECONDS`.
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    from dtlab.plotting import new_figure

    fig, (ax1, ax2, ax3) = new_figure(1, 3, figsize=(13.0, 5.0))
    points = result["points"]
    contenders = list(dict.fromkeys((p["method"], p["threads"]) for p in points))
    sk = {p["rows"]: p["seconds"] for p in points if p["method"] == "sklearn"}
    largest = result["rows"][-1]
    for method, n_threads in contenders:
        sel = sorted((p for p in points if p["method"] == method and p["threads"] == n_threads),
                     key=lambda p: p["rows"])
        style = dict(_LESSON_STYLE[method, n_threads > 1])
        rows = [p["rows"] for p in sel]
        label = _contender_label(method, n_threads)
        ax1.plot(rows, [p["seconds"] for p in sel], label=label, **style)
        if method != "sklearn":
            ax2.plot(rows, [sk[p["rows"]] / p["seconds"] for p in sel], label=label, **style)
    for (method, variant), at in (reported or {}).items():
        sizes = sorted(at)
        style = _LESSON_STYLE[method, False]
        ax1.plot(sizes, [at[s] for s in sizes], ls=":", lw=0.9, marker=style["marker"], mfc="none",
                 color=style["color"], alpha=0.7, label=f"C project, {method}, {variant} (reported, other CPU)")
    start = result["parallel_from_rows"]
    if result["threads"] > 1 and start <= largest:
        for ax in (ax1, ax2):
            ax.axvline(start, color="tab:purple", ls=":", lw=1.0,
                       label="root scanned in parallel from here\n(rows x features >= 10$^6$)" if ax is ax2
                       else None)
    naive = [p["rows"] for p in points if p["method"] == "naive"]
    if naive and max(naive) < largest:
        ax1.axvline(max(naive), color="tab:red", ls=":", lw=0.8)
        ax1.annotate(f"naive stops at\n{max(naive):,} rows", (max(naive), 0.97), xycoords=("data", "axes fraction"),
                     xytext=(3, 0), textcoords="offset points", va="top", fontsize=7, color="tab:red")
    depth = "fully grown" if result["max_depth"] is None else f"depth {result['max_depth']}"
    ax1.set(xscale="log", yscale="log", xlabel="training rows", ylabel="fit time (s, log)",
            title=f"Fit time: {result['n_features']} features ({result['irrelevant']} irrelevant), {depth}")
    ax1.grid(True, which="both", alpha=0.3)
    ax2.axhline(1.0, color="k", lw=0.8)
    ax2.set(xscale="log", yscale="log", xlabel="training rows", ylabel="scikit-learn's time / the search's (log)",
            title="Speedup over scikit-learn")
    ax2.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    ax2.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))  # 0.2x, 1x, 5x: read as ratios
    ax2.yaxis.set_minor_formatter(NullFormatter())
    ax2.grid(True, which="both", alpha=0.3)
    # one legend for the first two panels (the same contenders, the same colours), below the figure
    handles, labels = ax1.get_legend_handles_labels()
    extra = [(h, lab) for h, lab in zip(*ax2.get_legend_handles_labels()) if lab not in labels]
    fig.legend(handles + [h for h, _ in extra], labels + [lab for _, lab in extra], loc="outside lower left",
               ncol=3, fontsize=7, frameon=False)
    errors = result["errors"]
    depths = [e["max_depth"] for e in errors]
    ax3.plot(depths, [e["train_mse"] for e in errors], "o:", color="tab:blue", label="training rows")
    share = (f",\n{errors[-1]['irrelevant_share']:.0%} of the depth-{errors[-1]['max_depth']} tree's splits on them"
             if result["irrelevant"] else "")
    ax3.plot(depths, [e["test_mse"] for e in errors], "s-", color="tab:orange",
             label=f"held-out rows, {result['irrelevant']} irrelevant columns{share}")
    if result.get("errors_without_irrelevant"):
        ref = result["errors_without_irrelevant"]
        ax3.plot([e["max_depth"] for e in ref], [e["test_mse"] for e in ref], "s-", ms=3, color="0.55",
                 label="held-out rows, no irrelevant features")
    best = min(errors, key=lambda e: e["test_mse"])
    ax3.axvline(best["max_depth"], color="0.5", ls="--", lw=0.8, label=f"best held-out depth ({best['max_depth']})")
    ax3.set(xlabel="max_depth (levels), a quarter of the rows held out", ylabel="mean squared error (years$^2$)",
            title=f"Error against depth, {largest:,} rows")
    ax3.grid(True, alpha=0.3)
    ax3.legend(fontsize=7, loc="lower left")
    return fig
