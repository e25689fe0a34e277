"""Categorical split search from a node's histogram over categories (one bin per category).

The partition method of LightGBM and XGBoost: the categories present in the
node are ordered by ``G_c / H_c`` and every prefix of that order is a
candidate left set (Fisher's result: for the Newton gain the best
partition into two sets is one of these, so ``m`` candidates replace
``2^(m-1)``); the missing rows are tried on both sides.  A feature with at
most ``max_cat_to_onehot`` categories tries each category alone against the
rest instead (LightGBM's one-vs-other).  The gain is the histogram search's,
``G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) - G^2/(H+lambda)``, with the same
``min_child_weight`` rule.

:func:`categorical_split` is a plain function with scratch arrays passed in
(the rules of :mod:`dtlab._jit`): compiled for the CPU here and as a CUDA device
function by the CUDA finder.  It leaves the order it ranked the categories in
``order``, so the winner's left set is read back with a second call.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT, compile_functions, cpu_jit
from ._gain import _leaf_gain


def categorical_split(hg, hh, n_bins, g_node, h_node, col_missing, lam, mcw, max_onehot, order, ratio):
    """Best categorical split of one node and feature.

    Parameters
    ----------
    hg, hh : float64 arrays (n_total_bins,), the node's histogram; the last bin holds the missing rows
    n_bins : int, bins of present categories (``0 .. n_bins - 1``)
    g_node, h_node : float, the node's sums
    col_missing : bool, whether the feature has missing values at all
    lam, mcw : float, ``reg_lambda``, ``min_child_weight``
    max_onehot : int, one-vs-rest for a feature of at most this many categories
    order, ratio : scratch, int64 and float64 arrays of at least ``n_bins`` entries

    Returns
    -------
    (gain, n_left, missing_left, onehot)
        ``onehot`` True: the left set is the single bin ``order[n_left - 1]``; else the first ``n_left``
        bins of ``order``.  gain 0 and n_left 0 when no split is valid.
    """
    miss = hg.shape[0] - 1
    g_miss, h_miss = hg[miss], hh[miss]
    m = 0
    for b in range(n_bins):  # the categories present in the node, in bin order
        if hh[b] > 0.0:
            order[m] = b
            ratio[m] = hg[b] / hh[b]
            m += 1
    root = _leaf_gain(g_node, h_node, lam)
    onehot = n_bins <= max_onehot  # the feature's categories decide, as in LightGBM and XGBoost
    if not onehot:  # insertion sort by G/H, stable (equal ratios keep bin order): m <= 255
        for i in range(1, m):
            b, r = order[i], ratio[i]
            j = i - 1
            while j >= 0 and ratio[j] > r:
                order[j + 1] = order[j]
                ratio[j + 1] = ratio[j]
                j -= 1
            order[j + 1] = b
            ratio[j + 1] = r
    best, best_n, best_left = 0.0, 0, True
    n_directions = 2 if col_missing and h_miss > 0.0 else 1
    for direction in range(n_directions):
        miss_left = direction == 1
        # one-hot: each category alone; partition: every proper prefix, and all of them against the missing
        # rows (when these go right)
        n_candidates = m if onehot or (n_directions == 2 and not miss_left) else m - 1
        gl, hl = 0.0, 0.0
        for i in range(n_candidates):
            b = order[i]
            if onehot:
                gl, hl = hg[b], hh[b]
            else:
                gl += hg[b]
                hl += hh[b]
            gL = gl + g_miss if miss_left else gl
            hL = hl + h_miss if miss_left else hl
            gR = g_node - gL
            hR = h_node - hL
            if hL < mcw or hR < mcw or hL <= 0.0 or hR <= 0.0:
                continue
            chg = _leaf_gain(gL, hL, lam) + _leaf_gain(gR, hR, lam) - root
            if chg > best:
                best, best_n, best_left = chg, i + 1, miss_left
    return best, best_n, best_left, onehot


_compiled = compile_functions([categorical_split], cpu_jit(error_model="numpy"))
_categorical_split = _compiled["categorical_split"]


@numba.njit(parallel=True, **NJIT)
def categorical_level(features, hg, hh, n_bins, node_g, node_h, col_missing, lam, mcw, max_onehot, f_gain, f_n,
                      f_left, f_onehot):
    """:func:`categorical_split` for every categorical feature (``features``) and node of a level's
    histograms ``hg``, ``hh`` (n_nodes, n_features, n_total_bins); results into rows ``f`` of the
    ``(n_features, n_nodes)`` arrays (the other rows untouched)."""
    n_nodes = hg.shape[0]
    n_total = hg.shape[2]
    for i in numba.prange(features.shape[0] * n_nodes):
        f = features[i // n_nodes]
        k = i % n_nodes
        order = np.empty(n_total, np.int64)
        ratio = np.empty(n_total)
        f_gain[f, k], f_n[f, k], f_left[f, k], f_onehot[f, k] = _categorical_split(
            hg[k, f], hh[k, f], n_bins[f], node_g[k], node_h[k], col_missing[f], lam, mcw, max_onehot, order, ratio)


def left_bins(hg_node_f, hh_node_f, n_bins, g_node, h_node, col_missing, lam, mcw, max_onehot) -> tuple:
    """The winner's left set at one node: ``(bins going left (int64, increasing), missing_left, gain)``."""
    order = np.empty(hg_node_f.shape[0], np.int64)
    ratio = np.empty(hg_node_f.shape[0])
    gain, n_left, miss_left, onehot = _categorical_split(hg_node_f, hh_node_f, n_bins, g_node, h_node, col_missing,
                                                         lam, mcw, max_onehot, order, ratio)
    chosen = order[n_left - 1:n_left] if onehot else order[:n_left]
    return np.sort(chosen), bool(miss_left), float(gain)
