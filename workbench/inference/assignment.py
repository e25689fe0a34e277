"""The patent's thread assignments on the CPU, with the decision and the combining timed apart.

JP5863426B2 (third embodiment) trades the time of one decision ``T_D``
against the cost of combining the threads' results ``T_T``: one node per
thread parallelises the decisions most but has the most partial results to
combine; several nodes of one level per thread, or a whole level per thread,
combine less.  Here a *task* is what the patent gives one thread; numba runs
the tasks of one tree over a block of rows in a ``prange`` (the decision
phase: each task ORs the identifiers its nodes select into its own partial
result), then the combining phase ORs the partial results of each level with
the level's base and ANDs the levels.  :func:`timed_phases` measures both.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from dtlab.trees.bitmask import lowest_set_bit

ASSIGNMENTS = ("node", "nodes", "level")


def tasks(level_node: np.ndarray, first_level: int, last_level: int, assignment: str,
          nodes_per_task: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Split one tree's decision nodes into tasks.

    Returns
    -------
    task_offset : int64 (n_tasks + 1,), into the tree's tests (a task is a contiguous run of one level)
    task_level : int64 (n_tasks,), the tree-local level of each task
    """
    if assignment not in ASSIGNMENTS:
        raise ValueError(f"assignment must be one of {ASSIGNMENTS}, got {assignment!r}")
    size = {"node": 1, "nodes": max(int(nodes_per_task), 1), "level": None}[assignment]
    offsets, levels = [int(level_node[first_level])], []
    for lv in range(first_level, last_level):
        lo, hi = int(level_node[lv]), int(level_node[lv + 1])
        step = (hi - lo) if size is None else size
        for start in range(lo, hi, max(step, 1)):
            offsets.append(min(start + step, hi))
            levels.append(lv - first_level)
    return np.asarray(offsets, np.int64), np.asarray(levels, np.int64)


@numba.njit(parallel=True, nogil=True, cache=True)
def decide(X, task_offset, feature, threshold, nan_right, id_left, id_right, partial):
    """Decision phase: task ``j`` ORs its nodes' selected identifiers into ``partial[j, row, :]``."""
    n, W = X.shape[0], id_left.shape[1]
    for j in numba.prange(task_offset.shape[0] - 1):
        for i in range(n):
            for w in range(W):
                partial[j, i, w] = 0
        for k in range(task_offset[j], task_offset[j + 1]):
            f, th, nr = feature[k], threshold[k], nan_right[k]
            for i in range(n):
                x = X[i, f]
                right = (x > th) | ((x != x) & (nr != 0))
                for w in range(W):
                    partial[j, i, w] |= id_right[k, w] if right else id_left[k, w]


@numba.njit(parallel=True, nogil=True, cache=True)
def combine(partial, task_level, base, leaves):
    """Combining phase: per row, OR each level's partial results and base, AND the levels, take the leaf."""
    n_tasks, n, W = partial.shape
    n_levels = base.shape[0]
    for i in numba.prange(n):
        found = -1
        for w in range(W):
            acc = np.uint64(0xFFFFFFFFFFFFFFFF)
            for lv in range(n_levels):
                level_or = base[lv, w]
                for j in range(n_tasks):
                    if task_level[j] == lv:
                        level_or |= partial[j, i, w]
                acc &= level_or
            if found < 0 and acc != 0:
                found = w * 64 + lowest_set_bit(acc)
        leaves[i] = found


def timed_phases(forest, X: np.ndarray, tree: int = 0, assignment: str = "node", nodes_per_task: int = 4,
                 repeats: int = 5) -> dict:
    """Median seconds of the decision and the combining phase of one tree on prepared rows ``X``.

    Returns
    -------
    dict with ``decide_seconds``, ``combine_seconds``, ``n_tasks``, ``leaves`` (in-order leaf per row).
    """
    lay = forest.layout("bitmask", X.dtype)
    first, last = int(lay.tree_level[tree]), int(lay.tree_level[tree + 1])
    offset, level = tasks(lay.level_node, first, last, assignment, nodes_per_task)
    partial = np.empty((offset.shape[0] - 1, X.shape[0], lay.n_words), np.uint64)
    leaves = np.empty(X.shape[0], np.int64)
    base = np.ascontiguousarray(lay.base[first:last])
    args = (lay.feature, lay.threshold, lay.nan_right, lay.id_left, lay.id_right)
    t_decide, t_combine = [], []
    for r in range(repeats + 1):  # the first run compiles and warms up
        s = time.perf_counter()
        decide(X, offset, *args, partial)
        m = time.perf_counter()
        combine(partial, level, base, leaves)
        e = time.perf_counter()
        if r:
            t_decide.append(m - s)
            t_combine.append(e - m)
    return {"decide_seconds": float(np.median(t_decide)), "combine_seconds": float(np.median(t_combine)),
            "n_tasks": int(offset.shape[0] - 1), "leaves": leaves.copy()}
