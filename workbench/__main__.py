"""Command line: ``python -m workbench figures | bench | readme | info``."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from dtlab.backend import describe
from workbench.catalog import load_all
from workbench.history import code_state, keeps_history, merged_history
from workbench.registry import BENCHMARKS, FIGURES, SCALES, RunContext

RESULTS_FILE = "results.json"


def _recorded_code() -> tuple[str | None, str | None]:
    """(commit, code) a run records; refuses a tree with uncommitted changes under dtlab/ or workbench/.

    A result must name code that exists: a run on uncommitted changes would name code in no commit.
    Outside a git checkout there is nothing to check: both None.
    """
    state = code_state()
    if state is None:
        return None, None
    if state["dirty"]:
        shown = ", ".join(state["dirty"][:8]) + (f" and {len(state['dirty']) - 8} more" if len(state["dirty"]) > 8
                                                 else "")
        raise SystemExit("refusing to record results: the measured code (dtlab/, workbench/) has uncommitted "
                         f"changes ({shown}); commit them first, then measure: a result must name code that exists")
    return state["commit"], state["code"]


def _merge_results(out_dir: Path, section: str, entries: dict[str, Any], run_info: dict[str, Any],
                   registered: set[str] | None = None, producers: dict[str, Any] | None = None) -> Path:
    """Update ``out_dir/results.json``: replace the entries just run, keep the other registered ones.

    Entries of ``section`` whose names are not in ``registered`` (producers
    renamed or removed) are dropped, so the file holds no stale results.  An
    entry of a producer in ``producers`` that keeps a history
    (:func:`~workbench.history.keeps_history`) keeps every earlier
    run in it, the new run added: a rerun never replaces a run.
    """
    path = out_dir / RESULTS_FILE
    data: dict[str, Any] = {}
    if path.exists():
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError:
            data = {}
    old_run_info = data.get("runs", {}).get(section, {})
    for name, entry in entries.items():
        producer = (producers or {}).get(name)
        if producer is not None and keeps_history(section, producer):
            entry["history"] = merged_history(data.get(section, {}).get(name), entry, producer, old_run_info,
                                              run_info)
    data.setdefault(section, {}).update(entries)
    if registered is not None:
        stale = sorted(set(data[section]) - registered)
        for name in stale:
            del data[section][name]
        if stale:
            print(f"dropped stale {section} entries: {stale}")
    data.setdefault("runs", {})[section] = run_info
    path.write_text(json.dumps(data, indent=2, sort_keys=True, default=_json_default) + "\n")
    return path


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _load_average() -> float | None:
    """The 1-minute load average of the machine (None where the OS does not tell)."""
    from workbench.timing import load_average

    loads = load_average()
    return None if loads is None else loads[0]


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"{type(obj).__name__} is not JSON serialisable")


def run_producers(table: dict, section: str, only: list[str] | None, scale: str, out_dir: Path,
                  backend: str, seed: int) -> int:
    """Run registered producers; write their results; return the number that failed.

    Refuses (SystemExit, before running anything) when dtlab/ or workbench/ has
    uncommitted changes: a result must name the code it measured.
    """
    names = list(table) if not only else only
    unknown = [n for n in names if n not in table]
    if unknown:
        raise SystemExit(f"unknown {section} {unknown}; registered: {sorted(table)}")
    commit, code = _recorded_code()
    entries, failed = {}, 0
    load = _load_average()  # other processes share the cores: timings depend on it
    for name in names:
        producer = table[name]
        ctx = RunContext(scale=scale, out_dir=out_dir, backend=backend, seed=seed, technique=producer.technique)
        print(f"[{section}] {name}: {producer.description} ...", flush=True)
        load_start = _load_average()
        start = time.perf_counter()
        try:
            result = producer.fn(ctx)
            status = "ok"
        except Exception:  # one broken producer must not hide the others' results
            traceback.print_exc()
            result, status = {}, "failed"
            failed += 1
        seconds = time.perf_counter() - start
        entries[name] = {"status": status, "technique": producer.technique, "seconds": round(seconds, 3),
                         "run": {"date": _now(), "commit": commit, "code": code},
                         "load_average": {"start": load_start, "end": _load_average()},
                         "figures": [str(Path(p).relative_to(out_dir)) if Path(p).is_relative_to(out_dir) else p
                                     for p in ctx.figures], "scale": scale, "results": result}
        print(f"[{section}] {name}: {status} in {seconds:.1f} s", flush=True)
    info = {"date": _now(), "scale": scale,
            "backend_requested": backend, "machine": describe(), "platform": platform.platform(),
            "commit": commit, "code": code, "load_average": {"start": load, "end": _load_average()}}
    path = _merge_results(out_dir, section, entries, info, registered=set(table), producers=table)
    print(f"wrote {path}")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workbench", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for command, help_text in (("figures", "regenerate the registered figures"),
                               ("bench", "run the benchmarks against peer libraries")):
        p = sub.add_parser(command, help=help_text)
        p.add_argument("--only", action="append", metavar="NAME", help="run only NAME (repeatable)")
        p.add_argument("--scale", choices=SCALES, default="small", help="problem sizes (default: small)")
        p.add_argument("--out", type=Path, default=Path("figures"), help="output folder (default: figures)")
        p.add_argument("--backend", choices=("auto", "cpu", "cuda"), default="auto")
        p.add_argument("--seed", type=int, default=0)
        p.add_argument("--list", action="store_true", help="list the registered names and exit")
        p.add_argument("--readme", type=Path, default=None,
                       help="README whose results section to regenerate afterwards "
                            "(default: README.md when --out is figures and README.md exists)")
        if command == "bench":
            p.add_argument("--gpu", action="store_true", help="run on the GPU (same as --backend cuda)")
    p = sub.add_parser("readme", help="regenerate the README's results section from figures/results.json")
    p.add_argument("--readme", type=Path, default=Path("README.md"))
    p.add_argument("--out", type=Path, default=Path("figures"), help="figures folder (default: figures)")
    sub.add_parser("info", help="print the backends and devices found")
    args = parser.parse_args(argv)

    if args.command == "info":
        print(json.dumps(describe(), indent=2))
        return 0
    if args.command == "readme":
        return _update_readme(args.readme, args.out)
    load_all()
    table = FIGURES if args.command == "figures" else BENCHMARKS
    if args.list:
        for name, producer in table.items():
            print(f"{name:32s} [{producer.technique}] {producer.description}")
        return 0
    backend = "cuda" if getattr(args, "gpu", False) else args.backend
    args.out.mkdir(parents=True, exist_ok=True)
    failed = run_producers(table, args.command if args.command == "figures" else "benchmarks", args.only,
                           args.scale, args.out, backend, args.seed)
    readme = args.readme
    if readme is None and args.out == Path("figures") and Path("README.md").exists():
        readme = Path("README.md")
    if readme is not None:
        _update_readme(readme, args.out)
    return 1 if failed else 0


def _update_readme(readme: Path, figures_dir: Path) -> int:
    from workbench.gallery import update_readme

    changed = update_readme(readme, figures_dir)
    print(f"{readme}: results section {'regenerated' if changed else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
