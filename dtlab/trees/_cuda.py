"""CUDA kernel of :func:`dtlab.trees.leaves.apply`: one thread per row, the shared walk as a device function.

Imported lazily (only when the cuda backend is used) so that the package
imports without numba.cuda.  Runs under numba's CUDA simulator too.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .._validation import check_tree_input
from .walk import cuda_walks

_find_leaf_gpu = cuda_walks()["find_leaf"]

THREADS_PER_BLOCK = 256


@cuda.jit
def _apply_kernel(X, feature, threshold, left, right, missing_left, out):
    row = cuda.grid(1)
    if row < X.shape[0]:
        out[row] = _find_leaf_gpu(X, row, 0, feature, threshold, left, right, missing_left)


def apply_cuda(tree, X, backend) -> np.ndarray:
    """Leaf index per row computed on the GPU; returns a host int32 array."""
    xp = backend.xp
    if backend.simulated or isinstance(X, np.ndarray) or not hasattr(X, "__cuda_array_interface__"):
        X_host = check_tree_input(backend.to_host(X), tree.n_features)
        backend.check_fits(X_host.nbytes, "the rows to traverse")
        X_dev = xp.asarray(X_host)
    else:  # already a device array: validate shape and finiteness on the device
        if X.ndim != 2 or X.shape[1] != tree.n_features:
            raise ValueError(f"X must have shape (n_samples, {tree.n_features}), got {X.shape}")
        X_dev = X if X.dtype in (xp.float32, xp.float64) else X.astype(xp.float64)
        if bool(xp.isinf(X_dev).any()):
            raise ValueError("X contains inf; only finite values (and NaN for missing) are allowed")
    n = X_dev.shape[0]
    out = xp.empty(n, dtype=np.int32)
    if n:
        arrays = [xp.asarray(a) for a in (tree.feature, tree.threshold, tree.left, tree.right,
                                          tree.missing_left)]
        blocks = (n + THREADS_PER_BLOCK - 1) // THREADS_PER_BLOCK
        _apply_kernel[blocks, THREADS_PER_BLOCK](X_dev, *arrays, out)
    return backend.to_host(out)
