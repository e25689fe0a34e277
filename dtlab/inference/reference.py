"""Plain-Python references of the three methods, written from the definitions, for the kernels' tests.

They share nothing with :mod:`dtlab.inference.layout` or the kernels: the
traversal runs the project's one walk (:func:`dtlab.trees.walk.find_leaf`)
uncompiled, and the bitmask methods use Python integers as bit sets of any
width, built straight from the tree.
"""

from __future__ import annotations

import numpy as np

from ..trees import walk


def _leaf_bits(forest, root: int) -> tuple[dict[int, int], dict[int, int], dict[int, int]]:
    """Per node of the tree at ``root``: identifier (bit set of its leaves), depth; per leaf: its in-order number."""
    ident, depth, number = {}, {root: 0}, {}
    order = [root]
    for node in order:  # breadth first gives every node's depth
        if forest.left[node] != -1:
            for c in (int(forest.left[node]), int(forest.right[node])):
                depth[c] = depth[node] + 1
                order.append(c)
    stack, seen = [root], []
    while stack:  # in-order numbering of the leaves: depth first, left before right
        node = stack.pop()
        if forest.left[node] == -1:
            number[node] = len(number)
        else:
            stack.append(int(forest.right[node]))
            stack.append(int(forest.left[node]))
        seen.append(node)
    for node in reversed(order):  # children before parents: an internal identifier ORs its children's
        ident[node] = (1 << number[node]) if forest.left[node] == -1 else \
            ident[int(forest.left[node])] | ident[int(forest.right[node])]
    return ident, depth, number


def _goes_left(x, t, missing_left) -> bool:
    if x != x:
        return bool(missing_left)
    return bool(x <= t)


def leaves_traversal(forest, X: np.ndarray) -> np.ndarray:
    """Leaf node index per (row, tree) by the shared walk, run as Python; shape (n_samples, n_trees)."""
    plain = walk.compile_walks(lambda fn: fn)["find_leaf"]
    out = np.empty((X.shape[0], forest.n_trees), np.int64)
    for r in range(X.shape[0]):
        for t in range(forest.n_trees):
            out[r, t] = plain(X, r, int(forest.node_offset[t]), forest.feature, forest.threshold, forest.left,
                              forest.right, forest.missing_left)
    return out


def bitmask_steps(forest, t: int, x: np.ndarray) -> dict:
    """The patent's method on one tree and one row, every step kept (for tests and the notebook).

    Returns
    -------
    dict with ``levels`` (list of per-level dicts: ``selected`` {node: identifier of the chosen
    child}, ``base`` (leaves whose path ended above the level), ``or``), ``and`` (the
    final identifier), ``leaf`` (node index), ``number`` {leaf node: bit}.
    """
    root = int(forest.node_offset[t])
    ident, depth, number = _leaf_bits(forest, root)
    n_levels = max(max(depth.values()), 1)
    levels = []
    result = -1  # all ones
    for level in range(n_levels):
        # leaves at depth <= level have no ancestor on this level: they keep their bit (unbalanced trees)
        base = 0
        for node, d in depth.items():
            if forest.left[node] == -1 and d <= level:
                base |= ident[node]
        selected = {}
        for node, d in depth.items():
            if d == level and forest.left[node] != -1:
                go_left = _goes_left(x[forest.feature[node]], forest.threshold[node], forest.missing_left[node])
                child = int(forest.left[node] if go_left else forest.right[node])
                selected[node] = ident[child]
        level_or = base
        for v in selected.values():
            level_or |= v
        levels.append({"selected": selected, "base": base, "or": level_or})
        result &= level_or
    if result <= 0 or result & (result - 1):
        raise AssertionError(f"the AND left {bin(result)}, not exactly one leaf")
    leaf = next(node for node, k in number.items() if 1 << k == result)
    return {"levels": levels, "and": result, "leaf": leaf, "number": number, "identifier": ident}


def leaves_bitmask(forest, X: np.ndarray) -> np.ndarray:
    """Leaf node per (row, tree) by the patent's OR-within-level, AND-across-levels method."""
    out = np.empty((X.shape[0], forest.n_trees), np.int64)
    for r in range(X.shape[0]):
        for t in range(forest.n_trees):
            out[r, t] = bitmask_steps(forest, t, X[r])["leaf"]
    return out


def leaves_quickscorer(forest, X: np.ndarray) -> np.ndarray:
    """Leaf node per (row, tree) by QuickScorer: AND the masks of the false tests, take the leftmost leaf left."""
    out = np.empty((X.shape[0], forest.n_trees), np.int64)
    for t in range(forest.n_trees):
        root = int(forest.node_offset[t])
        ident, _, number = _leaf_bits(forest, root)
        by_bit = {k: node for node, k in number.items()}
        tests = [n for n in ident if forest.left[n] != -1]
        for r in range(X.shape[0]):
            bits = -1
            for node in tests:  # any order: AND commutes (the kernel visits them by feature and threshold)
                if not _goes_left(X[r, forest.feature[node]], forest.threshold[node], forest.missing_left[node]):
                    bits &= ~ident[int(forest.left[node])]
            lowest = (bits & -bits).bit_length() - 1
            out[r, t] = by_bit[lowest]
    return out


def raw_from_leaves(ensemble, leaves: np.ndarray) -> np.ndarray:
    """``base + scale * sum of leaf values`` (n_samples, n_outputs) from leaf nodes per (row, tree)."""
    value = ensemble.forest.value
    out = np.zeros((leaves.shape[0], ensemble.n_outputs))
    for t in range(leaves.shape[1]):
        c = ensemble.tree_column[t]
        out[:, c:c + value.shape[1]] += value[leaves[:, t]]
    return ensemble.base + ensemble.scale * out


def identifier_string(bits: int, n_leaves: int) -> str:
    """An identifier as the patent prints it: one digit per leaf, leftmost leaf first, in bytes."""
    digits = "".join("1" if bits >> k & 1 else "0" for k in range(n_leaves))
    return " ".join(digits[i:i + 8] for i in range(0, n_leaves, 8))
