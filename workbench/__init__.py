"""The registry behind ``python -m workbench figures | bench``, timing helpers, the README gallery and the tour.

Each technique's sweeps, producers and benchmarks live in its own package
(``dtlab/<slug>/experiments.py``); :mod:`.catalog` lists the slugs.
"""

from workbench.catalog import TECHNIQUES, load_all

__all__ = ["TECHNIQUES", "load_all"]
