"""CPU kernel of :func:`dtlab.trees.leaves.apply`: the shared walk inlined in a ``prange`` loop over rows.

The walk of :mod:`dtlab.trees.walk` is inlined here; numba's cache folder
follows every source file of dtlab (:mod:`dtlab._numba_cache`), so an edit
there compiles this module again.
"""

from __future__ import annotations

import numba

from .walk import cpu_walks

_find_leaf_cpu = cpu_walks()["find_leaf"]


@numba.njit(parallel=True, nogil=True, cache=True)
def _apply_cpu(X, feature, threshold, left, right, missing_left, out):
    """``out[row]``: the leaf row ``row`` of X (n_samples, n_features) reaches in the tree's arrays."""
    for row in numba.prange(X.shape[0]):
        out[row] = _find_leaf_cpu(X, row, 0, feature, threshold, left, right, missing_left)
