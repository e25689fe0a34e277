"""The boosting loop: gradients, one tree per round (and class), margins; the model as an Ensemble.

Plain Python over the split finders.  The fitted trees are an
:class:`dtlab.trees.Ensemble` (:func:`dtlab.trees.boosted_import.boosted_ensemble`:
base margin, one column per output, scale 1), so prediction -- and the
per-round evaluation of an ``eval_set`` -- is :class:`dtlab.inference.Forest`'s.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..backend import Backend
from ..inference import Forest
from ..trees.boosted_import import boosted_ensemble
from .exact import ExactSearch
from .grower import BoostedTree, ColumnData, grow_boosted_tree
from .lossguide import LossguideSearch
from .lossguide_grower import grow_lossguide_tree
from .protocols import NodeWiseSplitFinder, SplitFinder
from .sampling import Sampler


def _hist_search(data, backend, n_workers, max_bins):
    from .hist import HistSearch

    return HistSearch(data, n_workers, max_bins)


def _hist_cuda_search(data, backend, n_workers, max_bins):
    from ._hist_cuda import HistCudaSearch  # imports numba.cuda: only on this path

    return HistCudaSearch(data, backend, max_bins)


def _exact_cuda_search(data, backend, n_workers, max_bins):
    from ._exact_cuda import ExactCudaSearch  # imports numba.cuda: only on this path

    return ExactCudaSearch(data, backend)


#: Split finders (:class:`.protocols.SplitFinder`) by ``(split_method, backend name)``: ``factory(data, backend,
#: n_workers, max_bins)``, the resolved :class:`~dtlab.backend.Backend` passed down (the CUDA finders place their
#: arrays with it).
SPLIT_METHODS: dict[tuple[str, str], Callable[..., SplitFinder]] = {
    ("exact", "cpu"): lambda data, backend, n_workers, max_bins: ExactSearch(data, n_workers),
    ("exact", "cuda"): _exact_cuda_search,
    ("hist", "cpu"): _hist_search,
    ("hist", "cuda"): _hist_cuda_search,
}


def _lossguide_search(data, backend, n_workers, params, categorical) -> NodeWiseSplitFinder:
    if backend.is_cuda:
        from ._lossguide_cuda import LossguideCudaSearch  # imports numba.cuda: only on this path

        return LossguideCudaSearch(data, backend, params["max_bins"], categorical, params["max_cat_to_onehot"])
    return LossguideSearch(data, n_workers, params["max_bins"], categorical, params["max_cat_to_onehot"])


def tree_grower(data: ColumnData, params: dict, backend: Backend, n_workers: int,
                categorical: np.ndarray | None = None, search: SplitFinder | None = None
                ) -> tuple[SplitFinder | NodeWiseSplitFinder, Callable[..., tuple[BoostedTree, np.ndarray]]]:
    """The split finder of a fit and the function that grows one tree on it, ``grow(g, h, level_features)``.

    Leaf-wise growth and categorical features take the node-wise histogram finder (:mod:`.lossguide`); plain
    depthwise growth the level-wise finders of :data:`SPLIT_METHODS`, or ``search`` when one is given (the
    Dask exact finder, :mod:`.dask.exact`: level-wise only).
    """
    keys = ("max_depth", "learning_rate", "reg_lambda", "gamma", "min_child_weight")
    grow = {k: params[k] for k in keys}
    policy = params.get("grow_policy", "depthwise")
    if search is None and (policy == "lossguide" or (categorical is not None and categorical.any())):
        cats = np.zeros(data.n_features, bool) if categorical is None else categorical
        search = _lossguide_search(data, backend, n_workers, params, cats)
        return search, lambda g, h, level_features: grow_lossguide_tree(
            search, g, h, policy, max_leaves=params.get("max_leaves", 0), level_features=level_features, **grow)
    if search is None:
        search = SPLIT_METHODS[params["split_method"], backend.name](data, backend, n_workers, params["max_bins"])
    return search, lambda g, h, level_features: grow_boosted_tree(search, g, h, level_features=level_features,
                                                                 **grow)


def boost(data: ColumnData, y: np.ndarray, loss, n_outputs: int, base_margin: float, params: dict,
          backend: Backend, n_workers: int,
          on_round: Callable[[int, list[BoostedTree]], bool] | None = None, sample_weight: np.ndarray | None = None,
          sampler: Sampler | None = None, categorical: np.ndarray | None = None,
          search: SplitFinder | None = None) -> list[BoostedTree]:
    """Fit ``params["n_estimators"]`` rounds of ``n_outputs`` trees each.

    Parameters
    ----------
    data : ColumnData
    y : array (n_samples,), float32 targets or int32 class codes
    loss : a class of :data:`dtlab.boosting.losses.LOSSES`
    n_outputs : int, 1, or the number of classes for softmax
    base_margin : float
    params : dict with n_estimators, max_depth, learning_rate, reg_lambda, gamma, min_child_weight,
        split_method, max_bins (and optionally grow_policy, max_leaves, max_cat_to_onehot)
    backend : Backend, resolved (where the split search runs)
    n_workers : int, feature slices of the CPU searches
    on_round : callable(round, trees_so_far), optional; returns True to stop (the estimators' callbacks)
    sample_weight : float32 array (n_samples,), optional
        Multiplies every row's ``g`` and ``h`` (in float32, as XGBoost does).
    sampler : :class:`.sampling.Sampler`, optional
        The rows and features of each tree.
    categorical : bool array (n_features,), optional
        Features split as categories.
    search : :class:`.protocols.SplitFinder`, optional
        One already made (the Dask exact finder, :mod:`.dask.exact`); default: :func:`tree_grower`'s.

    Returns
    -------
    list of BoostedTree, round-major (round r, class c at ``r * n_outputs + c``)
    """
    n = data.n_samples
    _, grow = tree_grower(data, params, backend, n_workers, categorical, search)
    shape = (n,) if n_outputs == 1 else (n, n_outputs)
    margin = np.full(shape, base_margin, np.float32)
    g = np.empty(shape, np.float32)
    h = np.empty(shape, np.float32)
    w = None if sample_weight is None else np.asarray(sample_weight, np.float32).reshape((n,) + (1,) * (g.ndim - 1))
    level_features = sampler.level_features if sampler is not None and sampler.samples_features else None
    trees: list[BoostedTree] = []
    for r in range(params["n_estimators"]):
        loss.gradients(margin, y, g, h)
        if w is not None:  # XGBoost's GradientPair(grad * w, hess * w), float32 products
            g *= w
            h *= w
        for c in range(n_outputs):
            gc = g if n_outputs == 1 else np.ascontiguousarray(g[:, c])
            hc = h if n_outputs == 1 else np.ascontiguousarray(h[:, c])
            if sampler is not None:
                sampler.start_tree(r * n_outputs + c, gc, hc)
            tree, leaf = grow(gc, hc, level_features)
            trees.append(tree)
            if n_outputs == 1:
                margin += tree.value[leaf]
            else:
                margin[:, c] += tree.value[leaf]
        if on_round is not None and on_round(r, trees):
            break
    return trees


class RoundEvaluation:
    """The margins of validation sets, carried round by round, and their loss after each round.

    Each round's trees (one per output) add their leaf values to every
    validation row's float32 margins, as the training margins get them; the
    values come from :class:`dtlab.inference.Forest` over those trees alone
    (one tree per output column: each sum is the leaf value itself, exact).

    Parameters
    ----------
    evals : list of (list of float32 blocks (n_rows, n_features), encoded targets, sample weights or None)
    loss : a class of :data:`dtlab.boosting.losses.LOSSES`
    metric : str, the record's name of the loss
    n_features, n_outputs : int
    base_margin : float
    """

    def __init__(self, evals: list, loss, metric: str, n_features: int, n_outputs: int, base_margin: float):
        self.evals, self.loss, self.metric = evals, loss, metric
        self.n_features, self.n_outputs = n_features, n_outputs
        self.margins = [np.full((sum(b.shape[0] for b in blocks), n_outputs), base_margin, np.float32)
                        for blocks, _, _ in evals]

    def __call__(self, round_trees: list[BoostedTree]) -> dict[str, dict[str, float]]:
        """``{"validation_i": {metric: loss}}`` after adding ``round_trees``' leaves to the margins."""
        if not self.evals:
            return {}
        forest = Forest(boosted_ensemble(round_trees, self.n_features, self.n_outputs, 0.0))
        record = {}
        for i, ((blocks, y, w), m) in enumerate(zip(self.evals, self.margins)):
            added = np.concatenate([forest.predict(b, method="traversal", backend="cpu") for b in blocks])
            m += added.reshape(m.shape).astype(np.float32)
            record[f"validation_{i}"] = {self.metric: self.loss.loss(m[:, 0] if self.n_outputs == 1 else m, y, w)}
        return record
