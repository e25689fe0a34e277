"""Greedy top-down tree inducers.

- :class:`DecisionTreeRegressor`: the variance-reduction regression tree of the
  "SIMD decision tree" university project, with naive, incremental and
  vectorised (prefix-sum, parallel, CUDA) split searches.
- :class:`DecisionTreeClassifier`: CART (Gini) and C4.5 (gain ratio,
  pessimistic pruning), the top-down baseline of the GDT paper.

Both grow exactly the tree scikit-learn grows with the same parameters and
``random_state`` (see :mod:`dtlab.greedy.compare` for the checks).
"""

from .classifier import DecisionTreeClassifier
from .regressor import DecisionTreeRegressor

__all__ = ["DecisionTreeClassifier", "DecisionTreeRegressor"]
