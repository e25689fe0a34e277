"""GDT: global (evolutionary) induction of classification trees.

Public API
----------
GDTClassifier
    The estimator (scikit-learn conventions).
Evaluator, LeafStats, merge_stats
    The evaluator protocol: a :class:`~dtlab.trees.PackedForest` of trees in,
    per-leaf class counts and two drawn objects per (leaf, class) out; partial
    statistics of shards merge exactly.
EVALUATORS, register_evaluator, resolve_evaluator
    The registry that maps ``(backend, evaluator)`` -- where the work runs and
    which algorithm -- to an evaluator factory (``("cpu", "batched")`` numba,
    ``("cpu", "reference")`` NumPy, ``("cuda", "batched")`` numba.cuda on one
    or more GPUs).  A Dask cluster is an *executor*
    (``GDTClassifier(executor=...)``), not a place.
PoolEvaluator
    CPU workers of a device pool, one thread and one shard each.
DEFAULTS
    Default parameters with the reason for each.

Reference: K. Jurczuk, M. Czajkowski, M. Kretowski, "Multi-GPU approach to
global induction of classification trees for large-scale data mining",
Applied Intelligence 51 (2021) 5683-5700.
"""

from .defaults import DEFAULTS, defaults_table
from .evaluators import (
    EVALUATORS,
    VARIANTS,
    CpuEvaluator,
    Evaluator,
    LeafStats,
    NumpyEvaluator,
    PoolEvaluator,
    merge_stats,
    register_evaluator,
    resolve_evaluator,
)
from .gdt import GDTClassifier

__all__ = ["DEFAULTS", "EVALUATORS", "VARIANTS", "CpuEvaluator", "Evaluator", "GDTClassifier", "LeafStats",
           "NumpyEvaluator", "PoolEvaluator", "defaults_table", "merge_stats", "register_evaluator",
           "resolve_evaluator"]

