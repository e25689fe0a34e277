"""Missing values (NaN) in the greedy CPU scans: scikit-learn's rules (>= 1.3) and the helpers every scan uses.

A node's rows of one feature come sorted with the missing ones last: the
presorted lists put NaN after every number (:func:`dtlab.splits.sorted_row_ids`)
and stable partitions keep it so; the naive and incremental searches order a
node's rows the same way (:func:`present_first_order`).  scikit-learn's
``node_split_best`` then tries, in this order, and keeps the first of equal
scores:

1. every threshold between two present values with the missing rows on the
   right, then every present value on the left and the missing rows alone on
   the right (threshold inf: dtlab stores :data:`ALL_PRESENT_LEFT`, the largest
   float32, the same test for every finite float32 value);
2. every threshold with the missing rows on the left.

``min_samples_leaf`` counts the missing rows on their side.  A feature with no
present value in the node is constant; one whose present values are all equal
is not when some are missing (present against missing is its one candidate).
A split of a node without missing rows sends NaN at predict time to the child
that got more training rows.  The scans (:mod:`._scans_cpu`, every one of them
missing-aware: a node without missing rows is the case ``m_present == m``)
return the present rows on the left (``k``) and whether the missing ones go
left; the grower moves the missing rows next to the left present ones before it
partitions (:func:`rotate_missing_left`).
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT

#: Threshold of the split "every present value left, the missing ones right" (scikit-learn: inf).
ALL_PRESENT_LEFT = float(np.finfo(np.float32).max)


@numba.njit(**NJIT)
def n_present(xs, s, e):
    """Rows of ``[s, e)`` whose value is not NaN; ``xs`` sorted there with NaN last (binary search, O(1) without)."""
    if not np.isnan(xs[e - 1]):
        return e - s
    lo = s
    hi = e - 1  # xs[hi] is NaN
    while lo < hi:
        mid = (lo + hi) // 2
        if np.isnan(xs[mid]):
            hi = mid
        else:
            lo = mid + 1
    return lo - s


@numba.njit(**NJIT)
def candidate_range(m_present, m, missing_left, msl):
    """The candidates ``lo .. hi`` of a pass: ``k`` present rows on the left (the missing ones on the side
    ``missing_left`` says) such that each side keeps ``msl`` rows, missing ones counted.  With the missing rows
    right, ``k = m_present`` (every present row left) is the pass's last candidate; with them left it is none."""
    if missing_left:
        return max(msl - (m - m_present), 1), m_present - msl
    return max(msl, 1), min(m_present, m - msl)


@numba.njit(**NJIT)
def is_tie(xs, s, k, m_present, thr):
    """Whether no threshold lies between the present values ``xs[s + k - 1]`` and ``xs[s + k]`` (``k < m_present``;
    ``k == m_present`` is never a tie).  Branch-free: the scans test it per row."""
    after = s + k if k < m_present else s + k - 1
    return (k < m_present) & (xs[after] <= xs[s + k - 1] + thr)


@numba.njit(**NJIT)
def present_first_order(xb):
    """Positions of ``xb`` (float32) sorted stably by value, the NaN ones last in their order: the presorted
    lists' order of a node's rows."""
    m = xb.shape[0]
    present = np.empty(m, dtype=np.int64)
    missing = np.empty(m, dtype=np.int64)
    n_p = 0
    n_m = 0
    for i in range(m):
        if np.isnan(xb[i]):
            missing[n_m] = i
            n_m += 1
        else:
            present[n_p] = i
            n_p += 1
    order = np.empty(m, dtype=np.int64)
    if n_p:
        values = np.empty(n_p, dtype=np.float32)
        for i in range(n_p):
            values[i] = xb[present[i]]
        by_value = np.argsort(values, kind="mergesort")
        for i in range(n_p):
            order[i] = present[by_value[i]]
    for i in range(n_m):
        order[n_p + i] = missing[i]
    return order, n_p


@numba.njit(**NJIT)
def rotate_missing_left(lists, f, p, q, e, tmp):
    """Segment ``[p, e)`` of ``lists[f]`` from (right present ``[p, q)``, missing ``[q, e)``) to missing first.

    After a split that sends the missing rows left, the chosen feature's list holds the left present rows, the
    right present rows, then the missing ones; moving the missing rows before the right present ones makes the
    left child a prefix again (present rows sorted, then missing: the order every list keeps).  ``tmp`` is a
    1-D scratch of ``lists``' dtype (>= q - p).
    """
    n_b = q - p
    for i in range(n_b):
        tmp[i] = lists[f, p + i]
    for i in range(e - q):
        lists[f, p + i] = lists[f, q + i]
    for i in range(n_b):
        lists[f, p + e - q + i] = tmp[i]
