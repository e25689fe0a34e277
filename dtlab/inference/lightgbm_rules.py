"""LightGBM's input rules folded into the trees once, so that ``Forest.predict`` reads X as the caller gave it.

LightGBM reads ``|x| <= 1e-35`` as 0 on every feature and, on features whose
``missing_type`` is None, NaN as 0 (:class:`~dtlab.trees.ensemble.Ensemble`'s
``zero_threshold`` and ``nan_as_zero``).  Applying them to X costs a copy and
a pass over every value of every call; both are properties of the tests
instead, so they are folded into the trees when the model is read:

* NaN read as 0 goes where 0 goes: ``missing_left = (0 <= t)``.
* A band ``[-z, z]`` read as 0 goes where 0 goes.  Only a threshold inside the
  band changes a test: ``0 <= t < z`` sends the whole band left, the same as
  ``x <= z``; ``-z <= t < 0`` sends it right, the same as ``x < -z``, i.e.
  ``x <=`` the float64 just below ``-z`` (exact for float32 and float64 x; the
  layouts round thresholds down to the input's dtype).

``zero_as_missing`` (0 and the band go the missing way, LightGBM's
``missing_type: Zero``) stays a rewrite of X in ``Forest.prepare``, with the
band of ``zero_threshold``, which the folded ensemble keeps (folding again
changes nothing).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..trees.ensemble import Ensemble


def fold_input_rules(ensemble: Ensemble) -> Ensemble:
    """An ensemble with the same predictions whose trees read NaN and the zero band as 0 themselves
    (``nan_as_zero`` emptied; see the module docstring); ``ensemble`` itself where it has neither rule."""
    z = float(ensemble.zero_threshold)
    if not ensemble.nan_as_zero.size and z <= 0:
        return ensemble
    forest = ensemble.forest
    split = forest.left != -1
    threshold = forest.threshold.copy()
    if z > 0:
        threshold[split & (threshold >= 0) & (threshold < z)] = z
        threshold[split & (threshold >= -z) & (threshold < 0)] = np.nextafter(-z, -np.inf)
    missing_left = forest.missing_left.copy()
    as_zero = split & np.isin(forest.feature, ensemble.nan_as_zero)
    missing_left[as_zero] = threshold[as_zero] >= 0
    folded = dataclasses.replace(forest, threshold=threshold, missing_left=missing_left)
    return dataclasses.replace(ensemble, forest=folded, nan_as_zero=np.zeros(0, np.int64))
