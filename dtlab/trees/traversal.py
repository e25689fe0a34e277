"""Tree traversal: which leaf each row reaches.

The walk is :func:`dtlab.trees.walk.find_leaf`, compiled with ``numba.njit``
and called from a ``prange`` loop over rows here, and as a CUDA device function
from a one-thread-per-row kernel in :mod:`dtlab.trees._traversal_cuda`.  Both
give the same leaf bit for bit.  ``apply_reference`` runs the same plain
function uncompiled.  Edits to :mod:`dtlab.trees.walk` need this module's numba
cache (``__pycache__/*.nbi, *.nbc``) deleted: the walk is inlined here.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from .._validation import check_tree_input
from ..backend import resolve_backend
from . import walk
from .walk import cpu_walks

_find_leaf_cpu = cpu_walks()["find_leaf"]


@numba.njit(parallel=True, nogil=True, cache=True)
def _apply_cpu(X, feature, threshold, left, right, missing_left, out):
    for row in numba.prange(X.shape[0]):
        out[row] = _find_leaf_cpu(X, row, 0, feature, threshold, left, right, missing_left)


def apply(tree, X: Any, backend: str = "auto") -> np.ndarray:
    """Leaf index reached by every row.

    Parameters
    ----------
    tree : FlatTree
    X : array-like of shape (n_samples, n_features); NaN follows ``missing_left``
    backend : {"auto", "cpu", "cuda"}

    Returns
    -------
    leaves : ndarray of shape (n_samples,), int32 (host memory)
    """
    be = resolve_backend(backend, X)
    if be.is_cuda:
        from ._traversal_cuda import apply_cuda

        return apply_cuda(tree, X, be)
    X = check_tree_input(X, tree.n_features)
    out = np.empty(X.shape[0], dtype=np.int32)
    if X.shape[0]:
        _apply_cpu(X, tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left, out)
    return out


def apply_reference(tree, X: Any) -> np.ndarray:
    """Plain-Python traversal, the readable reference the kernels are tested against."""
    X = check_tree_input(X, tree.n_features)
    out = np.empty(X.shape[0], dtype=np.int32)
    plain = walk.compile_walks(lambda fn: fn)["find_leaf"]  # the same functions, run as Python
    for row in range(X.shape[0]):
        out[row] = plain(X, row, 0, tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left)
    return out
