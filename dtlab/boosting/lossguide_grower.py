"""Growth over the node-wise finder (:class:`~.lossguide.LossguideSearch`): depthwise or leaf-wise (lossguide).

``grow_policy="depthwise"``
    every valid split of a level at once, to ``max_depth``, then XGBoost's
    bottom-up ``gamma`` pruning: the same trees as the level-wise grower
    (:func:`.grower.grow_boosted_tree`) on numeric features, with categorical
    splits where features are categorical.
``grow_policy="lossguide"``
    LightGBM's leaf-wise growth and XGBoost's ``lossguide``: always the lossguide
    node of largest loss change next (the earlier node on equal gains, as
    XGBoost's queue), until ``max_leaves`` leaves, no valid split, or every
    candidate at ``max_depth`` (0: no depth limit).  As in XGBoost's histogram
    method, a split whose loss change is below ``gamma`` is not made.

The finder is a :class:`.protocols.NodeWiseSplitFinder` (it keeps the open
nodes' rows itself) and its splits :class:`.protocols.NodeSplit`.  Both
policies keep the level-wise grower's conventions: node sums added in row order,
leaf weight ``-G/(H + lambda)`` (0 under ``min_child_weight``) shrunk in float32 (:func:`._gain.leaf_values`),
nodes numbered in creation order (children after their parent).
"""

from __future__ import annotations

import heapq
from typing import Callable

import numpy as np

from ._gain import RT_EPS, leaf_values
from .grower import BoostedTree, prune
from .protocols import NodeSplit, NodeWiseSplitFinder

GROW_POLICIES = ("depthwise", "lossguide")


class _Nodes:
    """The growing tree's node arrays (lists, appended in creation order)."""

    def __init__(self):
        self.feature, self.threshold, self.miss, self.left, self.right = [], [], [], [], []
        self.gain, self.G, self.H, self.parent, self.depth, self.categories = [], [], [], [], [], {}

    def add(self, G: float, H: float, parent: int, depth: int) -> int:
        for a, v in ((self.feature, -1), (self.threshold, 0.0), (self.miss, True), (self.left, -1),
                     (self.right, -1), (self.gain, 0.0), (self.G, G), (self.H, H), (self.parent, parent),
                     (self.depth, depth)):
            a.append(v)
        return len(self.feature) - 1

    def set_split(self, k: int, split: NodeSplit, left: int, right: int) -> None:
        self.feature[k], self.threshold[k], self.miss[k] = split.feature, split.threshold, split.missing_left
        self.left[k], self.right[k], self.gain[k] = left, right, split.gain
        if split.categories is not None:
            self.categories[k] = split.categories


def grow_lossguide_tree(search: NodeWiseSplitFinder, g: np.ndarray, h: np.ndarray, grow_policy: str, max_depth: int,
                        max_leaves: int, learning_rate: float, reg_lambda: float, gamma: float, min_child_weight: float,
                        level_features: Callable[[int], np.ndarray | None] | None = None
                        ) -> tuple[BoostedTree, np.ndarray]:
    """Grow one tree over a node-wise finder (:class:`~.lossguide.LossguideSearch`, or its CUDA subclass).

    Parameters
    ----------
    search : :class:`.protocols.NodeWiseSplitFinder`
    g, h : float32 arrays (n_samples,)
    grow_policy : {"depthwise", "lossguide"}
    max_depth : int, >= 1 (0: unlimited, lossguide only)
    max_leaves : int, >= 0 (0: unlimited; lossguide only)
    learning_rate, reg_lambda, gamma, min_child_weight : float
    level_features : callable(depth) -> bool mask of the features a node at that depth may split on, or None

    Returns
    -------
    tree : BoostedTree (with ``categories``: node -> the category values going left)
    leaf_of_row : int64 array (n_samples,)
    """
    lam, mcw = float(reg_lambda), float(min_child_weight)
    nodes = _Nodes()
    G0, H0 = search.start_tree(g, h)
    nodes.add(G0, H0, -1, 0)
    depth_limit = max_depth if max_depth > 0 else np.iinfo(np.int64).max
    lossguide = grow_policy == "lossguide"

    def evaluate(batch: list[int], parents: list[int], depth: int) -> list[NodeSplit]:
        search.allowed = level_features(depth) if level_features is not None else None
        return search.evaluate(batch, parents, [nodes.G[k] for k in batch], [nodes.H[k] for k in batch], lam, mcw)

    def valid(split: NodeSplit, depth: int) -> bool:
        return (split.feature >= 0 and split.gain > RT_EPS and depth < depth_limit
                and (not lossguide or split.gain >= gamma))

    def expand(k: int, split: NodeSplit) -> tuple[int, int]:
        left = nodes.add(0.0, 0.0, k, nodes.depth[k] + 1)
        right = nodes.add(0.0, 0.0, k, nodes.depth[k] + 1)
        search.split(k, split, left, right)
        nodes.set_split(k, split, left, right)
        for c in (left, right):
            nodes.G[c], nodes.H[c] = search.sums(c)
        return left, right

    root_split = evaluate([0], [-1], 0)[0] if depth_limit > 0 else None
    if lossguide:
        heap = [(-root_split.gain, 0, root_split)] if root_split is not None and valid(root_split, 0) else []
        n_leaves = 1
        while heap and (max_leaves <= 0 or n_leaves < max_leaves):
            _, k, split = heapq.heappop(heap)
            kids = expand(k, split)
            n_leaves += 1
            depth = nodes.depth[k] + 1
            if depth < depth_limit:
                for c, s in zip(kids, evaluate(list(kids), [k], depth)):
                    if valid(s, depth):
                        heapq.heappush(heap, (-s.gain, c, s))  # equal gains: the earlier node first
    else:
        level = [(0, root_split)] if root_split is not None else []
        depth = 0
        while level:
            to_split = [(k, s) for k, s in level if valid(s, depth)]
            children, parents = [], []
            for k, s in to_split:
                children += list(expand(k, s))
                parents.append(k)
            depth += 1
            if not children or depth >= depth_limit:
                break
            level = list(zip(children, evaluate(children, parents, depth)))
    tree, leaf_of_row = _finish(nodes, search, learning_rate, mcw, lam)
    if lossguide:
        return tree, leaf_of_row
    return prune(tree, np.asarray(nodes.parent, np.int64), gamma, leaf_of_row)


def _finish(nodes: _Nodes, search: NodeWiseSplitFinder, learning_rate: float, mcw: float,
            lam: float) -> tuple[BoostedTree, np.ndarray]:
    """The BoostedTree of the grown nodes (leaf weights as the level-wise grower makes them) and each row's
    leaf."""
    G, H = np.asarray(nodes.G), np.asarray(nodes.H)
    left = np.asarray(nodes.left, np.int32)
    tree = BoostedTree(np.asarray(nodes.feature, np.int32), np.asarray(nodes.threshold, np.float32),
                       np.asarray(nodes.miss, np.bool_), left, np.asarray(nodes.right, np.int32),
                       leaf_values(G, H, lam, mcw, learning_rate), np.asarray(nodes.gain, np.float64), H,
                       categories=dict(nodes.categories))
    leaves = {k: k for k in np.flatnonzero(left == -1).tolist()}
    return tree, search.leaf_of_row(leaves)
