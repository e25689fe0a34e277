"""The rows of a histogram fit's level to their children: the stable partition of each splitting node's
segment of the row order (:func:`_split_rows`: two passes, in parallel chunks; :func:`_split_rows_summed`: one
pass on one thread, the children's sums on the way), the nodes' sums from their segments and the rows of
the nodes that stop splitting to their leaves (:class:`.hist.SegmentRows`).  The histograms and the split
search are in :mod:`._hist_cpu`.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT

#: Below this many rows to split, a level's rows are split serially.
PARALLEL_MIN_ROWS = 1 << 16


@numba.njit(inline="always", **NJIT)
def _goes_left(v, split_bin, missing_left, miss_bin):
    """1 where a row of bin ``v`` goes to the left child of a split at ``split_bin`` (its missing values to the
    left where ``missing_left`` is 1), else 0."""
    return missing_left if v == miss_bin else (1 if v <= split_bin else 0)


@numba.njit(**NJIT)
def _chunk(nseg, k, c, n_chunks):
    """Chunk ``c`` of ``n_chunks`` of node ``k``'s segment of the row order: ``[a, b)``."""
    s, e = nseg[k], nseg[k + 1]
    return s + (e - s) * c // n_chunks, s + (e - s) * (c + 1) // n_chunks


@numba.njit(**NJIT)
def _mark_chunk(c, n_chunks, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, goes_left,
                n_left):
    """Pass 1 of :func:`_split_rows`, chunk ``c`` of every splitting node: each row's side (``goes_left[i]``
    at its position ``i`` in the order), the left rows counted in ``n_left[j, c]``.

    The bins are read by feature (``columns``, (n_features, n_samples)): a node's rows are scattered over
    the data, and one feature's column stays in the cache where the rows' bins (one cache line each) do not
    -- at 500,000 x 28 reading the rows made this pass a third of a hist fit."""
    for j in range(split_k.shape[0]):
        column = columns[split_f[j]]
        sb = split_bin[j]
        ml = 1 if split_left[j] else 0
        a, b = _chunk(nseg, split_k[j], c, n_chunks)
        count = 0
        for i in range(a, b):
            r = order[i]
            v = column[r]
            left = _goes_left(v, sb, ml, miss_bin)
            goes_left[i] = left
            count += left
        n_left[j, c] = count


@numba.njit(**NJIT)
def _move_chunk(c, n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out):
    """Pass 2 of :func:`_split_rows`: chunk ``c``'s rows to their child's next slots (from ``left_at[j, c]``,
    ``right_at[j, c]``), branch-free: the slot is a select, the side moves one of the two cursors."""
    for j in range(split_k.shape[0]):
        a, b = _chunk(nseg, split_k[j], c, n_chunks)
        lo = left_at[j, c]
        ro = right_at[j, c]
        for i in range(a, b):
            left = goes_left[i]
            order_out[lo if left else ro] = order[i]
            lo += left
            ro += 1 - left


@numba.njit(parallel=True, **NJIT)
def _mark_parallel(n_chunks, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, goes_left,
                   n_left):
    for c in numba.prange(n_chunks):
        _mark_chunk(c, n_chunks, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, goes_left,
                    n_left)


@numba.njit(parallel=True, **NJIT)
def _move_parallel(n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out):
    for c in numba.prange(n_chunks):
        _move_chunk(c, n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out)


@numba.njit(**NJIT)
def _split_rows(n_chunks, parallel, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin,
                order_out, new_seg, goes_left):
    """The rows of the splitting nodes to their children, left child first, row order kept (a stable
    partition): child ``2 j`` of the ``j``-th splitting node gets ``new_seg[2 j]:new_seg[2 j + 1]``,
    child ``2 j + 1`` the rest up to ``new_seg[2 j + 2]`` (``new_seg[0::2]`` set beforehand).

    Two passes over every node's segment cut into ``n_chunks`` chunks (in parallel when ``parallel``): the
    sides and the left count per chunk, then each chunk's rows to slots that follow from the counts.  A
    stable partition is unique, so the result does not depend on the chunks.  ``columns``: the bins by
    feature, (n_features, n_samples) uint8.
    """
    n_split = split_k.shape[0]
    n_left = np.empty((n_split, n_chunks), np.int64)
    if parallel:
        _mark_parallel(n_chunks, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin,
                       goes_left, n_left)
    else:
        for c in range(n_chunks):
            _mark_chunk(c, n_chunks, columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin,
                        goes_left, n_left)
    left_at = np.empty((n_split, n_chunks), np.int64)
    right_at = np.empty((n_split, n_chunks), np.int64)
    for j in range(n_split):
        lo = new_seg[2 * j]
        new_seg[2 * j + 1] = lo + n_left[j].sum()
        ro = new_seg[2 * j + 1]
        for c in range(n_chunks):
            a, b = _chunk(nseg, split_k[j], c, n_chunks)
            left_at[j, c] = lo
            right_at[j, c] = ro
            lo += n_left[j, c]
            ro += b - a - n_left[j, c]
    if parallel:
        _move_parallel(n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out)
    else:
        for c in range(n_chunks):
            _move_chunk(c, n_chunks, order, nseg, split_k, goes_left, left_at, right_at, order_out)


@numba.njit(**NJIT)
def _split_rows_summed(columns, order, nseg, split_k, split_f, split_bin, split_left, miss_bin, order_out, new_seg,
                       g, h, right_rows):
    """:func:`_split_rows` in one pass (one thread), the children's sums made on the way: returns (G, H, count)
    of the ``2 n_split`` children as :func:`_segment_sums` makes them, the same bits.

    Each row of a parent's segment goes to its left child's next slot or to ``right_rows`` (int32 scratch of
    at least the largest segment), copied after the left rows at the end: one read of the order and the bins
    instead of two.  The sums add each row to its side's running sums and 0.0 to the other's (a select, no
    branch: the sides are unpredictable), in row order: the additions of :func:`_segment_sums`, since adding
    0.0 leaves a sum's bits as they were."""
    n_split = split_k.shape[0]
    node_g = np.empty(2 * n_split)
    node_h = np.empty(2 * n_split)
    node_n = np.empty(2 * n_split, np.int64)
    for j in range(n_split):
        column = columns[split_f[j]]
        sb = split_bin[j]
        ml = 1 if split_left[j] else 0
        k = split_k[j]
        lo = new_seg[2 * j]
        n_right = 0
        gl = 0.0
        hl = 0.0
        gr = 0.0
        hr = 0.0
        for i in range(nseg[k], nseg[k + 1]):
            r = order[i]
            v = column[r]
            left = _goes_left(v, sb, ml, miss_bin)
            order_out[lo] = r
            right_rows[n_right] = r
            lo += left
            n_right += 1 - left
            gv = np.float64(g[r])
            hv = np.float64(h[r])
            gl += gv if left else 0.0
            hl += hv if left else 0.0
            gr += 0.0 if left else gv
            hr += 0.0 if left else hv
        new_seg[2 * j + 1] = lo
        order_out[lo:lo + n_right] = right_rows[:n_right]
        node_g[2 * j], node_h[2 * j], node_n[2 * j] = gl, hl, lo - new_seg[2 * j]
        node_g[2 * j + 1], node_h[2 * j + 1], node_n[2 * j + 1] = gr, hr, n_right
    return node_g, node_h, node_n


@numba.njit(**NJIT)
def _segment_sums(order, nseg, g, h):
    """(G, H, count) of every node from its segment of the row order: node ``k``'s rows are
    ``order[nseg[k]:nseg[k + 1]]``, in increasing row order (the splits are stable partitions of the rows in
    order), so each sum adds its rows in the order :func:`.grower._advance` adds them: the same bits."""
    n_nodes = nseg.shape[0] - 1
    node_g = np.empty(n_nodes)
    node_h = np.empty(n_nodes)
    node_n = np.empty(n_nodes, np.int64)
    for k in range(n_nodes):
        sg = 0.0
        sh = 0.0
        for i in range(nseg[k], nseg[k + 1]):
            r = order[i]
            sg += g[r]
            sh += h[r]
        node_g[k] = sg
        node_h[k] = sh
        node_n[k] = nseg[k + 1] - nseg[k]
    return node_g, node_h, node_n


@numba.njit(**NJIT)
def _settle_segments(order, nseg, which, level_ids, leaf_of_row):
    """The rows of every node ``k`` that does not split (``which[k] < 0``) settle in leaf ``level_ids[k]``."""
    for k in range(which.shape[0]):
        if which[k] < 0:
            leaf = level_ids[k]
            for i in range(nseg[k], nseg[k + 1]):
                leaf_of_row[order[i]] = leaf
