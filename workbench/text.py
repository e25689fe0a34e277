"""Words for numbers in legends, titles and captions: thread counts and speed comparisons.

A speed comparison is a dict as recorded in ``results.json`` (see
:func:`workbench.timing.comparison`): ``peer``, ``mode``,
``threads={"dtlab": n, "peer": m}``, ``speedup`` (peer seconds / dtlab seconds).
"""

from __future__ import annotations

from typing import Any, Iterable

MODE_WORDS = {"per_core": "per core", "whole_machine": "whole machine"}


def threads(n: int) -> str:
    """``"1 thread"``, ``"2 threads"``."""
    return f"{int(n)} thread" + ("" if int(n) == 1 else "s")


def thread_pair(entry: dict[str, Any]) -> str:
    """``"dtlab 2 threads, peer 1 thread"`` of a comparison."""
    t = entry["threads"]
    return f"dtlab {threads(t['dtlab'])}, peer {threads(t['peer'])}"


def speedup(x: float) -> str:
    """A speed ratio with two significant figures below 10 (``0.87x``, ``3.4x``, ``118x``)."""
    return f"{x:.2g}x" if x < 10 else f"{x:.0f}x"


def speedup_spread(entry: dict[str, Any]) -> str:
    """``"3.4x (3.1-3.6x over 5 runs)"``: a comparison's median speedup and its spread where recorded."""
    text = speedup(entry["speedup"])
    if "speedup_spread" in entry:
        lo, hi = entry["speedup_spread"]
        text += f" ({speedup(lo).rstrip('x')}-{speedup(hi)} over {entry['runs']} runs)"
    return text


def comparison_phrase(entry: dict[str, Any]) -> str:
    """``"3.4x per core (dtlab 1 thread, peer 1 thread)"``."""
    return f"{speedup_spread(entry)} {MODE_WORDS[entry['mode']]} ({thread_pair(entry)})"


def by_mode(entries: Iterable[dict[str, Any]], **match: Any) -> dict[str, dict[str, Any]]:
    """Comparison entries that match every ``key=value`` given, keyed by mode."""
    return {e["mode"]: e for e in entries if all(e.get(k) == v for k, v in match.items())}


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``"1 noise attribute"``, ``"2 noise attributes"``, ``"10,000 rows"`` (``plural`` for irregular nouns)."""
    n = int(n)
    return f"{n:,} " + (noun if n == 1 else plural or noun + "s")
