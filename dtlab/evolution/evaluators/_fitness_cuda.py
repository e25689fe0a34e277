"""CUDA kernels of GDT's fitness evaluation: ``fitness_pre`` and ``fitness_post`` (numba.cuda).

The paper's two kernels (Jurczuk, Czajkowski, Kretowski 2021, section 3.3,
Listings 2 and 3), for a whole batch of individuals in one launch each:

``fitness_pre``, grid ``(n_row_blocks, n_trees)``
    Block ``(bx, t)`` sends rows ``bx * tpb + tid, + n_row_blocks * tpb, ...``
    (consecutive threads read consecutive values of one attribute column:
    coalesced) from the root of tree ``t`` to a leaf -- by the walk of
    :mod:`dtlab.trees.walk`, or by the leaf bitmasks of
    :mod:`dtlab.trees.bitmask` for trees of at most 64 leaves -- and records
    each row in the block's copy of the tree's statistics: per (leaf, class) a
    count (``atomic.add``) and the two smallest draw hashes.  The two smallest
    are kept with two atomic minima: ``old = atomic.min(m1, h)`` then
    ``atomic.min(m2, max(old, h))``; every value but the overall smallest is
    pushed into ``m2`` once (the one it displaced, or itself), so ``m2`` ends as
    the second smallest, whatever the order of the atomics.  The copy lives in
    shared memory when the tree has at most ``shared_slots`` (node, class)
    slots, else in the block's region of the global partial arrays (the paper's
    fallback for trees whose statistics do not fit).
``fitness_post``, one thread per (node, class)
    Reduces the blocks' copies: counts add, the two smallest hashes of all
    copies are kept, and their rows are recovered exactly from the hashes --
    a draw hash ``splitmix64(seed ^ row) ^ salt`` is a bijection of the row
    (:func:`dtlab._hashing.unsplitmix64`), so no row ids travel with
    the atomics.

The draw is the CPU evaluator's (the same hash of the same global row id, the
two smallest keys), so both give the same statistics bit for bit.

Written for a real device (the simulator tests check the statistics stay the
CPU's):

* a 64-bit atomic minimum in shared memory is a compare-and-swap loop on
  sm_90; a row whose hash is not below the slot's current second smallest
  cannot change either minimum (they only decrease, so a stale read is never
  below the true value), so the two atomics are skipped for it -- after the
  first few rows of a (leaf, class), nearly every row;
* the leaf bitmask's lowest set bit is taken from 32-bit halves
  (``cuda.ffs`` of a 32-bit word is exact on a device and in the simulator,
  which truncates a 64-bit word to 32 bits): trees of 33 to 64 leaves find
  the same leaf on both;
* the trees of a batch are on grid ``y`` in chunks of at most 65,535 (a tree
  offset per launch), the row blocks on grid ``x``; every launch goes through
  :func:`dtlab.gpu.launch.launch`, which passes the cupy arrays without
  numba's per-argument stream synchronisation (the launch stream is the one
  they were made on).

:class:`CudaShard` is one GPU's shard and the launches of one evaluation (a
device of :class:`~dtlab.evolution.evaluators.cuda.CudaEvaluator`'s pool, or
of a Dask worker).  Imported lazily (by a shard's factory): this module
imports numba.cuda.
"""

from __future__ import annotations

import functools
import time

import numpy as np
from numba import cuda

from ..._hashing import splitmix64, unsplitmix64
from ..._jit import compile_functions
from ...backend import resolve_backend
from ...gpu.kernels import declare_kernel, variants
from ...gpu.launch import chunks, launch, limits
from ...gpu.model import SECTOR, Work
from ...trees.walk import cuda_walks
from .base import BatchWork, LeafStats
from .draws import EMPTY_HASH

#: Threads per block on a GPU, and in the simulator (which runs each thread as a Python thread).
THREADS_PER_BLOCK = 256
SIMULATOR_THREADS_PER_BLOCK = 8

#: (node, class) slots of one tree a block keeps in shared memory (20 bytes each: an int32 count and two
#: uint64 hashes; 1,024 slots = 20 KiB, so several blocks fit on a multiprocessor).  A larger tree's
#: statistics go to global memory.  The simulator gets few slots so tests reach both paths with tiny trees.
SHARED_SLOTS = 1024
SIMULATOR_SHARED_SLOTS = 12

_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW_HALF = np.uint64(0xFFFFFFFF)


def lowest_bit(bits):
    """Index of the lowest set bit of a nonzero uint64, from two 32-bit ``ffs`` (a device function; the
    simulator's ``cuda.ffs`` takes 32 bits only, a device's ``ffs`` of a 32-bit word is one instruction)."""
    low = np.uint32(bits & _LOW_HALF)
    if low != 0:
        return cuda.ffs(low) - 1
    return 32 + cuda.ffs(np.uint32(bits >> np.uint64(32))) - 1


@functools.lru_cache(maxsize=8)
def kernels(tpb: int, shared_slots: int):
    """Compile ``(fitness_pre, fitness_post)`` for ``tpb`` threads per block and ``shared_slots`` shared slots.

    Both are compile-time constants of the kernels (shared array sizes must be).
    """
    device = cuda.jit(device=True)
    mixes = compile_functions([splitmix64, unsplitmix64], device)
    mix, unmix = mixes["splitmix64"], mixes["unsplitmix64"]
    walk = cuda_walks()["find_leaf_columns"]
    low_bit = cuda.jit(device=True)(lowest_bit)
    empty = EMPTY_HASH

    @cuda.jit(device=True)
    def masked_leaf(Xt, row, t, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node):
        # QuickScorer's scheme (dtlab.trees.bitmask): AND the masks of the failed tests, take the lowest set bit
        bits = _ALL_BITS
        for k in range(test_offset[t], test_offset[t + 1]):
            if Xt[test_feature[k], row] > test_threshold[k]:
                bits &= test_mask[k]
        return leaf_node[leaf_offset[t] + low_bit(bits)]

    @cuda.jit
    def fitness_pre(Xt, y, n_rows, row_offset, seed, t0, node_offset, feature, threshold, left, right,
                    missing_left, salt, use_masks, masked, test_offset, test_feature, test_threshold, test_mask,
                    leaf_offset, leaf_node, part_counts, part_min1, part_min2):
        t = t0 + cuda.blockIdx.y
        bx = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        n_classes = part_counts.shape[2]
        base = node_offset[t]
        n_slots = (node_offset[t + 1] - base) * n_classes
        in_shared = n_slots <= shared_slots  # the same for every thread of the block
        s_counts = cuda.shared.array(shared_slots, np.int32)
        s_min1 = cuda.shared.array(shared_slots, np.uint64)
        s_min2 = cuda.shared.array(shared_slots, np.uint64)
        for s in range(tid, n_slots, tpb):  # the block initialises its own copy
            if in_shared:
                s_counts[s] = 0
                s_min1[s] = empty
                s_min2[s] = empty
            else:
                part_counts[bx, base + s // n_classes, s % n_classes] = 0
                part_min1[bx, base + s // n_classes, s % n_classes] = empty
                part_min2[bx, base + s // n_classes, s % n_classes] = empty
        cuda.syncthreads()
        salt_t = salt[t]
        bitmask = use_masks and masked[t]
        for row in range(bx * tpb + tid, n_rows, cuda.gridDim.x * tpb):
            if bitmask:
                leaf = masked_leaf(Xt, row, t, test_offset, test_feature, test_threshold, test_mask, leaf_offset,
                                   leaf_node)
            else:
                leaf = walk(Xt, row, base, feature, threshold, left, right, missing_left)
            c = y[row]
            h = mix(seed ^ np.uint64(row_offset + row)) ^ salt_t
            if in_shared:
                s = (leaf - base) * n_classes + c
                cuda.atomic.add(s_counts, s, 1)
                if h < s_min2[s]:  # else neither minimum can change: skip two compare-and-swap loops
                    old = cuda.atomic.min(s_min1, s, h)
                    cuda.atomic.min(s_min2, s, old if old > h else h)
            else:
                cuda.atomic.add(part_counts, (bx, leaf, c), 1)
                if h < part_min2[bx, leaf, c]:
                    old = cuda.atomic.min(part_min1, (bx, leaf, c), h)
                    cuda.atomic.min(part_min2, (bx, leaf, c), old if old > h else h)
        cuda.syncthreads()
        if in_shared:
            for s in range(tid, n_slots, tpb):
                node = base + s // n_classes
                c = s % n_classes
                part_counts[bx, node, c] = s_counts[s]
                part_min1[bx, node, c] = s_min1[s]
                part_min2[bx, node, c] = s_min2[s]

    @cuda.jit
    def fitness_post(part_counts, part_min1, part_min2, node_salt, seed, counts, cand_hash, cand_row):
        i = cuda.grid(1)
        n_blocks = part_counts.shape[0]
        n_nodes = part_counts.shape[1]
        n_classes = part_counts.shape[2]
        if i >= n_nodes * n_classes:
            return
        node = i // n_classes
        c = i % n_classes
        total = 0
        m1 = empty
        m2 = empty
        for b in range(n_blocks):
            total += part_counts[b, node, c]
            for v in (part_min1[b, node, c], part_min2[b, node, c]):
                if v < m1:
                    m2 = m1
                    m1 = v
                elif v < m2:
                    m2 = v
        counts[node, c] = total
        # the count says which slots hold a row (a row may hash to EMPTY_HASH itself, 1 in 2**64)
        for slot in range(2):
            m = m1 if slot == 0 else m2
            if total > slot:
                cand_hash[node, c, slot] = m
                cand_row[node, c, slot] = np.int64(unmix(m ^ node_salt[node]) ^ seed)
            else:
                cand_hash[node, c, slot] = empty
                cand_row[node, c, slot] = -1

    return fitness_pre, fitness_post


def use_device(device: int):
    """The CUDA backend, with GPU ``device`` made current on the calling thread for numba and cupy (a real GPU)."""
    backend = resolve_backend("cuda")
    if not backend.simulated:
        import cupy

        cuda.select_device(device)
        cupy.cuda.Device(device).use()
    return backend


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
        Defaults: :data:`.THREADS_PER_BLOCK` / ``SHARED_SLOTS`` on a GPU, the ``SIMULATOR_*`` values
        in the simulator.
    """

    kind = "cuda"

    def __init__(self, Xt: np.ndarray, y: np.ndarray, start: int, n_classes: int, device: int = 0,
                 leaf_search: str = "auto", threads_per_block: int | None = None, shared_slots: int | None = None):
        backend = use_device(device)
        self.simulated = backend.simulated
        self.xp = backend.xp
        self.device = device
        self.start, self.n_rows, self.n_classes = int(start), int(len(y)), int(n_classes)
        self.tpb = threads_per_block or (SIMULATOR_THREADS_PER_BLOCK if self.simulated
                                         else THREADS_PER_BLOCK)
        slots = shared_slots or (SIMULATOR_SHARED_SLOTS if self.simulated else SHARED_SLOTS)
        self._pre, self._post = kernels(self.tpb, slots)
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
        for t0, n_trees in chunks(work.forest.n_trees, limits().max_grid[1]):
            launch(self._pre, (parts[0].shape[0], n_trees), self.tpb,
                   self.Xt, self.y, np.int64(self.n_rows), np.int64(self.start), np.uint64(work.seed), np.int64(t0),
                   d["node_offset"], d["feature"], d["threshold"], d["left"], d["right"], d["missing_left"],
                   d["salt"], bool(use_masks), d["masked"], d["test_offset"], d["test_feature"], d["test_threshold"],
                   d["test_mask"], d["leaf_offset"], d["leaf_node"], *parts)

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
        if self.simulated:
            self.leaf_search = "walk"
            return False
        if not work.masks.masked.any():
            return False  # nothing to compare on this batch: decide on a later one
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
        launch(self._post, -(-n_slots // self.tpb), self.tpb, *parts, d["node_salt"], np.uint64(work.seed), counts,
               cand_hash, cand_row)
        self._sync()
        computed = time.perf_counter()
        stats = LeafStats(*(np.asarray(a.get() if hasattr(a, "get") else a) for a in (counts, cand_hash, cand_row)))
        done = time.perf_counter()
        return stats, {"transfer": (sent - start) + (done - computed), "kernel": computed - sent}

    def close(self) -> None:
        self.Xt = self.y = None


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
_X = ("float32", "float64")


def _pre_work(launch) -> Work:
    n_rows, trees = launch.shapes[2], launch.grid[1]
    n_nodes = launch.shapes[-1][1]
    depth = max(np.log2(max(n_nodes / max(launch.shapes[6][0] - 1, 1), 1.0)), 1.0)  # a balanced tree's depth
    itemsize = 4 if "float32" in launch.types[0] else 8
    # per (row, tree): the walk's reads of X (a sector once the lanes' paths part) and nodes, the label, the
    # hash (splitmix64: ~20 integer instructions), a shared-memory count and, rarely, the minima
    return Work(bytes=n_rows * trees * (depth * itemsize + 4) + n_rows * trees * depth * SECTOR / 32,
                ops=n_rows * trees * (depth * 10 + 40))


def _post_work(launch) -> Work:
    blocks, n_nodes, n_classes = launch.shapes[0]
    return Work(bytes=blocks * n_nodes * n_classes * 20 + n_nodes * n_classes * 48,
                ops=blocks * n_nodes * n_classes * 8)


FITNESS_PRE = declare_kernel(
    "evolution.fitness_pre", build=lambda: kernels(THREADS_PER_BLOCK, SHARED_SLOTS)[0], blocks=(THREADS_PER_BLOCK,),
    model=_pre_work, summary="a block per (rows, tree): each row to its leaf, counts and two smallest hashes per "
    "(leaf, class) in shared memory",
    signatures=variants("void({X}[:, ::1], int32[::1], int64, int64, uint64, int64, int64[::1], int32[::1], "
                        "{X}[::1], int32[::1], int32[::1], bool[::1], uint64[::1], bool, bool[::1], int64[::1], "
                        "int32[::1], {X}[::1], uint64[::1], int64[::1], int32[::1], int32[:, :, ::1], "
                        "uint64[:, :, ::1], uint64[:, :, ::1])", X=_X))
FITNESS_POST = declare_kernel(
    "evolution.fitness_post", build=lambda: kernels(THREADS_PER_BLOCK, SHARED_SLOTS)[1], blocks=(THREADS_PER_BLOCK,),
    model=_post_work, summary="a thread per (node, class): the blocks' counts added, their minima merged",
    signatures=("void(int32[:, :, ::1], uint64[:, :, ::1], uint64[:, :, ::1], uint64[::1], uint64, int64[:, ::1], "
                "uint64[:, :, ::1], int64[:, :, ::1])",))
