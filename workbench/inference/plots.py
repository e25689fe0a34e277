"""Figures of tree inference: the patent's OR/AND table, time against shape and threads, decision vs combining,
the benchmark.  Plots take data only; each returns a figure pyplot does not track (shown or saved once)."""

from __future__ import annotations

from typing import Any

import numpy as np

from dtlab.plotting import new_figure

METHOD_STYLE = {"traversal": dict(color="tab:blue", marker="o"), "bitmask": dict(color="tab:red", marker="s"),
                "quickscorer": dict(color="tab:green", marker="^")}


def _patent_rows(tables: dict, step: int | None, names: dict | None = None) -> tuple[list, list, list]:
    """The rows of :func:`plot_patent_table` up to ``step``: identifiers, labels and kinds (0 a selection or
    base, 1 a level's OR, 2 the AND)."""
    levels = tables["levels"] if step is None else tables["levels"][:step]
    names = names or {}
    rows, labels, kinds = [], [], []
    for lv, table in enumerate(levels):
        for node, ident in table["selected"]:
            rows.append(ident)
            labels.append(f"level {lv}: node {names.get(node, node)} selects")
            kinds.append(0)
        if table["base"].replace("0", "").strip():
            rows.append(table["base"])
            labels.append(f"level {lv}: leaves ended above")
            kinds.append(0)
        rows.append(table["or"])
        labels.append(f"level {lv}: OR")
        kinds.append(1)
    if step is None or step >= len(tables["levels"]):
        rows.append(tables["and"])
        labels.append(f"AND of the levels -> class {tables['class']}")
        kinds.append(2)
    return rows, labels, kinds


def plot_patent_table(tables: dict, step: int | None = None, ax: Any = None, names: dict | None = None):
    """The identifiers of the patent's example, one row per selection, per-level OR and the final AND.

    ``step`` (0 .. n_levels) shows the levels up to ``step`` (None: all and the AND) -- the widget's stepping.
    ``ax``: draw into these axes (default: a new figure), keeping the height of the full table, so that a step
    adds rows without stretching them; ``names``: {node: name} for the labels (default: the node numbers).
    Returns the figure.
    """
    rows, labels, kinds = _patent_rows(tables, step, names)
    n = tables["n_leaves"]
    if ax is None:
        fig, ax = new_figure(figsize=(9, 0.32 * max(len(rows), 4) + 1.2))
    else:
        fig = ax.figure
    if not rows:
        ax.text(0.5, 0.5, "no level evaluated yet: choose a level", ha="center", va="center")
        ax.set_axis_off()
        return fig
    full = len(_patent_rows(tables, None)[0])
    bits = np.array([[c == "1" for c in r.replace(" ", "")] for r in rows], float)
    shade = np.where(bits > 0, 1.0, 0.0) * (1 + np.array(kinds)[:, None])
    ax.imshow(shade, cmap="Blues", vmin=0, vmax=3.5, aspect="auto")
    ax.set_ylim(max(full, len(rows)) - 0.5, -0.5)  # rows of one height at every step
    for i, r in enumerate(rows):
        for j, c in enumerate(r.replace(" ", "")):
            ax.text(j, i, c, ha="center", va="center", fontsize=8, weight="bold" if kinds[i] else "normal")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.set_xticks(range(n), [str(n - 1 - k) for k in range(n)], fontsize=7)
    ax.set_xlabel("leaf (class); leftmost leaf first, as the patent prints identifiers")
    ax.set_title("JP5863426B2 Fig. 1: OR within each level, AND across levels")
    return fig


def plot_patent_tree(picture: dict, step: int, ax: Any = None):
    """The Fig. 1 tree (:func:`workbench.inference.lesson.patent_picture`) after the levels ``0 .. step-1``:
    every decision node of those levels with its selected child (thick blue: all of them decide, in parallel),
    the walk's path among them (orange: the 4 a traversal makes, one after another), and the leaves whose bit
    survives the AND of those levels' ORs (blue squares; the others grey).  Returns the figure."""
    if ax is None:
        fig, ax = new_figure(figsize=(9, 3.4))
    else:
        fig = ax.figure
    place = {n["node"]: (n["x"], -n["level"]) for n in picture["nodes"]}
    level_of = {n["node"]: n["level"] for n in picture["nodes"]}
    on_path = set(zip(picture["path"], picture["path"][1:]))
    for node, pair in picture["children"].items():
        for child in pair:
            (x0, y0), (x1, y1) = place[node], place[child]
            chosen = level_of[node] < step and picture["selected"][node] == child
            ax.plot([x0, x1], [y0, y1], color="tab:orange" if chosen and (node, child) in on_path else
                    ("tab:blue" if chosen else "0.8"), lw=3 if chosen else 1, zorder=1)
    alive = set(picture["candidates"][min(step, len(picture["candidates"]) - 1)])
    inner = [n for n in picture["nodes"] if not n["leaf"]]
    leaves = [n for n in picture["nodes"] if n["leaf"]]
    ax.scatter([n["x"] for n in inner], [-n["level"] for n in inner], s=110, facecolor="white",
               edgecolor="0.3", zorder=2)
    ax.scatter([n["x"] for n in leaves], [-n["level"] for n in leaves], s=110, marker="s", zorder=2,
               color=["tab:blue" if k in alive else "0.85" for k in range(len(leaves))])
    for n in picture["nodes"]:
        ax.text(n["x"], -n["level"] + 0.2, str(n["numeral"]), ha="center", va="bottom", fontsize=6)
        if n["leaf"]:
            ax.text(n["x"], -n["level"] - 0.22, f"c{n['class']}", ha="center", va="top", fontsize=7)
    words = "before any level" if step == 0 else f"after the AND of levels 0..{min(step, 4) - 1}"
    ax.set_title(f"Fig. 1, {words}: {len(alive)} of {len(leaves)} leaves still possible\n"
                 "thick: each decision node's selection, orange: the walk's path", fontsize=9)
    ax.set_yticks([-lv for lv in range(5)], [f"level {lv}" if lv < 4 else "leaves" for lv in range(5)],
                  fontsize=8)
    ax.set_xticks([])
    ax.set_ylim(-4.7, 0.6)
    for side in ("top", "right", "bottom"):
        ax.spines[side].set_visible(False)
    return fig


def plot_patent_step(tables: dict, picture: dict, step: int):
    """The stepping panel's figure: :func:`plot_patent_tree` above :func:`plot_patent_table` at ``step``."""
    fig, (top, bottom) = new_figure(2, 1, figsize=(9, 10.4), gridspec_kw={"height_ratios": [3.4, 7.0]})
    plot_patent_tree(picture, step, ax=top)
    plot_patent_table(tables, step, ax=bottom, names={n["node"]: n["numeral"] for n in picture["nodes"]})
    return fig


def plot_depth_and_threads(result: dict, recorded: dict | None = None):
    """The predict-then-run panel (:func:`workbench.inference.lesson.depth_and_threads`): left, ns per tree
    and row against depth, one line per method (measured, filled); right, the speedup against threads on the
    deepest forest, measured (filled, solid) and modelled beyond the cores (open, dashed, "modelled"), and the
    static figure's speedups (:func:`workbench.inference.lesson.recorded_speedups`: grey diamonds), if given."""
    fig, (left, right) = new_figure(1, 2, figsize=(11, 4.3))
    for m in dict.fromkeys(r["method"] for r in result["depth_points"]):
        mine = [r for r in result["depth_points"] if r["method"] == m]
        left.semilogy([r["depth"] for r in mine], [r["ns_per_tree_row"] for r in mine], label=f"{m} (measured)",
                      **METHOD_STYLE.get(m, {}))
    if result.get("bitmask_behind_from") is not None:
        left.axvline(result["bitmask_behind_from"] - 0.5, color="0.5", ls=":", lw=1,
                     label=f"bitmask slower from depth {result['bitmask_behind_from']}")
    left.set(xlabel="tree depth D (complete random trees)", ylabel="ns per tree and row",
             title=f"{result['rows']:,} rows, {result['missing']:.0%} missing, {result['n_trees']} trees, "
                   f"{result['depth_threads']} thread")
    left.set_xticks(sorted({r["depth"] for r in result["depth_points"]}))
    most = max(r["threads"] for r in result["thread_points"])
    right.plot([1, most], [1, most], color="0.6", ls=":", lw=1, label="ideal (speedup = threads)")
    for m in dict.fromkeys(r["method"] for r in result["thread_points"]):
        style = METHOD_STYLE.get(m, {})
        measured = [r for r in result["thread_points"] if r["method"] == m and r["source"] == "measured"]
        right.plot([r["threads"] for r in measured], [r["speedup"] for r in measured], label=f"{m} (measured)",
                   **style)
        modelled = [r for r in result["thread_points"] if r["method"] == m and r["source"] == "modelled"]
        if modelled:  # joined to the last measured point, dashed, open markers
            tail = measured[-1:] + modelled
            right.plot([r["threads"] for r in tail], [r["speedup"] for r in tail], ls="--", mfc="white",
                       label=f"{m} modelled (Amdahl fit)", **style)
    if recorded:
        for k, (m, per) in enumerate(recorded["speedups"].items()):
            right.scatter(list(per), list(per.values()), marker="D", s=36, color="0.55", zorder=3,
                          edgecolor=METHOD_STYLE.get(m, {}).get("color", "k"),
                          label=(f"recorded: static figure, depth {recorded['depth']}, {recorded['n_trees']} trees"
                                 + (f", {recorded['rows']:,} rows" if recorded.get("rows") else "")) if k == 0
                          else None)
    if result.get("serial_kernel"):
        right.text(0.97, 0.3, f"rows x trees = {result['rows'] * result['n_trees']:,} < "
                   f"{result['parallel_min_tree_rows']:,}:\n"
                   "the library runs the serial kernel", transform=right.transAxes, ha="right", va="center",
                   fontsize=8, bbox={"facecolor": "white", "edgecolor": "0.7"})
    right.set(xlabel="threads", ylabel="speedup over 1 thread",
              title=f"depth {result['max_depth']}: measured on 1-{result['cores']} core(s), beyond modelled")
    right.set_xticks(range(1, most + 1))
    for ax in (left, right):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7)
    return fig


def plot_time_vs_depth(rows: list[dict]):
    """Nanoseconds per tree-row against depth and against nodes per tree, one line per method."""
    fig, (a1, a2) = new_figure(1, 2, figsize=(10, 4))
    for m in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == m]
        y = [r["ns_per_tree_row"] for r in mine]
        a1.semilogy([r["depth"] for r in mine], y, label=m, **METHOD_STYLE.get(m, {}))
        a2.loglog([r["nodes_per_tree"] for r in mine], y, label=m, **METHOD_STYLE.get(m, {}))
    threads = rows[0]["threads"] if rows else 1
    a1.set(xlabel="tree depth (complete random trees)", ylabel="ns per tree and row",
           title=f"time per tree-row, {threads} thread(s)")
    a2.set(xlabel="nodes per tree", ylabel="ns per tree and row", title="against node count")
    for ax in (a1, a2):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    return fig


def plot_threads(rows: list[dict]):
    """Tree-rows per second against numba threads, one line per method."""
    fig, ax = new_figure(figsize=(6.4, 4.2))
    for m in dict.fromkeys(r["method"] for r in rows):
        mine = [r for r in rows if r["method"] == m]
        ax.plot([r["threads"] for r in mine], [r["tree_rows_per_second"] / 1e6 for r in mine], label=m,
                **METHOD_STYLE.get(m, {}))
    ax.set(xlabel="threads", ylabel="million tree-rows / s",
           title=f"throughput against threads (depth {rows[0]['depth'] if rows else '?'})")
    ax.set_xticks(sorted({r["threads"] for r in rows}))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def plot_phases(rows: list[dict]):
    """Decision and combining nanoseconds per row, stacked, per thread assignment and depth."""
    fig, ax = new_figure(figsize=(10, 4.6))
    labels = [f"depth {r['depth']}\n{r['assignment']}\n{r['n_tasks']} tasks" for r in rows]
    x = np.arange(len(rows))
    d = np.array([r["decide_ns_per_row"] for r in rows])
    c = np.array([r["combine_ns_per_row"] for r in rows])
    ax.bar(x, d, label="decision (T_D, parallel over tasks)", color="tab:blue")
    ax.bar(x, c, bottom=d, label="combining (T_T: OR per level, AND)", color="tab:orange")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylabel("ns per row (one tree)")
    ax.set_title(f"the patent's trade-off measured on the CPU ({rows[0]['threads'] if rows else '?'} threads)")
    ax.legend(fontsize=8)
    ax.grid(True, axis="y", alpha=0.3)
    return fig


def _contender_color(name: str, k: int) -> Any:
    method = name.removeprefix("dtlab ")
    if method == "auto":  # Forest.predict(method="auto"): whichever method it chose
        return "tab:purple"
    return METHOD_STYLE[method]["color"] if method in METHOD_STYLE else str(0.2 + 0.15 * (k % 5))


def plot_benchmark(result: dict):
    """Million tree-rows per second of every contender (medians), per case, per core and whole machine."""
    cases = list(result["cases"])
    modes = ("per_core", "whole_machine")
    fig, axes = new_figure(1, 2, figsize=(12, 4.8), sharey=True)
    names = list(dict.fromkeys(n for c in cases for m in modes
                               for n in result["cases"][c]["modes"].get(m, {}).get("tree_rows_per_second", {})))
    width = 0.8 / max(len(names), 1)
    for ax, mode in zip(axes, modes):
        for k, name in enumerate(names):
            vals = [result["cases"][c]["modes"].get(mode, {}).get("tree_rows_per_second", {}).get(name, np.nan) / 1e6
                    for c in cases]
            ax.bar(np.arange(len(cases)) + (k - (len(names) - 1) / 2) * width, vals, width, label=name,
                   color=_contender_color(name, k), hatch="" if name.startswith("dtlab") else "//",
                   edgecolor="white")
        threads = next((result["cases"][c]["modes"][mode]["threads"] for c in cases
                        if mode in result["cases"][c]["modes"]), "?")
        ax.set_xticks(range(len(cases)), [c.replace(" depth", "\ndepth").replace(" 1023", "\n1023") for c in cases],
                      fontsize=8)
        ax.set_yscale("log")
        ax.set_title(f"{mode.replace('_', ' ')} ({threads} thread(s) each)")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].set_ylabel("million tree-rows / s (Forest.predict and each peer's own call)")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"{result['n_rows']:,} rows x {result['n_features']} features, medians of alternating runs")
    return fig


def plot_latency(result: dict):
    """p50 (solid) and p99 (dotted) microseconds per call against rows per call, per contender and mode."""
    cases = list(result["cases"])
    modes = ("per_core", "whole_machine")
    fig, axes = new_figure(len(cases), 2, figsize=(11, 3.6 * len(cases)), squeeze=False)
    for row, case in zip(axes, cases):
        batches = result["cases"][case]["batches"]
        sizes = sorted(int(b) for b in batches)  # numerically: results.json stores the keys sorted as text
        for ax, mode in zip(row, modes):
            names = list(batches[str(sizes[0])][mode])
            for k, name in enumerate(names):
                color = _contender_color(name, k)
                marker = "osD^v"[k % 5]  # the peers share greys: their markers tell them apart
                for q, style in (("p50", "-"), ("p99", ":")):
                    ax.loglog(sizes, [batches[str(b)][mode][name][q] * 1e6 for b in sizes], style, marker=marker,
                              color=color, label=f"{name} {q}")
            ax.set(xlabel="rows per call", ylabel="microseconds per call",
                   title=f"{case}, {mode.replace('_', ' ')}")
            ax.grid(True, which="both", alpha=0.3)
    for row in axes:  # each case has its own peers (XGBoost's on its model, LightGBM's on its own)
        row[0].legend(fontsize=6, ncol=2)
    return fig


def figure_captions(results: dict) -> dict[str, str]:
    """README captions of the figure producers' figures."""
    caps: dict[str, Any] = {}
    if "class" in results:
        caps["inference_patent_example"] = (f"The patent's example: AND of the per-level ORs = {results['and']}, "
                                            f"class {results['class']}.")
    if "time_vs_depth" in results:
        caps["inference_time_vs_depth"] = "Time per tree-row against depth and node count for each CPU method."
        caps["inference_threads"] = "Throughput against numba threads."
        caps["inference_phases"] = "Decision vs combining time of the patent's three thread assignments."
    return caps


def _case_words(case: dict) -> str:
    depth = f"depth <= {case['max_depth']}" if case.get("max_depth") is not None else ""
    return f"{case['n_trees']} trees, {depth}"


def benchmark_captions(results: dict) -> dict[str, str]:
    """README captions of the three inference benchmarks, every number read from the run's results."""
    from workbench.text import speedup_spread

    if "comparisons" not in results or not results.get("cases"):
        return {}
    cases = results["cases"]
    first = next(iter(cases.values()))
    if "modes" not in first and "batches" not in first:
        return {}  # results of a run before Forest.predict was timed whole: regenerate with `make bench`
    latency = "batches" in first
    lines = []
    for name, case in cases.items():
        mine = [c for c in results["comparisons"] if c["case"] == name]
        compiled = ", ".join(f"{p.split()[0]} {s:.0f} s" for p, s in case.get("compile_seconds", {}).items())
        if latency:
            words = []
            for c in mine:
                if c["batch_rows"] in (1, 64):
                    words.append(f"{c['batch_rows']} row(s) {c['statistic']} vs {c['peer'].split()[0]} "
                                 f"{c['mode'].replace('_', ' ')}: {speedup_spread(c)}")
            lines.append(f"{name} ({_case_words(case)}): " + "; ".join(words))
        else:
            words = [f"vs {c['peer']} {c['mode'].replace('_', ' ')}: {speedup_spread(c)} ("
                     + (f"auto chose {c['auto_choice']}" if "auto_choice" in c else c["method"]) + ")" for c in mine]
            lines.append(f"{name} ({_case_words(case)}, {case['n_rows']:,} rows): " + "; ".join(words))
        if compiled:
            lines[-1] += f"; compile time {compiled} (dtlab: none)"
        if case.get("skipped"):
            lines[-1] += "; not run: " + "; ".join(f"{p} ({why})" for p, why in case["skipped"].items())
    from workbench.inference.bench import GOAL

    verdicts = GOAL.judge(results)
    verdict = "; ".join(f"in this run, goal rule '{rule.name}' ({rule.statement}): "
                        + {True: "met", False: "missed", None: "not judged"}[verdicts[rule.name]["met"]]
                        + f" ({verdicts[rule.name]['detail']})" for rule in GOAL.rules)
    what = "latency per call (p50, p99)" if latency else "throughput"
    key = results.get("figure", "inference_latency" if latency else "inference_benchmark")
    auto = any("auto_choice" in c for c in results["comparisons"])
    dtlab = ("Forest.predict(method='auto') over each peer, its choice made by one untimed call before the timed "
             "rounds" if auto else "dtlab's best CPU method (the lowest median of the timed rounds) over each peer")
    return {key: (f"Inference {what}, speedup of {dtlab} (median, and the range over alternating runs): "
                  + ". ".join(lines) + f". {verdict}; load average {results.get('load_average_before')}.")}
