"""CUDA kernels of the inference engine (numba.cuda): traversal, the patent's per-block bitmask, QuickScorer.

Imported lazily (only for ``backend="cuda"``); runs under numba's simulator.

* :func:`_traverse_kernel` -- one thread per row walks every tree (TraversalLayout).
* :func:`_bitmask_kernel` -- the patent's fifth embodiment: one block (work
  group) per tree and group of rows; the block's threads evaluate the decision
  nodes (``assignment="node"``: one node per thread, ``"nodes"``: several nodes
  of a level per thread, by a smaller block; ``"level"``: one thread per level,
  ORing its level's nodes privately), OR the selected children's identifiers
  into shared memory per level (atomic OR), synchronise, AND the levels (one
  thread per word) and write the leaf of each (row, tree).  A second kernel
  sums the leaf values per row in tree order, so the result does not depend on
  the order in which blocks run.
* :func:`_quickscorer_kernel` -- one thread per row goes through the trees in
  order (TreeRunsLayout): per tree a local bit vector of up to
  :data:`MAX_WORDS` words set to ones, per run of one feature the ascending
  thresholds scanned while ``x > t`` (QuickScorer's early exit), each false
  test clearing its left subtree's leaves (a NaN clears those of the tests
  that send NaN right), the lowest set bit naming the leaf.  The thread adds
  the leaf values into its row of ``out`` in tree order, as the CPU kernel
  does, so the sums are the same to the bit.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, uint64

from .._jit import compile_functions, cuda_device
from .layout import level_layout, traversal_layout, tree_runs_layout

THREADS_PER_BLOCK = 128
#: Limits of the shared-memory tables of the bitmask kernel.
MAX_LEVELS, MAX_WORDS = 32, 64
ROWS_PER_BLOCK = 16
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW32, _LOW16, _LOW8 = np.uint64(0xFFFFFFFF), np.uint64(0xFFFF), np.uint64(0xFF)
_LOW4, _LOW2, _LOW1, _ZERO = np.uint64(0xF), np.uint64(0x3), np.uint64(0x1), np.uint64(0)


def clear_leaves(bits, first, count):
    """Clear bits ``first .. first+count-1`` of the words ``bits`` (a device function, see :mod:`dtlab._jit`)."""
    last = first + count - 1
    for w in range(first >> 6, (last >> 6) + 1):
        lo = first - w * 64 if first > w * 64 else 0
        hi = last - w * 64 if last < w * 64 + 63 else 63
        bits[w] &= ~((ALL >> np.uint64(63 - hi + lo)) << np.uint64(lo))


def first_leaf(bits, n_words):
    """Index of the lowest set bit of ``bits[:n_words]`` (-1 if none): a binary search of 6 steps in the word."""
    for w in range(n_words):
        word = bits[w]
        if word != _ZERO:
            bit = w * 64
            if word & _LOW32 == _ZERO:
                word >>= np.uint64(32)
                bit += 32
            if word & _LOW16 == _ZERO:
                word >>= np.uint64(16)
                bit += 16
            if word & _LOW8 == _ZERO:
                word >>= np.uint64(8)
                bit += 8
            if word & _LOW4 == _ZERO:
                word >>= np.uint64(4)
                bit += 4
            if word & _LOW2 == _ZERO:
                word >>= np.uint64(2)
                bit += 2
            if word & _LOW1 == _ZERO:
                bit += 1
            return bit
    return -1


_QS = compile_functions([clear_leaves, first_leaf], cuda_device())
_clear_leaves, _first_leaf = _QS["clear_leaves"], _QS["first_leaf"]


@cuda.jit(device=True, inline=True)
def _goes_right(x, threshold, nan_right):
    if x != x:
        return nan_right != 0
    return x > threshold


@cuda.jit
def _traverse_kernel(X, root, depth, child, feature, threshold, nan_right, value, tree_column, out):
    row = cuda.grid(1)
    if row >= X.shape[0]:
        return
    for t in range(root.shape[0]):
        node = root[t]
        for _ in range(depth[t]):
            node = child[node] + (1 if _goes_right(X[row, feature[node]], threshold[node], nan_right[node]) else 0)
        for j in range(value.shape[1]):
            out[row, tree_column[t] + j] += value[node, j]


@cuda.jit
def _bitmask_kernel(X, tree_level, level_node, node_level, base, feature, threshold, nan_right, id_left, id_right,
                    per_level, leaves):
    t = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    level_or = cuda.shared.array((MAX_LEVELS, MAX_WORDS), uint64)
    result = cuda.shared.array(MAX_WORDS, uint64)
    private = cuda.local.array(MAX_WORDS, uint64)
    first_level = tree_level[t]
    n_levels = tree_level[t + 1] - first_level
    W = base.shape[1]
    n = X.shape[0]
    start = cuda.blockIdx.y * ROWS_PER_BLOCK
    for row in range(start, min(start + ROWS_PER_BLOCK, n)):
        for idx in range(tid, n_levels * W, n_threads):  # each level starts from its base identifier
            level_or[idx // W, idx % W] = base[first_level + idx // W, idx % W]
        cuda.syncthreads()
        if per_level:  # one thread per level: OR privately, one write per word, no atomics
            for lv in range(tid, n_levels, n_threads):
                for w in range(W):
                    private[w] = level_or[lv, w]
                for k in range(level_node[first_level + lv], level_node[first_level + lv + 1]):
                    right = _goes_right(X[row, feature[k]], threshold[k], nan_right[k])
                    for w in range(W):
                        private[w] |= id_right[k, w] if right else id_left[k, w]
                for w in range(W):
                    level_or[lv, w] = private[w]
        else:  # one (or, with fewer threads than nodes, several) decision nodes per thread
            for k in range(level_node[first_level] + tid, level_node[first_level + n_levels], n_threads):
                right = _goes_right(X[row, feature[k]], threshold[k], nan_right[k])
                lv = node_level[k] - first_level
                for w in range(W):
                    word = id_right[k, w] if right else id_left[k, w]
                    if word != _ZERO:
                        cuda.atomic.or_(level_or, (lv, w), word)
        cuda.syncthreads()
        for w in range(tid, W, n_threads):  # the AND across levels, one thread per word
            acc = ALL
            for lv in range(n_levels):
                acc &= level_or[lv, w]
            result[w] = acc
        cuda.syncthreads()
        if tid == 0:
            for w in range(W):
                if result[w] != 0:
                    word = result[w]
                    bit = 0
                    while (word & uint64(1)) == 0:
                        word >>= uint64(1)
                        bit += 1
                    leaves[row, t] = w * 64 + bit
                    break
        cuda.syncthreads()


@cuda.jit
def _sum_leaves_kernel(leaves, leaf_offset, leaf_value, tree_column, out):
    row = cuda.grid(1)
    if row >= leaves.shape[0]:
        return
    for t in range(leaves.shape[1]):
        for j in range(leaf_value.shape[1]):
            out[row, tree_column[t] + j] += leaf_value[leaf_offset[t] + leaves[row, t], j]


@cuda.jit
def _quickscorer_kernel(X, tree_run, run_feature, run_test, threshold, nan_right, lo, count, leaf_offset,
                        leaf_value, tree_column, out):
    row = cuda.grid(1)
    if row >= X.shape[0]:
        return
    bits = cuda.local.array(MAX_WORDS, uint64)
    for t in range(tree_run.shape[0] - 1):
        n_words = (leaf_offset[t + 1] - leaf_offset[t] + 63) // 64
        for w in range(n_words):
            bits[w] = ALL
        for r in range(tree_run[t], tree_run[t + 1]):
            x = X[row, run_feature[r]]
            if x != x:
                for k in range(run_test[r], run_test[r + 1]):
                    if nan_right[k] != 0:
                        _clear_leaves(bits, lo[k], count[k])
            else:
                for k in range(run_test[r], run_test[r + 1]):
                    if not x > threshold[k]:
                        break  # thresholds ascend: every later test of the run is true
                    _clear_leaves(bits, lo[k], count[k])
        leaf = leaf_offset[t] + _first_leaf(bits, n_words)
        for j in range(leaf_value.shape[1]):
            out[row, tree_column[t] + j] += leaf_value[leaf, j]


def bitmask_leaves_cuda(forest, X: np.ndarray, assignment: str, backend, nodes_per_thread: int = 1):
    """In-order leaf per (row, tree) by the per-block bitmask kernel; device array (n_samples, n_trees) int32."""
    xp = backend.xp
    lay = forest.layout("bitmask", X.dtype)
    if lay.n_words > MAX_WORDS or np.diff(lay.tree_level).max() > MAX_LEVELS:
        raise ValueError(f"the CUDA bitmask kernel takes trees of depth <= {MAX_LEVELS} and <= {64 * MAX_WORDS} "
                         "leaves; use method='traversal'")
    if assignment not in ("node", "nodes", "level"):
        raise ValueError(f"assignment must be 'node', 'nodes' or 'level', got {assignment!r}")
    node_level = np.repeat(np.arange(lay.level_node.shape[0] - 1), np.diff(lay.level_node)).astype(np.int32)
    n_tests = np.diff(lay.level_node[lay.tree_level]).max()
    if assignment == "level":
        threads = int(np.diff(lay.tree_level).max())
    else:
        threads = int(-(-n_tests // (1 if assignment == "node" else max(nodes_per_thread, 2))))
    threads = max(32, min(1024, -(-threads // 32) * 32))
    leaves = xp.zeros((X.shape[0], forest.n_trees), np.int32)
    grid = (forest.n_trees, -(-X.shape[0] // ROWS_PER_BLOCK))
    args = [xp.asarray(a) for a in (X, lay.tree_level, lay.level_node, node_level, lay.base, lay.feature,
                                    lay.threshold, lay.nan_right, lay.id_left, lay.id_right)]
    _bitmask_kernel[grid, threads](*args, assignment == "level", leaves)
    return leaves


def predict_cuda(forest, X: np.ndarray, method: str, backend, assignment: str = "node") -> np.ndarray:
    """Summed leaf values (n_samples, n_outputs) float64 on the host, computed on the GPU (X prepared)."""
    xp = backend.xp
    ens = forest.ensemble
    backend.check_fits(X.nbytes * 2, "the rows to predict")
    out = xp.zeros((X.shape[0], ens.n_outputs), np.float64)
    if X.shape[0] == 0:
        return backend.to_host(out)
    blocks = -(-X.shape[0] // THREADS_PER_BLOCK)
    tc = xp.asarray(ens.tree_column)
    if method == "traversal":
        lay = forest._layouts.get(("traversal", X.dtype.name)) or forest.layout("traversal", X.dtype)
        args = [xp.asarray(a) for a in (X, lay.root, lay.depth, lay.child, lay.feature, lay.threshold,
                                        lay.nan_right, lay.value)]
        _traverse_kernel[blocks, THREADS_PER_BLOCK](*args, tc, out)
    elif method == "bitmask":
        leaves = bitmask_leaves_cuda(forest, X, assignment, backend)
        lay = forest.layout("bitmask", X.dtype)
        _sum_leaves_kernel[blocks, THREADS_PER_BLOCK](leaves, xp.asarray(lay.leaf_offset),
                                                      xp.asarray(lay.leaf_value), tc, out)
    elif method == "quickscorer":
        lay = forest.layout("quickscorer_runs", X.dtype)
        if lay.n_words > MAX_WORDS:
            raise ValueError(f"the CUDA quickscorer kernel takes trees of <= {64 * MAX_WORDS} leaves "
                             f"(MAX_WORDS = {MAX_WORDS} words of 64 bits); this forest has a tree of "
                             f"{int(np.diff(lay.leaf_offset).max())} leaves; use method='traversal'")
        args = [xp.asarray(a) for a in (X, lay.tree_run, lay.run_feature, lay.run_test, lay.threshold,
                                        lay.nan_right, lay.lo, lay.count, lay.leaf_offset, lay.leaf_value)]
        _quickscorer_kernel[blocks, THREADS_PER_BLOCK](*args, tc, out)
    else:
        raise ValueError(f"method {method!r} has no CUDA kernel; on cuda use 'traversal', 'bitmask' or "
                         "'quickscorer'")
    return backend.to_host(out)


__all__ = ["bitmask_leaves_cuda", "clear_leaves", "first_leaf", "predict_cuda", "level_layout", "traversal_layout",
           "tree_runs_layout"]
