"""The notebooks' run times: measured into ``figures/screens/times.json``, shown in ``notebooks/README.md``.

``make screens`` (never ``make test``, which leaves ``git status`` clean) fills the file and the table:

1. the browser suite with ``DTLAB_SCREENS_DIR=figures/screens`` records, per notebook, the screenshot, the
   time of Run All in JupyterLab and of the first slider step (with the panel's Run, where it has one);
2. ``python scripts/notebook_times.py headless`` times each notebook under nbval, as ``make test`` runs it;
3. ``python scripts/notebook_times.py readme`` writes the table between the markers of ``notebooks/README.md``.

The table is never typed: ``tests/browser/test_stored_notebooks.py`` checks that it is what :func:`table`
makes of the committed ``times.json``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "figures" / "screens" / "times.json"
README = ROOT / "notebooks" / "README.md"
BEGIN = "<!-- times:begin -->"
END = "<!-- times:end -->"
#: The project's limit for a notebook's headless run at its default parameters.
HEADLESS_LIMIT_S = 60


def load(path: Path = TIMES) -> dict:
    """``{notebook file name: {measure: value}}`` from ``times.json`` (empty when there is none)."""
    return json.loads(path.read_text()) if path.exists() else {}


def record(name: str, path: Path = TIMES, **measures: float | bool) -> None:
    """Merge ``measures`` into notebook ``name``'s entry, with the machine's cores, load and the date."""
    data = load(path)
    entry = data.get(name, {})
    entry.update({k: round(v, 1) if isinstance(v, float) else v for k, v in measures.items()})
    entry.update(cpu_cores=os.cpu_count(), load_average_1min=round(os.getloadavg()[0], 2),
                 date=datetime.date.today().isoformat())
    data[name] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def time_headless(names: list[str], path: Path = TIMES) -> None:
    """Run each notebook as ``make test`` does (``pytest --nbval-lax``), timed with the kernel's start."""
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", MPLBACKEND="Agg")
    for name in names:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "pytest", "--nbval-lax", "-q",
                               str(ROOT / "notebooks" / name)], cwd=ROOT, env=env)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"{name} failed under nbval: no time recorded")
        record(name, path, headless_s=seconds)
        print(f"{name}: {seconds:.1f} s headless", flush=True)


def _seconds(entry: dict, key: str) -> str:
    return f"{entry[key]:.1f} s" if key in entry else "not measured"


def table(times: dict) -> str:
    """The run-time section of ``notebooks/README.md`` (markers included) from ``times.json``'s content."""
    lines = [BEGIN,
             "<!-- generated from figures/screens/times.json by `make screens` "
             "(python scripts/notebook_times.py readme); not typed -->",
             "",
             "| notebook | headless (`pytest --nbval-lax`) | Run All in JupyterLab | first slider step | "
             "measured on |",
             "|---|---|---|---|---|"]
    for name in sorted(times):
        entry = times[name]
        step = _seconds(entry, "slider_s")
        if entry.get("slider_with_run"):
            step += " (with the panel's Run)"
        machine = f"{entry.get('cpu_cores', '?')} cores, load average {entry.get('load_average_1min', '?')}"
        if "date" in entry:
            machine += f", {entry['date']}"
        lines.append(f"| `{Path(name).stem}` | {_seconds(entry, 'headless_s')} | {_seconds(entry, 'run_all_s')} "
                     f"| {step} | {machine} |")
    headless = [e["headless_s"] for e in times.values() if "headless_s" in e]
    lines.append("")
    if headless:
        slowest = max(headless)
        verdict = "within" if slowest < HEADLESS_LIMIT_S else "over"
        lines.append(f"Slowest headless run: {slowest:.1f} s, {verdict} the {HEADLESS_LIMIT_S} s limit of a "
                     "notebook at its default parameters.")
    else:
        lines.append("No headless times recorded yet: `make screens` measures them.")
    lines.append(END)
    return "\n".join(lines)


def write_readme(times: dict, readme: Path = README) -> None:
    """Replace the section between the markers of ``readme`` with :func:`table`."""
    text = readme.read_text()
    start, end = text.index(BEGIN), text.index(END) + len(END)
    readme.write_text(text[:start] + table(times) + text[end:])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("headless", "readme"))
    parser.add_argument("--times", type=Path, default=TIMES)
    args = parser.parse_args(argv)
    if args.what == "headless":
        time_headless(sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")), args.times)
    else:
        write_readme(load(args.times))


if __name__ == "__main__":
    main()
