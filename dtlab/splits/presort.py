"""Rows in sorted order: the presorted attribute lists and the stable partitions that keep them sorted.

The vectorised split search sorts every feature once, at the root (attribute
lists as in SLIQ / SPRINT): feature ``f``'s list holds the row ids, the values
and the targets in (value, row) order.  After a split, every list is partitioned
stably -- the left child's rows first, each side in its old order -- so each
node stays one contiguous, sorted segment of every list and is never sorted
again.  Exact gradient boosting needs the same lists, with gradients and
hessians in place of the targets, and the same partition.

The naive and incremental searches keep instead one array of row ids
(``samples``) in which each node is a segment, partitioned by threshold, and
sort a node's values when they scan it.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT


def presort(XT: np.ndarray) -> np.ndarray:
    """Rows of each feature sorted by (value, row index).

    Parameters
    ----------
    XT : ndarray of shape (n_features, n_samples), float32, no inf
        NaN (a missing value) sorts after every number, missing rows in row order.

    Returns
    -------
    rows : ndarray of shape (n_features, n_samples), int32

    Notes
    -----
    Each value is mapped to an order-preserving uint32 key and packed with its
    row index into one uint64, so a single (SIMD, unstable) ``np.sort`` of
    distinct keys yields the stable order; much faster than
    ``argsort(kind="stable")``.
    """
    n_features, n = XT.shape
    rows = np.empty((n_features, n), dtype=np.int32)
    index = np.arange(n, dtype=np.uint64)
    for f in range(n_features):
        rows[f] = sorted_row_ids(XT[f], index)
    return rows


def sorted_row_ids(values: np.ndarray, row_ids: np.ndarray) -> np.ndarray:
    """``row_ids`` (uint64, < 2^32) ordered by (value, row id): float32 ``values`` packed with them in one key.

    NaN goes last whatever its sign bit (a negative NaN's key would otherwise come before -inf's).
    """
    sign = np.uint32(0x80000000)
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    missing = np.isnan(values)
    if missing.any():
        bits = np.where(missing, np.uint32(0x7FC00000), bits)
    key = np.where(bits & sign, ~bits, bits | sign).astype(np.uint64)
    key <<= np.uint64(32)
    key |= row_ids
    key.sort()
    return key.astype(np.uint32)  # the low 32 bits: the row index


def presort_columns(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                    argsort=None) -> tuple[np.ndarray, np.ndarray]:
    """Ragged attribute lists: the present entries of each column of a CSC matrix sorted by (value, row).

    Gradient boosting with missing values keeps only the present entries of a
    feature in its list (absent from a sparse matrix, or NaN); the node's
    missing rows are the ones its segment lacks.

    Parameters
    ----------
    indptr : int array (n_features + 1,)
        Column ``f`` is entries ``indptr[f]:indptr[f + 1]``.
    indices : int array (nnz,)
        Row of each entry (< 2^32).
    data : float32 array (nnz,), no NaN
    argsort : callable(values) -> positions, optional
        A stable argsort of float32 values (e.g. a radix sort); default: one
        ``np.sort`` of packed (value, position) keys.

    Returns
    -------
    rows : int32 array (nnz,)
        Each column's row ids in (value, row) order, in the column's slice.
    vals : float32 array (nnz,)
        The matching values.
    """
    nnz = int(indptr[-1])
    rows = np.empty(nnz, dtype=np.int32)
    vals = np.empty(nnz, dtype=np.float32)
    data = np.asarray(data, dtype=np.float32)
    for f in range(indptr.shape[0] - 1):
        s, e = int(indptr[f]), int(indptr[f + 1])
        if e == s:
            continue
        if argsort is None:
            order = sorted_row_ids(data[s:e], np.arange(e - s, dtype=np.uint64))  # positions in the column
        else:
            order = argsort(data[s:e])
        rows[s:e] = indices[s:e][order]
        vals[s:e] = data[s:e][order]
    return rows, vals


def attribute_lists(XT: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The presorted attribute lists of a training set.

    Parameters
    ----------
    XT : ndarray of shape (n_features, n_samples), float32, no NaN
    y : ndarray of shape (n_samples,)
        Targets (float64) or class codes (int32); gradients for boosting.

    Returns
    -------
    rows : ndarray of shape (n_features, n_samples), int32
        From :func:`presort`.
    vals : ndarray of shape (n_features, n_samples), float32
        ``vals[f, i] = XT[f, rows[f, i]]``.
    ylist : ndarray of shape (n_features, n_samples), dtype of y
        ``ylist[f, i] = y[rows[f, i]]``.
    """
    rows = presort(XT)
    vals = np.empty_like(XT)
    ylist = np.empty(XT.shape, dtype=y.dtype)
    _gather_lists(XT, y, rows, vals, ylist)
    return rows, vals, ylist


@numba.njit(**NJIT)
def _gather_lists(XT, y, rows, vals, ylist):
    """Fill the value and target lists from the sorted row lists (serial: memory bound)."""
    for f in range(rows.shape[0]):
        for i in range(rows.shape[1]):
            r = rows[f, i]
            vals[f, i] = XT[f, r]
            ylist[f, i] = y[r]


@numba.njit(**NJIT)
def _partition_feature(g, slot, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y):
    """Stable partition of feature ``g``'s segment ``[s, e)``: left rows first, order kept.

    Parameters
    ----------
    g : int
        The list (feature) to partition.
    slot : int
        Row of the scratch arrays to use (one per parallel worker).
    rows, vals, ylist : arrays of shape (n_features, n_samples)
        The attribute lists (int32, float32, targets), partitioned in place.
    s, e : int
    goes_left : uint8 array of shape (n_samples,)
        1 for the rows (ids) that go to the left child.
    tmp_rows, tmp_vals, tmp_y : arrays of shape (n_slots, >= e - s)
        Scratch, dtypes of the lists.

    Notes
    -----
    Branch-free: every entry is written both to the next left slot (``w <= i``,
    already read) and to the next right slot of the buffer, and the flag moves
    one of the two cursors.  Which rows go left looks random from any other
    feature's order, so a branch here would be mispredicted half the time.
    """
    w = s
    t = 0
    for i in range(s, e):
        r = rows[g, i]
        v = vals[g, i]
        yv = ylist[g, i]
        left = goes_left[r]
        rows[g, w] = r
        vals[g, w] = v
        ylist[g, w] = yv
        tmp_rows[slot, t] = r
        tmp_vals[slot, t] = v
        tmp_y[slot, t] = yv
        w += left
        t += 1 - left
    for i in range(t):
        rows[g, w + i] = tmp_rows[slot, i]
        vals[g, w + i] = tmp_vals[slot, i]
        ylist[g, w + i] = tmp_y[slot, i]


@numba.njit(parallel=True, **NJIT)
def _partition_parallel(active, n_active, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y):
    """:func:`_partition_feature` of the lists ``active[:n_active]``, in parallel, worker ``k`` in slot ``k``."""
    for k in numba.prange(n_active):
        _partition_feature(active[k], k, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y)


@numba.njit(**NJIT)
def partition_lists(rows, vals, ylist, split_f, lists, n_lists, s, mid, e, goes_left, tmp_rows, tmp_vals, tmp_y,
                     parallel_min_work):
    """Split the node ``[s, e)`` of the attribute lists at ``mid``, as list ``split_f`` is split.

    The rows of ``rows[split_f, s:mid]`` go left; the lists ``lists[:n_lists]``
    are partitioned stably (left rows first), in parallel over lists when
    ``(e - s) * n_lists`` reaches ``parallel_min_work``.

    Parameters
    ----------
    rows, vals, ylist : arrays (n_features, n_samples), int32, float32 and targets
    split_f : int
        The list whose order defines the split (already split: its left rows come first).
    lists : int64 array (>= n_lists,), the lists to partition
    n_lists, s, mid, e : int
    goes_left : uint8 scratch (n_samples,)
    tmp_rows, tmp_vals, tmp_y : scratch of shape (n_lists if parallel else 1, >= e - s), dtypes of the lists
    parallel_min_work : int
    """
    for i in range(s, e):
        goes_left[rows[split_f, i]] = 1 if i < mid else 0
    if (e - s) * n_lists >= parallel_min_work and n_lists > 1:
        _partition_parallel(lists, n_lists, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y)
    else:
        for k in range(n_lists):
            _partition_feature(lists[k], 0, rows, vals, ylist, s, e, goes_left, tmp_rows, tmp_vals, tmp_y)


@numba.njit(**NJIT)
def partition_samples(XT, f, cut, missing_left, samples, s, e, tmp):
    """Stable partition of ``samples[s:e]`` (row ids): rows with ``XT[f, row] <= cut`` first.

    Parameters
    ----------
    XT : float32 array (n_features, n_samples)
    f : int
    cut : float64, the split threshold
    missing_left : bool
        Where a row whose value is NaN goes.
    samples : int64 array (n_samples,), partitioned in place
    s, e : int
    tmp : int64 scratch (>= e - s)
    """
    w = s
    t = 0
    for i in range(s, e):
        r = samples[i]
        x = XT[f, r]
        if x <= cut or (missing_left and x != x):
            samples[w] = r
            w += 1
        else:
            tmp[t] = r
            t += 1
    for i in range(t):
        samples[w + i] = tmp[i]


@numba.njit(**NJIT)
def gather_feature(XT, f, samples, s, e):
    """Feature ``f``'s values of the rows ``samples[s:e]``, in that order: float32 array (e - s,)."""
    xb = np.empty(e - s, dtype=np.float32)
    for i in range(e - s):
        xb[i] = XT[f, samples[s + i]]
    return xb


@numba.njit(**NJIT)
def gather_in_order(y, samples, s, order, out):
    """``out[i] = y[samples[s + order[i]]]`` for ``i < len(order)``: a node's targets in sorted order."""
    for i in range(order.shape[0]):
        out[i] = y[samples[s + order[i]]]
