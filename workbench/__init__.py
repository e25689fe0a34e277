"""The workbench beside the library: what measures, compares and draws dtlab, never installed with it.

``pip install dtlab`` ships the library (``dtlab/``: estimators, kernels, model import and inference, tree
drawing, Dask execution).  This folder holds the rest of the research workbench, one subpackage per technique
slug (``workbench/<slug>/``: its figure producers and benchmarks in ``experiments.py``, their plots and
captions in ``plots.py``, peer set-ups, sweeps, peer-comparison oracles in ``compare.py``), and beside them the
registry behind ``python -m workbench figures | bench | readme`` (:mod:`.registry`, :mod:`.catalog`), timing
helpers (:mod:`.timing`), recorded runs and goals (:mod:`.history`, :mod:`.goals`), the README gallery
(:mod:`.gallery`), the peers' environments (:mod:`.peer_env`), the tours and the notebooks' widgets
(:mod:`.widgets`).

It imports the library's public modules and names only (tests/test_architecture.py); the library never
imports it.  ``make setup`` puts the checkout on the venv's path, so notebooks, scripts and tests import it
from anywhere.
"""

from workbench.catalog import TECHNIQUES, load_all

__all__ = ["TECHNIQUES", "load_all"]
