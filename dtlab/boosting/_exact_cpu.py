"""Exact split search of gradient boosting (swGBDT): presorted lists, prefix sums, stable partitions.

Every feature is sorted once per fit (:func:`dtlab.splits.presort_columns`);
its list holds only the present entries (absent from a CSC matrix, or NaN), so
a node's missing rows are those its segment lacks.  At each level every node
is one contiguous segment of every list.  Per node and feature the greedy trees'
prefix-sum scan (the ranking half of :func:`dtlab.splits.scan_prefix`,
:func:`dtlab.splits.rank_prefix`) gives ``G_L, H_L`` at every candidate
and ranks them by ``G_L^2/(H_L+lam) + G_R^2/(H_R+lam)``; the prefix sums are
formed once and ranked twice, the missing rows on the left and on the right, as
in the paper.  After the level's splits every list is partitioned stably into the
children's segments (no re-sorting).

Feature-parallel, as the paper's core groups: the features are cut into as
many contiguous slices as workers, each worker finds the best split of its
features for every node of the level, and the best per node is reduced.

XGBoost conventions reproduced (``tree_method="exact"``, ``updater_colmaker.cc``):
the loss change is ``G_L^2/(H_L+lam) + G_R^2/(H_R+lam) - G^2/(H+lam)``
*without* the factor 1/2 of the textbook gain ``1/2 [...] - gamma`` (the
swGBDT paper prints ``- lambda`` in the last denominator; the standard and
correct form is ``+ lambda``); ``gamma`` is compared with that loss change when
pruning; thresholds are midpoints in float32 and a row goes left when
``x < threshold``; the search with missing values on the right is only run
for features with missing values (without any, both directions are the same
search); "all present values on one side, the missing ones on the other" is a
candidate too.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from ..splits import rank_prefix
from ._gain import RT_EPS, _leaf_gain32

#: Entries per chunk of :func:`_rank_complete`.
SCAN_CHUNK = 4096
#: Below this many list entries (exact) or values (hist) a fit runs its kernels serially.  One parallel region
#: per level costs tens of microseconds on a quiet machine (milliseconds where every core is busy); measured
#: on 2 quiet cores, 40 depth-6 trees, two workers already beat one from 500 x 28 rows up (exact 24 against 30
#: ms, hist 31 against 40 ms; HIGGS' 8,238 x 28: exact 0.149 against 0.259 s, hist 0.070 against 0.100 s).
#: The bar was 1 << 18 entries, which kept HIGGS serial at any n_jobs.
PARALLEL_MIN_WORK = 1 << 15
_ZERO32 = np.float32(0.0)


@numba.njit(**NJIT)
def _midpoint(lo, hi):
    """XGBoost's threshold between two neighbouring values: the float32 midpoint, or ``hi`` if it rounds to ``lo``."""
    mid = (lo + hi) * np.float32(0.5)
    return hi if mid == lo else mid


@numba.njit(**NJIT)
def _prefix_through_rows(rows, gh, s, e, gbuf, hbuf, acc_g, acc_h):
    """Prefix sums of the gradients of the rows ``rows[s:e]``, read through the row ids, carried on from
    ``acc_g, acc_h`` (0.0 for a segment's start): the sums through the last row.

    ``gh`` (n_samples, 2) float32 holds each row's g and h side by side: the rows come in random order, and
    one cache line per row instead of two is faster on lists larger than the cache.
    """
    for i in range(e - s):
        r = rows[s + i]
        acc_g += gh[r, 0]
        acc_h += gh[r, 1]
        gbuf[i] = acc_g
        hbuf[i] = acc_h
    return acc_g, acc_h


@numba.njit(**NJIT)
def _best_split_segment(vals, rows, gh, s, e, g_node, h_node, n_node, col_missing, lam, mcw, gbuf, hbuf, obuf):
    """Best split of one node on one feature, from the node's segment ``[s, e)`` of the feature's list.

    Parameters
    ----------
    vals : float32 array (nnz,), sorted on ``[s, e)``
    rows : int32 array (nnz,), the row of each entry
    gh : float32 array (n_samples, 2), gradient and hessian of each row
    s, e : int
    g_node, h_node : float64
        Sums over every row of the node (present or missing).
    n_node : int
        Rows of the node; ``e - s < n_node`` means some are missing here.
    col_missing : bool
        Whether the feature has missing values anywhere (XGBoost searches
        "missing right" only then).
    lam, mcw : float64
    gbuf, hbuf, obuf : float64 scratch (>= e - s)

    Returns
    -------
    loss_chg : float64, 0.0 if no candidate improves the loss
    threshold : float32, ``x < threshold`` goes left
    missing_left : bool
    """
    best = 0.0
    thr = _ZERO32
    miss_left = True
    m = e - s
    if m == 0:
        return best, thr, miss_left
    # XGBoost's arithmetic (split_evaluator.h, updater_colmaker.cc): every gain in float32, the node's own
    # (root_gain) too, and loss_chg = float32(children - root); it decides near-ties and splits near RT_EPS
    root = _leaf_gain32(g_node, h_node, lam)
    has_miss = m < n_node
    if not has_miss:
        mr_proxy, mr_nl, ml_proxy, ml_nl, g_pres, h_pres = _rank_complete(vals, rows, gh, s, m, g_node, h_node,
                                                                          col_missing, lam, mcw, gbuf, hbuf, obuf)
        return _choose(vals, s, e, mr_proxy, mr_nl, ml_proxy, ml_nl, g_pres, h_pres, 0.0, 0.0, False,
                       col_missing, root, mcw, lam)
    g_pres, h_pres = _prefix_through_rows(rows, gh, s, e, gbuf, hbuf, 0.0, 0.0)
    g_miss = g_node - g_pres
    h_miss = h_node - h_pres
    # XGBoost's order of candidates, the first of equal gains kept: missing right from the smallest value up
    # (only where the feature misses values), then missing left from the largest value down
    mr_proxy, mr_nl = 0.0, 0
    if col_missing:
        mr_proxy, mr_nl = rank_prefix(vals, s, m, gbuf, hbuf, g_pres, h_pres, 1, lam, _ZERO32, g_miss, h_miss,
                                       False, mcw, False, obuf, _ZERO32)
    ml_proxy, ml_nl = rank_prefix(vals, s, m, gbuf, hbuf, g_pres, h_pres, 1, lam, _ZERO32, g_miss, h_miss, True,
                                   mcw, True, obuf, _ZERO32)
    return _choose(vals, s, e, mr_proxy, mr_nl, ml_proxy, ml_nl, g_pres, h_pres, g_miss, h_miss, has_miss,
                   col_missing, root, mcw, lam)


@numba.njit(**NJIT)
def _rank_complete(vals, rows, gh, s, m, g_node, h_node, col_missing, lam, mcw, gbuf, hbuf, obuf):
    """The two rankings of :func:`_best_split_segment` on a segment holding every row of its node:
    ``(mr_proxy, mr_nl, ml_proxy, ml_nl, g_pres, h_pres)`` (``nl <= 0``: no candidate).

    The totals are the node's, known before the scan, so the segment is taken in chunks of
    :data:`SCAN_CHUNK` entries, each chunk's prefix sums (carried on from the chunk before) ranked while
    still in the cache (faster on large segments than writing a whole segment's sums out and reading
    them back).  "Missing right" keeps the first of equal proxies, "missing left" the last.
    """
    acc_g = 0.0
    acc_h = 0.0
    mr_proxy, mr_nl = -np.inf, -1
    ml_proxy, ml_nl = -np.inf, -1
    for c0 in range(0, m, SCAN_CHUNK):
        c1 = min(c0 + SCAN_CHUNK, m)
        acc_g, acc_h = _prefix_through_rows(rows, gh, s + c0, s + c1, gbuf, hbuf, acc_g, acc_h)
        # positions 1 .. c1 - c0 of the chunk (left sizes c0 + 1 .. c1), the entry after it for the tie test;
        # the last chunk has no entry after it, nor the candidate "every row left"
        span = c1 - c0 + 1 if c1 < m else c1 - c0
        if col_missing:
            p, nl = rank_prefix(vals, s + c0, span, gbuf, hbuf, g_node, h_node, 1, lam, _ZERO32, 0.0, 0.0, False,
                                 mcw, False, obuf, _ZERO32)
            if nl > 0 and p > mr_proxy:
                mr_proxy, mr_nl = p, c0 + nl
        p, nl = rank_prefix(vals, s + c0, span, gbuf, hbuf, g_node, h_node, 1, lam, _ZERO32, 0.0, 0.0, True, mcw,
                             True, obuf, _ZERO32)
        if nl > 0 and p >= ml_proxy:
            ml_proxy, ml_nl = p, c0 + nl
    return mr_proxy, mr_nl, ml_proxy, ml_nl, acc_g, acc_h


def _choose_candidate(vals, s, e, mr_proxy, mr_nl, ml_proxy, ml_nl, g_pres, h_pres, g_miss, h_miss, has_miss,
                      col_missing, root, mcw, lam):
    """The best of a segment's candidates in XGBoost's order: (loss_chg, threshold, missing_left).

    ``mr_*`` / ``ml_*``: the best proxy and left size of the "missing right" and "missing left" scans
    (``nl <= 0``: none); ``root`` the node's own float32 gain.  A plain function: compiled here for the CPU
    and by :mod:`._exact_cuda` as a CUDA device function, so both backends choose alike.
    """
    best = 0.0
    thr = np.float32(0.0)
    miss_left = True
    if col_missing:
        if mr_nl > 0 and np.float32(mr_proxy) - root > best:
            best = np.float64(np.float32(mr_proxy) - root)
            thr = _midpoint(vals[s + mr_nl - 1], vals[s + mr_nl])
            miss_left = False
        if has_miss and h_pres >= mcw and h_miss >= mcw:  # every present value left, the missing rows right
            chg = np.float64(_leaf_gain32(g_pres, h_pres, lam) + _leaf_gain32(g_miss, h_miss, lam) - root)
            if chg > best:
                best = chg
                hi = vals[e - 1]
                thr = hi + (abs(hi) + np.float32(RT_EPS))
                miss_left = False
    if ml_nl > 0 and np.float32(ml_proxy) - root > best:
        best = np.float64(np.float32(ml_proxy) - root)
        thr = _midpoint(vals[s + ml_nl - 1], vals[s + ml_nl])
        miss_left = True
    if has_miss and h_pres >= mcw and h_miss >= mcw:  # every present value right, the missing rows left
        chg = np.float64(_leaf_gain32(g_miss, h_miss, lam) + _leaf_gain32(g_pres, h_pres, lam) - root)
        if chg > best:
            best = chg
            lo = vals[s]
            thr = lo - (abs(lo) + np.float32(RT_EPS))
            miss_left = True
    return best, thr, miss_left


_choose = numba.njit(**NJIT)(_choose_candidate)


@numba.njit(**NJIT)
def _find_splits_slice(f0, f1, slot, seg, n_nodes, vals, rows, gh, node_g, node_h, node_n, col_missing, lam,
                       mcw, bufs, f_gain, f_thr, f_left):
    """Best split of every node on the features ``f0:f1`` (one worker's slice), scratch ``bufs[:, slot]``."""
    for f in range(f0, f1):
        for k in range(n_nodes):
            f_gain[f, k], f_thr[f, k], f_left[f, k] = _best_split_segment(
                vals, rows, gh, seg[f, k], seg[f, k + 1], node_g[k], node_h[k], node_n[k], col_missing[f],
                lam, mcw, bufs[0, slot], bufs[1, slot], bufs[2, slot])


@numba.njit(**NJIT)
def _reduce_splits(f_gain, n_nodes):
    """Per node, the feature of the largest loss change (the smallest feature on ties, as XGBoost); -1 if none."""
    best_f = np.full(n_nodes, -1, np.int64)
    best = np.zeros(n_nodes)
    for k in range(n_nodes):
        for f in range(f_gain.shape[0]):
            if f_gain[f, k] > best[k]:
                best[k] = f_gain[f, k]
                best_f[k] = f
    return best_f, best


@numba.njit(**NJIT)
def _mark_sides(seg, rows, vals, split_k, split_f, split_thr, split_left, pos, side):
    """``side[r] = 1`` for the rows of a splitting node that go left, 0 for those that go right.

    Rows start on their node's missing side, then each splitting node's
    segment of its feature (its present values) overwrites them by ``x < thr``.
    Serial: O(n), and in parallel chunks (two more OpenMP regions per level) the whole fit was slower
    (on 500,000 x 28 rows, 2 threads).
    """
    n_split = split_k.shape[0]
    which = np.full(seg.shape[1], -1, np.int64)
    for j in range(n_split):
        which[split_k[j]] = j
    for r in range(pos.shape[0]):
        k = pos[r]
        if k >= 0 and which[k] >= 0:
            side[r] = 1 if split_left[which[k]] else 0
    for j in range(n_split):
        f = split_f[j]
        k = split_k[j]
        t = split_thr[j]
        for i in range(seg[f, k], seg[f, k + 1]):
            side[rows[i]] = 1 if vals[i] < t else 0


@numba.njit(**NJIT)
def _partition_slice(f0, f1, slot, indptr, seg, split_k, side, rows, vals, rows_out, vals_out, new_seg,
                     tmp_rows, tmp_vals, child_n):
    """Stable partition of the lists ``f0:f1`` into the children's segments, left child first.

    Child ``2 j`` (left) and ``2 j + 1`` (right) of the ``j``-th splitting node
    get ``new_seg[f, 2 j]:new_seg[f, 2 j + 1]`` and ``new_seg[f, 2 j + 1]:new_seg[f, 2 j + 2]``;
    the rows of nodes that stop splitting drop out of the lists.  ``child_n``: rows of each child.

    Branch-free, as the greedy trees' :func:`dtlab.splits.presort._partition_feature`:
    which rows go left looks random in any other feature's order, so a branch
    would be mispredicted half the time; the side selects the slot instead.
    Where the node misses no value of the feature, its left child's entries
    are its left rows, ``child_n[2 j]``: each entry goes straight to the next
    slot of its side.  Otherwise every entry is written to the next left slot
    and to the next slot of the scratch row ``slot``, its side moves one of the
    two cursors, and the right entries are copied after the left ones.
    """
    n_split = split_k.shape[0]
    tr = tmp_rows[slot]  # 1-d views: a 2-d index per entry costs a fifth of the loop
    tv = tmp_vals[slot]
    for f in range(f0, f1):
        out = indptr[f]
        for j in range(n_split):
            s = seg[f, split_k[j]]
            e = seg[f, split_k[j] + 1]
            new_seg[f, 2 * j] = out
            if e - s == child_n[2 * j] + child_n[2 * j + 1]:  # every row of the node is in the list
                lo = out
                ro = out + child_n[2 * j]
                for i in range(s, e):
                    r = rows[i]
                    left = side[r]
                    at = lo if left else ro
                    rows_out[at] = r
                    vals_out[at] = vals[i]
                    lo += left
                    ro += 1 - left
                new_seg[f, 2 * j + 1] = out + child_n[2 * j]
                out = ro
                continue
            t = 0
            for i in range(s, e):
                r = rows[i]
                left = side[r]
                v = vals[i]
                rows_out[out] = r
                vals_out[out] = v
                tr[t] = r
                tv[t] = v
                out += left
                t += 1 - left
            new_seg[f, 2 * j + 1] = out
            for i in range(t):
                rows_out[out + i] = tr[i]
                vals_out[out + i] = tv[i]
            out += t
        new_seg[f, 2 * n_split] = out


@numba.njit(**NJIT)
def _partition_find_slice(f0, f1, slot, indptr, seg, split_k, side, rows, vals, rows_out, vals_out, new_seg,
                          tmp_rows, tmp_vals, n_nodes, gh, node_g, node_h, node_n, col_missing, lam, mcw, bufs,
                          f_gain, f_thr, f_left):
    """:func:`_partition_slice` of the lists ``f0:f1`` into the children's segments, then
    :func:`_find_splits_slice` of the children on the same lists: one dispatch per worker and level."""
    _partition_slice(f0, f1, slot, indptr, seg, split_k, side, rows, vals, rows_out, vals_out, new_seg, tmp_rows,
                     tmp_vals, node_n)
    _find_splits_slice(f0, f1, slot, new_seg, n_nodes, vals_out, rows_out, gh, node_g, node_h, node_n,
                       col_missing, lam, mcw, bufs, f_gain, f_thr, f_left)


@numba.njit(parallel=True, **NJIT)
def _level(indptr, seg, split_k, side, rows, vals, rows_out, vals_out, new_seg, tmp_rows, tmp_vals, n_nodes, gh,
           node_g, node_h, node_n, col_missing, lam, mcw, bufs, f_gain, f_thr, f_left, n_workers, partition):
    """A level on ``n_workers`` threads, the features cut into slices (worker ``w`` in scratch slot ``w``): each
    partitions its lists (when ``partition``; else ``seg`` is already the level's), then scans them.  One
    parallel region per level: numba's OpenMP workers spin a while after each region, which costs more
    than it saves between short ones."""
    d = indptr.shape[0] - 1
    for w in numba.prange(n_workers):
        f0 = w * d // n_workers
        f1 = (w + 1) * d // n_workers
        if partition:
            _partition_find_slice(f0, f1, w, indptr, seg, split_k, side, rows, vals, rows_out, vals_out, new_seg,
                                  tmp_rows, tmp_vals, n_nodes, gh, node_g, node_h, node_n, col_missing, lam, mcw,
                                  bufs, f_gain, f_thr, f_left)
        else:
            _find_splits_slice(f0, f1, w, seg, n_nodes, vals, rows, gh, node_g, node_h, node_n, col_missing, lam,
                               mcw, bufs, f_gain, f_thr, f_left)
