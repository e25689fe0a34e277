"""Command line: ``python -m dtlab info`` prints the backends and devices found.

The figures and benchmarks are the workbench's, beside the library in a checkout:
``python -m workbench figures | bench | readme`` (or ``make figures``, ``make bench``).
"""

from __future__ import annotations

import argparse
import json

from .backend import describe


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="dtlab", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("info", help="print the backends and devices found")
    for moved in ("figures", "bench", "readme"):
        sub.add_parser(moved, help=f"moved: python -m workbench {moved}, from a checkout of the repository")
    args = parser.parse_args(argv)
    if args.command != "info":
        parser.exit(2, f"dtlab {args.command}: the figures and benchmarks live in the workbench beside the library; "
                       f"run `python -m workbench {args.command}` (or `make {args.command}`) in a checkout\n")
    print(json.dumps(describe(), indent=2, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
