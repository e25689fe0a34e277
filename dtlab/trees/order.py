"""Node orders of a tree given by its child arrays: depth-first preorder and breadth first."""

from __future__ import annotations

from collections import deque

import numpy as np


def preorder(left: np.ndarray, right: np.ndarray, root: int = 0, limit: int | None = None) -> list[int]:
    """Nodes of the subtree at ``root`` in depth-first preorder (node, its left subtree, its right subtree).

    Parameters
    ----------
    left, right : int arrays (n_nodes,), -1 at leaves
    root : int
    limit : int, optional
        Stop after more than ``limit`` nodes (a cycle would otherwise never end);
        default ``n_nodes``.

    Returns
    -------
    list of int
    """
    return _visit(left, right, root, limit, depth_first=True)


def breadth_first(left: np.ndarray, right: np.ndarray, root: int = 0, limit: int | None = None) -> list[int]:
    """Nodes of the subtree at ``root`` level by level, left child before right (arguments as :func:`preorder`)."""
    return _visit(left, right, root, limit, depth_first=False)


def _visit(left, right, root, limit, depth_first: bool) -> list[int]:
    limit = left.shape[0] if limit is None else limit
    order, pending = [], deque([root])
    take = pending.pop if depth_first else pending.popleft
    while pending and len(order) <= limit:
        node = take()
        order.append(node)
        if left[node] != -1:
            # a stack pops the last pushed child first: push the right one first to visit left before right
            first, second = (right[node], left[node]) if depth_first else (left[node], right[node])
            pending.append(int(first))
            pending.append(int(second))
    return order
