"""Backfill every results entry's ``history`` from git: each distinct run recorded in any committed version.

Walks ``git log --full-history`` of ``figures/results.json`` and ``figures/paper/results.json`` (oldest
first) and adds to each entry that keeps a history (benchmarks, and figure producers with a goal) every
run found there: distinct by the entry's own date stamp, or, for entries of before the per-entry stamps,
by their content (dated then by their section's run, commit unknown).  Each run gets its code (the git
tree of ``dtlab/`` at its commit), the machine of its section's run where that run is the entry's, its
spreads and today's goal rules' verdicts (:meth:`workbench.goals.Goal.judge`).  Producers renamed
to their technique's slug keep their runs under the new name (``recorded_as``: the old one).  Runs already
in a file's history and not in git are kept; running it again changes nothing.

Usage: ``python scripts/backfill_history.py [--dry-run]`` from the repository root.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

from workbench.catalog import load_all
from workbench.history import code_of, history_item, keeps_history, without_dirty_commit
from workbench.registry import BENCHMARKS, FIGURES

ROOT = Path(__file__).resolve().parents[1]
FILES = ("figures/results.json", "figures/paper/results.json")
#: Producers renamed to their technique's slug (354f5e2): old name -> name today.
RENAMED = {"classifier_vs_sklearn": "greedy_classifier_vs_sklearn",
           "regression_tree_vs_sklearn": "greedy_regressor_vs_sklearn",
           "gdt_evaluator_throughput": "evolution_evaluator_throughput", "gdt_quality": "evolution_quality",
           "traversal_throughput": "tour_traversal_throughput", "gdt_convergence": "evolution_convergence",
           "gdt_vs_cart": "evolution_vs_cart", "regression_tree_depth": "greedy_regression_depth",
           "regression_tree_timing": "greedy_regression_timing"}


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=True).stdout


def versions(path: str) -> list[tuple[str, dict[str, Any]]]:
    """Every committed version of ``path``, oldest first, as (commit, parsed file)."""
    out = []
    for commit in reversed(git("log", "--format=%H", "--full-history", "--", path).split()):
        try:
            out.append((commit, json.loads(git("show", f"{commit}:{path}"))))
        except (subprocess.CalledProcessError, json.JSONDecodeError):
            continue  # deleted or unreadable in that commit
    return out


def _key(entry: dict[str, Any]) -> str:
    """A run's identity: its own date stamp, else (no stamp yet) a hash of what it recorded."""
    date = (entry.get("run") or {}).get("date")
    if date:
        return date
    return "content:" + hashlib.sha256(json.dumps(entry.get("results"), sort_keys=True).encode()).hexdigest()


def recorded_runs(path: str, codes: dict[str, str | None]) -> dict[tuple[str, str], dict[str, dict[str, Any]]]:
    """{(section, name): {run key: history item}} of every distinct run in the git history of ``path``."""
    tables = {"figures": FIGURES, "benchmarks": BENCHMARKS}
    found: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for commit, data in versions(path):
        for section, table in tables.items():
            section_run = data.get("runs", {}).get(section, {})
            for old_name, entry in data.get(section, {}).items():
                name = RENAMED.get(old_name, old_name)
                producer = table.get(name)
                if producer is None or not keeps_history(section, producer) or not isinstance(entry, dict):
                    continue
                runs = found.setdefault((section, name), {})
                key = _key(entry)
                if key in runs:
                    continue
                run = dict(entry.get("run") or {})
                stamped = bool(run.get("date"))
                if not stamped:  # no stamp of its own: its section's date, no commit claimed
                    run = {"date": section_run.get("date"), "commit": None}
                commit_of = run.get("commit")
                if commit_of not in codes:
                    codes[commit_of] = code_of(commit_of, ROOT)
                run["code"] = codes[commit_of]
                # the section's run describes this entry only where it is the run that measured it
                info = section_run if stamped and section_run.get("commit") == commit_of else {}
                item = without_dirty_commit(history_item({**entry, "run": run}, producer, info))
                item["recorded_in"] = commit[:7]
                if not stamped:
                    item["date_from"] = "its section's run (the entry has no date of its own)"
                if old_name != name:
                    item["recorded_as"] = old_name
                runs[key] = item
    return found


def backfill(path: str, dry_run: bool) -> dict[str, int]:
    """Write each entry's full history into ``path``; returns the runs found per entry."""
    codes: dict[str, str | None] = {}
    found = recorded_runs(path, codes)
    data = json.loads((ROOT / path).read_text())
    counts = {}
    for (section, name), runs in sorted(found.items()):
        entry = data.get(section, {}).get(name)
        if entry is None:  # no longer in the file (its producer's results dropped): nothing to attach to
            continue
        dates = {r["date"] for r in runs.values()}
        kept = [h for h in entry.get("history", []) if h.get("date") not in dates]  # recorded since, not in git
        entry["history"] = sorted([*runs.values(), *kept], key=lambda h: h.get("date") or "")
        if entry.get("run", {}).get("commit") and "code" not in entry["run"]:
            entry["run"]["code"] = code_of(entry["run"]["commit"], ROOT)
        counts[f"{section}/{name}"] = len(entry["history"])
    if not dry_run:
        (ROOT / path).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="count the runs, write nothing")
    args = parser.parse_args()
    load_all()
    for path in FILES:
        counts = backfill(path, args.dry_run)
        print(f"{path}: {sum(counts.values())} runs")
        for name, n in counts.items():
            print(f"  {name}: {n}")


if __name__ == "__main__":
    main()
