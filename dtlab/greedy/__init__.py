"""Greedy top-down tree inducers.

- :class:`DecisionTreeRegressor`: the variance-reduction regression tree of the
  "SIMD decision tree" university project, with naive, incremental and
  vectorised (prefix-sum, parallel, CUDA) split searches.
- :class:`DecisionTreeClassifier`: CART (Gini) and C4.5 (gain ratio,
  pessimistic pruning), the top-down baseline of the GDT paper.

Both grow the tree scikit-learn grows with the same parameters and
``random_state``; a regression tree may differ where two splits have exactly
equal gain, which floating-point summation order decides (see
:mod:`workbench.greedy.compare` for the checks and :func:`~workbench.greedy.compare.tie_report`).
"""

from .classifier import DecisionTreeClassifier
from .regressor import DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
