"""The host side of CUDA inference: a forest's device layouts kept on the GPU, the launches, ``method="auto"``.

A :class:`~dtlab.inference.Forest` builds each layout once (host arrays); the
first CUDA prediction copies the arrays a method needs to the current device
and keeps them in ``forest._device_layouts`` (per method, dtype and device),
so later predictions copy only their rows.  Every launch goes through
:func:`dtlab.gpu.launch.launch` (the device's limits, the declared kernels of
:mod:`._predict_cuda`).

``method="auto"`` on a GPU times each method the forest's shape allows on
:data:`CUDA_CALIBRATION_ROWS` rows resident on the device (after a warm-up
that compiles and uploads), keeps the fastest and caches the choice per shape
key and device, as the CPU's calibration does (:mod:`.auto`).  Under numba's
simulator timings measure Python, not a GPU: there ``auto`` is the rule
"traversal" (every forest has it), said here and in :meth:`Forest.predict`.
Imported lazily (only for ``backend="cuda"``).
"""

from __future__ import annotations

import time

import numpy as np

from ..gpu.launch import chunks, grid_for, launch, limits
from . import _predict_cuda as K

#: Rows the GPU calibration of ``method="auto"`` times each method on.
CUDA_CALIBRATION_ROWS = 1 << 16
#: Methods ``auto`` chooses among on a GPU.
CUDA_CANDIDATES = ("traversal", "bitmask", "quickscorer")


def _device_id(xp) -> int:
    return int(xp.cuda.Device().id) if hasattr(xp, "cuda") else 0


def _upload(a: np.ndarray, xp):
    a = np.ascontiguousarray(a)
    if a.size == 0:  # no zero-size kernel arguments: a placeholder element the kernel never reads
        a = np.zeros((1,) + a.shape[1:] if a.ndim > 1 else 1, a.dtype)
    return xp.asarray(a)


def device_layout(forest, method: str, dtype, xp) -> tuple:
    """The device arrays of ``method``'s layout, copied to the current device once per forest."""
    key = (method, np.dtype(dtype).name, _device_id(xp))
    cache = forest._device_layouts
    if key not in cache:
        if method == "traversal":
            lay = forest.layout("traversal", dtype)
            arrays = (lay.root, lay.depth, lay.child, lay.feature, lay.threshold, lay.nan_right, lay.value)
        elif method == "bitmask":
            lay = forest.layout("bitmask", dtype)
            node_level = np.repeat(np.arange(lay.level_node.shape[0] - 1), np.diff(lay.level_node)).astype(np.int32)
            as32 = [np.ascontiguousarray(a).view(np.uint32) for a in (lay.base, lay.id_left, lay.id_right)]
            arrays = (lay.tree_level, lay.level_node, node_level, as32[0], lay.feature, lay.threshold,
                      lay.nan_right, as32[1], as32[2], lay.leaf_offset, lay.leaf_value)
        elif method == "quickscorer":
            lay = forest.layout("quickscorer_runs", dtype)
            arrays = (lay.tree_run, lay.run_feature, lay.run_test, lay.threshold, lay.nan_right,
                      np.asarray(lay.lo, np.int32), np.asarray(lay.count, np.int32), lay.leaf_offset, lay.leaf_value)
        else:
            raise ValueError(f"method {method!r} has no CUDA kernel; on cuda use 'traversal', 'bitmask' or "
                             "'quickscorer'")
        cache[key] = tuple(_upload(a, xp) for a in arrays) + (_upload(forest.ensemble.tree_column, xp),)
    return cache[key]


def _rows(X: np.ndarray, xp, column_major: bool):
    """X on the device; transposed there (one read and one write of X) for the one-thread-per-row kernels."""
    Xd = xp.asarray(X)
    return xp.ascontiguousarray(Xd.T) if column_major else Xd


def check_method(forest, method: str, dtype) -> None:
    """ValueError when the forest is beyond what ``method``'s CUDA kernel takes."""
    if method == "bitmask":
        lay = forest.layout("bitmask", dtype)
        if lay.n_words > K.MAX_WORDS or np.diff(lay.tree_level).max() > K.MAX_LEVELS:
            raise ValueError(f"the CUDA bitmask kernel takes trees of depth <= {K.MAX_LEVELS} and <= "
                             f"{64 * K.MAX_WORDS} leaves; use method='traversal'")
    elif method == "quickscorer":
        lay = forest.layout("quickscorer_runs", dtype)
        if lay.n_words > K.MAX_WORDS:
            raise ValueError(f"the CUDA quickscorer kernel takes trees of <= {64 * K.MAX_WORDS} leaves "
                             f"(MAX_WORDS = {K.MAX_WORDS} words of 64 bits); this forest has a tree of "
                             f"{int(np.diff(lay.leaf_offset).max())} leaves; use method='traversal'")


def bitmask_leaves_cuda(forest, X: np.ndarray, assignment: str, backend, nodes_per_thread: int = 1):
    """In-order leaf per (row, tree) by the per-block bitmask kernel: a device array (n_samples, n_trees) int32
    (a view of the kernel's (n_trees, n_samples) output)."""
    xp = backend.xp
    check_method(forest, "bitmask", X.dtype)
    if assignment not in ("node", "nodes", "level"):
        raise ValueError(f"assignment must be 'node', 'nodes' or 'level', got {assignment!r}")
    (tree_level, level_node, node_level, base, feature, threshold, nan_right, id_left, id_right, *_) = \
        device_layout(forest, "bitmask", X.dtype, xp)
    lay = forest.layout("bitmask", X.dtype)
    if assignment == "level":
        threads = int(np.diff(lay.tree_level).max())
    else:
        n_tests = np.diff(lay.level_node[lay.tree_level]).max()
        threads = int(-(-n_tests // (1 if assignment == "node" else max(nodes_per_thread, 2))))
    threads = max(32, min(K.MAX_BITMASK_THREADS, -(-threads // 32) * 32))
    n = X.shape[0]
    leaves = xp.zeros((forest.n_trees, n), np.int32)
    if n == 0:
        return leaves.T
    Xd = _rows(X, xp, column_major=False)
    groups = grid_for(-(-n // K.ROWS_PER_BLOCK), 1)
    for t0, count in chunks(forest.n_trees, limits().max_grid[1]):
        launch(K._bitmask_kernel, (groups, count), threads, Xd, t0, tree_level, level_node, node_level, base,
               feature, threshold, nan_right, id_left, id_right, assignment == "level", leaves)
    return leaves.T


def predict_cuda(forest, X: np.ndarray, method: str, backend, assignment: str = "node") -> np.ndarray:
    """Summed leaf values (n_samples, n_outputs) float64 on the host, computed on the GPU (X prepared)."""
    xp = backend.xp
    ens = forest.ensemble
    backend.check_fits(X.nbytes * 2, "the rows to predict")
    out = xp.zeros((X.shape[0], ens.n_outputs), np.float64)
    if X.shape[0] == 0:
        return backend.to_host(out)
    check_method(forest, method, X.dtype)
    grid = (grid_for(X.shape[0], K.THREADS_PER_BLOCK), -(-ens.n_outputs // K.OUT_CHUNK))
    if method == "traversal":
        launch(K._traverse_kernel, grid, K.THREADS_PER_BLOCK, _rows(X, xp, True),
               *device_layout(forest, "traversal", X.dtype, xp), out)
    elif method == "bitmask":
        leaves = bitmask_leaves_cuda(forest, X, assignment, backend).T
        *_, leaf_offset, leaf_value, tree_column = device_layout(forest, "bitmask", X.dtype, xp)
        launch(K._sum_leaves_kernel, grid, K.THREADS_PER_BLOCK, leaves, leaf_offset, leaf_value, tree_column, out)
    else:
        launch(K._quickscorer_kernel, grid, K.THREADS_PER_BLOCK, _rows(X, xp, True),
               *device_layout(forest, "quickscorer", X.dtype, xp), out)
    return backend.to_host(out)


def _supported(forest, dtype) -> list[str]:
    ok = []
    for method in CUDA_CANDIDATES:
        try:
            check_method(forest, method, dtype)
            ok.append(method)
        except ValueError:
            pass
    return ok


def choose_cuda(forest, dtype, backend, n_rows: int = CUDA_CALIBRATION_ROWS, repeats: int = 3) -> str:
    """``method="auto"`` on the cuda backend (see the module docstring): measured on a GPU, "traversal" in the
    simulator; cached per shape key and device in :data:`dtlab.inference.auto.CACHE`."""
    if backend.simulated:
        return "traversal"
    from numba import cuda

    from . import auto

    key = auto.shape_key(forest, dtype) + ("cuda", _device_id(backend.xp))
    if key not in auto.CACHE:
        X = auto.calibration_rows(forest, dtype, n_rows)
        seconds = {}
        for method in _supported(forest, dtype):
            predict_cuda(forest, X[:256], method, backend)  # compiles, uploads the layout
            times = []
            for _ in range(repeats):
                cuda.synchronize()
                start = time.perf_counter()
                predict_cuda(forest, X, method, backend)  # ends with the copy to the host: synchronised
                times.append(time.perf_counter() - start)
            seconds[method] = float(np.median(times))
        auto.CACHE[key] = min(seconds, key=seconds.get)
    return auto.CACHE[key]
