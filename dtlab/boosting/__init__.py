"""Gradient-boosted decision trees (the swGBDT paper's technique on CPUs).

- :class:`GBDTRegressor`, :class:`GBDTClassifier`: second-order boosting
  (squared error, logistic, softmax) with XGBoost's split rules.
- ``split_method="exact"``: features sorted once, per node and feature the
  prefix sums of (g, h) give every candidate's gain (the greedy trees' scan,
  :func:`dtlab.splits.scan_prefix`), missing values tried on both
  sides, rows kept sorted by stable partitions; feature-parallel over workers.
- ``split_method="hist"``: quantile bins, one histogram per node, the sibling
  by subtraction.

The trees are a :class:`dtlab.trees.PackedForest` (``forest_``) and prediction
walks them with the project's one walk.
"""

from .estimators import GBDTClassifier, GBDTRegressor

__all__ = ["GBDTClassifier", "GBDTRegressor"]
