"""GDT: global (evolutionary) induction of classification trees.

Public API
----------
GDTClassifier
    The estimator (scikit-learn conventions).
Evaluator, TreeBatch, LeafStats, merge_stats
    The evaluator protocol: a batch of packed trees in, per-leaf class counts
    and two drawn objects per (leaf, class) out; partial statistics of shards
    merge exactly.
EVALUATORS, register_evaluator, resolve_evaluator
    The registry that maps a ``backend`` name to an evaluator factory
    (``"numpy"`` reference, ``"cpu"`` batched numba; GPU / multi-device / Dask
    evaluators add themselves here).
DEFAULTS
    Default parameters with the reason for each.

Reference: K. Jurczuk, M. Czajkowski, M. Kretowski, "Multi-GPU approach to
global induction of classification trees for large-scale data mining",
Applied Intelligence 51 (2021) 5683-5700.
"""

from .defaults import DEFAULTS, defaults_table
from .evaluators import (EVALUATORS, CpuEvaluator, Evaluator, LeafStats, NumpyEvaluator, TreeBatch, merge_stats,
                         register_evaluator, resolve_evaluator)
from .gdt import GDTClassifier

__all__ = ["DEFAULTS", "EVALUATORS", "CpuEvaluator", "Evaluator", "GDTClassifier", "LeafStats", "NumpyEvaluator",
           "TreeBatch", "defaults_table", "merge_stats", "register_evaluator", "resolve_evaluator"]
