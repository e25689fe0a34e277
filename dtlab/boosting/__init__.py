"""Gradient-boosted decision trees (the swGBDT paper's technique on CPUs).

- :class:`GBDTRegressor`, :class:`GBDTClassifier`: second-order boosting
  (squared error, logistic, softmax) with XGBoost's split rules.
- ``split_method="exact"``: features sorted once, per node and feature the
  prefix sums of (g, h) give every candidate's gain (the foundation's scan,
  :func:`dtlab.splits.rank_prefix`, shared with the greedy trees), missing values tried on both
  sides, rows kept sorted by stable partitions; feature-parallel over workers.
- ``split_method="hist"``: quantile bins, one histogram per node, the sibling
  by subtraction.

A fitted model is an :class:`dtlab.trees.Ensemble` (``to_ensemble()``: base
margin, one column per output, scale 1), and prediction is
:class:`dtlab.inference.Forest`'s, as for any other model.
"""

from .estimators import GBDTClassifier, GBDTRegressor

__all__ = ["GBDTClassifier", "GBDTRegressor"]
