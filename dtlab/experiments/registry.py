"""Registries of figure producers and benchmarks.

Each technique registers its producers here; ``python -m dtlab figures`` and
``python -m dtlab bench`` run them and merge what they return into
``figures/results.json``.

A producer is ``fn(ctx: RunContext) -> dict``: it makes its figures with
:func:`dtlab.plotting.savefig` (through ``ctx.savefig``) and returns the
measured numbers (JSON-ready) that go into ``results.json`` under its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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
    """

    scale: str = "small"
    out_dir: Path = Path("figures")
    backend: str = "auto"
    seed: int = 0
    figures: list[str] = field(default_factory=list)

    def savefig(self, fig, name: str) -> list[str]:
        from ..plotting import savefig

        paths = savefig(fig, name, out_dir=self.out_dir)
        self.figures.extend(str(p) for p in paths)
        return [str(p) for p in paths]

    def pick(self, small: Any, paper: Any) -> Any:
        """The value for this run's scale."""
        return small if self.scale == "small" else paper


@dataclass(frozen=True)
class Producer:
    name: str
    fn: Callable[[RunContext], dict]
    technique: str
    description: str


FIGURES: dict[str, Producer] = {}
BENCHMARKS: dict[str, Producer] = {}


def _register(table: dict[str, Producer], name: str, technique: str, description: str):
    def decorator(fn: Callable[[RunContext], dict]):
        if name in table:
            raise ValueError(f"{name!r} is registered twice")
        table[name] = Producer(name, fn, technique, description)
        return fn

    return decorator


def register_figure(name: str, *, technique: str, description: str):
    """Decorator: register ``fn(ctx) -> dict`` as the producer of figure(s) ``name``."""
    return _register(FIGURES, name, technique, description)


def register_benchmark(name: str, *, technique: str, description: str):
    """Decorator: register ``fn(ctx) -> dict`` as benchmark ``name`` (compares with peers, reports ratios)."""
    return _register(BENCHMARKS, name, technique, description)


def load_all() -> None:
    """Import every module that registers producers."""
    from . import producers  # noqa: F401
