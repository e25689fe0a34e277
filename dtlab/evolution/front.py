"""The size-accuracy front of a GDT run, and choosing a tree from it by a complexity weight or by cross-validation.

GDT's fitness ``Accuracy(T) - alpha * (Size(T) - 1)`` picks one tree for one
``alpha``.  Every tree a run evaluates is a point (size, training accuracy);
:class:`Front` keeps the most accurate tree of every size the run met, and
its non-dominated trees form a path like cost-complexity pruning's: each is
the best for a range of complexity weights (the upper convex hull of the
front), so a user picks the weight, hence the size, by cross-validation as
with ``ccp_alpha`` (:func:`cv_size_alpha`).  Trees larger than ``alpha``
prefers are on the front too: mutations and crossovers evaluate them before
selection or local pruning drops them.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numba
import numpy as np

from ._sparse import tree_call
from .individual import Individual
from .population import Population


class Front:
    """The most accurate tree (training rows) of each size evaluated during a run.

    Attributes
    ----------
    best : ndarray of float64, indexed by size (nodes)
        The best training accuracy seen for each size, -1 where none.
    trees : dict mapping size -> Individual
    """

    def __init__(self):
        self.best = np.full(64, -1.0)
        self.trees: dict[int, Individual] = {}

    def offer(self, population: Population, slots: np.ndarray) -> None:
        """Keep any of the (evaluated) trees ``slots`` that beats the best of its size so far (the first of equals)."""
        sizes = population.sizes[slots]
        if sizes.size == 0:
            return
        if sizes.max() >= self.best.shape[0]:
            self.best = np.concatenate([self.best, np.full(2 * int(sizes.max()) + 1 - self.best.shape[0], -1.0)])
        accuracy = population.accuracy[slots]
        for j in np.flatnonzero(accuracy > self.best[sizes]):
            size = int(sizes[j])
            if accuracy[j] > self.best[size]:  # a tree of the same size earlier in this batch may have won already
                self.best[size] = accuracy[j]
                self.trees[size] = population.individual(int(slots[j]))

    def non_dominated(self) -> list[Individual]:
        """The trees no smaller tree matches in accuracy, by increasing size (and strictly increasing accuracy)."""
        out, best = [], -1.0
        for size in sorted(self.trees):
            if self.trees[size].accuracy > best:
                out.append(self.trees[size])
                best = self.trees[size].accuracy
        return out

    def as_population(self) -> Population | None:
        """The kept trees as a :class:`Population` (what a checkpoint stores); None when empty."""
        if not self.trees:
            return None
        return Population.from_individuals([self.trees[s] for s in sorted(self.trees)])

    @classmethod
    def from_population(cls, population: Population | None) -> "Front":
        front = cls()
        if population is not None:
            front.offer(population, np.arange(population.n_trees))
        return front


def check_size_alpha(value: Any) -> float | str | None:
    """``GDTClassifier``'s ``size_alpha``: None, ``"cv"`` or a float >= 0 (a clear error otherwise)."""
    from .._validation import check_real

    if value is None or (isinstance(value, str) and value == "cv"):
        return value
    if isinstance(value, str):
        raise ValueError(f"size_alpha must be None, a float >= 0 or 'cv', got {value!r}")
    return check_real(value, "size_alpha", low=0.0)


def hull_path(n_nodes: np.ndarray, accuracy: np.ndarray) -> list[tuple[int, float, float]]:
    """The trees of a front chosen by some complexity weight, and the weights that choose each.

    Tree ``i`` maximises ``accuracy - alpha * (n_nodes - 1)`` for ``alpha`` in
    ``[alpha_low, alpha_high)`` (the upper convex hull of the points; ties go to
    the smaller tree, as ``ccp_alpha`` prefers the pruned tree).

    Parameters
    ----------
    n_nodes, accuracy : arrays of shape (n_trees,), increasing in both (a non-dominated front)

    Returns
    -------
    list of ``(index, alpha_low, alpha_high)`` from the largest weight (the smallest tree) down, ``alpha_high``
    of the smallest tree being ``inf`` and ``alpha_low`` of the largest 0.
    """
    hull: list[int] = []
    for i in range(len(n_nodes)):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # b is not above the segment a-i: it is never the unique best
            if (accuracy[b] - accuracy[a]) * (n_nodes[i] - n_nodes[a]) <= \
                    (accuracy[i] - accuracy[a]) * (n_nodes[b] - n_nodes[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    path, high = [], float("inf")
    for a, b in zip(hull, hull[1:] + [None]):
        low = 0.0 if b is None else float((accuracy[b] - accuracy[a]) / (n_nodes[b] - n_nodes[a]))
        path.append((a, low, high))
        high = low
    return path


def choose(n_nodes: np.ndarray, accuracy: np.ndarray, size_alpha: float) -> int:
    """Index of the tree maximising ``accuracy - size_alpha * (n_nodes - 1)``; the smallest of equals."""
    score = np.asarray(accuracy, float) - size_alpha * (np.asarray(n_nodes, float) - 1)
    best = score.max()
    return int(np.flatnonzero(score >= best - 1e-12)[0])


def choose_tree(front: list, size_alpha: float):
    """The tree of a fitted ``front_`` (FlatTrees by size) that :func:`choose` picks for ``size_alpha``."""
    nodes = np.array([t.n_nodes for t in front])
    accuracy = np.array([float(t.metadata["training_accuracy"]) for t in front])
    return front[choose(nodes, accuracy, size_alpha)]


def cv_size_alpha(estimator, X: np.ndarray, y: np.ndarray, cv: int, seed: Any) -> tuple[float, dict]:
    """The complexity weight whose chosen trees score best on held-out folds of the training rows.

    Each of ``cv`` stratified folds is held out once: GDT (``estimator``'s
    parameters, ``size_alpha=None``) evolves on the rest, and every weight of
    the candidate grid picks a tree from that run's front, scored on the
    held-out fold.  The candidates are the weights where some fold's choice
    changes (the hull breakpoints, and the midpoints between consecutive
    ones); the best mean held-out accuracy wins, the largest weight (the
    smallest trees) among equals.

    Returns
    -------
    (alpha, results) with ``results`` holding ``alphas`` and the fold-mean ``scores``.
    """
    from sklearn.base import clone
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(cv, shuffle=True, random_state=np.random.default_rng(seed).integers(2**31 - 1))
    fronts = []
    for train, test in folds.split(X, y):
        fold = clone(estimator).set_params(size_alpha=None, checkpoint=None, callback=None, verbose=False)
        fold.fit(X[train], y[train])
        fronts.append((fold, X[test], y[test]))
    breaks = sorted({float(low) for fold, _, _ in fronts for low in fold.size_path_.alpha_low if low > 0})
    alphas = np.unique(np.concatenate([[0.0], breaks, np.sqrt(np.multiply(breaks[:-1], breaks[1:]))
                                       if len(breaks) > 1 else []]))
    scores = np.zeros(alphas.shape[0])
    for fold, X_test, y_test in fronts:
        nodes = np.array([t.n_nodes for t in fold.front_])
        train_acc = np.array([float(t.metadata["training_accuracy"]) for t in fold.front_])
        test_acc = np.array([float(np.mean(tree_call(t, "predict", X_test) == y_test)) for t in fold.front_])
        scores += test_acc[[choose(nodes, train_acc, a) for a in alphas]] / len(fronts)
    best = int(np.flatnonzero(scores >= scores.max() - 1e-12)[-1])
    return float(alphas[best]), {"alphas": alphas.tolist(), "scores": scores.tolist(), "folds": cv}


def finish(best: Individual, front: list[Individual], X: np.ndarray | None, n_features: int, classes: np.ndarray,
           generations: int):
    """The fitted trees of a run: the best, the front's non-dominated trees, and the path of weights that choose them.

    Every tree is finished as ``GDTClassifier.tree_`` is (splits without
    training objects removed, thresholds centred in their gap,
    :mod:`dtlab.evolution.individual`), which can shrink a tree, so the front
    is filtered for dominance again afterwards.

    Returns
    -------
    (best FlatTree, front as a list of FlatTree by size, size path DataFrame)
    """
    import pandas as pd

    from .individual import center_thresholds, remove_empty_branches, to_flat_tree

    def finished(ind: Individual):
        final = remove_empty_branches(ind)
        if X is not None:
            final = center_thresholds(final, X)
        return to_flat_tree(final, n_features, classes,
                            metadata={"source": "dtlab.evolution.GDTClassifier", "fitness": float(ind.fitness),
                                      "training_accuracy": float(ind.accuracy), "generations": int(generations)})

    # each tree's centring is a pass over X in compiled code that releases the GIL: on 100,000 rows ten front
    # trees took 0.1 s one after another, a twentieth of the whole fit
    threads = min(len(front), numba.get_num_threads()) if X is not None else 1
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            done = list(pool.map(finished, front))
    else:
        done = [finished(ind) for ind in front]
    trees = sorted(done, key=lambda t: t.n_nodes)
    kept, most = [], -1.0
    for tree in trees:
        if tree.metadata["training_accuracy"] > most:
            kept.append(tree)
            most = tree.metadata["training_accuracy"]
    nodes = np.array([t.n_nodes for t in kept])
    accuracy = np.array([t.metadata["training_accuracy"] for t in kept])
    path = pd.DataFrame([{"front_index": i, "n_nodes": int(nodes[i]), "n_leaves": kept[i].n_leaves,
                          "train_accuracy": float(accuracy[i]), "alpha_low": low, "alpha_high": high}
                         for i, low, high in hull_path(nodes, accuracy)],
                        columns=["front_index", "n_nodes", "n_leaves", "train_accuracy", "alpha_low", "alpha_high"])
    return finished(best), kept, path
