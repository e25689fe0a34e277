"""Figures of TRON: convergence, speedup against threads, time per iteration by product.  Plots take data only."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from dtlab.plotting import new_axes, new_figure

_PRODUCTS = (("t_Xw", "z = X w (function)", "tab:blue"), ("t_XTu", "X$^T$ u (gradient, diagonal)", "tab:orange"),
             ("t_Hv", "Hessian-vector products", "tab:red"), ("t_other", "other (CG vectors, Python)", "0.6"))


def _draw_convergence(data: dict, ax_gap, ax_grad) -> None:
    """The objective gap ``(f - f*) / f*`` on ``ax_gap`` and ``||g|| / ||g(0)||`` on ``ax_grad`` per Newton
    iteration, for each of dtlab's runs and LIBLINEAR's own log (``data`` as :func:`plot_convergence` takes)."""
    f_star, g0 = data["f_star"], data["grad_norm0"]
    styles = [dict(color="tab:blue", marker="o"), dict(color="tab:green", marker="s", ls="--")]
    for (label, run), style in zip(data["runs"].items(), styles):
        it = np.arange(len(run["objective"]))
        gap = np.maximum((np.asarray(run["objective"]) - f_star) / abs(f_star), 1e-17)
        ax_gap.semilogy(it, gap, label=label, **style)
        ax_grad.semilogy(it, np.asarray(run["grad_norm"]) / g0, label=label, **style)
    peer = data["liblinear"]
    if peer["grad_norm"]:
        ax_grad.semilogy(np.arange(1, len(peer["grad_norm"]) + 1), np.asarray(peer["grad_norm"]) / g0, ls="none",
                         marker="x", ms=9, color="k", label=f"LIBLINEAR {peer['version'] / 100:.2f} (its log)")
    ax_gap.set(xlabel="Newton iteration (accepted steps)", ylabel="(f - f*) / f*", title="objective gap")
    ax_grad.set(xlabel="Newton iteration (accepted steps)", ylabel="||grad f|| / ||grad f(0)||",
                title="gradient norm")


def plot_convergence(data: dict, *, title: str | None = None):
    """Two panels: relative objective gap ``(f - f*) / f*`` and ``||g|| / ||g(0)||`` per Newton iteration.

    Parameters
    ----------
    data : dict from :func:`workbench.linear.experiments.convergence`
    """
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(10.5, 4.2))
    _draw_convergence(data, ax1, ax2)
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


# ---------------------------------------------------------------- the lesson's figures (notebook 03)
def plot_tiny_tron(records: Sequence[dict], grids: Sequence[dict], *, minimiser=None, max_panels: int = 6):
    """One panel per outer TRON iteration on a 2-feature logistic problem: contour lines of f, the trust
    region (circle), the CG iterates from w, the step (clipped at the circle or not), the Newton point.

    Parameters
    ----------
    records : from :func:`workbench.linear.lesson.plain_tron`
    grids : from :func:`workbench.linear.lesson.contour_grids` (one per record: its box and f on a grid)
    minimiser : (2,) array, optional
        Drawn as a black plus (e.g. the library's solution).
    """
    shown = list(records)[:max_panels]
    cols = min(3, len(shown))
    rows = (len(shown) + cols - 1) // cols
    fig, axes = new_figure(rows, cols, figsize=(3.6 * cols, 3.5 * rows + 0.5), squeeze=False)
    angle = np.linspace(0, 2 * np.pi, 200)
    for ax, r, grid in zip(axes.ravel(), shown, grids):
        lo, hi = grid["lower"], grid["upper"]
        levels = np.quantile(grid["f"], np.linspace(0.01, 0.9, 10))
        ax.contour(grid["w1"], grid["w2"], grid["f"], levels=np.unique(levels), colors="0.65", linewidths=0.7)
        w, delta = r["w"], r["delta"]
        ax.plot(w[0] + delta * np.cos(angle), w[1] + delta * np.sin(angle), color="tab:blue", lw=1.2,
                label="trust region")
        path = np.array(r["cg_path"])
        colour = "tab:green" if r["accepted"] else "tab:red"
        ax.plot(path[:, 0], path[:, 1], "o-", color=colour, ms=4, lw=1.4, label="CG iterates")
        ax.plot(*path[-1], marker="*" if r["clipped"] else "s", ms=11, color=colour, ls="none",
                label="step, clipped at the circle" if r["clipped"] else "step, inside")
        newton = r["newton_point"]
        ax.plot([w[0], newton[0]], [w[1], newton[1]], ls=":", color="tab:purple", lw=1)
        ax.plot(*newton, marker="x", ms=8, color="tab:purple", ls="none", label="Newton point")
        if minimiser is not None:
            ax.plot(*minimiser, marker="+", ms=12, color="k", ls="none", label="minimiser")
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_aspect("equal")
        ax.tick_params(labelsize=7)
        verdict = "accepted" if r["accepted"] else "REJECTED"
        ax.set_title(f"iteration {r['iteration']}: radius {delta:.2f}, {r['hv_products']} CG step"
                     f"{'s' if r['hv_products'] > 1 else ''}\nrho = {r['ratio']:.2f}: {verdict}, radius "
                     f"{r['radius']} ({r['new_delta']:.2f})", fontsize=8)
    for ax in axes.ravel()[len(shown):]:
        ax.set_visible(False)
    legend = {}
    for ax in axes.ravel()[:len(shown)]:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, handle)
    labels, handles = list(legend), list(legend.values())
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle("TRON on two features: conjugate gradient inside the trust region (green: accepted, red: "
                 "rejected;\nrho = actual / predicted decrease of f)", fontsize=10)
    return fig


def plot_pcie(table: Sequence[dict], *, gb_per_s: float, copy_latency_s: float, measured: Sequence[dict] = (),
              title: str | None = None):
    """Bytes over PCIe per Newton iteration (left) and their time (right) against rows, by design; all
    modelled (open markers, dashed). ``measured``: CPU seconds per iteration (filled markers), dicts with
    ``rows``, ``ms``, ``label``.

    Parameters
    ----------
    table : from :func:`workbench.linear.lesson.pcie_table`
    """
    fig, (ax1, ax2) = new_figure(1, 2, figsize=(11.5, 4.4))
    colours = ["tab:red", "tab:orange", "tab:purple", "tab:green"]
    designs = list(dict.fromkeys(r["design"] for r in table))
    for design, colour in zip(designs, colours):
        mine = [r for r in table if r["design"] == design]
        x = [r["rows"] for r in mine]
        ax1.loglog(x, [r["bytes"] for r in mine], ls="--", marker="o", mfc="none", color=colour,
                   label=f"{design} (modelled)")
        ax2.loglog(x, [r["ms"] for r in mine], ls="--", marker="o", mfc="none", color=colour,
                   label=f"{design} (modelled)")
    for point, marker in zip(measured, ("s", "D", "^", "v")):
        ax2.loglog([point["rows"]], [point["ms"]], marker=marker, ms=9, color="k", ls="none",
                   label=f"{point['label']} (measured)")
    ax1.set(xlabel="rows", ylabel="bytes over PCIe per Newton iteration", title="bytes moved")
    ax2.set(xlabel="rows", ylabel="milliseconds per Newton iteration",
            title=f"PCIe time at {gb_per_s:g} GB/s + {copy_latency_s * 1e6:g} us per copy")
    for ax in (ax1, ax2):
        ax.grid(True, which="both", alpha=0.3)
    ax1.legend(fontsize=7, loc="center right")
    ax2.legend(fontsize=7, loc="lower right")
    fig.suptitle(title or "What a GPU port of TRON moves between host and device", fontsize=10)
    return fig


def plot_convergence_and_threads(result: dict, *, title: str | None = None):
    """The predict-then-run panel: objective gap and gradient norm per Newton iteration (dtlab's two solvers,
    LIBLINEAR's log), and fit time against threads (dtlab, measured) beside single-thread LIBLINEAR.

    Parameters
    ----------
    result : from :func:`workbench.linear.lesson.convergence_and_threads`
    """
    fig, (ax1, ax2, ax3) = new_figure(1, 3, figsize=(13.5, 4.0))
    _draw_convergence(result["convergence"], ax1, ax2)
    timing = result["timing"]
    mine = sorted((r["threads"], r["seconds"] * 1e3) for r in timing if r["solver"] == "tron")
    ax3.plot(*zip(*mine), marker="o", color="tab:blue", label="dtlab tron (measured, median)")
    peer_ms = timing[0]["seconds"] * 1e3
    ax3.plot([t for t, _ in mine], [peer_ms] * len(mine), marker="o", color="k", ls="-",
             label="LIBLINEAR, 1 thread (measured)")
    ax3.set_xticks([t for t, _ in mine])
    ax3.set_ylim(bottom=0)
    ax3.set(xlabel="dtlab CPU threads", ylabel="fit time (ms)", title="time against threads (-e 0.1)")
    for ax in (ax1, ax2, ax3):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title or (f"{result['n_samples']:,} rows, {result['nnz']:,} non-zeros, noise "
                           f"{result['noise']:g}"), fontsize=10)
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
