"""The techniques whose producers ``python -m workbench figures | bench`` runs, one slug each.

A technique ``<slug>`` keeps its producers in ``workbench/<slug>/experiments.py``
and joins the registry by adding its slug to :data:`TECHNIQUES`.  The tour of
the foundation (slug ``tour``) lives in :mod:`workbench.tour`.
"""

from __future__ import annotations

import importlib

#: Technique slugs, in the order their figures appear.
TECHNIQUES = ("greedy", "evolution", "linear", "boosting", "inference")

#: Producers beside a technique's own ``experiments`` module: the Dask benchmarks (issue 22).
EXTRA_MODULES = ("workbench.boosting.dask_experiments", "workbench.linear.dask_experiments")

#: The foundation tour's slug.
TOUR = "tour"


def experiment_modules() -> tuple[str, ...]:
    """Names of the modules that register producers: the tour, then each technique's experiments."""
    return (("workbench.tour", "workbench.gpu_tour")
            + tuple(f"workbench.{slug}.experiments" for slug in TECHNIQUES) + EXTRA_MODULES)


def load_all() -> None:
    """Import every module that registers producers (idempotent)."""
    for name in experiment_modules():
        importlib.import_module(name)
