"""The split-gain rules every boosting finder shares: a side's gain, the smallest loss change that splits, the
leaf weights.

XGBoost's conventions (``updater_colmaker.cc``, ``split_evaluator.h``): a node
or side with gradient sum ``G`` and hessian sum ``H`` scores ``G^2/(H+lam)``
(:func:`_leaf_gain`; the textbook's factor 1/2 left out), a split's loss change
is its children's scores minus the node's, a split is made only where that
change exceeds :data:`RT_EPS`, and a leaf's weight is ``-G/(H+lam)``, 0 under
``min_child_weight`` (:func:`leaf_values`).  The exact finders score in float32
as XGBoost's exact method does (:func:`_leaf_gain32`), the histogram finders in
float64.

The two gains are ``numba.njit`` functions: kernels call them (inlined by
LLVM), and the CUDA finders compile their ``py_func`` as device functions
(:func:`dtlab._jit.compile_functions`), where plain functions that call them by
the names ``_leaf_gain`` / ``_leaf_gain32`` (:func:`._categorical_splits.categorical_split`)
get the device versions.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT

#: XGBoost's kRtEps: a split must improve the loss by more than this.
RT_EPS = 1e-6


@numba.njit(**NJIT)
def _leaf_gain(g, h, lam):
    """The score ``G^2/(H+lam)`` of a node or side, in the arguments' precision (float64 in the histogram
    finders)."""
    return g * g / (h + lam)


@numba.njit(**NJIT)
def _leaf_gain32(g, h, lam):
    """XGBoost's ``CalcGainGivenWeight``: ``G^2`` and ``H + lam`` rounded to float32, divided in float32."""
    return np.float32(g * g) / np.float32(h + lam)


def leaf_values(G: np.ndarray, H: np.ndarray, lam: float, mcw: float, learning_rate: float) -> np.ndarray:
    """The output of every node: XGBoost's weight ``-G/(H+lam)`` (0 where ``H < min_child_weight`` or
    ``H <= 0``) rounded to float32 and shrunk by ``learning_rate`` in float32 (``NodeEntry::weight *
    learning_rate``): the same leaf values to the bit, so that margins, and the next round's gradients, are
    equal too.

    Parameters
    ----------
    G, H : float64 arrays (n_nodes,), the nodes' gradient and hessian sums
    lam, mcw, learning_rate : float

    Returns
    -------
    float32 array (n_nodes,)
    """
    weight = np.where((H >= mcw) & (H > 0), -G / (H + lam), 0.0)
    return weight.astype(np.float32) * np.float32(learning_rate)
