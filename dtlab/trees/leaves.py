"""Which leaf each row of X reaches in one tree: :func:`apply`, on the CPU or CUDA, and its reference.

The walk is :func:`dtlab.trees.walk.find_leaf` (one row, root to leaf),
compiled with ``numba.njit`` and called from a ``prange`` loop over rows in
:mod:`dtlab.trees._apply_cpu`, and as a CUDA device function from a
one-thread-per-row kernel in :mod:`dtlab.trees._apply_cuda`.  Both give the same leaf
bit for bit.  ``apply_reference`` runs the same plain function uncompiled.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_tree_input
from ..backend import resolve_backend
from . import walk
from ._apply_cpu import _apply_cpu


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
        from ._apply_cuda import apply_cuda

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
