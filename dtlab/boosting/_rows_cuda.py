"""The rows of a boosting tree on the device: which node each row is in, its side, its leaf (numba.cuda).

:class:`DeviceRows` is the grower's row state (:class:`.grower.HostRows` on the
CPU) for the CUDA split finders: the rows stay on the GPU for the whole tree,
grouped by node in ``order`` (node ``k`` is ``order[nseg[k]:nseg[k + 1]]``, rows
ascending within it, as the CPU's histogram search keeps them), with their
``side`` (1 = left) and, once settled, their ``leaf``.  Per level the host sends
a plan (a few integers per part of a node) and receives the children's sums:

``part_stats``  one block per part (at most :data:`PART_ROWS` rows of a node):
                rows going left, and the gradient and hessian sums of each side;
``scatter``     one block per part: its rows to the children's segments (a
                stable partition: block scans of the side flags, from the
                offsets the host computed from the counts), or, for a node that
                does not split, each row's leaf;
``fill_side``   one block per part: a value into ``side`` for each row of a part
                (a split's default direction; the root's sums).

A tree costs one upload of ``g, h`` and one download of the rows' leaves; a
level, one small download (the parts' counts and sums) and small uploads (the
plans) -- the CPU's row arrays ``pos`` and ``side`` no longer cross every level.

Sums: a part's sums are a block reduction in a fixed order (:func:`dtlab._cuda_blocks.block_sum`),
the parts' are added on the host in part order, so they do not depend on the
scheduling (the same sums on every run).  They equal the CPU's row-by-row sums
bit for bit when the float64 sums of the float32 gradients are exact -- when
the gradients' exponents span fewer than ``29 - log2(n)`` binades, the exact
search's condition (:mod:`._exact_cuda`), met by the tests' data; beyond it a
child's sum may differ from the CPU's in the last bit.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np
from numba import cuda

from .._cuda_blocks import block_inclusive_scan, block_sum
from ..gpu.kernels import declare_kernel
from ..gpu.launch import launch
from ..gpu.model import SECTOR, Work
from .protocols import NodeSums

THREADS_PER_BLOCK = 128
SIMULATOR_THREADS_PER_BLOCK = 8
#: Rows of a node one block takes; the simulator gets few, so that tiny data have several parts a node.
PART_ROWS = 8192
SIMULATOR_PART_ROWS = 8
#: Rows of the part plan (3, n_parts): the node (segment) of each part, its first row, its end.
NODE, LO, HI = range(3)


def plan_parts(nseg: np.ndarray, nodes: np.ndarray, part_rows: int) -> np.ndarray:
    """The parts of the segments of ``nodes``: int64 (3, n_parts) of (position in ``nodes``, first, end)."""
    lo, hi = nseg[nodes], nseg[nodes + 1]
    counts = np.maximum(-(-(hi - lo) // part_rows), 0)
    which = np.repeat(np.arange(nodes.shape[0]), counts)
    first = np.repeat(lo, counts) + part_rows * (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts,
                                                                                      counts))
    plan = np.empty((3, which.shape[0]), np.int64)
    plan[NODE], plan[LO] = which, first
    plan[HI] = np.minimum(first + part_rows, np.repeat(hi, counts))
    return plan


@numba.njit(cache=True)
def _node_totals(stats, part_node, n_nodes):
    """Per node, the parts' sums added in part order: (n_left, g_left, h_left, g_right, h_right) x n_nodes."""
    out = np.zeros((5, n_nodes))
    for p in range(part_node.shape[0]):
        for s in range(5):
            out[s, part_node[p]] += stats[s, p]
    return out


@functools.lru_cache(maxsize=4)
def _kernels(tpb: int):
    @cuda.jit
    def part_stats(order, side, g, h, plan, out):
        p = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        red = cuda.shared.array(tpb, np.float64)
        n_left = 0.0
        g_left = 0.0
        h_left = 0.0
        g_right = 0.0
        h_right = 0.0
        for i in range(plan[LO, p] + tid, plan[HI, p], tpb):
            r = order[i]
            if side[r] != 0:
                n_left += 1.0
                g_left += np.float64(g[r])
                h_left += np.float64(h[r])
            else:
                g_right += np.float64(g[r])
                h_right += np.float64(h[r])
        total = block_sum(n_left, red, tid, tpb)
        if tid == 0:
            out[0, p] = total
        cuda.syncthreads()
        total = block_sum(g_left, red, tid, tpb)
        if tid == 0:
            out[1, p] = total
        cuda.syncthreads()
        total = block_sum(h_left, red, tid, tpb)
        if tid == 0:
            out[2, p] = total
        cuda.syncthreads()
        total = block_sum(g_right, red, tid, tpb)
        if tid == 0:
            out[3, p] = total
        cuda.syncthreads()
        total = block_sum(h_right, red, tid, tpb)
        if tid == 0:
            out[4, p] = total

    @cuda.jit
    def scatter(order, side, plan, offsets, new_order, leaf):
        p = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        buf = cuda.shared.array(tpb, np.int64)
        lo = plan[LO, p]
        hi = plan[HI, p]
        left_at = offsets[0, p]
        if left_at < 0:  # the node does not split: its rows settle in its leaf
            for i in range(lo + tid, hi, tpb):
                leaf[order[i]] = offsets[1, p]
            return
        right_at = offsets[1, p]
        for c0 in range(lo, hi, tpb):
            i = c0 + tid
            flag = side[order[i]] if i < hi else 0
            buf[tid] = flag
            block_inclusive_scan(buf, tid, tpb)
            if i < hi:
                rank = buf[tid] - flag  # left rows of this chunk before this one
                if flag:
                    new_order[left_at + rank] = order[i]
                else:
                    new_order[right_at + (i - c0) - rank] = order[i]
            n_left = buf[tpb - 1]
            left_at += n_left
            right_at += min(tpb, hi - c0) - n_left
            cuda.syncthreads()

    @cuda.jit
    def fill_side(order, plan, value, side):
        p = cuda.blockIdx.x
        for i in range(plan[LO, p] + cuda.threadIdx.x, plan[HI, p], tpb):
            side[order[i]] = value[plan[NODE, p]]

    return {"part_stats": part_stats, "scatter": scatter, "fill_side": fill_side}


class DeviceRows:
    """The row state of one tree on the device (see the module docstring); the grower's ``rows``: a
    :class:`.protocols.RowState`."""

    pos = None  # the CPU's per-row node array: not kept, ``order`` and ``nseg`` say the same
    side: Any  # uint8 device array (n_samples,): 1 where a row goes left, marked by the finder's split

    def __init__(self, d_g, d_h, simulated: bool):
        """``d_g, d_h``: the tree's gradients, float32 device arrays (n_samples,)."""
        self.tpb = SIMULATOR_THREADS_PER_BLOCK if simulated else THREADS_PER_BLOCK
        self.part_rows = SIMULATOR_PART_ROWS if simulated else PART_ROWS
        self.k = _kernels(self.tpb)
        n = d_g.shape[0]
        self.n = n
        self.g, self.h = d_g, d_h
        self.order = cuda.to_device(np.arange(n, dtype=np.int32))
        self.spare = cuda.device_array(n, np.int32)
        self.side = cuda.to_device(np.zeros(n, np.uint8))
        self.leaf = cuda.to_device(np.zeros(n, np.int64))
        self.nseg = np.array([0, n], np.int64)

    def plan(self, nodes: np.ndarray):
        """The part plan of ``nodes`` (host and device)."""
        plan = plan_parts(self.nseg, np.asarray(nodes, np.int64), self.part_rows)
        return plan, cuda.to_device(plan)

    def fill_side(self, nodes: np.ndarray, values: np.ndarray) -> None:
        """``side = values[j]`` for every row of node ``nodes[j]``."""
        plan, d_plan = self.plan(nodes)
        if plan.shape[1]:
            launch(self.k["fill_side"], plan.shape[1], self.tpb, self.order, d_plan,
                   cuda.to_device(np.ascontiguousarray(values, np.uint8)), self.side)

    def _stats(self, nodes: np.ndarray):
        plan, d_plan = self.plan(nodes)
        if not plan.shape[1]:
            return plan, np.zeros((5, nodes.shape[0])), np.zeros((5, 0))
        d_out = cuda.device_array((5, plan.shape[1]))
        launch(self.k["part_stats"], plan.shape[1], self.tpb, self.order, self.side, self.g, self.h, d_plan, d_out)
        stats = d_out.copy_to_host()
        return plan, _node_totals(stats, plan[NODE], nodes.shape[0]), stats

    def root_sums(self) -> NodeSums:
        """``(node_g, node_h, node_n)`` of the root (every row)."""
        self.fill_side(np.zeros(1, np.int64), np.ones(1, np.uint8))
        _, tot, _ = self._stats(np.zeros(1, np.int64))
        return tot[1, :1].copy(), tot[2, :1].copy(), np.array([self.n], np.int64)

    def advance(self, which: np.ndarray, level_ids: np.ndarray, n_children: int) -> NodeSums:
        """Rows of splitting node ``k`` (``which[k] = j >= 0``) to children ``2 j`` (left, ``side`` 1) and
        ``2 j + 1``; the others settle in leaf ``level_ids[k]``.  Returns the children's sums, as the CPU's."""
        n_nodes = which.shape[0]
        nodes = np.arange(n_nodes, dtype=np.int64)
        split = np.flatnonzero(which >= 0)
        sizes = np.diff(self.nseg)
        node_g, node_h, node_n = np.zeros(n_children), np.zeros(n_children), np.zeros(n_children, np.int64)
        new_seg = np.zeros(n_children + 1, np.int64)
        part_stats = None
        if split.shape[0]:
            plan_s, tot, part_stats = self._stats(split)
            j = which[split]
            node_n[2 * j] = tot[0].astype(np.int64)
            node_n[2 * j + 1] = sizes[split] - node_n[2 * j]
            node_g[2 * j], node_h[2 * j] = tot[1], tot[2]
            node_g[2 * j + 1], node_h[2 * j + 1] = tot[3], tot[4]
            np.cumsum(node_n, out=new_seg[1:])
        plan, d_plan = self.plan(nodes)
        if plan.shape[1]:
            offsets = np.empty((2, plan.shape[1]), np.int64)
            k = plan[NODE]
            settle = which[k] < 0
            offsets[0, settle] = -1
            offsets[1, settle] = level_ids[k[settle]]
            if part_stats is not None:  # the splitting nodes' parts, in plan_s's order (the same parts)
                node_s = plan_s[NODE]  # position in ``split`` of each part's node
                j = which[split[node_s]]
                n_left = part_stats[0].astype(np.int64)
                before = np.cumsum(n_left) - n_left  # left rows of the earlier parts, every node
                first_part = np.searchsorted(node_s, node_s)  # each part's node's first part
                left_before = before - before[first_part]
                rows_before = plan_s[LO] - self.nseg[split[node_s]]
                offsets[0, ~settle] = new_seg[2 * j] + left_before
                offsets[1, ~settle] = new_seg[2 * j + 1] + rows_before - left_before
            launch(self.k["scatter"], plan.shape[1], self.tpb, self.order, self.side, d_plan,
                   cuda.to_device(offsets), self.spare, self.leaf)
        self.order, self.spare = self.spare, self.order
        self.nseg = new_seg
        return node_g, node_h, node_n

    def leaf_of_row(self) -> np.ndarray:
        return self.leaf.copy_to_host()


# ---- declarations: the argument types of every launch, the block size on a device, the work of a launch ----
def _rows_work(launch) -> Work:
    """Per row of the plan's parts: the gathered row id, side and (part_stats) gradients, a sector each."""
    from ..backend import to_host

    plan_arg = {"boosting.rows_part_stats": 4, "boosting.rows_scatter": 2, "boosting.rows_fill_side": 1}[launch.name]
    plan = to_host(launch.args[plan_arg]) if launch.args else None
    rows = float((plan[HI] - plan[LO]).sum()) if plan is not None else launch.grid[0] * PART_ROWS / 2
    return Work(bytes=rows * (4 + SECTOR), flops64=rows * 3, ops=rows * 12)


_DEVICE = lambda name: (lambda: _kernels(THREADS_PER_BLOCK)[name])  # noqa: E731 -- the kernels a device runs
PART_STATS = declare_kernel(
    "boosting.rows_part_stats", build=_DEVICE("part_stats"), blocks=(THREADS_PER_BLOCK,), model=_rows_work,
    summary="a block per part of a node: rows going left, gradient sums of each side (block reductions)",
    signatures=("void(int32[::1], uint8[::1], float32[::1], float32[::1], int64[:, ::1], float64[:, ::1])",))
SCATTER = declare_kernel(
    "boosting.rows_scatter", build=_DEVICE("scatter"), blocks=(THREADS_PER_BLOCK,), model=_rows_work,
    summary="a block per part: stable partition of its rows to the children (block scans), or their leaf",
    signatures=("void(int32[::1], uint8[::1], int64[:, ::1], int64[:, ::1], int32[::1], int64[::1])",))
FILL_SIDE = declare_kernel(
    "boosting.rows_fill_side", build=_DEVICE("fill_side"), blocks=(THREADS_PER_BLOCK,), model=_rows_work,
    summary="a block per part: a node's value into its rows' side",
    signatures=("void(int32[::1], int64[:, ::1], uint8[::1], uint8[::1])",))
