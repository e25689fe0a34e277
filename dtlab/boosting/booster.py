"""The boosting loop: gradients, one tree per round (and class), margins; the trees as a PackedForest.

Plain Python over the split finders; every tree is also kept as a
:class:`dtlab.trees.PackedForest` node range, so prediction is the project's
one walk (:func:`dtlab.trees.walk.find_leaf`) over the whole forest.
"""

from __future__ import annotations

from typing import Any, Callable

import numba
import numpy as np

from .._jit import NJIT
from ..trees import PackedForest
from ..trees.walk import cpu_walks
from .exact import ExactSearch
from .grower import BoostedTree, ColumnData, grow_boosted_tree

_find_leaf = cpu_walks()["find_leaf"]


def _hist_search(data, n_workers, max_bins):
    from .hist import HistSearch

    return HistSearch(data, n_workers, max_bins)


def _hist_cuda_search(data, n_workers, max_bins):
    from ._hist_cuda import HistCudaSearch  # imports numba.cuda: only on this path

    return HistCudaSearch(data, n_workers, max_bins)


def _exact_cuda_search(data, n_workers, max_bins):
    from ._exact_cuda import ExactCudaSearch  # imports numba.cuda: only on this path

    return ExactCudaSearch(data, n_workers)


#: Split finders by ``(split_method, backend)``: ``factory(data, n_workers, max_bins)``.
SPLIT_METHODS: dict[tuple[str, str], Callable[..., Any]] = {
    ("exact", "cpu"): lambda data, n_workers, max_bins: ExactSearch(data, n_workers),
    ("exact", "cuda"): _exact_cuda_search,
    ("hist", "cpu"): _hist_search,
    ("hist", "cuda"): _hist_cuda_search,
}


def boost(data: ColumnData, y: np.ndarray, loss, n_outputs: int, base_margin: float, params: dict,
          n_workers: int, on_round: Callable[[int, np.ndarray], bool] | None = None,
          progress: Any = None) -> list[BoostedTree]:
    """Fit ``params["n_estimators"]`` rounds of ``n_outputs`` trees each.

    Parameters
    ----------
    data : ColumnData
    y : array (n_samples,), float32 targets or int32 class codes
    loss : a class of :data:`dtlab.boosting.losses.LOSSES`
    n_outputs : int, 1, or the number of classes for softmax
    base_margin : float
    params : dict with n_estimators, max_depth, learning_rate, reg_lambda, gamma, min_child_weight,
        split_method, max_bins and optionally backend ("cpu" or "cuda")
    n_workers : int
    on_round : callable(round, trees_so_far), optional; returns True to stop (early stopping)
    progress : a tqdm bar or None

    Returns
    -------
    list of BoostedTree, round-major (round r, class c at ``r * n_outputs + c``)
    """
    n = data.n_samples
    search = SPLIT_METHODS[params["split_method"], params.get("backend", "cpu")](data, n_workers, params["max_bins"])
    shape = (n,) if n_outputs == 1 else (n, n_outputs)
    margin = np.full(shape, base_margin, np.float32)
    g = np.empty(shape, np.float32)
    h = np.empty(shape, np.float32)
    trees: list[BoostedTree] = []
    grow = dict(max_depth=params["max_depth"], learning_rate=params["learning_rate"],
                reg_lambda=params["reg_lambda"], gamma=params["gamma"], min_child_weight=params["min_child_weight"])
    for r in range(params["n_estimators"]):
        loss.gradients(margin, y, g, h)
        for c in range(n_outputs):
            gc = g if n_outputs == 1 else np.ascontiguousarray(g[:, c])
            hc = h if n_outputs == 1 else np.ascontiguousarray(h[:, c])
            tree, leaf = grow_boosted_tree(search, gc, hc, **grow)
            trees.append(tree)
            if n_outputs == 1:
                margin += tree.value[leaf]
            else:
                margin[:, c] += tree.value[leaf]
        if progress is not None:
            progress.update(1)
        if on_round is not None and on_round(r, trees):
            break
    return trees


def pack(trees: list[BoostedTree]) -> PackedForest:
    """The trees as one PackedForest (``x <= threshold`` tests, leaf values in ``value[:, 0]``).

    XGBoost's float32 test ``x < t`` is ``x <= t'`` for ``t'`` the float32 just
    below ``t``: the same leaf for every float32 ``x``.
    """
    cat = {k: np.concatenate([getattr(t, k) for t in trees]) for k in
           ("feature", "threshold", "missing_left", "left", "right", "value")}
    below = np.nextafter(cat["threshold"], np.float32(-np.inf)).astype(np.float64)
    return PackedForest.from_arrays([t.n_nodes for t in trees], np.maximum(cat["feature"], 0), below,
                                    cat["left"], cat["right"], cat["missing_left"],
                                    cat["value"].astype(np.float64)[:, None])


@numba.njit(parallel=True, **NJIT)
def _sum_leaves(X, node_offset, output_of_tree, feature, threshold, left, right, missing_left, value, out):
    for row in numba.prange(X.shape[0]):
        for t in range(node_offset.shape[0] - 1):
            leaf = _find_leaf(X, row, node_offset[t], feature, threshold, left, right, missing_left)
            out[row, output_of_tree[t]] += np.float32(value[leaf, 0])


def predict_margin(forest: PackedForest, X: np.ndarray, n_outputs: int, base_margin: float,
                   n_trees: int | None = None) -> np.ndarray:
    """Margins ``base + sum of leaf values`` (float32, like XGBoost), shape (n_samples, n_outputs).

    Parameters
    ----------
    forest : PackedForest of round-major trees
    X : float32 array (n_samples, n_features), NaN = missing
    n_outputs : int
    base_margin : float
    n_trees : int, optional; use only the first ``n_trees`` trees
    """
    n_trees = forest.n_trees if n_trees is None else n_trees
    out = np.full((X.shape[0], n_outputs), base_margin, np.float32)
    if X.shape[0] and n_trees:
        output_of_tree = (np.arange(n_trees) % n_outputs).astype(np.int64)
        _sum_leaves(X, forest.node_offset[:n_trees + 1], output_of_tree, forest.feature, forest.threshold,
                    forest.left, forest.right, forest.missing_left, forest.value, out)
    return out
