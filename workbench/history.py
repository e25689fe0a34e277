"""Every recorded run of a benchmark: the code a run measured, its history item, and the merge that keeps them all.

A results entry holds its latest run's full ``results`` and a ``history`` of every run (oldest first), each
with its commit, its code (the git tree of ``dtlab/`` at that commit: two commits with the same package
code are the same code), date, machine, scale, load average, status, the spreads it measured
(:attr:`~workbench.registry.Producer.spreads`) and, for a producer with a goal, each rule's verdict.
Benchmarks keep a history; figure producers only when they have a goal.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

#: The measured code: the library's folder; its git tree names the code of a run.
PACKAGE_DIR = Path(__file__).resolve().parents[1] / "dtlab"
#: The measuring code beside it: a change here changes what a run measures too, so it must be committed as well.
WORKBENCH_DIR = Path(__file__).resolve().parent
#: How the recorder before 05ab4de marked a run on uncommitted changes (``<sha>+dirty``); runs are recorded on
#: committed code only now, and those older runs carry ``uncommitted_changes`` with no code instead.
DIRTY = "+dirty"


def _git(args: list[str], cwd: Path) -> str:
    out = subprocess.run(["git", *args], capture_output=True, text=True, cwd=cwd, timeout=30, check=True).stdout
    return out if args[0] == "status" else out.strip()  # porcelain lines start with a status column


def code_state(package: Path = PACKAGE_DIR, also_clean: tuple[Path, ...] = (WORKBENCH_DIR,)) -> dict[str, Any] | None:
    """The checkout holding ``package``: ``{"commit", "code", "dirty"}`` (short commit, git tree of the package
    at HEAD, uncommitted paths under it and under the folders ``also_clean`` (the workbench that measures it),
    untracked ones included); None outside a git checkout."""
    try:
        top = Path(_git(["rev-parse", "--show-toplevel"], package))
        rel = package.resolve().relative_to(top.resolve()).as_posix()
        commit = _git(["rev-parse", "--short", "HEAD"], package)
        code = _git(["rev-parse", f"HEAD:{rel}"], package)
        beside = [str(folder.resolve()) for folder in also_clean
                  if folder.is_dir() and folder.resolve().is_relative_to(top.resolve())]
        status = _git(["status", "--porcelain", "--untracked-files=all", "--", ".", *beside], package)
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "code": code, "dirty": [line[3:] for line in status.splitlines() if line.strip()]}


def code_of(commit: str | None, repo: Path, package: str = "dtlab") -> str | None:
    """The code of a recorded commit: the package's tree at it; None where unknown (no such commit, or a
    ``<sha>+dirty`` of the old recorder: uncommitted changes on top of it, code in no commit)."""
    if not commit or commit.endswith(DIRTY):
        return None
    try:
        return _git(["rev-parse", f"{commit}:{package}"], repo)
    except (OSError, subprocess.SubprocessError):
        return None


def without_dirty_commit(item: dict[str, Any]) -> dict[str, Any]:
    """A history item of the old recorder's ``<sha>+dirty`` as runs are kept now: the commit it started from, no
    code (the code it measured is in no commit) and ``uncommitted_changes``; any other item as it is."""
    commit = item.get("commit")
    if isinstance(commit, str) and commit.endswith(DIRTY):
        item.update(commit=commit.removesuffix(DIRTY), code=None, uncommitted_changes=True)
    return item


def keeps_history(section: str, producer: Any) -> bool:
    return section == "benchmarks" or getattr(producer, "goal", None) is not None


def _load(entry: dict[str, Any], run_info: dict[str, Any]) -> dict[str, Any] | None:
    """The entry's own load average (start, end), else what its producer recorded, else its section run's."""
    if entry.get("load_average"):
        return entry["load_average"]
    res = entry.get("results") if isinstance(entry.get("results"), dict) else {}
    before, after = res.get("load_average_before"), res.get("load_average_after")
    if before is not None:
        pick = lambda v: v[0] if isinstance(v, list) else v  # noqa: E731 -- the 1-minute figure
        return {"start": pick(before), "end": pick(after)}
    return run_info.get("load_average")


def history_item(entry: dict[str, Any], producer: Any, run_info: dict[str, Any]) -> dict[str, Any]:
    """One run of an entry as its history keeps it (``run_info``: the section's run it was part of)."""
    run = entry.get("run", {})
    results = entry.get("results") if isinstance(entry.get("results"), dict) else {}
    item = {"date": run.get("date") or run_info.get("date"), "commit": run.get("commit"), "code": run.get("code"),
            "scale": entry.get("scale") or run_info.get("scale"), "status": entry.get("status"),
            "machine": run_info.get("machine"), "platform": run_info.get("platform"),
            "load_average": _load(entry, run_info)}
    try:
        item["spreads"] = producer.spreads(results) if results else []
    except (KeyError, IndexError, TypeError):  # results of an older producer: no spreads to keep
        item["spreads"] = []
    if producer.goal is not None:
        item["verdict"] = producer.goal.judge(results) if entry.get("status") == "ok" else {}
    return item


def merged_history(old: dict[str, Any] | None, new: dict[str, Any], producer: Any,
                   old_run_info: dict[str, Any], new_run_info: dict[str, Any]) -> list[dict[str, Any]]:
    """The new entry's history: the old entry's (its own latest run added where missing), then the new run."""
    history = list((old or {}).get("history", []))
    dates = {h.get("date") for h in history}
    if old and old.get("run", {}).get("date") and old["run"]["date"] not in dates:
        same_run = old_run_info.get("commit") == old["run"].get("commit")  # the section's run it came from
        history.append(history_item(old, producer, old_run_info if same_run else {}))
    history.append(history_item(new, producer, new_run_info))
    return sorted(history, key=lambda h: h.get("date") or "")


def runs_on_latest_code(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs on the code of the latest run (by date); the latest alone where its code is unknown."""
    if not history:
        return []
    latest = max(history, key=lambda h: h.get("date") or "")
    if not latest.get("code"):
        return [latest]
    return [h for h in history if h.get("code") == latest["code"]]
