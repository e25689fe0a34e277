"""CUDA kernels of the inference engine (numba.cuda): traversal, the patent's per-block bitmask, QuickScorer.

Imported lazily (only for ``backend="cuda"``); runs under numba's simulator.
The host side (device layouts kept per forest, the launches, ``method="auto"``)
is :mod:`._predict_cuda_host`.

* :func:`_traverse_kernel` -- one thread per row walks every tree (TraversalLayout).
* :func:`_bitmask_kernel` -- the patent's fifth embodiment: one block (work
  group) per tree and group of rows; the block's threads evaluate the decision
  nodes (``assignment="node"``: one node per thread, ``"nodes"``: several nodes
  of a level per thread, by a smaller block; ``"level"``: one thread per level,
  ORing its level's nodes privately), OR the selected children's identifiers
  into shared memory per level (atomic OR), synchronise, AND the levels (one
  thread per word) and write the leaf of each (tree, row).  A second kernel
  sums the leaf values per row in tree order, so the result does not depend on
  the order in which blocks run.
* :func:`_quickscorer_kernel` -- one thread per row goes through the trees in
  order (TreeRunsLayout): per tree a local bit vector of up to
  :data:`MAX_WORDS` words set to ones, per run of one feature the ascending
  thresholds scanned while ``x > t`` (QuickScorer's early exit), each false
  test clearing its left subtree's leaves (a NaN clears those of the tests
  that send NaN right), the lowest set bit naming the leaf.

Written for a real device (each choice keeps the sums equal to the CPU's bit
for bit, which the simulator tests check):

* the one-thread-per-row kernels read a column-major copy of X made on the
  device (``Xt[feature, row]``): the threads of a warp read consecutive
  addresses while they test the same node, where ``X[row, feature]`` would
  cost a 32-byte sector per thread; the bitmask kernel keeps row-major X, as
  its threads are the nodes of one row (one row's features are adjacent);
* each thread adds its row's leaf values in registers / local memory
  (:data:`OUT_CHUNK` output columns per thread, the grid's ``y`` covering the
  rest) and writes its row once: the CPU adds the same values in the same tree
  order starting from zero, so the sums are the same to the bit, without a
  read-modify-write of ``out`` in global memory per tree;
* the bitmask identifiers are 32-bit words (``uint64`` pairs viewed as
  ``uint32``): a 32-bit shared-memory atomic OR is one instruction, a 64-bit
  one a compare-and-swap loop on sm_90; an OR that cannot set a new bit is
  skipped (bits are only ever set, so a stale read can only cost a useless
  atomic, never lose a bit); the lowest set bit is ``cuda.ffs`` of a 32-bit
  word, which the simulator implements exactly (it truncates 64-bit words);
* launches never exceed a device's limits: rows are covered by grid ``x``
  with a grid-stride loop, trees by grid ``y`` in chunks of at most 65,535
  (several launches, :func:`dtlab.gpu.launch.chunks`) -- the earlier grid of
  ``(n_trees, ceil(n / 16))`` could not launch above 1,048,560 rows.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, float64, uint32, uint64

from .._jit import compile_functions, cuda_device
from ..gpu.kernels import declare_kernel, variants
from ..gpu.model import Work

THREADS_PER_BLOCK = 128
#: Limits of the shared-memory tables of the bitmask kernel (64-bit words of leaves: 32 levels, 4,096 leaves).
MAX_LEVELS, MAX_WORDS = 32, 64
MAX_WORDS32 = 2 * MAX_WORDS  # the same identifiers as 32-bit words (a shared array's shape must be a constant)
ROWS_PER_BLOCK = 16
#: Output columns a thread accumulates in registers; more outputs take more blocks along the grid's y.
OUT_CHUNK = 4
ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
ALL32 = np.uint32(0xFFFFFFFF)
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


@cuda.jit(device=True, inline=True)
def _add_leaf(acc, value, leaf, first_col, c0):
    """Add leaf ``leaf``'s values (columns ``first_col ..``) to the columns ``c0 .. c0 + OUT_CHUNK - 1`` kept in
    ``acc``: the ones this thread owns."""
    for j in range(value.shape[1]):
        col = first_col + j - c0
        if 0 <= col < OUT_CHUNK:
            acc[col] += value[leaf, j]


@cuda.jit(device=True, inline=True)
def _tree_touches(first_col, width, c0):
    return first_col < c0 + OUT_CHUNK and first_col + width > c0


@cuda.jit(device=True, inline=True)
def _store(acc, out, row, c0):
    for j in range(min(OUT_CHUNK, out.shape[1] - c0)):
        out[row, c0 + j] = acc[j]


@cuda.jit
def _traverse_kernel(Xt, root, depth, child, feature, threshold, nan_right, value, tree_column, out):
    acc = cuda.local.array(OUT_CHUNK, float64)
    c0 = cuda.blockIdx.y * OUT_CHUNK
    for row in range(cuda.grid(1), Xt.shape[1], cuda.gridsize(1)):
        for j in range(OUT_CHUNK):
            acc[j] = 0.0
        for t in range(root.shape[0]):
            if _tree_touches(tree_column[t], value.shape[1], c0):
                node = root[t]
                for _ in range(depth[t]):
                    node = child[node] + (1 if _goes_right(Xt[feature[node], row], threshold[node],
                                                           nan_right[node]) else 0)
                _add_leaf(acc, value, node, tree_column[t], c0)
        _store(acc, out, row, c0)


@cuda.jit
def _bitmask_kernel(X, t0, tree_level, level_node, node_level, base, feature, threshold, nan_right, id_left,
                    id_right, per_level, leaves):
    t = t0 + cuda.blockIdx.y
    tid = cuda.threadIdx.x
    n_threads = cuda.blockDim.x
    level_or = cuda.shared.array((MAX_LEVELS, MAX_WORDS32), uint32)
    result = cuda.shared.array(MAX_WORDS32, uint32)
    private = cuda.local.array(MAX_WORDS32, uint32)
    first_level = tree_level[t]
    n_levels = tree_level[t + 1] - first_level
    W = base.shape[1]  # 32-bit words
    n = X.shape[0]
    for group in range(cuda.blockIdx.x, (n + ROWS_PER_BLOCK - 1) // ROWS_PER_BLOCK, cuda.gridDim.x):
        start = group * ROWS_PER_BLOCK
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
                        if (level_or[lv, w] | word) != level_or[lv, w]:  # a new bit: else the OR is a no-op
                            cuda.atomic.or_(level_or, (lv, w), word)
            cuda.syncthreads()
            for w in range(tid, W, n_threads):  # the AND across levels, one thread per word
                acc = ALL32
                for lv in range(n_levels):
                    acc &= level_or[lv, w]
                result[w] = acc
            cuda.syncthreads()
            if tid == 0:
                for w in range(W):
                    if result[w] != 0:
                        leaves[t, row] = w * 32 + cuda.ffs(result[w]) - 1
                        break
            cuda.syncthreads()


@cuda.jit
def _sum_leaves_kernel(leaves, leaf_offset, leaf_value, tree_column, out):
    acc = cuda.local.array(OUT_CHUNK, float64)
    c0 = cuda.blockIdx.y * OUT_CHUNK
    for row in range(cuda.grid(1), leaves.shape[1], cuda.gridsize(1)):
        for j in range(OUT_CHUNK):
            acc[j] = 0.0
        for t in range(leaves.shape[0]):
            if _tree_touches(tree_column[t], leaf_value.shape[1], c0):
                _add_leaf(acc, leaf_value, leaf_offset[t] + leaves[t, row], tree_column[t], c0)
        _store(acc, out, row, c0)


@cuda.jit
def _quickscorer_kernel(Xt, tree_run, run_feature, run_test, threshold, nan_right, lo, count, leaf_offset,
                        leaf_value, tree_column, out):
    bits = cuda.local.array(MAX_WORDS, uint64)
    acc = cuda.local.array(OUT_CHUNK, float64)
    c0 = cuda.blockIdx.y * OUT_CHUNK
    for row in range(cuda.grid(1), Xt.shape[1], cuda.gridsize(1)):
        for j in range(OUT_CHUNK):
            acc[j] = 0.0
        for t in range(tree_run.shape[0] - 1):
            if not _tree_touches(tree_column[t], leaf_value.shape[1], c0):
                continue
            n_words = (leaf_offset[t + 1] - leaf_offset[t] + 63) // 64
            for w in range(n_words):
                bits[w] = ALL
            for r in range(tree_run[t], tree_run[t + 1]):
                x = Xt[run_feature[r], row]
                if x != x:
                    for k in range(run_test[r], run_test[r + 1]):
                        if nan_right[k] != 0:
                            _clear_leaves(bits, lo[k], count[k])
                else:
                    for k in range(run_test[r], run_test[r + 1]):
                        if not x > threshold[k]:
                            break  # thresholds ascend: every later test of the run is true
                        _clear_leaves(bits, lo[k], count[k])
            _add_leaf(acc, leaf_value, leaf_offset[t] + _first_leaf(bits, n_words), tree_column[t], c0)
        _store(acc, out, row, c0)


# ---- declarations: the argument types each kernel is launched with, its block sizes, its work ----
_X = ("float32", "float64")
#: Block sizes of the bitmask kernel: a thread per decision node of a level up to 512 (its 84 registers on sm_90
#: leave no room for 1,024 threads: ``make gpu-compile``); beyond, each thread takes several nodes.
MAX_BITMASK_THREADS = 512
BITMASK_BLOCKS = (32, 64, 128, 256, 512)


def _rows_trees_depth(launch, root_arg, depth_arg, rows):
    from ..backend import to_host

    depth = to_host(launch.args[depth_arg]) if launch.args else None
    steps = float(np.sum(depth)) if depth is not None else 8.0 * launch.shapes[root_arg][0]
    return rows, steps


def _traverse_work(launch) -> Work:
    rows, steps = _rows_trees_depth(launch, 1, 2, launch.shapes[0][1])
    itemsize = 4 if launch.types[0].startswith("array(float32") else 8
    # per row and step: X (a sector once paths diverge, amortised by the lanes that share the node), the node
    return Work(bytes=rows * steps * (itemsize + 4) + launch.shapes[-1][0] * launch.shapes[-1][1] * 8,
                ops=rows * steps * 10 * launch.grid[1])


def _bitmask_work(launch) -> Work:
    """Per (row, tree of the launch): the tree's tests (a feature of the row, a 32-bit identifier word each),
    its levels' ORed words set and ANDed; the row's values read per tree (from L2 after the first)."""
    from ..backend import to_host

    rows, d = launch.shapes[0]
    trees, t0 = launch.grid[1], launch.shapes[1]
    words = launch.shapes[9][1]
    if launch.args:
        tree_level, level_node = to_host(launch.args[2]), to_host(launch.args[3])
        tests = float(level_node[tree_level[t0 + trees]] - level_node[tree_level[t0]])
        levels = float(tree_level[t0 + trees] - tree_level[t0])
    else:
        tests, levels = launch.shapes[6][0], launch.shapes[5][0]
    itemsize = 4 if "float32" in launch.types[0] else 8
    return Work(bytes=rows * trees * d * itemsize + rows * trees * 4,
                ops=rows * (tests * (8 + 2 * words) + levels * words * 4))


def _sum_leaves_work(launch) -> Work:
    trees, rows = launch.shapes[0]
    return Work(bytes=trees * rows * (4 + 8) + rows * launch.shapes[-1][1] * 8, flops64=trees * rows,
                ops=trees * rows * 6)


def _quickscorer_work(launch) -> Work:
    from ..backend import to_host

    rows = launch.shapes[0][1]
    n_tests = launch.shapes[4][0]
    words = to_host(launch.args[8]) if launch.args else None
    leaves = float(words[-1]) if words is not None else n_tests + launch.shapes[1][0]
    # every test may be visited (the early exit stops a run at its first true test: about half); the leaves'
    # bit vector is set and searched once per tree and row
    return Work(bytes=rows * (n_tests / 2) * 4 + rows * launch.shapes[-1][1] * 8,
                ops=rows * (n_tests / 2 * 8 + leaves / 64 * 4))


TRAVERSE = declare_kernel(
    "inference.traverse", build=lambda: _traverse_kernel, blocks=(THREADS_PER_BLOCK,), model=_traverse_work,
    summary="a thread per row walks every tree (column-major X), sums in registers",
    signatures=variants("void({X}[:, ::1], int64[::1], int64[::1], uint32[::1], int32[::1], {X}[::1], "
                        "uint8[::1], float64[:, ::1], int64[::1], float64[:, ::1])", X=_X))
BITMASK = declare_kernel(
    "inference.bitmask", build=lambda: _bitmask_kernel, blocks=BITMASK_BLOCKS, model=_bitmask_work,
    summary="a block per (rows, tree): nodes OR 32-bit identifiers per level, AND across levels",
    signatures=variants("void({X}[:, ::1], int64, int64[::1], int64[::1], int32[::1], uint32[:, ::1], "
                        "int32[::1], {X}[::1], uint8[::1], uint32[:, ::1], uint32[:, ::1], bool, "
                        "int32[:, ::1])", X=_X))
SUM_LEAVES = declare_kernel(
    "inference.sum_leaves", build=lambda: _sum_leaves_kernel, blocks=(THREADS_PER_BLOCK,), model=_sum_leaves_work,
    summary="a thread per row adds its leaves' values in tree order",
    signatures=("void(int32[:, ::1], int64[::1], float64[:, ::1], int64[::1], float64[:, ::1])",))
QUICKSCORER = declare_kernel(
    "inference.quickscorer", build=lambda: _quickscorer_kernel, blocks=(THREADS_PER_BLOCK,),
    model=_quickscorer_work, summary="a thread per row: per tree a bit vector, runs of one feature's tests",
    signatures=variants("void({X}[:, ::1], int64[::1], int32[::1], int64[::1], {X}[::1], uint8[::1], "
                        "int32[::1], int32[::1], int64[::1], float64[:, ::1], int64[::1], float64[:, ::1])", X=_X))
