"""C4.5's pessimistic (error-based) post-pruning of a classification FlatTree.

C4.5 (Quinlan 1993) and Weka's J48 estimate the error rate of a node that
would become a leaf by the upper limit of a binomial confidence interval,
``U_CF(E, N)``, on its ``E`` training errors out of ``N`` rows (``CF = 0.25``
by default).  Working bottom-up, a subtree is replaced by a leaf when the
leaf's estimated errors ``N * U_CF(E, N)`` are at most the sum over the
subtree's leaves plus 0.1 (J48's slack).  The upper limit follows Weka's
``Stats.addErrs``: an exact formula for ``E = 0``, linear interpolation for
``E < 1``, and the normal approximation with continuity correction otherwise.
J48's subtree raising is not done.
"""

from __future__ import annotations

import numpy as np

from ..trees import FlatTree
from ..trees.flat import preorder


def added_errors(n: float, e: float, confidence: float = 0.25) -> float:
    """Errors to add to ``e`` observed errors out of ``n`` for a pessimistic estimate.

    Weka's ``Stats.addErrs(N, e, CF)``.

    Parameters
    ----------
    n : float > 0, rows at the node
    e : float in [0, n], training errors of the node as a leaf
    confidence : float in (0, 0.5], C4.5's CF

    Returns
    -------
    float
        ``n * U_CF(e, n) - e``.
    """
    from scipy.stats import norm

    if e < 1:
        base = n * (1.0 - confidence ** (1.0 / n))  # exact upper limit for zero errors
        if e == 0:
            return base
        return base + e * (added_errors(n, 1.0, confidence) - base)
    if e + 0.5 >= n:
        return max(n - e, 0.0)
    z = norm.ppf(1.0 - confidence)
    f = (e + 0.5) / n
    r = (f + z * z / (2 * n) + z * np.sqrt(f / n - f * f / n + z * z / (4 * n * n))) / (1 + z * z / n)
    return r * n - e


def leaf_error_estimate(counts: np.ndarray, confidence: float = 0.25) -> float:
    """Pessimistic error count of a node turned into a leaf: ``E + added_errors(N, E)``."""
    n = float(np.sum(counts))
    if n == 0:
        return 0.0
    e = n - float(np.max(counts))
    return e + added_errors(n, e, confidence)


def pessimistic_prune(tree: FlatTree, confidence: float = 0.25) -> FlatTree:
    """Prune ``tree`` bottom-up by C4.5's error-based rule; returns a new tree.

    Parameters
    ----------
    tree : FlatTree, classification, ``value`` holding training class counts
    confidence : float in (0, 0.5]
        Smaller prunes more.

    Returns
    -------
    FlatTree
        Nodes in depth-first preorder; never larger than ``tree``.
    """
    if tree.task != "classification":
        raise ValueError("pessimistic pruning needs a classification tree (class counts in value)")
    if not 0.0 < confidence <= 0.5:
        raise ValueError(f"confidence must be in (0, 0.5], got {confidence}")
    keep_split = np.zeros(tree.n_nodes, dtype=bool)
    subtree_errors = np.zeros(tree.n_nodes)
    for node in reversed(tree.preorder()):  # children before parents
        as_leaf = leaf_error_estimate(tree.value[node], confidence)
        if tree.left[node] == -1:
            subtree_errors[node] = as_leaf
            continue
        below = subtree_errors[tree.left[node]] + subtree_errors[tree.right[node]]
        if as_leaf <= below + 0.1:
            subtree_errors[node] = as_leaf
        else:
            keep_split[node] = True
            subtree_errors[node] = below
    return _compact(tree, keep_split)


def _compact(tree: FlatTree, keep_split: np.ndarray) -> FlatTree:
    """The tree reachable from the root when only ``keep_split`` nodes keep their children."""
    order = preorder(np.where(keep_split, tree.left, -1), tree.right)
    new_id = {old: i for i, old in enumerate(order)}
    old = np.asarray(order)
    split = keep_split[old]
    left = np.where(split, [new_id.get(int(tree.left[o]), -1) for o in old], -1)
    right = np.where(split, [new_id.get(int(tree.right[o]), -1) for o in old], -1)
    return FlatTree(feature=np.where(split, tree.feature[old], -1), threshold=np.where(split, tree.threshold[old], 0.0),
                    left=left, right=right, value=tree.value[old], n_features=tree.n_features, task=tree.task,
                    classes=tree.classes, missing_left=tree.missing_left[old],
                    metadata={**tree.metadata, "pruning": "pessimistic"})
