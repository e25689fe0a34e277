"""Parallel tree inference: traversal, the leaf-bitmask method of JP5863426B2, QuickScorer; CPU and CUDA.

``Forest(model).predict(X, method=..., backend=...)`` returns the source
library's raw prediction for scikit-learn, XGBoost, LightGBM and dtlab trees.
"""

from ..trees.model_import import SUPPORTED, to_ensemble
from ._predict_cpu import PARALLEL_MIN_TREE_ROWS
from .forest import METHODS, Forest

__all__ = ["METHODS", "PARALLEL_MIN_TREE_ROWS", "SUPPORTED", "Forest", "to_ensemble"]
