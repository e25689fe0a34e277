"""Node statistics of the greedy growers: value and impurity of a node's rows, written once for weighted and
unweighted fits.

Shared by the CPU grower (:mod:`._grower_cpu`) and the CUDA host grower (:mod:`._grower_cuda`).  Weighted
statistics are scikit-learn's: a row adds its weight where an unweighted fit adds 1 (leaf value ``sum w y /
sum w``, weighted class counts); :func:`node_stats` is compiled per variant of :mod:`._weights` (``STATS``),
and with unit weights both give the same bits (sums of ones are exact row counts).
"""

from __future__ import annotations

import numba

from .._jit import NJIT, compile_functions
from ._node_rules import GINI, MSE, entropy_term
from ._weights import VARIANTS, compile_weights, multiply


@numba.njit(**NJIT)
def _class_impurity(counts, n, criterion):
    """Gini ``1 - sum p^2`` or entropy ``-sum p log2 p`` of class counts over ``n`` rows (or that weight)."""
    if criterion == GINI:
        sq = 0.0
        for c in range(counts.shape[0]):
            sq += counts[c] * counts[c]
        return 1.0 - sq / (n * n)
    h = 0.0
    for c in range(counts.shape[0]):
        h -= entropy_term(counts[c], n)
    return h


def node_stats(criterion, ys, ws, s, e, value, counts):
    """Value and impurity of the rows ``[s, e)``: targets ``ys``, weights ``ws`` at the same positions (read
    only by the weighted variant).

    Writes the node's value into ``value`` (float64, (n_outputs,)): the (weighted) mean (regression) or the
    (weighted) class counts; ``counts`` is float64 scratch of length n_classes.  Returns ``(impurity, W)``,
    ``W`` the node's weight (its row count without weights).  A node whose targets are all equal gets impurity
    exactly 0 (scikit-learn's ``sq/n - mean^2`` can leave rounding noise above ``EPSILON`` there, and then
    splits a pure node with a zero-gain split).
    """
    if criterion == MSE:
        b = 0.0
        a = 0.0
        wt = 0.0
        lo = ys[s]
        hi = ys[s]
        for i in range(s, e):
            v = ys[i]
            wi = weight_of(ws, i)  # noqa: F821 -- bound per variant (._weights)
            b += weighted(wi, v)  # noqa: F821
            a += weighted(wi, v) * v  # noqa: F821
            wt += wi
            lo = min(lo, v)
            hi = max(hi, v)
        wt = side_weight(wt, e - s)  # noqa: F821
        imp = a / wt - (b / wt) * (b / wt)
        if lo == hi:
            imp = 0.0
        value[0] = b / wt
        return imp, wt
    for c in range(counts.shape[0]):
        counts[c] = 0.0
    wt = 0.0
    for i in range(s, e):
        wi = weight_of(ws, i)  # noqa: F821
        counts[int(ys[i])] += wi
        wt += wi
    wt = side_weight(wt, e - s)  # noqa: F821
    value[:] = counts
    return _class_impurity(counts, wt, criterion), wt


def _compile(variant: str) -> dict:
    jit = numba.njit(**NJIT)
    # inlined into the grower, which calls it twice per node
    return compile_functions([node_stats], numba.njit(inline="always", **NJIT),
                             compile_weights(variant, jit, jit(multiply)), variant)


#: variant ("unweighted", "weighted") -> {"node_stats": compiled, and the variant's compiled weight functions}.
STATS = {variant: _compile(variant) for variant in VARIANTS}
