"""Plots of the boosting experiments: time per tree against peers, worker scaling; their captions."""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.plotting import new_axes, new_figure
from workbench.text import MODE_WORDS, count, speedup, threads


def plot_time_per_tree(frames: dict[str, list[dict[str, Any]]], *, title: str | None = None, n_trees: int = 40,
                       max_depth: int = 6):
    """Seconds per tree of every contender, per dataset and mode (threads in the legend), AUC on the bars.

    Parameters
    ----------
    frames : {dataset: rows of :func:`workbench.boosting.experiments.time_per_tree`}
    n_trees, max_depth : the fits' rounds and depth, for the titles
    """
    names = list(frames)
    fig, axes = new_figure(1, len(names), figsize=(min(10.0, 5.0 * len(names)), 4.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        rows = frames[name]
        contenders = list(dict.fromkeys(r["contender"] for r in rows))
        modes = list(dict.fromkeys(r["mode"] for r in rows))
        x = np.arange(len(contenders))
        width = 0.8 / len(modes)
        for j, mode in enumerate(modes):
            at = {r["contender"]: r for r in rows if r["mode"] == mode}
            vals = [at[c]["seconds_per_tree"] * 1e3 for c in contenders]
            bars = ax.bar(x + (j - (len(modes) - 1) / 2) * width, vals, width, color=f"C{j}",
                          label=f"{MODE_WORDS[mode]} ({threads(at[contenders[0]]['threads'])} each)")
            for rect, c in zip(bars, contenders):
                ax.annotate(f"{at[c]['auc']:.3f}", (rect.get_x() + rect.get_width() / 2, rect.get_height()),
                            ha="center", va="bottom", fontsize=8)
        ax.set_yscale("log")
        ax.set_xticks(x, contenders, rotation=25, ha="right", fontsize=8)
        ax.set(ylabel="ms per tree (log)")
        ax.set_title(f"{name}: depth {max_depth}, {n_trees} trees (numbers: test AUC)", fontsize=9)
        ax.legend(fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def plot_worker_scaling(rows: list[dict[str, Any]], *, ax=None):
    """Speedup over one worker against workers, exact and hist, with the ideal line."""
    fig, ax = new_axes(ax)
    workers = sorted({r["workers"] for r in rows})
    for method in dict.fromkeys(r["split_method"] for r in rows):
        sel = [r for r in rows if r["split_method"] == method]
        ax.plot([r["workers"] for r in sel], [r["speedup"] for r in sel], "o-",
                label=f"{method} ({sel[0]['seconds_per_tree'] * 1e3:.0f} ms/tree on 1 worker)")
    ax.plot(workers, workers, "k--", lw=0.8, label="ideal")
    ax.set(xlabel="workers (threads; features cut into as many slices)", ylabel="speedup over 1 worker",
           title="Feature-parallel scaling (the paper's Fig. 9 analogue)")
    ax.set_xticks(workers)
    ax.legend(fontsize=8)
    return fig


def plot_exact_vs_hist(result: dict[str, Any]):
    """Two bars, milliseconds per tree of the exact and histogram searches, from :func:`exact_vs_hist`."""
    fig, ax = new_figure(figsize=(6.4, 2.6))
    methods = ("exact", "hist")
    vals = [result[f"{m} ms/tree"] for m in methods]
    bars = ax.barh(methods, vals, color=["C0", "C1"])
    for rect, v in zip(bars, vals):
        ax.annotate(f" {v:.1f} ms", (v, rect.get_y() + rect.get_height() / 2), va="center", fontsize=9)
    ax.set_xlim(0, max(vals) * 1.3)
    ax.set(xlabel="ms per tree (one fit, compiled beforehand)")
    ax.set_title(f"{result['rows']:,} rows x {count(result['features'], 'feature')}, "
                 f"{result['missing']:.0%} missing, {result['input']}, {threads(result['workers'])}", fontsize=9)
    return fig


def peer_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``boosting_time_per_tree``: every comparison with its spread, the goals, parameters of the run."""
    from workbench.text import speedup_spread

    by_set: dict[str, list[str]] = {}
    rows_of: dict[str, Any] = {}
    for c in results["comparisons"]:
        auc = f", AUC {c['auc_dtlab']:.4f} vs {c['auc_peer']:.4f}" if "auc_dtlab" in c else ""
        if "auc_dtlab_mean" in c:
            auc += f" (mean over splits {c['auc_dtlab_mean']:.4f} vs {c['auc_peer_mean']:.4f})"
        by_set.setdefault(c["dataset"], []).append(
            f"{c['dtlab']} vs {c['peer_name']} {MODE_WORDS[c['mode']]}: {speedup_spread(c)}{auc}")
        rows_of[c["dataset"]] = c.get("n_samples")
    sets = ". ".join((f"{name} ({rows_of[name]:,} training rows): " if rows_of[name] else f"{name}: ")
                     + "; ".join(parts) for name, parts in by_set.items())
    goals = {k: g if isinstance(g, dict) else {"met": g, "worst_time_ratio": float("nan"), "same_auc": True}
             for k, g in results.get("goals", {}).items()}  # a bool per goal in results of before the spreads
    goal_text = "; ".join(
        f"{name}: {'met' if g['met'] else 'missed'}" + ("" if g["met"] else
                                                      f" (worst round {g['worst_time_ratio']:.2f}, "
                                                      f"{'equal' if g['same_auc'] else 'different'} AUC)")
        for name, g in goals.items())
    agree = "; ".join(f"{name} {mode.replace('_', ' ')}: {a['same_trees']} of {a['n_trees']} trees equal"
                      for name, modes in results.get("exact_agreement", {}).items() for mode, a in modes.items())
    load = results.get("load_average_before")
    params = (f"depth {results.get('max_depth', '?')}, {results.get('n_trees', '?')} trees, learning rate "
              f"{results.get('learning_rate', '?')}")
    return {"boosting_time_per_tree": f"Time per tree, {params}, every contender from the same base score "
                                      "(speedup = peer time / dtlab time, same threads both sides; median and "
                                      "range over alternating runs). " + sets
                                      + (f". Goals: {goal_text} (in this run; over every run on this code: Goals "
                                         "above)" if goal_text else "")
                                      + (f". dtlab exact vs XGBoost exact: {agree}" if agree else "")
                                      + (f". Load average before the run: {load[0]}" if load else "") + "."}


def gpu_captions(results: dict[str, Any]) -> dict[str, str]:
    """Captions of ``boosting_gpu_time_per_tree`` and ``boosting_gpu_sort``, or of the pending entry."""
    if results.get("status") == "pending":
        return {"boosting_gpu": f"GPU numbers pending: {results['reason']}. Target: {results['target']}."}
    parts = [f"{c['dtlab']} vs {c['peer_name']}: {speedup(c['speedup'])}, test AUC {c['auc_dtlab']:.4f} vs "
             f"{c['auc_peer']:.4f}" for c in results["comparisons"]]
    rows = results["comparisons"][0]["n_samples"] if results["comparisons"] else None
    missing = "" if results.get("xgboost_installed") else "; XGBoost is not installed there, so no GPU peer ran"
    n = max(r["n"] for r in results["sort_rows"])
    sorts = ", ".join(f"{_sort_label(r)} {r['seconds'] * 1e3:.2f} ms" for r in results["sort_rows"] if r["n"] == n)
    return {"boosting_gpu_time_per_tree": f"Time per tree on {results['device']}, depth 6, 40 trees"
                                          + (f", {rows:,} rows" if rows else "") + " (speedup = other time / "
                                          "dtlab GPU time; the CPU side on every core): " + "; ".join(parts)
                                          + missing,
            "boosting_gpu_sort": f"Sorting {n:,} float32 keys on {results['device']}'s machine: {sorts}."}


def scaling_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``boosting_worker_scaling``."""
    best = {r["split_method"]: r for r in results["rows"]}
    text = ", ".join(f"{m} {speedup(r['speedup'])} on {threads(r['workers'])}" for m, r in best.items())
    return {"boosting_worker_scaling": f"Speedup over one worker on {results['n_samples']:,} rows: {text}."}


def plot_sort_timing(rows: list[dict[str, Any]], *, ax=None):
    """Seconds against keys for each sort (radix per worker count), log-log."""
    fig, ax = new_axes(ax)
    for name in dict.fromkeys((r["sort"], r["workers"]) for r in rows):
        sel = [r for r in rows if (r["sort"], r["workers"]) == name]
        ax.plot([r["n"] for r in sel], [r["seconds"] for r in sel], "o-", label=_sort_label(sel[0]))
    ax.set(xscale="log", yscale="log", xlabel="keys (float32)", ylabel="seconds (median)",
           title="Sorting one feature: radix sort against numpy")
    ax.legend(fontsize=8)
    return fig


def _sort_label(row: dict[str, Any]) -> str:
    """A sort's name with its host threads (none for a sort on the GPU, whose ``workers`` is 0)."""
    return f"{row['sort']} ({threads(row['workers'])})" if row["workers"] else row["sort"]


def sort_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``boosting_sort``: the times at the largest size."""
    n = max(r["n"] for r in results["rows"])
    at = ", ".join(f"{_sort_label(r)} {r['seconds'] * 1e3:.1f} ms" for r in results["rows"] if r["n"] == n)
    return {"boosting_sort": f"Sorting {n:,} float32 keys: {at}. The exact search presorts with "
                             f"{results['library_sort']!r}."}


def plot_intensity(result: dict[str, Any]):
    """Left: flops per byte, the paper's Eq. 6 against dtlab's counted kernels; right: bytes per second the
    fit moved against a plain copy's."""
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(9.6, 4.0))
    vals = [result["paper"]["intensity"], result["dtlab"]["intensity"]]
    bars = ax1.bar(["paper model (Eq. 4-6)", "dtlab exact (counted)"], vals, color=["C7", "C0"])
    for rect, v in zip(bars, vals):
        ax1.annotate(f"{v:.3f}", (rect.get_x() + rect.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    ax1.set(ylabel="flops per byte", title="Arithmetic intensity of the exact search")
    gbs = [result["achieved_bytes_per_second"] / 1e9, result["copy_bytes_per_second"] / 1e9]
    bars = ax2.bar([f"exact search ({threads(result['n_workers'])})", "np.copyto (1 thread)"], gbs, color=["C0", "C7"])
    for rect, v in zip(bars, gbs):
        ax2.annotate(f"{v:.1f}", (rect.get_x() + rect.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    ax2.set(ylabel="GB/s (counted bytes / time)", title="Memory traffic achieved")
    fig.suptitle(f"{result['nnz']:,} entries, {result['n_split'] / 1e6:.1f} M candidates ranked per round",
                 fontsize=9)
    return fig


def intensity_captions(results: dict[str, Any]) -> dict[str, str]:
    """Caption of ``boosting_intensity``."""
    return {"boosting_intensity": (
        f"Flops per byte: the paper's Eq. 4-6 give {results['paper']['intensity']:.3f}, dtlab's counted kernels "
        f"{results['dtlab']['intensity']:.3f} (both far below any ridge point: memory bound); the fit moved "
        f"{results['achieved_bytes_per_second'] / 1e9:.1f} GB/s against {results['copy_bytes_per_second'] / 1e9:.1f}"
        " GB/s of a plain copy.")}


def plot_categorical_vs_onehot(rows: list[dict[str, Any]], *, ax=None):
    """Test log loss against trees, one line per encoding (:func:`.encodings.categorical_vs_onehot`)."""
    fig, ax = new_axes(ax)
    for encoding in dict.fromkeys(r["encoding"] for r in rows):
        sel = [r for r in rows if r["encoding"] == encoding]
        ax.plot([r["n_trees"] for r in sel], [r["test_log_loss"] for r in sel], "o-",
                label=f"{encoding} ({sel[0]['n_features']} columns)")
    ax.set(xscale="log", xlabel="trees", ylabel="test log loss", title="Native categorical splits against one-hot")
    ax.legend(fontsize=8)
    return fig


def plot_contributions(contributions: np.ndarray, feature_names: list[str], *, rows: list[int] | None = None,
                       top: int = 8):
    """TreeSHAP contributions as horizontal bars, one panel per row: the ``top`` largest by size and the bias.

    Parameters
    ----------
    contributions : float array (n_rows, n_features + 1)
        ``predict(X, pred_contribs=True)`` of a binary model or a regressor: the bias last.
    feature_names : list of str, length n_features
    rows : list of int, optional
        Which rows to draw (default: all, at most 4).
    top : int
        Features shown per row (the rest are summed into "other").
    """
    contributions = np.asarray(contributions, dtype=np.float64)
    if contributions.ndim != 2 or contributions.shape[1] != len(feature_names) + 1:
        raise ValueError(f"contributions must be of shape (n_rows, {len(feature_names) + 1}) (the bias last), "
                         f"got {contributions.shape}")
    rows = list(range(min(len(contributions), 4))) if rows is None else list(rows)
    fig, axes = new_figure(1, len(rows), figsize=(3.4 * len(rows), 3.2), squeeze=False)
    for ax, row in zip(axes[0], rows):
        values = contributions[row, :-1]
        order = np.argsort(-np.abs(values))
        shown = order[:top]
        labels = [feature_names[i] for i in shown] + (["other"] if len(order) > top else []) + ["bias"]
        bars = list(values[shown]) + ([values[order[top:]].sum()] if len(order) > top else [])
        bars.append(contributions[row, -1])
        colors = ["C3" if v > 0 else "C0" for v in bars[:-1]] + ["0.6"]
        ax.barh(range(len(bars))[::-1], bars, color=colors)
        ax.set_yticks(range(len(bars))[::-1], labels, fontsize=8)
        ax.axvline(0, color="0.3", lw=0.8)
        ax.set(title=f"row {row}: margin {contributions[row].sum():+.3f}", xlabel="contribution to the margin")
    return fig


def plot_tiny_search(exact: list[dict[str, Any]], hist: list[dict[str, Any]], *, ax=None):
    """Gain against threshold on the tiny input: every exact candidate (both missing directions) and the
    histogram's few edges (:func:`workbench.boosting.lesson.exact_steps` / ``hist_steps``); the best starred."""
    fig, ax = new_axes(ax, figsize=(6.4, 3.6))
    for side, style in (("left", "o-"), ("right", "o:")):
        sel = [s for s in exact if not np.isnan(s[f"gain (missing {side})"])]
        ax.plot([s["threshold"] for s in sel], [s[f"gain (missing {side})"] for s in sel], style, color="C0",
                label=f"exact: every value, missing rows {side}")
        sel = [s for s in hist if not np.isnan(s[f"gain (missing {side})"])]
        ax.plot([s["threshold"] for s in sel], [s[f"gain (missing {side})"] for s in sel], "s" if side == "left"
                else "D", ms=10 if side == "left" else 8, color="C1", ls="none",
                label=f"hist: bin edges only, missing rows {side}")
    best = max(((s["threshold"], s[f"gain (missing {side})"], side) for s in exact for side in ("left", "right")
                if not np.isnan(s[f"gain (missing {side})"])), key=lambda t: t[1])
    ax.plot([best[0]], [best[1]], "*", ms=18, color="C3", ls="none", zorder=1,
            label=f"best: x < {best[0]:g}, missing {best[2]}")
    ax.axhline(0, color="0.6", lw=0.8)
    ax.set(xlabel="threshold (rows with x < threshold go left)", ylabel="gain (Eq. 1 bracket, +lambda)",
           title="Every candidate split of one feature")
    ax.legend(fontsize=8)
    return fig


def plot_convergence(result: dict[str, Any], *, ax=None):
    """Log loss against rounds (:func:`workbench.boosting.lesson.convergence`): test (solid) and train
    (dotted) of the exact and histogram searches, the best test round marked; every point measured."""
    fig, ax = new_axes(ax, figsize=(7.4, 3.9))
    for i, (method, c) in enumerate(result["curves"].items()):
        rounds = np.arange(1, len(c["test"]) + 1)
        ax.plot(rounds, c["test"], "o-", ms=3, color=f"C{i}",
                label=f"{method}: test (best round {c['best_round']}, {c['seconds']:.2f} s fit)")
        ax.plot(rounds, c["train"], "o:", ms=2, color=f"C{i}", alpha=0.7, label=f"{method}: train")
        ax.plot([c["best_round"]], [c["test"][c["best_round"] - 1]], "v", ms=9, color=f"C{i}")
    ax.set(xlabel="boosting round", ylabel="log loss",
           title=f"{result['rows']:,} training rows, {result['label_noise']:.0%} of the labels flipped (train and "
                 f"test), depth {result['max_depth']}")
    ax.title.set_fontsize(9)
    ax.legend(fontsize=8)
    return fig


def plot_crossover(result: dict[str, Any], recorded: dict[str, Any] | None = None):
    """Three panels from :func:`workbench.boosting.lesson.crossover`: ms per tree against rows (the crossover
    marked), the speedup of the most workers measured against rows, and the speedup against workers at the
    largest size (measured filled, modelled open and dashed; ``recorded``: the static figure's points, grey)."""
    points = result["points"]
    cpu = [p for p in points if p["device"] == "CPU" and p["source"] == "measured"]
    counts = sorted({p["workers"] for p in cpu if p["rows"] != result["rows"][-1]} or {1})
    most = max(counts)
    fig, (ax1, ax2, ax3) = new_figure(1, 3, figsize=(10.0, 3.9))
    for i, method in enumerate(("exact", "hist")):
        for w, marker in ((1, "o"), (most, "s")):
            if w == 1 or most > 1:
                sel = sorted((p for p in cpu if p["method"] == method and p["workers"] == w), key=lambda p: p["rows"])
                ax1.plot([p["rows"] for p in sel], [p["ms_per_tree"] for p in sel], marker + "-", color=f"C{i}",
                         alpha=1.0 if w == 1 else 0.55, label=f"{method}, {threads(w)}")
        gpu = sorted((p for p in points if p["device"] == "GPU" and p["method"] == method), key=lambda p: p["rows"])
        if gpu:
            ax1.plot([p["rows"] for p in gpu], [p["ms_per_tree"] for p in gpu], "^-", color=f"C{i + 2}",
                     label=f"{method}, GPU (measured)")
        if most > 1:
            one = {p["rows"]: p["ms_per_tree"] for p in cpu if p["method"] == method and p["workers"] == 1}
            many = {p["rows"]: p["ms_per_tree"] for p in cpu if p["method"] == method and p["workers"] == most}
            sizes = sorted(set(one) & set(many))
            ax2.plot(sizes, [one[n] / many[n] for n in sizes], "o-", color=f"C{i}", label=method)
        at = sorted((p for p in points if p["method"] == method and p["device"] == "CPU"
                     and p["rows"] == result["rows"][-1]), key=lambda p: p["workers"])
        base = next(p["ms_per_tree"] for p in at if p["workers"] == 1 and p["source"] == "measured")
        meas = [p for p in at if p["source"] == "measured"]
        ax3.plot([p["workers"] for p in meas], [base / p["ms_per_tree"] for p in meas], "o-", color=f"C{i}",
                 label=f"{method} (measured)")
        model = [p for p in at if p["source"] == "modelled"]
        if model:
            ax3.plot([meas[-1]["workers"]] + [p["workers"] for p in model],
                     [base / meas[-1]["ms_per_tree"]] + [base / p["ms_per_tree"] for p in model], "o--", mfc="none",
                     color=f"C{i}", label=f"{method} (modelled: Amdahl fit)")
        if recorded:
            rec = sorted((r for r in recorded["rows"] if r["split_method"] == method), key=lambda r: r["workers"])
            ax3.plot([r["workers"] for r in rec], [r["speedup"] for r in rec], "D-", color="0.55" if i else "0.3",
                     ms=5, label=f"{method}, static figure ({recorded['n_samples']:,} rows, measured)")
    cross = result["crossover"].get(1, {})
    if cross.get("rows"):
        ax1.axvline(cross["rows"], color="0.4", lw=0.8)
        ax1.annotate(f"hist faster from\n~{cross['rows']:,.0f} rows", (cross["rows"], 0.97),
                     xycoords=("data", "axes fraction"), xytext=(4, 0), textcoords="offset points", va="top",
                     fontsize=8)
    ax1.set(xscale="log", yscale="log", xlabel="rows", ylabel="ms per tree (log)",
            title=f"{result['n_features']} features ({result['noise_features']} irrelevant)")
    ax1.legend(fontsize=8, loc="lower right")
    start = result.get("parallel_from_rows")
    if start and most > 1 and start <= result["rows"][-1]:
        for ax in (ax1, ax2):
            ax.axvline(start, color="C2", ls=":", lw=1.2,
                       label=f"workers used from here\n(rows x features >= {result['parallel_min_work']:,})"
                       if ax is ax2 else None)
    if most > 1:
        ax2.axhline(1, color="0.6", lw=0.8)
        ax2.axhline(most, color="k", ls=":", lw=0.8, label=f"ideal ({most}x)")
        ax2.set(xscale="log", xlabel="rows", ylabel=f"speedup, {threads(most)} over 1",
                title="Speedup against rows")
        ax2.legend(fontsize=8)
    else:
        ax2.text(0.5, 0.5, "one worker chosen:\nno speedup to draw", ha="center", va="center", transform=ax2.transAxes)
        ax2.set(title="Speedup against rows", xticks=[], yticks=[])
    top = max(result["workers"], most, *(r["workers"] for r in (recorded or {}).get("rows", [])))
    ax3.plot([1, top], [1, top], "k:", lw=0.8, label="ideal")
    ax3.set(xlabel="workers (threads)", ylabel="speedup over 1 worker",
            title=f"At {result['rows'][-1]:,} rows ({result['cores']} cores here)")
    ax3.legend(fontsize=7)
    for ax in (ax1, ax2, ax3):
        ax.title.set_fontsize(9)
    return fig
