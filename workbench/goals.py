"""A benchmark's goal, declared beside it: its wording, the rules that judge a run, and the wording's history.

A producer registers its :class:`Goal` (``register_benchmark(..., goal=GOAL)``); every run records each
rule's verdict in the entry's history (:mod:`workbench.history`).  A goal is met on a code (the
git tree of ``dtlab/`` at the measured commit) only when every run recorded on that code meets it
(:func:`verdict_on_code`): a rerun that passes never replaces a run that missed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass(frozen=True)
class Rule:
    """One condition of a goal, judged on its own; ``judge(results) -> (met, detail) | None``."""

    name: str
    statement: str
    judge: Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Goal:
    """What a benchmark must show, the rules that judge it, and ``history``: (date, wording, why) items."""

    statement: str
    rules: tuple[Rule, ...]
    history: tuple[tuple[str, str, str], ...] = ()

    def __post_init__(self):
        names = [r.name for r in self.rules]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"a goal needs rules with distinct names, got {names}")
        if [h[0] for h in self.history] != sorted(h[0] for h in self.history):
            raise ValueError("a goal's history runs from the oldest wording to the newest")

    def judge(self, results: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """``{rule name: {"met": bool | None, "detail": str}}`` of one run (None: not judged, and why)."""
        out = {}
        for rule in self.rules:
            try:
                got = rule.judge(results)
            except (KeyError, IndexError, TypeError, ValueError) as exc:
                # results of an older producer lack what today's rule reads: say so, never guess
                out[rule.name] = {"met": None, "detail": f"not judged: these results lack {exc}"}
                continue
            out[rule.name] = ({"met": None, "detail": "does not apply to this run"} if got is None
                              else {"met": bool(got[0]), "detail": str(got[1])})
        return out


def verdict_on_code(runs: Sequence[dict[str, Any]], rule: str) -> dict[str, Any]:
    """A rule over every run on one code: met only when each judged run met it.

    Returns
    -------
    dict: ``met`` (True, False, or None where no run was judged), ``runs``, ``met_runs``, ``missed_runs``,
    ``unjudged``
    """
    verdicts = [(r.get("verdict") or {}).get(rule, {}).get("met") for r in runs]
    judged = [v for v in verdicts if v is not None]
    return {"met": all(judged) if judged else None, "runs": len(runs), "met_runs": sum(judged),
            "missed_runs": len(judged) - sum(judged), "unjudged": len(verdicts) - len(judged)}


def worst_round(comparison: dict[str, Any]) -> float:
    """The lowest speedup of a comparison's rounds (its median where it recorded no spread)."""
    if "speedup_spread" in comparison:
        return float(comparison["speedup_spread"][0])
    return float(comparison.get("speedup_min", comparison["speedup"]))


def best_round(comparison: dict[str, Any]) -> float:
    """The highest speedup of a comparison's rounds (its median where it recorded no spread)."""
    if "speedup_spread" in comparison:
        return float(comparison["speedup_spread"][1])
    return float(comparison.get("speedup_max", comparison["speedup"]))


def comparison_spreads(results: dict[str, Any]) -> list[dict[str, Any]]:
    """A run's spreads, the default: its ``comparisons`` as recorded (medians, spreads, threads, case)."""
    return list(results.get("comparisons", [])) if isinstance(results, dict) else []


def contender_spreads(runs: dict[str, dict[str, Any]], prefix: str = "") -> list[dict[str, Any]]:
    """Spreads of contenders timed alone (``{name: {"seconds": [...], ...}}``): every run's seconds each."""
    return [{"contender": prefix + name, "seconds": list(r["seconds"]),
             **{k: r[k] for k in ("auc", "objective") if k in r}}
            for name, r in runs.items() if r.get("seconds")]
