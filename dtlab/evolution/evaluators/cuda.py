"""The CUDA evaluator: shards of the training data kept on GPUs for the whole run, one host thread per GPU.

Each GPU of the device pool (:mod:`.devices`) holds its shard as one contiguous
array per attribute (``Xt``, shape (n_features, n_rows): consecutive threads
read consecutive values, coalesced) and the labels, copied once.  Per
generation only the packed individuals go down and the statistics come back:
the host prepares one :class:`~dtlab.evolution.evaluators.base.BatchWork`,
each GPU runs ``fitness_pre`` over all the batch's trees in one launch and
``fitness_post`` (:mod:`._fitness_cuda`), and the host merges the GPUs' partial
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

Nothing here imports numba.cuda or cupy at import time; a shard
(:class:`~dtlab.evolution.evaluators._fitness_cuda.CudaShard`) imports them when it is built.
"""

from __future__ import annotations

import numpy as np

from ...backend import resolve_backend
from ...distributed import plan_shards
from .devices import PoolEvaluator

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
        return plan_shards(self.n_samples, self._row_bytes(X), self.device_free_bytes(), n_devices,
                           fixed_bytes=0 if self._backend.simulated else WORK_BYTES, what="the training data",
                           kind=kind)

    def _make_shard(self, i: int, X: np.ndarray, y: np.ndarray):
        from ._fitness_cuda import CudaShard

        a, b = self.bounds[i]
        return CudaShard(X[a:b].T, y[a:b], a, self.n_classes, device=0 if self._backend.simulated else i,
                         **self._options)

    @property
    def leaf_search_used(self) -> list[str]:
        """The leaf search each device ended up with (``"auto"`` until the first batch decided)."""
        return [shard.leaf_search for shard in self._pool.states]
