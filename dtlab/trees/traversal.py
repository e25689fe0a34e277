"""Tree traversal: which leaf each row reaches.

The per-row walk :func:`find_leaf` is written once as a plain function and
compiled twice: ``numba.njit`` (called from a ``prange`` loop over rows) for the
CPU, and ``numba.cuda.jit(device=True)`` (called from a one-thread-per-row
kernel, in :mod:`dtlab.trees._traversal_cuda`) for the GPU.  Both give the same
leaf bit for bit: the comparison is ``X[row, f] <= threshold`` in the precision
of ``X`` promoted to float64, as in scikit-learn (which casts X to float32).
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np

from .._validation import check_X
from ..backend import resolve_backend


def find_leaf(X, row, feature, threshold, left, right, missing_left):
    """Walk one row from the root to its leaf.

    Parameters
    ----------
    X : 2-D float array (n_samples, n_features)
    row : int
    feature, left, right : int32 arrays (n_nodes,)
    threshold : float64 array (n_nodes,)
    missing_left : bool array (n_nodes,)

    Returns
    -------
    int : index of the leaf reached.
    """
    node = 0
    while left[node] != -1:
        x = X[row, feature[node]]
        if x <= threshold[node]:
            node = left[node]
        elif x > threshold[node]:
            node = right[node]
        elif missing_left[node]:  # neither comparison holds: x is NaN
            node = left[node]
        else:
            node = right[node]
    return node


_find_leaf_cpu = numba.njit(find_leaf, nogil=True, cache=True)


@numba.njit(parallel=True, nogil=True, cache=True)
def _apply_cpu(X, feature, threshold, left, right, missing_left, out):
    for row in numba.prange(X.shape[0]):
        out[row] = _find_leaf_cpu(X, row, feature, threshold, left, right, missing_left)


def _traversal_input(tree, X: Any) -> np.ndarray:
    dtype = np.float32 if getattr(X, "dtype", None) == np.float32 else np.float64
    return check_X(X, dtype=dtype, allow_nan=True, n_features=tree.n_features, min_samples=0)


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
    X = _traversal_input(tree, X)
    out = np.empty(X.shape[0], dtype=np.int32)
    if X.shape[0]:
        _apply_cpu(X, tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left, out)
    return out


def apply_reference(tree, X: Any) -> np.ndarray:
    """Plain-Python traversal, the readable reference the kernels are tested against."""
    X = _traversal_input(tree, X)
    out = np.empty(X.shape[0], dtype=np.int32)
    for row in range(X.shape[0]):
        out[row] = find_leaf(X, row, tree.feature, tree.threshold, tree.left, tree.right, tree.missing_left)
    return out
