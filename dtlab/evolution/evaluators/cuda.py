"""The CUDA evaluator: shards of the training data kept on GPUs for the whole run, one host thread per GPU.

Each GPU of the device pool (:mod:`.pool`) holds its shard as one contiguous
array per attribute (``Xt``, shape (n_features, n_rows): consecutive threads
read consecutive values, coalesced) and the labels, copied once.  Per
generation only the packed individuals go down and the statistics come back:
the host prepares one :class:`~dtlab.evolution.evaluators.base.BatchWork`,
each GPU runs ``fitness_pre`` over all the batch's trees in one launch and
``fitness_post`` (:mod:`._cuda`), and the host merges the GPUs' partial
statistics exactly.  Statistics are bit for bit the CPU evaluator's.

Where it runs: on a real GPU the arrays are cupy arrays (numba.cuda kernels
take them through ``__cuda_array_interface__``); under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``, ``Backend.xp`` is numpy) they are NumPy arrays,
and up to :data:`SIMULATED_DEVICES` simulated devices share the simulated GPU,
one launch at a time, so the multi-device logic is tested without hardware.

Leaf search: trees of at most 64 leaves can find their leaves with the leaf
bitmasks of :mod:`dtlab.trees.bitmask` instead of the walk.  ``leaf_search=
"auto"`` times both on the first batch on a real GPU and keeps the faster
(the simulator keeps the walk: it proves logic, not speed).

Nothing here imports numba.cuda or cupy at import time; a shard imports them
when it is built.
"""

from __future__ import annotations

import time

import numpy as np

from ...backend import resolve_backend
from ...distributed import plan_shards
from .base import BatchWork, LeafStats
from .pool import PoolEvaluator

#: Devices the CUDA simulator offers (shards sharing the one simulated GPU).
SIMULATED_DEVICES = 4

#: Device memory a GPU needs besides its shard (batch, partial statistics, results), reserved when planning.
WORK_BYTES = 256 * 2**20

LEAF_SEARCHES = ("auto", "walk", "bitmask")


def gpu_free_bytes(n_present: int) -> list[int]:
    """Free memory of each GPU (cupy's ``mem_info``), in device order."""
    import cupy

    free = []
    for i in range(n_present):
        with cupy.cuda.Device(i):
            free.append(int(cupy.cuda.runtime.memGetInfo()[0]))
    return free


class CudaShard:
    """One GPU's shard (cupy arrays; NumPy under the simulator) and the launches of one evaluation.

    Parameters
    ----------
    Xt : ndarray of shape (n_features, n_rows), float32 or float64
    y : ndarray of shape (n_rows,), int32
    start : int
        Global id of the shard's first row.
    n_classes : int
    device : int
        CUDA device ordinal (made current on the calling thread).
    leaf_search : {"auto", "walk", "bitmask"}
    threads_per_block, shared_slots : int or None
        Defaults: :data:`._cuda.THREADS_PER_BLOCK` / ``SHARED_SLOTS`` on a GPU, the ``SIMULATOR_*`` values
        in the simulator.
    """

    kind = "cuda"

    def __init__(self, Xt: np.ndarray, y: np.ndarray, start: int, n_classes: int, device: int = 0,
                 leaf_search: str = "auto", threads_per_block: int | None = None, shared_slots: int | None = None):
        from numba import cuda

        from . import _cuda

        backend = resolve_backend("cuda")
        self.simulated = backend.simulated
        if not self.simulated:
            import cupy

            cuda.select_device(device)
            cupy.cuda.Device(device).use()
        self.xp = backend.xp
        self.device = device
        self.start, self.n_rows, self.n_classes = int(start), int(len(y)), int(n_classes)
        self.tpb = threads_per_block or (_cuda.SIMULATOR_THREADS_PER_BLOCK if self.simulated
                                         else _cuda.THREADS_PER_BLOCK)
        slots = shared_slots or (_cuda.SIMULATOR_SHARED_SLOTS if self.simulated else _cuda.SHARED_SLOTS)
        self._pre, self._post = _cuda.kernels(self.tpb, slots)
        self._cuda = cuda
        # wanted blocks in flight: a few per multiprocessor (2 in the simulator, to exercise the reduction)
        self._blocks_wanted = 2 if self.simulated else 8 * cuda.get_current_device().MULTIPROCESSOR_COUNT
        self.Xt = self.xp.asarray(np.ascontiguousarray(Xt))
        self.y = self.xp.asarray(np.ascontiguousarray(y, dtype=np.int32))
        self.leaf_search = leaf_search
        #: Seconds of fitness_pre with each leaf search when "auto" chose on a GPU (empty otherwise).
        self.leaf_search_seconds: dict[str, float] = {}

    def _sync(self) -> None:
        if not self.simulated:
            self._cuda.synchronize()

    def _to_device(self, work: BatchWork) -> dict:
        f, m, xp = work.forest, work.masks, self.xp
        node_salt = np.repeat(work.salts, np.diff(f.node_offset))

        def dev(a, dtype=None):
            a = np.ascontiguousarray(a, dtype=dtype)
            return xp.asarray(a if a.size else np.zeros(1, a.dtype))  # no zero-size kernel arguments

        return {"node_offset": dev(f.node_offset), "feature": dev(f.feature),
                "threshold": dev(work.threshold, self.Xt.dtype), "left": dev(f.left), "right": dev(f.right),
                "missing_left": dev(f.missing_left), "salt": dev(work.salts), "node_salt": dev(node_salt),
                "masked": dev(m.masked), "test_offset": dev(m.test_offset), "test_feature": dev(m.test_feature),
                "test_threshold": dev(m.test_threshold, self.Xt.dtype), "test_mask": dev(m.test_mask),
                "leaf_offset": dev(m.leaf_offset), "leaf_node": dev(m.leaf_node)}

    def _fitness_pre(self, d: dict, work: BatchWork, use_masks: bool, parts: tuple) -> None:
        self._pre[(parts[0].shape[0], work.forest.n_trees), self.tpb](
            self.Xt, self.y, np.int64(self.n_rows), np.int64(self.start), work.seed, d["node_offset"], d["feature"],
            d["threshold"], d["left"], d["right"], d["missing_left"], d["salt"], use_masks, d["masked"],
            d["test_offset"], d["test_feature"], d["test_threshold"], d["test_mask"], d["leaf_offset"],
            d["leaf_node"], *parts)

    def _parts(self, work: BatchWork) -> tuple:
        """The blocks' partial statistics (each block initialises its own region): a grid row per block."""
        n_trees, n_nodes = work.forest.n_trees, work.forest.n_nodes
        n_row_blocks = int(max(1, min(-(-self.n_rows // self.tpb), -(-self._blocks_wanted // n_trees))))
        shape = (n_row_blocks, n_nodes, self.n_classes)
        return (self.xp.empty(shape, np.int32), self.xp.empty(shape, np.uint64), self.xp.empty(shape, np.uint64))

    def _choose_leaf_search(self, d: dict, work: BatchWork, parts: tuple) -> bool:
        """Whether to use the bitmasks: fixed by ``leaf_search``, or timed once on the first batch (GPU, "auto")."""
        if self.leaf_search != "auto":
            return self.leaf_search == "bitmask"
        if self.simulated or not work.masks.masked.any():
            return False
        for use in (False, True):  # warm-up: compilation of the launch
            self._fitness_pre(d, work, use, parts)
        self._sync()
        for name, use in (("walk", False), ("bitmask", True)):
            start = time.perf_counter()
            for _ in range(3):
                self._fitness_pre(d, work, use, parts)
            self._sync()
            self.leaf_search_seconds[name] = (time.perf_counter() - start) / 3
        self.leaf_search = min(self.leaf_search_seconds, key=self.leaf_search_seconds.get)
        return self.leaf_search == "bitmask"

    def evaluate(self, work: BatchWork) -> tuple[LeafStats, dict[str, float]]:
        """Partial statistics of the shard's rows and ``{"transfer": s, "kernel": s}``."""
        start = time.perf_counter()
        xp, n_nodes = self.xp, work.forest.n_nodes
        d = self._to_device(work)
        parts = self._parts(work)
        counts = xp.empty((n_nodes, self.n_classes), np.int64)
        cand_hash = xp.empty((n_nodes, self.n_classes, 2), np.uint64)
        cand_row = xp.empty((n_nodes, self.n_classes, 2), np.int64)
        self._sync()
        sent = time.perf_counter()
        use_masks = self._choose_leaf_search(d, work, parts)
        self._fitness_pre(d, work, use_masks, parts)
        n_slots = n_nodes * self.n_classes
        self._post[-(-n_slots // self.tpb), self.tpb](*parts, d["node_salt"], work.seed, counts, cand_hash, cand_row)
        self._sync()
        computed = time.perf_counter()
        stats = LeafStats(*(np.asarray(a.get() if hasattr(a, "get") else a) for a in (counts, cand_hash, cand_row)))
        done = time.perf_counter()
        return stats, {"transfer": (sent - start) + (done - computed), "kernel": computed - sent}

    def close(self) -> None:
        self.Xt = self.y = None


class CudaEvaluator(PoolEvaluator):
    """GDT's GPU evaluator: shards on one or more GPUs (simulated devices under numba's CUDA simulator).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features), float32 or float64, finite
    y : ndarray of shape (n_samples,), int32 class codes
    n_classes : int
    n_devices : int or None
        GPUs to spread the rows over.  None: the fewest whose memory holds
        the data (one when it fits on one).  More than present is an error
        naming how many there are.
    leaf_search : {"auto", "walk", "bitmask"}
        How ``fitness_pre`` finds leaves (see the module docstring).
    threads_per_block, shared_slots : int, optional
        Kernel geometry (tests use small values in the simulator).

    Raises
    ------
    RuntimeError
        No usable GPU (and no simulator): the message says what is missing.
    ValueError
        ``n_devices`` exceeds the GPUs present.
    MemoryError
        The data do not fit in the GPUs asked for (or in all of them), raised
        before anything is allocated, with what is needed and what is free.
    """

    kind = "cuda"

    def __init__(self, X: np.ndarray, y: np.ndarray, n_classes: int, n_devices: int | None = None,
                 leaf_search: str = "auto", threads_per_block: int | None = None, shared_slots: int | None = None):
        if leaf_search not in LEAF_SEARCHES:
            raise ValueError(f"leaf_search must be one of {LEAF_SEARCHES}, got {leaf_search!r}")
        self._backend = resolve_backend("cuda")  # a clear RuntimeError where CUDA cannot run
        self.serialize = self._backend.simulated  # the simulator is not thread-safe across launches
        self._options = {"leaf_search": leaf_search, "threads_per_block": threads_per_block,
                         "shared_slots": shared_slots}
        super().__init__(X, y, n_classes, n_devices)

    def device_free_bytes(self) -> list[int | None]:
        """Free memory of each device present (None for the simulator's devices: unknown, assumed to fit)."""
        if self._backend.simulated:
            return [None] * SIMULATED_DEVICES
        return gpu_free_bytes(len(self._backend.devices()))

    def _plan(self, X: np.ndarray, n_devices: int | None) -> int:
        kind = "simulated GPU" if self._backend.simulated else "GPU"
        return plan_shards(self.n_samples, X.shape[1] * X.itemsize + 4, self.device_free_bytes(), n_devices,
                           fixed_bytes=0 if self._backend.simulated else WORK_BYTES, what="the training data",
                           kind=kind)

    def _make_shard(self, i: int, X: np.ndarray, y: np.ndarray) -> CudaShard:
        a, b = self.bounds[i]
        return CudaShard(X[a:b].T, y[a:b], a, self.n_classes, device=0 if self._backend.simulated else i,
                         **self._options)

    @property
    def leaf_search_used(self) -> list[str]:
        """The leaf search each device ended up with (``"auto"`` until the first batch decided)."""
        return [shard.leaf_search for shard in self._pool.states]
