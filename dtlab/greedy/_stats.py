"""Node statistics of the greedy growers: value and impurity of a node's rows, without and with weights.

Shared by the CPU grower (:mod:`._grower_cpu`), the CUDA host grower (:mod:`._grower_cuda`) and the weighted
scans (:mod:`._weighted_scans_cpu`).  Weighted statistics are scikit-learn's: a row adds its weight where an
unweighted fit adds 1 (leaf value ``sum w y / sum w``, weighted class counts).
"""

from __future__ import annotations

import numba

from .._jit import NJIT
from ._node_rules import GINI, MSE, entropy_term


@numba.njit(**NJIT)
def _reg_stats(ys, s, e):
    """Sum, sum of squares and scikit-learn's MSE impurity of ``ys[s:e]``.

    A node whose targets are all equal gets impurity exactly 0 (scikit-learn's
    ``sq/n - mean^2`` can leave rounding noise above ``EPSILON`` there, and then
    splits a pure node with a zero-gain split).
    """
    n = e - s
    b = 0.0
    a = 0.0
    lo = ys[s]
    hi = ys[s]
    for i in range(s, e):
        v = ys[i]
        b += v
        a += v * v
        lo = min(lo, v)
        hi = max(hi, v)
    imp = a / n - (b / n) * (b / n)
    if lo == hi:
        imp = 0.0
    return b, imp


@numba.njit(**NJIT)
def _class_stats(ys, s, e, criterion, counts):
    """Class counts of ``ys[s:e]`` into ``counts`` and the Gini / entropy impurity."""
    for c in range(counts.shape[0]):
        counts[c] = 0.0
    for i in range(s, e):
        counts[int(ys[i])] += 1.0
    return _class_impurity(counts, float(e - s), criterion)


@numba.njit(**NJIT)
def _class_impurity(counts, n, criterion):
    """Gini ``1 - sum p^2`` or entropy ``-sum p log2 p`` of class counts over ``n`` rows."""
    if criterion == GINI:
        sq = 0.0
        for c in range(counts.shape[0]):
            sq += counts[c] * counts[c]
        return 1.0 - sq / (n * n)
    h = 0.0
    for c in range(counts.shape[0]):
        h -= entropy_term(counts[c], n)
    return h


@numba.njit(**NJIT)
def reg_stats_weighted(ys, ws, s, e):
    """Weighted sum ``B``, weight ``W`` and MSE impurity of ``ys[s:e]`` with weights ``ws[s:e]``.

    Returns ``(B, impurity, W)``; the impurity of equal targets is exactly 0 (as :func:`._grower_cpu._reg_stats`).
    """
    b = 0.0
    a = 0.0
    wt = 0.0
    lo = ys[s]
    hi = ys[s]
    for i in range(s, e):
        v = ys[i]
        w = ws[i]
        b += w * v
        a += w * v * v
        wt += w
        lo = min(lo, v)
        hi = max(hi, v)
    imp = a / wt - (b / wt) * (b / wt)
    if lo == hi:
        imp = 0.0
    return b, imp, wt


@numba.njit(**NJIT)
def class_counts_weighted(ys, ws, s, e, counts):
    """Weighted class counts of ``ys[s:e]`` into ``counts`` (float64, n_classes); returns their sum ``W``."""
    for c in range(counts.shape[0]):
        counts[c] = 0.0
    wt = 0.0
    for i in range(s, e):
        counts[int(ys[i])] += ws[i]
        wt += ws[i]
    return wt



@numba.njit(**NJIT)
def node_stats_weighted(criterion, ys, ws, s, e, value, counts):
    """Weighted value and impurity of the rows ``[s, e)`` (targets ``ys``, weights ``ws``).

    Writes the node's value into ``value`` (float64, (n_outputs,)): the weighted mean (regression) or the
    weighted class counts; ``counts`` is float64 scratch of length n_classes.  Returns ``(impurity, W)``.
    """
    if criterion == MSE:
        b, imp, wt = reg_stats_weighted(ys, ws, s, e)
        value[0] = b / wt
        return imp, wt
    wt = class_counts_weighted(ys, ws, s, e, counts)
    value[:] = counts
    return _class_impurity(counts, wt, criterion), wt
