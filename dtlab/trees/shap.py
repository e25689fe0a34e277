"""Exact TreeSHAP: each feature's contribution to a tree ensemble's raw prediction, row by row.

Lundberg, Erion and Lee, "Consistent individualized feature attribution for
tree ensembles" (2018), Algorithm 2 -- the polynomial-time exact Shapley values
of the tree's conditional expectations, the path-dependent version XGBoost
(``pred_contribs=True``) and LightGBM (``pred_contrib=True``) compute.  A node's
*cover* (its training hessian sum in a boosted tree, its sample count in a
forest) weighs the branches a missing feature would follow.  For every row the
contributions plus the bias column add up to the raw prediction:

    raw[x, k] = contrib[x, k, -1] + sum_f contrib[x, k, f]

where the bias is ``base[k]`` plus each tree's cover-weighted mean leaf value.

The recursion of the paper runs here as an explicit stack (the hot child on
top, so the cold child sees its parent's path unchanged), with the unique-path
arrays of every depth in one buffer per row block; rows in parallel
(``prange``).  Categorical nodes pick the hot child by
:func:`dtlab.trees.categorical.category_goes_left`; the arithmetic is float64.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from .categorical import CategoricalSplits, cpu_functions

_goes_left = cpu_functions()["category_goes_left"]


@numba.njit(**NJIT)
def _extend(pf, pz, po, pw, base, depth, zero, one, feature):
    pf[base + depth] = feature
    pz[base + depth] = zero
    po[base + depth] = one
    pw[base + depth] = 1.0 if depth == 0 else 0.0
    for i in range(depth - 1, -1, -1):
        pw[base + i + 1] += one * pw[base + i] * (i + 1) / (depth + 1)
        pw[base + i] = zero * pw[base + i] * (depth - i) / (depth + 1)


@numba.njit(**NJIT)
def _unwind(pf, pz, po, pw, base, depth, index):
    one, zero = po[base + index], pz[base + index]
    next_one = pw[base + depth]
    for i in range(depth - 1, -1, -1):
        if one != 0.0:
            tmp = pw[base + i]
            pw[base + i] = next_one * (depth + 1) / ((i + 1) * one)
            next_one = tmp - pw[base + i] * zero * (depth - i) / (depth + 1)
        else:
            pw[base + i] = pw[base + i] * (depth + 1) / (zero * (depth - i))
    for i in range(index, depth):
        pf[base + i] = pf[base + i + 1]
        pz[base + i] = pz[base + i + 1]
        po[base + i] = po[base + i + 1]


@numba.njit(**NJIT)
def _unwound_sum(pz, po, pw, base, depth, index):
    one, zero = po[base + index], pz[base + index]
    next_one = pw[base + depth]
    total = 0.0
    for i in range(depth - 1, -1, -1):
        if one != 0.0:
            tmp = next_one * (depth + 1) / ((i + 1) * one)
            total += tmp
            next_one = pw[base + i] - tmp * zero * ((depth - i) / (depth + 1))
        elif zero != 0.0:
            total += (pw[base + i] / zero) / ((depth - i) / (depth + 1))
    return total


@numba.njit(**NJIT)
def _tree_shap(X, row, root, feature, threshold, left, right, missing_left, cover, value, column, cat_index,
               cat_offset, cat_words, cat_out_left, pf, pz, po, pw, stack_i, stack_f, phi):
    """Add tree ``root``'s contributions for row ``row`` into ``phi[column, :]`` (the paper's RECURSE)."""
    top = 0  # stack entries: node, depth, parent path base, feature | zero, one fractions
    stack_i[0, 0], stack_i[0, 1], stack_i[0, 2], stack_i[0, 3] = root, 0, 0, -1
    stack_f[0, 0], stack_f[0, 1] = 1.0, 1.0
    while top >= 0:
        node, depth, parent, split_feature = stack_i[top, 0], stack_i[top, 1], stack_i[top, 2], stack_i[top, 3]
        zero, one = stack_f[top, 0], stack_f[top, 1]
        top -= 1
        base = parent + depth + 1
        for i in range(depth + 1):  # the parent's path, copied into this depth's own segment
            pf[base + i], pz[base + i], po[base + i], pw[base + i] = pf[parent + i], pz[parent + i], \
                po[parent + i], pw[parent + i]
        _extend(pf, pz, po, pw, base, depth, zero, one, split_feature)
        if left[node] == -1:
            for i in range(1, depth + 1):
                w = _unwound_sum(pz, po, pw, base, depth, i)
                phi[column, pf[base + i]] += w * (po[base + i] - pz[base + i]) * value[node]
            continue
        f = feature[node]
        x = X[row, f]
        k = cat_index[node]
        if k >= 0:
            go_left = _goes_left(x, missing_left[node], k, cat_offset, cat_words, cat_out_left)
        elif x <= threshold[node]:
            go_left = True
        elif x > threshold[node]:
            go_left = False
        else:
            go_left = missing_left[node]
        hot = left[node] if go_left else right[node]
        cold = right[node] if go_left else left[node]
        in_zero, in_one = 1.0, 1.0
        for index in range(depth + 1):  # a split on a feature already on the path: undo it, redo it here
            if pf[base + index] == f:
                in_zero, in_one = pz[base + index], po[base + index]
                _unwind(pf, pz, po, pw, base, depth, index)
                depth -= 1
                break
        for child, z_frac, o_frac in ((cold, cover[cold] / cover[node], 0.0), (hot, cover[hot] / cover[node], in_one)):
            top += 1
            stack_i[top, 0], stack_i[top, 1], stack_i[top, 2], stack_i[top, 3] = child, depth + 1, base, f
            stack_f[top, 0], stack_f[top, 1] = z_frac * in_zero, o_frac


@numba.njit(parallel=True, **NJIT)
def _contributions(X, node_offset, feature, threshold, left, right, missing_left, cover, value, tree_column,
                   cat_index, cat_offset, cat_words, cat_out_left, max_depth, n_blocks, out):
    n = X.shape[0]
    size = (max_depth + 3) * (max_depth + 4) // 2 + max_depth + 3
    for b in numba.prange(n_blocks):
        pf = np.empty(size, np.int64)
        pz, po, pw = np.empty(size), np.empty(size), np.empty(size)
        stack_i = np.empty((2 * max_depth + 4, 4), np.int64)
        stack_f = np.empty((2 * max_depth + 4, 2))
        for row in range(b * n // n_blocks, (b + 1) * n // n_blocks):
            for t in range(node_offset.shape[0] - 1):
                _tree_shap(X, row, node_offset[t], feature, threshold, left, right, missing_left, cover, value,
                           tree_column[t], cat_index, cat_offset, cat_words, cat_out_left, pf, pz, po, pw, stack_i,
                           stack_f, out[row])


def node_means(forest, cover: np.ndarray) -> np.ndarray:
    """Each node's cover-weighted mean leaf value (float64, shape (n_nodes,)): a tree's expected output is its
    root's."""
    value = forest.value[:, 0].astype(np.float64)
    mean = value.copy()
    for node in range(forest.n_nodes - 1, -1, -1):  # children come after their parent
        a, b = forest.left[node], forest.right[node]
        if a != -1:
            mean[node] = (mean[a] * cover[a] + mean[b] * cover[b]) / cover[node] if cover[node] > 0 else 0.0
    return mean


def tree_shap(ensemble, cover: np.ndarray, X: np.ndarray) -> np.ndarray:
    """Exact TreeSHAP contributions of an :class:`~dtlab.trees.ensemble.Ensemble` with one value per tree.

    Parameters
    ----------
    ensemble : Ensemble (``n_values == 1``: each tree adds into column ``tree_column[t]``)
    cover : float array (n_nodes,), every node's cover, positive at internal nodes
    X : float array (n_samples, n_features), prepared as the model reads it

    Returns
    -------
    ndarray (n_samples, n_outputs, n_features + 1), float64: per feature, then the bias.
    """
    forest = ensemble.forest
    if ensemble.n_values != 1:
        raise ValueError("TreeSHAP here needs one value per tree (boosted models)")
    cover = np.asarray(cover, np.float64)
    internal = forest.left != -1
    if cover.shape != (forest.n_nodes,) or (cover[internal] <= 0).any():
        raise ValueError("TreeSHAP needs a positive cover at every internal node")
    n, d = X.shape
    out = np.zeros((n, ensemble.n_outputs, d + 1))
    means = node_means(forest, cover)
    for t in range(forest.n_trees):
        out[:, ensemble.tree_column[t], d] += means[forest.node_offset[t]] * ensemble.scale
    out[:, :, d] += ensemble.base
    cat = ensemble.categorical or CategoricalSplits(np.zeros(0, np.int64), np.zeros(1, np.int64),
                                                    np.zeros(0, np.uint32), np.zeros(0, bool))
    depth = _max_depth(forest)
    phi = np.zeros((n, ensemble.n_outputs, d + 1))
    if n:
        _contributions(X, forest.node_offset, forest.feature, forest.threshold, forest.left, forest.right,
                       forest.missing_left, cover, forest.value[:, 0].astype(np.float64), ensemble.tree_column,
                       cat.node_table(forest.n_nodes), cat.offset, cat.words, cat.out_left, depth,
                       max(1, min(n, 8 * numba.get_num_threads())), phi)
    out[:, :, :d] += phi[:, :, :d] * ensemble.scale
    return out


def _max_depth(forest) -> int:
    depth = np.zeros(forest.n_nodes, np.int64)
    for node in range(forest.n_nodes):
        if forest.left[node] != -1:
            depth[forest.left[node]] = depth[forest.right[node]] = depth[node] + 1
    return int(depth.max()) if forest.n_nodes else 0
