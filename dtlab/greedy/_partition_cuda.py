"""CUDA kernels that move a node's rows to its children after the greedy inducer's split (:mod:`._grower_cuda`):
``mark`` flags the rows going left, ``partition`` moves them first in every feature's presorted list, stably.

The split search itself is :mod:`._scans_cuda`'s.  A shared array's size is a compile-time constant, so the
kernels are compiled per block size (``tpb`` entries of shared memory).
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda

from .._cuda_blocks import block_inclusive_scan
from ..gpu.kernels import declare_kernel, variants
from ..gpu.model import Work
from ._scans_cuda import THREADS_PER_BLOCK


@functools.lru_cache(maxsize=4)
def partition_kernels(tpb: int) -> dict:
    """``{"mark": ..., "partition": ...}`` for ``tpb`` threads per block."""

    @cuda.jit
    def mark(rows, f, s, e, mid, goes_left):
        i = s + cuda.grid(1)
        if i < e:
            goes_left[rows[f, i]] = 1 if i < mid else 0

    @cuda.jit
    def partition(active, rows, vals, ylist, s, e, n_left, goes_left, tmp_rows, tmp_vals, tmp_y):
        g = active[cuda.blockIdx.x]
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.int64)
        m = e - s
        carry = 0  # left rows placed so far
        for c0 in range(0, m, tpb):
            i = c0 + tid
            flag = 0
            if i < m:
                flag = goes_left[rows[g, s + i]]
            buf[tid] = flag
            block_inclusive_scan(buf, tid, tpb)
            if i < m:
                left_rank = carry + buf[tid] - flag  # exclusive: left rows before this one
                dest = left_rank if flag else n_left + (i - left_rank)
                tmp_rows[g, s + dest] = rows[g, s + i]
                tmp_vals[g, s + dest] = vals[g, s + i]
                tmp_y[g, s + dest] = ylist[g, s + i]
            carry += buf[tpb - 1]
            cuda.syncthreads()
        cuda.syncthreads()
        for c0 in range(0, m, tpb):
            i = c0 + tid
            if i < m:
                rows[g, s + i] = tmp_rows[g, s + i]
                vals[g, s + i] = tmp_vals[g, s + i]
                ylist[g, s + i] = tmp_y[g, s + i]

    return {"mark": mark, "partition": partition}


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
def _partition_work(launch) -> Work:
    features = launch.grid[0]
    m = launch.shapes[5] - launch.shapes[4]
    return Work(bytes=features * m * (4 + 4 + 8) * 3 + features * m, ops=features * m * 20)


def _mark_work(launch) -> Work:
    m = launch.shapes[3] - launch.shapes[2]
    return Work(bytes=m * 5, ops=m * 4)


_DEVICE = lambda name: (lambda: partition_kernels(THREADS_PER_BLOCK)[name])  # noqa: E731 -- what a device runs
MARK = declare_kernel(
    "greedy.mark", build=_DEVICE("mark"), blocks=(THREADS_PER_BLOCK,), model=_mark_work,
    summary="a thread per row of the node: left or right of the chosen split",
    signatures=("void(int32[:, ::1], int64, int64, int64, int64, uint8[::1])",))
PARTITION = declare_kernel(
    "greedy.partition", build=_DEVICE("partition"), blocks=(THREADS_PER_BLOCK,), model=_partition_work,
    summary="a block per feature: stable partition of the node's segment by block scans of the flags",
    signatures=variants("void(int64[::1], int32[:, ::1], float32[:, ::1], {Y}[:, ::1], int64, int64, int64, "
                        "uint8[::1], int32[:, ::1], float32[:, ::1], {Y}[:, ::1])", Y=("float64", "int32")))
