"""CUDA kernel of :func:`dtlab.trees.leaves.apply`: one thread per row, the shared walk as a device function.

Imported lazily (only when the cuda backend is used) so that the package
imports without numba.cuda.  Runs under numba's CUDA simulator too.

The kernel reads a column-major copy of X made on the device (the walk's
``find_leaf_columns`` variant, ``Xt[feature, row]``): the threads of a warp
testing the same node read consecutive addresses, where row-major X would cost
a 32-byte sector per thread.  The same comparisons, so the same leaves.
Rows beyond the grid's limit are covered by a grid-stride loop.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from .._validation import check_tree_input
from ..gpu.kernels import declare_kernel, variants
from ..gpu.launch import grid_for, launch
from ..gpu.model import Work
from .walk import cuda_walks

_find_leaf_gpu = cuda_walks()["find_leaf_columns"]

THREADS_PER_BLOCK = 256


@cuda.jit
def _apply_kernel(Xt, feature, threshold, left, right, missing_left, out):
    for row in range(cuda.grid(1), Xt.shape[1], cuda.gridsize(1)):
        out[row] = _find_leaf_gpu(Xt, row, 0, feature, threshold, left, right, missing_left)


def _apply_work(launch) -> Work:
    from ..backend import to_host

    n = launch.shapes[0][1]
    left = to_host(launch.args[3]) if launch.args else None
    depth = float(np.log2(max((left == -1).sum(), 2))) if left is not None else 10.0  # a balanced tree's depth
    itemsize = 4 if "float32" in launch.types[0] else 8
    return Work(bytes=n * depth * (itemsize + 4) + 4 * n, ops=n * depth * 10)


APPLY = declare_kernel(
    "trees.apply", build=lambda: _apply_kernel, blocks=(THREADS_PER_BLOCK,), model=_apply_work,
    summary="a thread per row walks one tree (column-major X)",
    signatures=variants("void({X}[:, ::1], int32[::1], float64[::1], int32[::1], int32[::1], bool[::1], "
                        "int32[::1])", X=("float32", "float64")))


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
        Xt = xp.ascontiguousarray(X_dev.T)  # on the device: one read and one write of X
        launch(_apply_kernel, grid_for(n, THREADS_PER_BLOCK), THREADS_PER_BLOCK, Xt, *arrays, out)
    return backend.to_host(out)
