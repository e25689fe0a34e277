"""GDT's evaluators for CSR data: batched CPU (threads, or CPU workers as devices) and CUDA, never densified.

:func:`make_evaluator` hands a sparse ``X`` here (:func:`sparse_evaluator`).
Each evaluator gives the statistics of the dense evaluators on ``X.toarray()``
bit for bit (``tests/evolution/test_gdt_sparse.py``), hence the same fitted
tree on every backend and device count:

* ``backend="cpu"``, ``n_devices=None``: :class:`SparseCpuEvaluator`, the
  kernel of :mod:`._fitness_sparse_cpu` over row blocks on numba's threads;
* ``n_devices=k`` (CPU workers) and ``backend="cuda"``: the device pool of
  :mod:`.devices` with CSR row shards (a row slice of a CSR matrix is a slice
  of its arrays: cheap), :class:`SparseCpuShard` / the CUDA shard of
  :mod:`._fitness_sparse_cuda`;
* ``evaluator="reference"``: the NumPy reference on the dense matrix (it is
  the plain reference the kernels are tested against, not a fast path);
* the Dask executor: not offered for sparse input (a clear error).

These evaluators have no ``serial_data``, so the evolutionary loop takes its
per-phase path (breeding, then evaluation) rather than :mod:`..fused`'s one
compiled call per generation, whose evaluation reads a dense transposed matrix.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from ...trees import PackedForest
from .._sparse import check_gdt_X, csr_arrays
from ._fitness_sparse_cpu import _evaluate_csr_parallel, _evaluate_csr_serial, block_rows
from .base import PHASES, BatchWork, LeafStats
from .cuda import CudaEvaluator
from .devices import PoolEvaluator, PoolOrOwnKernels

#: Read a row's values through a dense per-thread row buffer (True) rather than by binary search; see
#: :mod:`._fitness_sparse_cpu`.
SCATTER = True

#: Rows below which splitting the rows over threads costs more than it gains (as :mod:`.cpu`'s).
ROWS_PER_BLOCK = 8 * 1024


def check_sparse_data(X, y, n_classes: int):
    """An evaluator's CSR data: :func:`~dtlab.evolution._sparse.check_gdt_X` and int32 codes ``y`` in range."""
    from ..._validation import check_y

    X = check_gdt_X(X)
    y = check_y(y, X.shape[0])
    if y.dtype.kind not in "iu" or (y.size and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"y must hold integer class codes in [0, {n_classes})")
    return X, np.ascontiguousarray(y, dtype=np.int32)


def evaluate_csr(X, y, row_offset: int, work: BatchWork, n_classes: int, n_blocks: int = 1,
                 scatter: bool = SCATTER, rows_per_block: int | None = None) -> LeafStats:
    """Statistics of every leaf of ``work.forest`` over the rows of canonical CSR ``X``.

    Global row ids start at ``row_offset``; ``n_blocks`` row blocks (numba threads when more than one); values
    read as ``scatter`` says, in dense blocks of ``rows_per_block`` rows (default
    :func:`._fitness_sparse_cpu.block_rows`).
    """
    forest, m = work.forest, work.masks
    stats = LeafStats.empty(forest.n_nodes, n_classes)
    kernel = _evaluate_csr_serial if n_blocks == 1 else _evaluate_csr_parallel
    kernel(csr_arrays(X), y, np.int64(0), np.int64(X.shape[0]), np.int64(row_offset), work.seed, scatter,
           np.int64(X.shape[1]), np.int64(rows_per_block or block_rows(X.shape[1])), forest.node_offset,
           forest.feature, forest.threshold, forest.left, forest.right, forest.missing_left, work.salts, m.masked,
           m.test_offset, m.test_feature, m.test_threshold, m.test_mask, m.leaf_offset, m.leaf_node,
           np.int64(n_blocks), stats.counts, stats.cand_hash, stats.cand_row)
    return stats


class SparseCpuShard:
    """A CPU worker's CSR shard, evaluated on one thread (the sparse :class:`~.devices.CpuShard`)."""

    kind = "cpu"

    def __init__(self, X, y: np.ndarray, start: int, n_classes: int):
        self.X, self.y = X, np.ascontiguousarray(y, dtype=np.int32)
        self.start, self.n_rows, self.n_classes = int(start), int(X.shape[0]), int(n_classes)

    def evaluate(self, work: BatchWork) -> tuple[LeafStats, dict[str, float]]:
        start = time.perf_counter()
        stats = evaluate_csr(self.X, self.y, self.start, work, self.n_classes)
        return stats, {"transfer": 0.0, "kernel": time.perf_counter() - start}

    def close(self) -> None:
        self.X = self.y = None


class _SparseRows:
    """What a device pool needs changed for CSR data: the check, the host's rows, the bytes a shard takes."""

    def _check_data(self, X, y, n_classes: int):
        return check_sparse_data(X, y, n_classes)

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        return self._X[np.asarray(row_ids)].toarray().astype(np.float64)

    @staticmethod
    def _row_bytes(X) -> int:
        """Bytes per row of a CSR shard on average (values, column indices, row pointer, label)."""
        return int(-(-(X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) // max(X.shape[0], 1))) + 4


class SparsePoolEvaluator(_SparseRows, PoolEvaluator):
    """CPU workers as devices over CSR row shards (``backend="cpu"``, ``n_devices=k``)."""

    def _make_shard(self, i: int, X, y: np.ndarray):
        a, b = self.bounds[i]
        return SparseCpuShard(X[a:b], y[a:b], a, self.n_classes)


class SparseCudaEvaluator(_SparseRows, CudaEvaluator):
    """GPUs (simulated devices under numba's simulator) over CSR row shards (``backend="cuda"``)."""

    def _make_shard(self, i: int, X, y: np.ndarray):
        from ._fitness_sparse_cuda import SparseCudaShard

        a, b = self.bounds[i]
        return SparseCudaShard(X[a:b], y[a:b], a, self.n_classes, device=0 if self._backend.simulated else i,
                               threads_per_block=self._options["threads_per_block"])


class SparseCpuEvaluator(PoolOrOwnKernels):
    """The batched CPU evaluator on CSR data: row blocks over numba's threads, or CPU workers with ``n_devices``.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (n_samples, n_features), finite values
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : int or None
        CPU workers over CSR row shards (one thread each); None for numba's threads on the one CSR matrix.
    """

    def __init__(self, X, y: np.ndarray, n_classes: int, n_devices: int | None = None):
        if n_devices is not None:
            self._adopt(SparsePoolEvaluator(X, y, n_classes, n_devices))
            return
        self.X, self.y = check_sparse_data(X, y, n_classes)
        self.n_samples, self.n_features = self.X.shape
        self.n_classes, self.n_devices = int(n_classes), 1
        self.timings = dict.fromkeys(PHASES, 0.0)

    def evaluate(self, forest: PackedForest, seed: int) -> LeafStats:
        if self._pool is not None:
            return self._pool.evaluate(forest, seed)
        start = time.perf_counter()
        work = BatchWork.prepare(forest, seed, self.n_features, self.X.dtype)
        prepared = time.perf_counter()
        threads = numba.get_num_threads()
        n_blocks = 1 if threads == 1 else max(1, min(threads * 2, self.n_samples // ROWS_PER_BLOCK))
        stats = evaluate_csr(self.X, self.y, 0, work, self.n_classes, n_blocks)
        self.timings["prepare"] += prepared - start
        self.timings["kernel"] += time.perf_counter() - prepared
        return stats

    def rows(self, row_ids: np.ndarray) -> np.ndarray:
        if self._pool is not None:
            return self._pool.rows(row_ids)
        return self.X[np.asarray(row_ids)].toarray().astype(np.float64)


def sparse_evaluator(key: tuple[str, str], X, y, n_classes: int, n_devices: int | None = None, executor="local"):
    """The evaluator of ``key = (backend, variant)`` for a sparse ``X`` run by ``executor`` (see the module docstring).

    Raises
    ------
    ValueError
        The Dask executor, or a backend without a sparse evaluator.
    """
    from ...distributed.executors import check_executor

    if check_executor(executor) != "local":
        raise ValueError("GDT on scipy.sparse input runs with executor='local' (threads, CPU workers or GPUs); the "
                         "Dask executor takes dense arrays: pass X.toarray() for a Dask run")
    backend, variant = key
    if variant == "reference":
        from .reference import NumpyEvaluator

        return NumpyEvaluator(check_gdt_X(X).toarray(), y, n_classes, n_devices=n_devices)  # the plain reference
    if backend == "cpu":
        return SparseCpuEvaluator(X, y, n_classes, n_devices)
    if backend == "cuda":
        return SparseCudaEvaluator(X, y, n_classes, n_devices)
    raise ValueError(f"no GDT evaluator for scipy.sparse input on backend={backend!r}; use 'cpu' or 'cuda'")
