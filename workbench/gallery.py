"""The README's results section, generated from ``figures/results.json``.

``python -m workbench figures | bench`` rewrite the part of ``README.md`` between
:data:`BEGIN` and :data:`END` (``python -m workbench readme`` does it alone): every
figure with its caption, the benchmarks without a figure, each goal's verdict
over every run recorded on the latest code (:func:`goal_lines`), and a table of
every speed ratio with its threads.  Runs are recorded on committed code only;
the few older runs on uncommitted changes are counted apart in each goal's
earlier runs.  Captions come from each producer's ``captions(results)``
function (registered with it, written in ``workbench/<slug>/plots.py``), so
every number in them is read from the results, not typed in.  Regenerating
from the committed results gives the committed section (a test checks it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from workbench.catalog import TECHNIQUES, TOUR, load_all
from workbench.goals import best_round, verdict_on_code, worst_round
from workbench.history import runs_on_latest_code
from workbench.registry import BENCHMARKS, FIGURES, Producer
from workbench.text import MODE_WORDS, speedup_spread

BEGIN = "<!-- results:begin -->"
END = "<!-- results:end -->"


def _producers() -> list[tuple[str, Producer]]:
    """Figures then benchmarks, each in catalog order (tour, then TECHNIQUES), whatever the import order was."""
    load_all()
    order = {slug: i for i, slug in enumerate((TOUR, *TECHNIQUES))}
    # by technique, then by name: the same order whatever module a process happened to import first
    rank = lambda p: (order.get(p.technique, len(order)), p.name)  # noqa: E731
    return ([("figures", p) for p in sorted(FIGURES.values(), key=rank)]
            + [("benchmarks", p) for p in sorted(BENCHMARKS.values(), key=rank)])


def _run_line(results: dict[str, Any]) -> str:
    parts = []
    for section, run in sorted(results.get("runs", {}).items()):
        machine = run.get("machine", {})
        load = run.get("load_average", {})
        load_text = (f", load average {load['start']}-{load['end']} from other processes"
                     if load.get("start") is not None else "")
        parts.append(f"`{section}`: scale {run.get('scale')}, {machine.get('cpu_workers', '?')} CPU cores, "
                     f"{machine.get('numba_threads', '?')} numba threads, "
                     f"{'CUDA' if machine.get('cuda_available') else 'no GPU'}{load_text}, commit {run.get('commit')}")
    return "; ".join(parts)


#: Facts of a comparison entry that tell its case apart, and how they read.
_CASE = {"case": str, "dataset": str, "batch_rows": lambda v: f"{v} rows per call", "statistic": str,
         "max_depth": lambda v: f"max_depth {'unlimited' if v is None else v}", "n_trees": lambda v: f"{v} trees",
         "n_samples": lambda v: f"{v:,} rows", "n_rows": lambda v: f"{v:,} rows"}


def _code(code: str | None) -> str:
    return "unknown" if not code else code[:7]


def _spread_words(spreads: list[dict[str, Any]]) -> str:
    """Each contender's median and [min-max] seconds; per peer, the lowest and highest round of its comparisons."""
    parts = []
    for s in spreads:
        if s.get("seconds"):
            sec = sorted(s["seconds"])
            parts.append(f"{s['contender']} {sec[len(sec) // 2]:.3g} s [{sec[0]:.3g}-{sec[-1]:.3g}]")
    peers: dict[str, list[float]] = {}
    for c in spreads:
        if "speedup" in c:
            lo, hi, n = peers.get(c["peer"], [float("inf"), 0.0, 0])
            peers[c["peer"]] = [min(lo, worst_round(c)), max(hi, best_round(c)), n + 1]
    parts += [f"vs {peer} {lo:.3g}-{hi:.3g}x over {n} comparison(s)" for peer, (lo, hi, n) in peers.items()]
    return "; ".join(parts) or "no spreads recorded"


def _run_words(run: dict[str, Any], rules: list[str]) -> str:
    date = (run.get("date") or "?")[:16].replace("T", " ")
    load = run.get("load_average") or {}
    machine = run.get("machine") or {}
    facts = [f"commit {run.get('commit')}" + (" with uncommitted changes" if run.get("uncommitted_changes") else "")]
    if machine:
        gpu = "CUDA" if machine.get("cuda_available") else "no GPU"
        facts.append(f"{machine.get('cpu_workers', '?')} cores, {gpu}")
    if load.get("start") is not None:
        facts.append(f"load {load['start']}-{load.get('end')}")
    verdict = run.get("verdict") or {}
    judged = "; ".join(f"*{r}* " + {True: "met", False: "**missed**", None: "not judged"}[verdict[r]["met"]]
                       + f" ({verdict[r]['detail']})" for r in rules if r in verdict)
    return f"{date} UTC ({', '.join(facts)}): {_spread_words(run.get('spreads', []))}" + (
        f" -- {judged}" if judged else "")


def goal_lines(name: str, producer: Producer, entry: dict[str, Any]) -> list[str]:
    """The goal of one entry: its wording, each rule's verdict over the runs on the latest code, those runs,
    the earlier codes in brief, and the wording's history."""
    goal, history = getattr(producer, "goal", None), entry.get("history", [])
    latest = runs_on_latest_code(history)
    if goal is None or not latest:
        return []
    rules = [r.name for r in goal.rules]
    commits = ", ".join(dict.fromkeys(str(r.get("commit")) for r in latest))
    out = [f"- **{name}**: {goal.statement}.",
           f"  - on its latest code `{_code(latest[-1].get('code'))}` (commits {commits}), {len(latest)} run(s):"]
    for rule in goal.rules:
        v = verdict_on_code(latest, rule.name)
        word = {True: "**met**", False: "**missed**", None: "not judged"}[v["met"]]
        counts = f"met in {v['met_runs']} of {v['runs']} run(s)" + (
            f", {v['unjudged']} not judged" if v["unjudged"] else "")
        out.append(f"    - *{rule.name}* ({rule.statement}): {word} on this code ({counts})")
    out += [f"    - run {_run_words(run, rules)}" for run in latest]
    earlier = [h for h in history if h not in latest]
    if earlier:
        codes = {h["code"] for h in earlier if h.get("code")}
        uncommitted = sum(bool(h.get("uncommitted_changes")) for h in earlier)
        unknown = sum(not h.get("code") and not h.get("uncommitted_changes") for h in earlier)  # no commit recorded
        counts = []
        for r in rules:
            v = verdict_on_code(earlier, r)
            counts.append(f"*{r}* met in {v['met_runs']}, missed in {v['missed_runs']}"
                          + (f", not judged in {v['unjudged']}" if v["unjudged"] else ""))
        out.append(f"  - earlier: {len(earlier)} run(s) on {len(codes)} other code(s)"
                   + (f", {unknown} of unknown code (no commit recorded)" if unknown else "")
                   + (f", {uncommitted} on uncommitted changes (code in no commit, recorded before 05ab4de)"
                      if uncommitted else "") + ": " + "; ".join(counts))
    if goal.history:
        out.append("  - the goal's wording: " + "; ".join(f"{d}: \"{w}\" ({why})" for d, w, why in goal.history))
    return out


def _speed_rows(name: str, comparisons: list[dict[str, Any]]) -> list[str]:
    rows = []
    for e in comparisons:
        t = e["threads"]
        case = ", ".join(fmt(e[key]) for key, fmt in _CASE.items() if key in e)
        rows.append(f"| {name} | {e['peer']} | {case} | {MODE_WORDS[e['mode']]} | {t['dtlab']} / {t['peer']} | "
                    f"{speedup_spread(e)} | {e.get('peer_note', '')} |")
    return rows


def render(results: dict[str, Any], figures_prefix: str = "figures") -> str:
    """Markdown of the figures, captions and speed ratios recorded in ``results`` (one results.json)."""
    figure_rows, text_rows, speed_rows, goal_rows = [], [], [], []
    for section, producer in _producers():
        entry = results.get(section, {}).get(producer.name)
        if not entry:
            continue
        goal_rows += goal_lines(producer.name, producer, entry)
        if entry.get("status") != "ok":
            continue
        res = entry["results"]
        try:
            captions = producer.captions(res) if producer.captions else {}
        except KeyError as missing:  # recorded by an older version of the producer: say so, never guess
            run = entry.get("run", {})
            captions = {}
            text_rows.append(f"- **{producer.name}**: recorded by an older version of its producer ("
                             f"{run.get('commit', '?')}, {run.get('date', '?')[:10]}: its results lack {missing}); "
                             f"its figures keep their description until `make figures` / `make bench` measures it "
                             f"again.")
        stems = [Path(f).with_suffix("").as_posix() for f in entry.get("figures", []) if f.endswith(".png")]
        for stem in stems:
            caption = captions.get(Path(stem).name, producer.description)
            figure_rows.append(f"| ![{Path(stem).name}]({figures_prefix}/{stem}.png) | {caption} |")
        for key, caption in captions.items():
            if key not in {Path(s).name for s in stems}:
                text_rows.append(f"- **{key}**: {caption}")
        speed_rows += _speed_rows(producer.name,
                                  res.get("comparisons", []) if isinstance(res, dict) else [])
    provenance = {f"{name} ({entry['run']['commit']}, {entry['run']['date'][:10]})"
                  for kind in ("figures", "benchmarks") for name, entry in results.get(kind, {}).items()
                  if "run" in entry}
    several = len({p.split(" (")[1] for p in provenance}) > 1
    # with several runs the machine line is the latest run's of each section, not that of every entry
    out = [f"{'Latest run of each section' if several else 'Measured by'}: {_run_line(results)}."]
    if several:
        out.append(f"Entries come from several runs (commit, date): {', '.join(sorted(provenance))}.")
    if goal_rows:
        out += ["", "Goals: a goal is met on a code (the git tree of `dtlab/` at the measured commit; commits that "
                    "change nothing in `dtlab/` share it) only when every run recorded on that code meets it, so a "
                    "rerun never replaces a miss. Per benchmark with a goal: each rule's verdict over the runs on its "
                    "latest code, each of those runs (date, spreads: seconds as median [min-max], speedups as the "
                    "lowest-highest round per peer) with its own verdict, then the earlier runs in brief.",
                "", *goal_rows]
    if figure_rows:
        out += ["", "| figure | what it shows (numbers read from results.json) |", "|---|---|", *figure_rows]
    if text_rows:
        out += ["", *text_rows]
    if speed_rows:
        out += ["", "Speedup = peer seconds / dtlab seconds (above 1: dtlab is faster), medians of several runs. "
                    "Per core: one thread on each side. Whole machine: every core on each side where the peer "
                    "can use them; the note says why where it cannot.",
                "", "| benchmark | peer | case | setting | threads (dtlab / peer) | speedup | note |",
                "|---|---|---|---|---|---|---|", *speed_rows]
    return "\n".join(out)


def section(figures_dir: Path = Path("figures"), prefix: str = "figures") -> str:
    """The generated section (markers included) from ``figures_dir/results.json`` and ``figures_dir/paper/``.

    ``prefix`` is the figures folder as the README links it.
    """
    figures_dir = Path(figures_dir)
    parts = [BEGIN, f"<!-- generated from {prefix}/results.json by `python -m workbench readme` (run by `make figures` "
                    "and `make bench`); edit the captions in workbench/<slug>/plots.py, not this text -->", ""]
    parts.append(render(json.loads((figures_dir / "results.json").read_text()), prefix))
    paper = figures_dir / "paper" / "results.json"
    if paper.exists():
        parts += ["", f"### At paper scale (`{prefix}/paper/`)", "", render(json.loads(paper.read_text()),
                                                                             f"{prefix}/paper")]
    parts.append(END)
    return "\n".join(parts)


def update_readme(readme: Path = Path("README.md"), figures_dir: Path = Path("figures")) -> bool:
    """Replace the README's section between the markers; returns whether the file changed."""
    readme = Path(readme)
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise ValueError(f"{readme} has no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    prefix = Path(os.path.relpath(Path(figures_dir).resolve(), readme.parent.resolve())).as_posix()
    new = _with_kernel_table(head + section(figures_dir, prefix) + tail, Path(figures_dir) / "gpu" / "kernels.json")
    if new != text:
        readme.write_text(new)
    return new != text


def _with_kernel_table(text: str, kernels_json: Path) -> str:
    """``text`` with its sm_90 kernel table (the lines from the table's header row through its last ``|`` row)
    replaced by the one ``make gpu-compile`` wrote to ``kernels_json``: the README's copy cannot go stale."""
    from dtlab.gpu.compile import table
    from dtlab.gpu.kernels import discover

    if not kernels_json.exists():
        return text
    declared = discover()
    fresh = table([r for r in json.loads(kernels_json.read_text())["kernels"] if r["name"] in declared])
    header = fresh.split("\n", 1)[0]
    lines = text.split("\n")
    if header not in lines:
        return text
    start = lines.index(header)
    stop = start
    while stop < len(lines) and lines[stop].startswith("|"):
        stop += 1
    return "\n".join(lines[:start] + fresh.split("\n") + lines[stop:])
