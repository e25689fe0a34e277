"""CUDA kernel of GDT's fitness evaluation on CSR data: ``fitness_pre_csr``, then the dense ``fitness_post``.

``fitness_pre_csr``, grid ``(n_row_blocks, n_trees)``: as the dense
``fitness_pre`` of :mod:`._fitness_cuda`, one thread per row (rows ``bx * tpb + tid,
+ n_row_blocks * tpb, ...``) walks tree ``t`` from its root to a leaf, reading
each tested value from the row's CSR entries by binary search in its sorted
column indices (:func:`dtlab.evolution._sparse.csr_value`: 0.0 when absent; a
GPU thread has no room for a dense row), and records the row in the block's
region of the global partial statistics: a count (``atomic.add``) and the two
smallest draw hashes (two atomic minima, skipped when the hash is not below
the current second smallest, as in the dense kernel).  The partial arrays are
filled with zeros and :data:`~.draws.EMPTY_HASH` by the host before the launch;
the dense ``fitness_post`` reduces them and recovers the rows from the hashes.
The draw is the dense kernels', so the statistics are the CPU's bit for bit.

Imported lazily (by a shard's factory): this module imports numba.cuda.
"""

from __future__ import annotations

import functools
import time

import numpy as np
from numba import cuda

from ..._hashing import splitmix64
from ..._jit import compile_functions
from ...gpu.kernels import declare_kernel, variants
from ...gpu.launch import chunks, launch, limits
from ...gpu.model import SECTOR, Work
from .._sparse import compile_csr_walks, csr_arrays
from ._fitness_cuda import SHARED_SLOTS, SIMULATOR_THREADS_PER_BLOCK, THREADS_PER_BLOCK, kernels, use_device
from .base import BatchWork, LeafStats
from .draws import EMPTY_HASH


@functools.lru_cache(maxsize=1)
def csr_kernel():
    """Compile ``fitness_pre_csr`` (its block size is a launch parameter: no shared memory)."""
    device = cuda.jit(device=True)
    mix = compile_functions([splitmix64], device)["splitmix64"]
    walk = compile_csr_walks(device)["find_leaf"]

    @cuda.jit
    def fitness_pre_csr(indptr, indices, data, y, n_rows, row_offset, seed, tree_offset, node_offset, feature,
                        threshold, left, right, missing_left, salt, part_counts, part_min1, part_min2):
        t = cuda.blockIdx.y + tree_offset
        bx = cuda.blockIdx.x
        base = node_offset[t]
        salt_t = salt[t]
        X = (indptr, indices, data)
        for row in range(cuda.grid(1), n_rows, cuda.gridDim.x * cuda.blockDim.x):
            leaf = walk(X, row, base, feature, threshold, left, right, missing_left)
            c = y[row]
            h = mix(seed ^ np.uint64(row_offset + row)) ^ salt_t
            cuda.atomic.add(part_counts, (bx, leaf, c), 1)
            if h < part_min2[bx, leaf, c]:  # else neither minimum can change: skip two compare-and-swap loops
                old = cuda.atomic.min(part_min1, (bx, leaf, c), h)
                cuda.atomic.min(part_min2, (bx, leaf, c), old if old > h else h)

    return fitness_pre_csr


class SparseCudaShard:
    """One GPU's CSR shard (cupy arrays; NumPy under the simulator) and the launches of one evaluation.

    Parameters
    ----------
    X : canonical CSR matrix of shape (n_rows, n_features) (:func:`~dtlab.evolution._sparse.check_gdt_X`)
    y : ndarray of shape (n_rows,), int32
    start : int
        Global id of the shard's first row.
    n_classes : int
    device : int
    threads_per_block : int or None
    """

    kind = "cuda"
    leaf_search = "walk"

    def __init__(self, X, y: np.ndarray, start: int, n_classes: int, device: int = 0,
                 threads_per_block: int | None = None):
        backend = use_device(device)
        self.simulated = backend.simulated
        self.xp = backend.xp
        self.start, self.n_rows, self.n_classes = int(start), int(X.shape[0]), int(n_classes)
        self.tpb = threads_per_block or (SIMULATOR_THREADS_PER_BLOCK if self.simulated else THREADS_PER_BLOCK)
        self._pre = csr_kernel()
        self._post = kernels(self.tpb, SHARED_SLOTS)[1]
        self._blocks_wanted = 2 if self.simulated else 8 * cuda.get_current_device().MULTIPROCESSOR_COUNT
        # no zero-size kernel arguments (a shard of rows without stored entries)
        indptr, indices, data = csr_arrays(X)
        if not indices.size:
            indices, data = np.zeros(1, indices.dtype), np.zeros(1, data.dtype)
        self.csr = tuple(self.xp.asarray(a) for a in (indptr, indices, data))
        self.y = self.xp.asarray(np.ascontiguousarray(y, dtype=np.int32))

    def _sync(self) -> None:
        if not self.simulated:
            cuda.synchronize()

    def evaluate(self, work: BatchWork) -> tuple[LeafStats, dict[str, float]]:
        """Partial statistics of the shard's rows and ``{"transfer": s, "kernel": s}``."""
        start = time.perf_counter()
        xp, f = self.xp, work.forest
        n_nodes, n_classes = f.n_nodes, self.n_classes
        d = {name: xp.asarray(np.ascontiguousarray(a)) for name, a in (
            ("node_offset", f.node_offset), ("feature", f.feature), ("threshold", f.threshold), ("left", f.left),
            ("right", f.right), ("missing_left", f.missing_left), ("salt", work.salts),
            ("node_salt", np.repeat(work.salts, np.diff(f.node_offset))))}
        n_row_blocks = int(max(1, min(-(-self.n_rows // self.tpb), -(-self._blocks_wanted // f.n_trees))))
        shape = (n_row_blocks, n_nodes, n_classes)
        parts = (xp.zeros(shape, np.int32), xp.full(shape, EMPTY_HASH, np.uint64),
                 xp.full(shape, EMPTY_HASH, np.uint64))
        counts = xp.empty((n_nodes, n_classes), np.int64)
        cand_hash = xp.empty((n_nodes, n_classes, 2), np.uint64)
        cand_row = xp.empty((n_nodes, n_classes, 2), np.int64)
        self._sync()
        sent = time.perf_counter()
        for t0, n_trees in chunks(f.n_trees, limits().max_grid[1]):
            launch(self._pre, (n_row_blocks, n_trees), self.tpb, *self.csr, self.y, np.int64(self.n_rows),
                   np.int64(self.start), np.uint64(work.seed), np.int64(t0), d["node_offset"], d["feature"],
                   d["threshold"], d["left"], d["right"], d["missing_left"], d["salt"], *parts)
        launch(self._post, -(-(n_nodes * n_classes) // self.tpb), self.tpb, *parts, d["node_salt"],
               np.uint64(work.seed), counts, cand_hash, cand_row)
        self._sync()
        computed = time.perf_counter()
        stats = LeafStats(*(np.asarray(a.get() if hasattr(a, "get") else a) for a in (counts, cand_hash, cand_row)))
        return stats, {"transfer": (sent - start) + (time.perf_counter() - computed), "kernel": computed - sent}

    def close(self) -> None:
        self.csr = self.y = None


def _pre_csr_work(launch) -> Work:
    n_rows, trees = launch.shapes[4], launch.grid[1]
    nnz = launch.shapes[1][0]
    n_nodes = launch.shapes[-1][1]
    depth = max(np.log2(max(n_nodes / max(launch.shapes[8][0] - 1, 1), 1.0)), 1.0)
    search = max(np.log2(max(nnz / max(n_rows, 1), 1.0)), 1.0) + 1  # reads of one binary search in a row
    # per (row, tree) and test: a search's reads of indices (a sector each once the lanes part), the value
    return Work(bytes=n_rows * trees * (depth * (search + 1) * SECTOR + 4 + 16),
                ops=n_rows * trees * (depth * (search * 4 + 10) + 40))


FITNESS_PRE_CSR = declare_kernel(
    "evolution.fitness_pre_csr", build=csr_kernel, blocks=(THREADS_PER_BLOCK,), model=_pre_csr_work,
    summary="a block per (rows, tree): each CSR row to its leaf by binary searches, counts and two smallest "
    "hashes per (leaf, class) in the block's global region",
    signatures=variants("void(int64[::1], int32[::1], {X}[::1], int32[::1], int64, int64, uint64, int64, int64[::1], "
                        "int32[::1], float64[::1], int32[::1], int32[::1], bool[::1], uint64[::1], "
                        "int32[:, :, ::1], uint64[:, :, ::1], uint64[:, :, ::1])", X=("float32", "float64")))
