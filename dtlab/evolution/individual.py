"""Individuals of GDT: classification trees in their actual form, as struct-of-arrays.

GDT evolves trees directly, without an encoding (Jurczuk, Czajkowski,
Kretowski 2021, section 2.4.1).  An :class:`Individual` stores one tree as
parallel arrays in breadth-first order: the root is node 0, children come
after their parent and the two children of a node are adjacent
(``right == left + 1``).  Breadth-first order makes packing a batch a plain
concatenation and lets statistics flow from leaves to the root in one
reverse sweep (:func:`~dtlab.evolution._operators_cpu._propagate_up`).

Each individual also carries the statistics of its last evaluation (class
counts and two drawn objects per class in every node).  Operators copy them
along with the nodes they keep, so a later operator in the same generation can
still find dipoles; they are refreshed when the changed tree is evaluated.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ..trees import PackedForest
from ..trees.flat import breadth_first
from ._operators_cpu import _propagate_up
from .evaluators import LeafStats
from .evaluators.draws import EMPTY_HASH


@dataclass(eq=False)
class Individual:
    """One tree of the population.

    Attributes
    ----------
    feature : ndarray of shape (n_nodes,), int32
        Tested attribute; -1 at leaves.
    threshold : ndarray of shape (n_nodes,), float64
        ``x <= threshold`` goes left; 0 at leaves.
    left, right : ndarray of shape (n_nodes,), int32
        Children (breadth-first, ``right == left + 1``); -1 at leaves.
    counts : ndarray of shape (n_nodes, n_classes), int64
        Training objects of each class in each node (last evaluation).
    cand_hash : ndarray of shape (n_nodes, n_classes, 2), uint64
    cand_row : ndarray of shape (n_nodes, n_classes, 2), int64
        Two drawn objects of each class in each node (-1 when fewer).
    fitness, accuracy : float
        Valid when ``evaluated``.
    evaluated : bool
        False after any change: the statistics are stale until the next evaluation.
    """

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    counts: np.ndarray
    cand_hash: np.ndarray
    cand_row: np.ndarray
    fitness: float = float("nan")
    accuracy: float = float("nan")
    evaluated: bool = False

    @property
    def n_nodes(self) -> int:
        return int(self.feature.shape[0])

    @property
    def n_leaves(self) -> int:
        return int((self.left == -1).sum())

    @property
    def n_classes(self) -> int:
        return int(self.counts.shape[1])

    @classmethod
    def leaf(cls, n_classes: int) -> "Individual":
        """A one-node tree."""
        return cls(np.array([-1], np.int32), np.zeros(1), np.array([-1], np.int32), np.array([-1], np.int32),
                   np.zeros((1, n_classes), np.int64), np.full((1, n_classes, 2), EMPTY_HASH, np.uint64),
                   np.full((1, n_classes, 2), -1, np.int64))

    def depths(self) -> np.ndarray:
        """Depth of every node (root 0), int64 of shape (n_nodes,)."""
        depth = [0] * self.n_nodes
        for node, child in enumerate(self.left.tolist()):  # breadth-first: parents first
            if child != -1:
                depth[child] = depth[child + 1] = depth[node] + 1  # siblings are adjacent
        return np.array(depth, np.int64)

    def leaf_errors(self) -> np.ndarray:
        """Misclassified objects per node if it predicted its majority class, int64 (n_nodes,)."""
        return self.counts.sum(axis=1) - self.counts.max(axis=1)

    def subtree_errors(self) -> np.ndarray:
        """Misclassified objects of the tree's leaves below each node, int64 (n_nodes,)."""
        err = np.where(self.left == -1, self.leaf_errors(), 0).tolist()
        left = self.left.tolist()
        for node in range(self.n_nodes - 1, -1, -1):
            child = left[node]
            if child != -1:
                err[node] = err[child] + err[child + 1]  # siblings are adjacent
        return np.array(err, np.int64)

    def copy(self) -> "Individual":
        return Individual(self.feature.copy(), self.threshold.copy(), self.left.copy(), self.right.copy(),
                          self.counts.copy(), self.cand_hash.copy(), self.cand_row.copy(), self.fitness,
                          self.accuracy, self.evaluated)

    def same_tree(self, other: "Individual") -> bool:
        """Same structure and tests (statistics ignored)."""
        return all(np.array_equal(getattr(self, a), getattr(other, a)) for a in ("feature", "threshold", "left"))

    def check(self) -> None:
        """Raise ``ValueError`` unless the arrays are a breadth-first binary tree with sibling-adjacent children."""
        n = self.n_nodes
        if n < 1:
            raise ValueError("an individual needs at least one node")
        for name in ("threshold", "left", "right"):
            if getattr(self, name).shape != (n,):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}, expected ({n},)")
        if self.counts.shape[0] != n or self.cand_hash.shape[:2] != self.counts.shape or \
                self.cand_row.shape != self.cand_hash.shape:
            raise ValueError("statistics arrays do not match the number of nodes")
        internal = self.left != -1
        if ((self.right != -1) != internal).any() or (self.right[internal] != self.left[internal] + 1).any():
            raise ValueError("children must be adjacent (right == left + 1), both or neither")
        order = breadth_first(self.left, self.right, 0)
        if len(order) != n or order != list(range(n)):
            raise ValueError("nodes are not in breadth-first order from the root")
        if (self.feature[internal] < 0).any() or not np.isfinite(self.threshold[internal]).all():
            raise ValueError("internal nodes need a feature >= 0 and a finite threshold")


def assemble(sources: list[Individual], root: tuple[int, int], redirect: dict | None = None,
             leafify: set | None = None) -> tuple[Individual, dict]:
    """Build a new individual, breadth-first, from nodes of one or more individuals.

    Starting at ``root = (source index, node)``, every node's children are
    followed, except that a node listed in ``redirect`` is replaced by the
    node it maps to (grafting another subtree there) and a node in ``leafify``
    becomes a leaf (pruning its subtree; its statistics are those of the whole
    pruned subtree, so a pruned node's counts stay exact).

    Parameters
    ----------
    sources : list of Individual
    root : (int, int)
    redirect : dict mapping (source, node) -> (source, node), optional
    leafify : set of (source, node), optional

    Returns
    -------
    individual : Individual (``evaluated=False``)
    index : dict mapping (source, node) -> new node index, for every copied node
    """
    redirect = redirect or {}
    leafify = leafify or set()
    # plain lists: indexing them is much cheaper than indexing numpy arrays one scalar at a time
    lefts = [src.left.tolist() for src in sources]
    rights = [src.right.tolist() for src in sources]
    taken_src: list[int] = []
    taken_node: list[int] = []
    is_leaf: list[bool] = []
    queue = deque([redirect.get(root, root)])
    while queue:
        key = queue.popleft()
        s, node = key
        taken_src.append(s)
        taken_node.append(node)
        child = lefts[s][node]
        if child == -1 or key in leafify:
            is_leaf.append(True)
            continue
        is_leaf.append(False)
        a, b = (s, child), (s, rights[s][node])
        queue.append(redirect.get(a, a))
        queue.append(redirect.get(b, b))
    src_ids = np.array(taken_src)
    nodes = np.array(taken_node)
    leaf = np.array(is_leaf)
    if len(sources) == 1:
        src = sources[0]
        feature, threshold = src.feature[nodes], src.threshold[nodes]
        counts, cand_hash, cand_row = src.counts[nodes], src.cand_hash[nodes], src.cand_row[nodes]
    else:
        n, n_classes = nodes.shape[0], sources[0].n_classes
        feature = np.empty(n, np.int32)
        threshold = np.empty(n, np.float64)
        counts = np.empty((n, n_classes), np.int64)
        cand_hash = np.empty((n, n_classes, 2), np.uint64)
        cand_row = np.empty((n, n_classes, 2), np.int64)
        for s, src in enumerate(sources):
            mask = src_ids == s
            idx = nodes[mask]
            feature[mask] = src.feature[idx]
            threshold[mask] = src.threshold[idx]
            counts[mask] = src.counts[idx]
            cand_hash[mask] = src.cand_hash[idx]
            cand_row[mask] = src.cand_row[idx]
    # breadth-first with sibling pairs: the k-th internal node's children are 2k+1, 2k+2
    internal_rank = np.cumsum(~leaf) - 1
    left = np.where(leaf, -1, 2 * internal_rank + 1).astype(np.int32)
    right = np.where(leaf, -1, 2 * internal_rank + 2).astype(np.int32)
    feature[leaf] = -1
    threshold[leaf] = 0.0
    index = dict(zip(zip(taken_src, taken_node), range(len(taken_node))))
    return Individual(feature, threshold, left, right, counts, cand_hash, cand_row), index


def pack(individuals: list[Individual]) -> PackedForest:
    """Concatenate trees into one :class:`~dtlab.trees.PackedForest` (breadth-first order is already packed order)."""
    return PackedForest.from_arrays([ind.n_nodes for ind in individuals],
                                    np.concatenate([ind.feature for ind in individuals]),
                                    np.concatenate([ind.threshold for ind in individuals]),
                                    np.concatenate([ind.left for ind in individuals]),
                                    np.concatenate([ind.right for ind in individuals]))


def apply_stats(individuals: list[Individual], batch: PackedForest, stats: LeafStats, n_samples: int,
                alpha: float) -> None:
    """Store evaluation results in the individuals: propagated statistics, accuracy, fitness.

    Fitness is the paper's eq. (1): ``Accuracy(T) - alpha * (Size(T) - 1)``,
    with accuracy from integer counts so every evaluator gives the same value.
    """
    _propagate_up(batch.left, batch.right, stats.counts, stats.cand_hash, stats.cand_row)
    off = batch.node_offset
    root_correct = np.zeros(len(individuals), np.int64)
    leaf = batch.left == -1
    correct = np.where(leaf, stats.counts.max(axis=1), 0)
    tree_correct = np.add.reduceat(correct, off[:-1]) if len(individuals) else root_correct
    for t, ind in enumerate(individuals):
        a, b = off[t], off[t + 1]
        ind.counts = stats.counts[a:b]
        ind.cand_hash = stats.cand_hash[a:b]
        ind.cand_row = stats.cand_row[a:b]
        ind.accuracy = float(tree_correct[t]) / n_samples
        ind.fitness = ind.accuracy - alpha * (ind.n_nodes - 1)
        ind.evaluated = True


def prune_unprofitable(ind: Individual, n_samples: int, alpha: float) -> Individual:
    """Prune every subtree whose replacement by a leaf does not lower the fitness.

    GDT's local maximisation of the fitness by pruning the lower parts of a
    tree (Kretowski, *Evolutionary Decision Trees in Large-Scale Data Mining*,
    2019): bottom-up, a subtree is cut when the accuracy it adds is at most
    ``alpha`` times the nodes it adds (cost-complexity pruning at the fixed
    ``alpha`` of the fitness).  It needs only the class counts of the last
    evaluation, whose internal nodes hold their subtree's totals, so the
    pruned tree's statistics and fitness are exact without another pass over
    the data.  Returns ``ind`` itself when nothing is pruned.

    Parameters
    ----------
    ind : Individual, evaluated
    n_samples : int
    alpha : float
    """
    left = ind.left.tolist()
    if left[0] == -1:
        return ind
    leaf_err = ind.leaf_errors().tolist()
    err = list(leaf_err)   # errors of the best pruning of each subtree
    size = [1] * len(left)  # its number of nodes
    cut = []
    for node in range(len(left) - 1, -1, -1):  # breadth-first order: children before parents
        child = left[node]
        if child == -1:
            continue
        sub_err = err[child] + err[child + 1]
        sub_size = size[child] + size[child + 1] + 1
        if (leaf_err[node] - sub_err) <= alpha * n_samples * (sub_size - 1):
            cut.append(node)  # err/size stay those of a leaf
        else:
            err[node], size[node] = sub_err, sub_size
    if not cut:
        return ind
    new, _ = assemble([ind], (0, 0), leafify={(0, node) for node in cut})
    new.accuracy = float(n_samples - err[0]) / n_samples
    new.fitness = new.accuracy - alpha * (new.n_nodes - 1)
    new.evaluated = True
    return new


def remove_empty_branches(ind: Individual) -> Individual:
    """Replace every split with an empty child (no training objects) by its other child.

    Such a split changes no training prediction, so removing it keeps accuracy
    and only shrinks the tree; an empty leaf would otherwise predict without
    evidence.  Returns ``ind`` itself when there is nothing to remove.
    """
    total = ind.counts.sum(axis=1)
    redirect = {}
    for node in range(ind.n_nodes):
        if ind.left[node] != -1 and total[node] > 0:
            left, right = int(ind.left[node]), int(ind.right[node])
            if total[left] == 0:
                redirect[(0, node)] = (0, right)
            elif total[right] == 0:
                redirect[(0, node)] = (0, left)
    if not redirect:
        return ind

    def follow(key):
        while key in redirect:
            key = redirect[key]
        return key

    new, _ = assemble([ind], follow((0, 0)), {k: follow(k) for k in redirect})
    new.fitness, new.accuracy, new.evaluated = ind.fitness, ind.accuracy, ind.evaluated
    return new


def center_thresholds(ind: Individual, X: np.ndarray) -> Individual:
    """Move every threshold midway between the nearest training values on either side of it.

    Any threshold inside the gap between the largest value that goes left and
    the smallest that goes right gives the same training partition, hence the
    same fitness; the evolution leaves it anywhere in that gap.  The midpoint
    (CART's choice) is the one farthest from both sides, which is what matters
    on unseen data.  One pass over ``X`` (n_samples, n_features); the training
    predictions do not change.  Returns a new individual with the same statistics.
    """
    from ._operators_cpu import _margins
    from ._sparse import is_sparse, margins_csr

    below = np.full(ind.n_nodes, -np.inf)
    above = np.full(ind.n_nodes, np.inf)
    missing_left = np.ones(ind.n_nodes, np.bool_)  # unused: training data are finite
    (margins_csr if is_sparse(X) else _margins)(X, ind.feature, ind.threshold, ind.left, ind.right, missing_left,
                                                below, above)
    threshold = ind.threshold.copy()
    inner = (ind.left != -1) & np.isfinite(below) & np.isfinite(above)
    middle = below[inner] / 2 + above[inner] / 2
    # keep the partition exact: the midpoint must still send `below` left and `above` right
    middle = np.where((below[inner] <= middle) & (middle < above[inner]), middle, below[inner])
    threshold[inner] = middle
    new = Individual(ind.feature, threshold, ind.left, ind.right, ind.counts, ind.cand_hash, ind.cand_row,
                     ind.fitness, ind.accuracy, ind.evaluated)
    return new


def to_flat_tree(ind: Individual, n_features: int, classes: np.ndarray | None = None, metadata: dict | None = None):
    """The individual as a :class:`~dtlab.trees.FlatTree` whose ``value`` holds the training class counts."""
    from ..trees import FlatTree

    return FlatTree(feature=ind.feature, threshold=ind.threshold, left=ind.left, right=ind.right,
                    value=ind.counts.astype(np.float64), n_features=n_features, task="classification",
                    classes=classes, metadata=dict(metadata or {}))


def from_flat_tree(tree, n_classes: int) -> Individual:
    """An individual with the structure and tests of a FlatTree (statistics empty, not evaluated)."""
    n = tree.n_nodes
    src = Individual(tree.feature.astype(np.int32), tree.threshold.astype(np.float64), tree.left, tree.right,
                     np.zeros((n, n_classes), np.int64), np.full((n, n_classes, 2), EMPTY_HASH, np.uint64),
                     np.full((n, n_classes, 2), -1, np.int64))
    new, _ = assemble([src], (0, 0))
    return new
