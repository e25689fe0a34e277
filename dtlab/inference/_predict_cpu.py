"""CPU kernels of the inference engine (numba, parallel over blocks of rows).

Each kernel takes X (n_samples, n_features) C-contiguous float32 or float64,
the arrays of one layout of :mod:`dtlab.inference.layout` and ``out`` (n_samples,
n_outputs) float64 zeroed, and adds every tree's leaf value into
``out[row, tree_column[t]:tree_column[t] + n_values]``.  Rows are processed in
blocks of :data:`BLOCK` so that one tree's nodes stay in cache while the block
passes through it and the per-row work of a tree step is a short independent
loop the CPU overlaps (row blocking); blocks are spread over threads with
``prange``.  The plain references are in :mod:`dtlab.inference.reference`.
"""

from __future__ import annotations

import types

import numba
import numpy as np

from ..trees.bitmask import lowest_set_bit

#: Rows per block: enough independent walks to hide a load's latency, few enough for L1.
BLOCK = 32
U32 = numba.uint32
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)


@numba.njit(nogil=True, inline="always")
def _goes_right(x, threshold, nan_right):
    # x > t is False for NaN; a NaN then goes where the node sends missing values
    return (x > threshold) | ((x != x) & (nan_right != 0))


@numba.njit(parallel=True, nogil=True, cache=True)
def traverse(Xf, n_features, root, depth, child, feature, threshold, nan_right, value, tree_column, out):
    """Level-synchronous walk of a block of rows through each tree (TraversalLayout), any depth.

    ``Xf`` is X raveled (C order); unsigned 32-bit indices as in
    :func:`traverse_heap`.  Deep trees (a random forest grown to purity) have
    leaves far above their deepest level: every 4 steps the block stops when
    all its rows sit on (self-looping) leaves.
    """
    n = Xf.shape[0] // n_features
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_values = value.shape[1]
    for b in numba.prange(n_blocks):
        start = b * BLOCK
        m = min(BLOCK, n - start)
        row = np.empty(BLOCK, np.uint32)
        for i in range(m):
            row[i] = U32((start + i) * n_features)
        node = np.empty(BLOCK, np.uint32)
        acc = np.zeros((BLOCK, out.shape[1]), np.float64)
        for t in range(root.shape[0]):
            for i in range(m):
                node[i] = U32(root[t])
            for step in range(depth[t]):
                for i in range(m):
                    k = node[i]
                    node[i] = child[k] + U32(_goes_right(Xf[row[i] + U32(feature[k])], threshold[k], nan_right[k]))
                if step % 4 == 3:
                    moving = False
                    for i in range(m):
                        moving |= child[node[i]] != node[i]
                    if not moving:
                        break
            col = tree_column[t]
            for i in range(m):
                for j in range(n_values):
                    acc[i, col + j] += value[node[i], j]
        for i in range(m):
            for j in range(out.shape[1]):
                out[start + i, j] += acc[i, j]


@numba.njit(parallel=True, nogil=True, cache=True)
def traverse_heap(Xf, n_features, node_offset, depth, feature, threshold, nan_right, leaf_offset, value,
                  tree_column, out):
    """Level-synchronous walk of a block of rows through each heap-ordered tree (HeapLayout).

    ``Xf`` is X raveled (C order).  Indices are unsigned 32-bit so that numba
    emits no negative-index wraparound and LLVM vectorises the step over the
    block's rows (gathers); that, not the layout alone, is what makes this walk
    faster than the signed version.  A block without NaN takes the loop
    with one compare per step; a block with NaN also reads ``nan_right``.
    """
    n = Xf.shape[0] // n_features
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_values = value.shape[1]
    for b in numba.prange(n_blocks):
        start = b * BLOCK
        m = min(BLOCK, n - start)
        row = np.empty(BLOCK, np.uint32)
        for i in range(m):
            row[i] = U32((start + i) * n_features)
        has_nan = False
        for i in range(m * n_features):
            if Xf[start * n_features + i] != Xf[start * n_features + i]:
                has_nan = True
        node = np.empty(BLOCK, np.uint32)
        acc = np.zeros((BLOCK, out.shape[1]), np.float64)
        for t in range(node_offset.shape[0] - 1):
            feat_t = feature[node_offset[t]:]
            thr_t = threshold[node_offset[t]:]
            for i in range(m):
                node[i] = U32(0)
            if has_nan:
                nan_t = nan_right[node_offset[t]:]
                for _ in range(depth[t]):
                    for i in range(m):
                        k = node[i]
                        x = Xf[row[i] + feat_t[k]]
                        node[i] = U32(2) * k + U32(1) + U32(_goes_right(x, thr_t[k], nan_t[k]))
            else:
                for _ in range(depth[t]):
                    for i in range(m):
                        k = node[i]
                        node[i] = U32(2) * k + U32(1) + U32(Xf[row[i] + feat_t[k]] > thr_t[k])
            first = U32(node_offset[t + 1] - node_offset[t])  # heap index of the first leaf
            value_t = value[leaf_offset[t]:]
            col = tree_column[t]
            for i in range(m):
                for j in range(n_values):
                    acc[i, col + j] += value_t[node[i] - first, j]
        for i in range(m):
            for j in range(out.shape[1]):
                out[start + i, j] += acc[i, j]


@numba.njit(nogil=True, inline="always")
def _first_leaf(acc, i, n_words):
    for w in range(n_words):
        if acc[i, w] != 0:
            return w * 64 + lowest_set_bit(acc[i, w])
    return -1  # unreachable for a valid layout: one bit always survives


@numba.njit(parallel=True, nogil=True, cache=True)
def bitmask(Xf, n_features, tree_level, level_node, base, feature, threshold, nan_right, id_left, id_right,
            leaf_offset, leaf_value, tree_column, out):
    """The patent's method (LevelLayout): per level OR the selected children's identifiers, AND the levels.

    Every decision node is evaluated for every row (no early exit), the work
    a GPU spreads over one thread per node; here a block of rows goes through
    one node at a time: the block's decisions first (a gather and a compare
    per row), then, word by word, the OR of the selected identifiers into the
    level's words, stored word-major so the inner loops run over contiguous
    rows and vectorise.  Words where neither child has a leaf are skipped.
    ``Xf`` is X raveled (C order).
    """
    n = Xf.shape[0] // n_features
    W = base.shape[1]
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_values = leaf_value.shape[1]
    for b in numba.prange(n_blocks):
        start = b * BLOCK
        m = min(BLOCK, n - start)
        row = np.empty(BLOCK, np.uint32)
        for i in range(m):
            row[i] = U32((start + i) * n_features)
        acc = np.empty((W, BLOCK), np.uint64)
        level_or = np.empty((W, BLOCK), np.uint64)
        right = np.empty(BLOCK, np.bool_)
        for t in range(tree_level.shape[0] - 1):
            acc[:, :m] = ALL
            for level in range(tree_level[t], tree_level[t + 1]):
                for w in range(W):
                    for i in range(m):
                        level_or[w, i] = base[level, w]
                for k in range(level_node[level], level_node[level + 1]):
                    f, th, nr = U32(feature[k]), threshold[k], nan_right[k]
                    for i in range(m):
                        right[i] = _goes_right(Xf[row[i] + f], th, nr)
                    for w in range(W):
                        a, c = id_left[k, w], id_right[k, w]
                        if a | c == 0:
                            continue
                        for i in range(m):
                            level_or[w, i] |= c if right[i] else a
                for w in range(W):
                    for i in range(m):
                        acc[w, i] &= level_or[w, i]
            col = tree_column[t]
            for i in range(m):
                found = 0
                for w in range(W):
                    if acc[w, i] != 0:
                        found = w * 64 + lowest_set_bit(acc[w, i])
                        break
                leaf = leaf_offset[t] + found
                for j in range(n_values):
                    out[start + i, col + j] += leaf_value[leaf, j]


@numba.njit(nogil=True, inline="always")
def _clear(bits, t, first, count):
    """Clear bits ``first .. first+count-1`` of tree ``t``'s words."""
    last = first + count - 1
    for w in range(first >> 6, (last >> 6) + 1):
        lo = first - w * 64 if first > w * 64 else 0
        hi = last - w * 64 if last < w * 64 + 63 else 63
        span = ((ALL >> np.uint64(63 - hi + lo)) << np.uint64(lo))
        bits[t, w] &= ~span


@numba.njit(parallel=True, nogil=True, cache=True)
def quickscorer(X, n_words, feature_offset, threshold, tree, lo, count, nan_offset, nan_tree, nan_lo,
                nan_count, leaf_offset, leaf_value, tree_column, out):
    """QuickScorer (QuickScorerLayout): per feature, scan the sorted tests while ``x > t``, AND false nodes' masks."""
    n = X.shape[0]
    n_trees = leaf_offset.shape[0] - 1
    n_features = feature_offset.shape[0] - 1
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_values = leaf_value.shape[1]
    for b in numba.prange(n_blocks):
        bits = np.empty((n_trees, n_words), np.uint64)
        start = b * BLOCK
        for row in range(start, min(start + BLOCK, n)):
            bits[:] = ALL
            for f in range(n_features):
                x = X[row, f]
                if x != x:
                    for k in range(nan_offset[f], nan_offset[f + 1]):
                        _clear(bits, nan_tree[k], nan_lo[k], nan_count[k])
                    continue
                for k in range(feature_offset[f], feature_offset[f + 1]):
                    if not x > threshold[k]:
                        break  # thresholds ascend: every later test of this feature is true
                    _clear(bits, tree[k], lo[k], count[k])
            for t in range(n_trees):
                leaf = leaf_offset[t] + _first_leaf(bits, t, n_words)
                col = tree_column[t]
                for j in range(n_values):
                    out[row, col + j] += leaf_value[leaf, j]


@numba.njit(parallel=True, nogil=True, cache=True)
def quickscorer_one_word(X, feature_offset, threshold, tree, mask, nan_offset, nan_tree, nan_mask, leaf_offset,
                         leaf_value, tree_column, out):
    """:func:`quickscorer` for forests whose trees all have <= 64 leaves: one AND per false test."""
    n = X.shape[0]
    n_trees = leaf_offset.shape[0] - 1
    n_features = feature_offset.shape[0] - 1
    n_blocks = (n + BLOCK - 1) // BLOCK
    n_values = leaf_value.shape[1]
    for b in numba.prange(n_blocks):
        bits = np.empty(n_trees, np.uint64)
        start = b * BLOCK
        for row in range(start, min(start + BLOCK, n)):
            bits[:] = ALL
            for f in range(n_features):
                x = X[row, f]
                if x != x:
                    for k in range(nan_offset[f], nan_offset[f + 1]):
                        bits[nan_tree[k]] &= nan_mask[k]
                    continue
                for k in range(feature_offset[f], feature_offset[f + 1]):
                    if not x > threshold[k]:
                        break
                    bits[tree[k]] &= mask[k]
            for t in range(n_trees):
                leaf = leaf_offset[t] + lowest_set_bit(bits[t])
                col = tree_column[t]
                for j in range(n_values):
                    out[row, col + j] += leaf_value[leaf, j]


# ------------------------------------------------------------------ small batches: the same kernels, serial
#: Below this many tree-rows (rows x trees) a call runs on the calling thread: waking the thread pool and
#: splitting a handful of blocks costs more than the walk (a 1-row call of 100 depth-8 trees took about 3x
#: longer through the parallel kernel on 2 threads than through the serial one on this project's machine).
PARALLEL_MIN_TREE_ROWS = 16_384


def _serial_twin(kernel):
    """``kernel``'s Python function compiled without ``parallel`` (``prange`` runs as ``range``).

    The twin gets its own qualified name: numba's on-disk cache is keyed by the
    function's name and signature, not by the ``parallel`` flag.
    """
    f = kernel.py_func
    twin = types.FunctionType(f.__code__, f.__globals__, f.__name__ + "_serial", f.__defaults__, f.__closure__)
    twin.__qualname__ = f.__qualname__ + "_serial"
    twin.__doc__ = f"Serial twin of :func:`{f.__name__}` (small batches)."
    return numba.njit(nogil=True, cache=True)(twin)


SERIAL = {k: _serial_twin(k) for k in (traverse, traverse_heap, bitmask, quickscorer, quickscorer_one_word)}


def for_size(kernel, n_rows: int, n_trees: int):
    """``kernel``, or its serial twin where the call is too small for the thread pool (or it has one thread)."""
    if n_rows * n_trees < PARALLEL_MIN_TREE_ROWS or numba.get_num_threads() == 1:
        return SERIAL[kernel]
    return kernel


@numba.njit(nogil=True, cache=True)
def has_inf(Xf):
    """Whether the raveled rows ``Xf`` hold +-inf (the input check of the small-batch path, in one pass)."""
    for i in range(Xf.shape[0]):
        if abs(Xf[i]) == np.inf:
            return True
    return False
