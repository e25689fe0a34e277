"""Registries of figure producers and benchmarks.

Each technique's ``workbench/<slug>/experiments.py`` registers its producers here
(:mod:`workbench.catalog` lists the slugs and imports those modules);
``python -m workbench figures`` and ``python -m workbench bench`` run them and merge
what they return into ``figures/results.json``.

A producer is ``fn(ctx: RunContext) -> dict``: it makes its figures with
:func:`dtlab.plotting.savefig` (through ``ctx.savefig``) and returns the
measured numbers (JSON-ready) that go into ``results.json`` under its name.
Its name, its figure files and its ``technique`` all carry the technique's
slug (``<slug>`` or ``<slug>_<what>``).  Its optional ``captions`` function
turns those numbers into the README caption of each figure; its optional
``goal`` (:class:`~workbench.goals.Goal`) judges every run, and
``spreads(results)`` picks what each run keeps in the entry's history
(default: its ``comparisons``).

This module imports no producer: it is the leaf every experiments module
imports, so no import cycle runs through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dtlab.plotting.axes import savefig
from workbench.goals import Goal, comparison_spreads

SCALES = ("small", "paper")


@dataclass
class RunContext:
    """What a producer needs to know about the run it is part of.

    Attributes
    ----------
    scale : {"small", "paper"}
        ``small`` fits a 2-core CI machine in minutes; ``paper`` uses the sizes
        of the source paper where a machine allows.
    out_dir : Path
        Where figures and JSON go.
    backend : str
        ``"auto"``, ``"cpu"`` or ``"cuda"``, passed on to dtlab calls.
    seed : int
    technique : str
        Slug of the producer being run; its figure names must start with it.
    """

    scale: str = "small"
    out_dir: Path = Path("figures")
    backend: str = "auto"
    seed: int = 0
    technique: str | None = None
    figures: list[str] = field(default_factory=list)

    def savefig(self, fig, name: str) -> list[str]:
        if self.technique is not None and not _has_slug(name, self.technique):
            raise ValueError(f"figure {name!r} of technique {self.technique!r} must be named "
                             f"{self.technique}_<what>")
        paths = savefig(fig, name, out_dir=self.out_dir)
        self.figures.extend(str(p) for p in paths)
        return [str(p) for p in paths]

    def pick(self, small: Any, paper: Any) -> Any:
        """The value for this run's scale."""
        return small if self.scale == "small" else paper


@dataclass(frozen=True)
class Producer:
    """A registered producer; ``captions(results) -> {figure stem: caption}`` reads its own results."""

    name: str
    fn: Callable[[RunContext], dict]
    technique: str
    description: str
    captions: Callable[[dict], dict[str, str]] | None = None
    goal: Goal | None = None
    spreads: Callable[[dict], list[dict]] = comparison_spreads


FIGURES: dict[str, Producer] = {}
BENCHMARKS: dict[str, Producer] = {}


def _has_slug(name: str, technique: str) -> bool:
    return name == technique or name.startswith(technique + "_")


def _register(table: dict[str, Producer], name: str, technique: str, description: str, **options: Any):
    def decorator(fn: Callable[[RunContext], dict]):
        if name in table:
            raise ValueError(f"{name!r} is registered twice")
        if not _has_slug(name, technique):
            raise ValueError(f"producer {name!r} of technique {technique!r} must be named {technique}_<what>")
        table[name] = Producer(name, fn, technique, description,
                               **{k: v for k, v in options.items() if v is not None})
        return fn

    return decorator


def register_figure(name: str, *, technique: str, description: str,
                    captions: Callable[[dict], dict[str, str]] | None = None, goal: Goal | None = None,
                    spreads: Callable[[dict], list[dict]] | None = None):
    """Decorator: register ``fn(ctx) -> dict`` as the producer of figure(s) ``name``."""
    return _register(FIGURES, name, technique, description, captions=captions, goal=goal, spreads=spreads)


def register_benchmark(name: str, *, technique: str, description: str,
                       captions: Callable[[dict], dict[str, str]] | None = None, goal: Goal | None = None,
                       spreads: Callable[[dict], list[dict]] | None = None):
    """Decorator: register ``fn(ctx) -> dict`` as benchmark ``name`` (compares with peers, reports ratios)."""
    return _register(BENCHMARKS, name, technique, description, captions=captions, goal=goal, spreads=spreads)
