"""Figures of TRON: convergence, speedup against threads, time per iteration by product.  Plots take data only."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dtlab.plotting import new_axes, new_figure

_PRODUCTS = (("t_Xw", "z = X w (function)", "tab:blue"), ("t_XTu", "X$^T$ u (gradient, diagonal)", "tab:orange"),
             ("t_Hv", "Hessian-vector products", "tab:red"), ("t_other", "other (CG vectors, Python)", "0.6"))


def plot_convergence(data: dict, *, title: str | None = None):
    """Two panels: relative objective gap ``(f - f*) / f*`` and ``||g|| / ||g(0)||`` per Newton iteration.

    Parameters
    ----------
    data : dict from :func:`workbench.linear.experiments.convergence`
    """
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(10.5, 4.2))
    f_star, g0 = data["f_star"], data["grad_norm0"]
    styles = [dict(color="tab:blue", marker="o"), dict(color="tab:green", marker="s", ls="--")]
    for (label, run), style in zip(data["runs"].items(), styles):
        it = np.arange(len(run["objective"]))
        gap = np.maximum((np.asarray(run["objective"]) - f_star) / abs(f_star), 1e-17)
        ax1.semilogy(it, gap, label=label, **style)
        ax2.semilogy(it, np.asarray(run["grad_norm"]) / g0, label=label, **style)
    peer = data["liblinear"]
    if peer["grad_norm"]:
        ax2.semilogy(np.arange(1, len(peer["grad_norm"]) + 1), np.asarray(peer["grad_norm"]) / g0, ls="none",
                     marker="x", ms=9, color="k", label=f"LIBLINEAR {peer['version'] / 100:.2f} (its log)")
    ax1.set(xlabel="Newton iteration (accepted steps)", ylabel="(f - f*) / f*", title="objective gap")
    ax2.set(xlabel="Newton iteration (accepted steps)", ylabel="||grad f|| / ||grad f(0)||", title="gradient norm")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title or "TRON convergence")
    return fig


def plot_speedup_vs_threads(rows: Sequence[dict], *, ax=None, title: str | None = None):
    """Speedup over single-thread LIBLINEAR against CPU threads, one line per dataset and solver.

    LIBLINEAR (official) is single-threaded: its line is the constant 1.  Solid
    lines are medians, dotted lines the fastest runs (both sides), which filter out
    the moments another program held a core.  GPU and mixed runs, where present,
    are drawn as horizontal dashed lines.
    """
    fig, ax = new_axes(ax, figsize=(7.6, 4.6))
    datasets = list(dict.fromkeys(r["dataset"] for r in rows))
    colors = dict(zip(datasets, ["tab:blue", "tab:orange", "tab:green", "tab:purple", "tab:brown"]))
    max_threads = max([r["threads"] for r in rows] + [1])
    for name in datasets:
        mine = [r for r in rows if r["dataset"] == name and r["backend"] == "cpu" and r["solver"] != "liblinear"]
        for solver in dict.fromkeys(r["solver"] for r in mine):
            pts = sorted((r["threads"], r["speedup"]) for r in mine if r["solver"] == solver)
            ax.plot(*zip(*pts), marker="o", color=colors[name], label=f"{name}: dtlab CPU ({solver}), medians")
            if all("time_ratio_min" in r for r in mine):
                fast = sorted((r["threads"], 1.0 / r["time_ratio_min"]) for r in mine if r["solver"] == solver)
                ax.plot(*zip(*fast), marker="o", mfc="none", ls=":", color=colors[name],
                        label=f"{name}: fastest runs")
        for r in (r for r in rows if r["dataset"] == name and r["backend"] == "cuda"):
            ax.axhline(r["speedup"], color=colors[name], ls="--" if r["placement"] == "device" else ":",
                       label=f"{name}: dtlab {'GPU' if r['placement'] == 'device' else 'MIX'}")
    ax.axhline(1.0, color="k", lw=1, label="LIBLINEAR (single-threaded)")
    ax.set_xticks(range(1, max_threads + 1))
    ax.set(xlabel="CPU threads", ylabel="speedup over single-thread LIBLINEAR",
           title=title or "TRON -s 0 -c 4 -e 0.1 against LIBLINEAR\n(the paper's Fig. 1 analog)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    return fig


def plot_time_split(rows: Sequence[dict], *, ax=None, title: str | None = None):
    """Seconds per Newton iteration, stacked by the paper's three matrix-vector products, per configuration."""
    fig, ax = new_axes(ax, figsize=(7.6, 4.4))
    mine = [r for r in rows if r["solver"] != "liblinear"]
    labels = [r["label"].replace("dtlab ", "") for r in mine]
    bottom = np.zeros(len(mine))
    for key, name, color in _PRODUCTS:
        per_iter = np.array([r[key] / max(r["n_iter"], 1) for r in mine])
        ax.bar(labels, per_iter, bottom=bottom, color=color, label=name)
        bottom += per_iter
    peer = [r for r in rows if r["solver"] == "liblinear"]
    for r in peer:
        ax.axhline(r["seconds"] / max(r["n_iter"], 1), color="k", ls="--", lw=1,
                   label="LIBLINEAR, whole fit / iterations")
    ax.set(ylabel="seconds per Newton iteration",
           title=title or "Where the time goes per iteration (synthetic sparse data)")
    ax.tick_params(axis="x", labelrotation=20, labelsize=8)
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def plot_comparison(rows: Sequence[dict], *, ax=None, title: str | None = None):
    """Training time of each contender (bars), with its objective in the label: the widget's view."""
    fig, ax = new_axes(ax, figsize=(6.4, 3.4))
    labels = [r["label"] for r in rows]
    ax.barh(labels, [r["seconds"] for r in rows], color=["0.4"] + ["tab:blue"] * (len(rows) - 1))
    for i, r in enumerate(rows):
        ax.text(r["seconds"], i, f"  {r['seconds'] * 1e3:.0f} ms, f = {r['objective']:.6g}", va="center", fontsize=8)
    first = rows[0]
    ax.set(xlabel="training time (s)", title=title or (f"{first.get('n_samples', 0):,} rows, "
                                                       f"{first.get('nnz', 0):,} non-zeros"))
    ax.set_xlim(0, max(r["seconds"] for r in rows) * 1.8)
    return fig


# ---------------------------------------------------------------- captions
def convergence_captions(results: dict) -> dict[str, str]:
    """Captions of the convergence figures, from the ``linear_convergence`` producer's results."""
    out = {}
    for loss, name in (("logistic", "logistic regression (-s 0)"), ("squared_hinge", "L2-loss SVM (-s 2)")):
        r = results.get(loss)
        if not r or "n_iter" not in r:
            continue
        ours = ", ".join(f"{label} {n}" for label, n in r["n_iter"].items())
        out[f"linear_convergence_{loss}"] = (
            f"{name} on {r['dataset']}, C = {r['C']:g}, eps = {r['eps']:g}: objective gap to f* = "
            f"{r['f_star']:,.3f} and gradient norm per Newton iteration; LIBLINEAR took {r['liblinear_n_iter']} "
            f"iterations, dtlab: {ours}.")
    return out


def speedup_captions(results: dict) -> dict[str, str]:
    """Captions of the threads figure and the time split, from the ``linear_speedup`` producer's results."""
    rows = results.get("rows", [])
    big = [r for r in rows if r.get("dataset") == "synthetic" and r.get("backend") == "cpu"]
    best = max(big, key=lambda r: r.get("speedup", 0.0), default=None)
    where = "no GPU here (GPU and MIX curves pending)" if not results.get("gpu_present") else "GPU present"
    threads_caption = ("Speedup over single-thread LIBLINEAR against threads on the synthetic set (the paper's "
                       f"Fig. 1 analogue), {results.get('cores', '?')} cores, {where}")
    if best:
        threads_caption += (f"; best: {best['speedup']:.2g}x with {best['threads']} thread(s) "
                            f"({best.get('solver', '')}).")
    return {"linear_speedup_threads": threads_caption,
            "linear_time_split": "Time per Newton iteration on the synthetic set split by the paper's three "
                                 "matrix-vector products (X w, X^T u, and the Hessian-vector products of CG)."}


def benchmark_captions(results: dict) -> dict[str, str]:
    """One line per data set and loss: dtlab's speed against LIBLINEAR per core and against multi-core LIBLINEAR
    for the whole machine (median and spread over the alternating runs), objectives side by side."""
    from workbench.text import speedup_spread, threads

    out = {}
    comps = results.get("comparisons", [])
    for key, entry in sorted(results.items()):
        if not (key.startswith("linear_") and isinstance(entry, dict) and "liblinear_seconds" in entry):
            continue
        parts = []
        for solver in ("newton", "tron"):
            mine = [c for c in comps if c.get("solver") == solver and c.get("case", "").startswith(
                f"{key.removeprefix('linear_').replace('_', ' ')},")]
            if not mine or solver not in entry:
                continue
            words = ", ".join(f"{speedup_spread(c)} {c['mode'].replace('_', ' ')} against {c['peer']} "
                              f"(dtlab {threads(c['threads']['dtlab'])}, LIBLINEAR {threads(c['threads']['peer'])})"
                              for c in mine)
            parts.append(f"{solver}: {words}, objective {entry[solver]['objective_rel_diff']:+.1e} relative, "
                         f"{entry[solver]['n_iter']} iterations")
        out[key] = (f"{entry.get('dataset', key)} {entry.get('loss', '')}, C = {entry.get('C', results.get('C')):g}, "
                    f"eps = {entry.get('eps', results.get('eps')):g}, {entry['n_samples']:,} rows, "
                    f"{entry['nnz']:,} non-zeros: LIBLINEAR {entry['liblinear_seconds']:.3g} s, "
                    f"{entry['liblinear_n_iter']} iterations; " + "; ".join(parts) + ".")
    missed = [k for k, g in results.get("goals", {}).items() if not g["met"]]
    if results.get("goals"):
        out["linear_goals"] = ("Goals (" + results.get("goal", "") + ") in this run (over every run on this code: "
                               "Goals above): " + (
            "met in every round." if not missed else
            "missed for " + "; ".join(f"{k} (worst round {results['goals'][k]['worst_time_ratio']:.2f}x "
                                      f"LIBLINEAR's time)" for k in missed) + "."))
    if results.get("gpu_goal"):
        out["linear_gpu"] = f"GPU goal (>= 9x single-thread LIBLINEAR on an H200): {results['gpu_goal']}."
    return out
