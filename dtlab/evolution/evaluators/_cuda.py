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
    (:func:`~dtlab.evolution.kernels.unsplitmix64`), so no row ids travel with
    the atomics.

The draw is the CPU evaluator's (the same hash of the same global row id, the
two smallest keys), so both give the same statistics bit for bit.  Imported
lazily (only by :mod:`.cuda`): this module imports numba.cuda.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from ..._jit import compile_functions
from ...trees.walk import cuda_walks
from ..kernels import EMPTY_HASH, splitmix64, unsplitmix64

#: Threads per block on a GPU, and in the simulator (which runs each thread as a Python thread).
THREADS_PER_BLOCK = 256
SIMULATOR_THREADS_PER_BLOCK = 8

#: (node, class) slots of one tree a block keeps in shared memory (20 bytes each: an int32 count and two
#: uint64 hashes; 1,024 slots = 20 KiB, so several blocks fit on a multiprocessor).  A larger tree's
#: statistics go to global memory.  The simulator gets few slots so tests reach both paths with tiny trees.
SHARED_SLOTS = 1024
SIMULATOR_SHARED_SLOTS = 12

_ALL_BITS = np.uint64(0xFFFFFFFFFFFFFFFF)


@functools.lru_cache(maxsize=8)
def kernels(tpb: int, shared_slots: int):
    """Compile ``(fitness_pre, fitness_post)`` for ``tpb`` threads per block and ``shared_slots`` shared slots.

    Both are compile-time constants of the kernels (shared array sizes must be).
    """
    device = cuda.jit(device=True)
    mixes = compile_functions([splitmix64, unsplitmix64], device)
    mix, unmix = mixes["splitmix64"], mixes["unsplitmix64"]
    walk = cuda_walks()["find_leaf_columns"]
    empty = EMPTY_HASH

    @cuda.jit(device=True)
    def masked_leaf(Xt, row, t, test_offset, test_feature, test_threshold, test_mask, leaf_offset, leaf_node):
        # QuickScorer's scheme (dtlab.trees.bitmask): AND the masks of the failed tests, take the lowest set bit
        bits = _ALL_BITS
        for k in range(test_offset[t], test_offset[t + 1]):
            if Xt[test_feature[k], row] > test_threshold[k]:
                bits &= test_mask[k]
        return leaf_node[leaf_offset[t] + cuda.ffs(bits) - 1]

    @cuda.jit
    def fitness_pre(Xt, y, n_rows, row_offset, seed, node_offset, feature, threshold, left, right, missing_left,
                    salt, use_masks, masked, test_offset, test_feature, test_threshold, test_mask, leaf_offset,
                    leaf_node, part_counts, part_min1, part_min2):
        t = cuda.blockIdx.y
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
                old = cuda.atomic.min(s_min1, s, h)
                cuda.atomic.min(s_min2, s, old if old > h else h)
            else:
                cuda.atomic.add(part_counts, (bx, leaf, c), 1)
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
