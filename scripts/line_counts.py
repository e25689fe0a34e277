"""Lines of the library (``dtlab/``, what ``pip install`` ships) and of the workbench beside it (``workbench/``:
figure producers, benchmarks, peers, captions, the notebooks' widgets), per technique, in Python files.

Usage: ``python scripts/line_counts.py [--markdown]``; the README's table is its ``--markdown`` output.
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TECHNIQUES = ("greedy", "evolution", "linear", "boosting", "inference")


def lines(folder: Path) -> int:
    return sum(len(p.read_text().splitlines()) for p in folder.rglob("*.py")) if folder.exists() else 0


def counts() -> list[tuple[str, int, int]]:
    """``(part, library lines, workbench lines)``: each technique, the rest (foundation, registry), the total."""
    rows = [(slug, lines(ROOT / "dtlab" / slug), lines(ROOT / "workbench" / slug)) for slug in TECHNIQUES]
    library, workbench = lines(ROOT / "dtlab"), lines(ROOT / "workbench")
    rows.append(("foundation / registry", library - sum(r[1] for r in rows), workbench - sum(r[2] for r in rows)))
    rows.append(("total", library, workbench))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="a Markdown table, as in the README")
    args = parser.parse_args()
    rows = counts()
    if args.markdown:
        print("| part | library `dtlab/` | workbench `workbench/` |\n|---|---:|---:|")
        for part, lib, wb in rows:
            bold = "**" if part == "total" else ""
            print(f"| {bold}{part}{bold} | {bold}{lib:,}{bold} | {bold}{wb:,}{bold} |")
        return
    print(f"{'part':<24}{'library':>10}{'workbench':>12}")
    for part, lib, wb in rows:
        print(f"{part:<24}{lib:>10,}{wb:>12,}")
    total = rows[-1]
    print(f"the workbench is {total[2] / (total[1] + total[2]):.0%} of the two")


if __name__ == "__main__":
    main()
