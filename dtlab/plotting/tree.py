"""Drawing a FlatTree: tests in internal nodes, prediction and sample count in leaves."""

from __future__ import annotations

import sys
from typing import Any, Sequence

import numpy as np

from .axes import new_axes


def _layout(tree) -> dict[int, tuple[float, float]]:
    """x by in-order leaf position, y by depth."""
    pos: dict[int, tuple[float, float]] = {}
    next_leaf = [0.0]

    def place(node: int, depth: int) -> float:
        if tree.left[node] == -1:
            x = next_leaf[0]
            next_leaf[0] += 1.0
        else:
            x = (place(int(tree.left[node]), depth + 1) + place(int(tree.right[node]), depth + 1)) / 2
        pos[node] = (x, -depth)
        return x

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * tree.n_nodes + 100))
    try:
        place(0, 0)
    finally:
        sys.setrecursionlimit(limit)
    return pos


def draw_tree(tree, *, feature_names: Sequence[str] | None = None, class_names: Sequence[Any] | None = None,
              max_nodes: int = 127, ax=None, title: str | None = None):
    """Draw a FlatTree: tests in internal nodes, prediction and sample count in leaves.

    Trees larger than ``max_nodes`` are refused with a clear error (they are
    unreadable); pass a larger ``max_nodes`` to draw them anyway.
    """
    if tree.n_nodes > max_nodes:
        raise ValueError(f"the tree has {tree.n_nodes} nodes, more than max_nodes={max_nodes}; "
                         "raise max_nodes to draw it anyway")
    pos = _layout(tree)
    width = max(x for x, _ in pos.values()) + 1
    depth = -min(y for _, y in pos.values()) + 1
    # About 0.85 inch per leaf, and at most 9.5 inches wide while that still fits: a notebook shows a figure
    # about that wide at its native size, so the 9 pt labels stay 9 pt (12 px) on screen instead of being
    # scaled down to 5-6 px as an 18-inch figure is.  Wider trees get wider figures (and need scrolling).
    fig_width = max(4.0, 0.6 + 0.85 * width)
    fig_width = min(fig_width, 9.5) if width <= 11 else min(fig_width, 18.0)
    fig, ax = new_axes(ax, figsize=(fig_width, min(1.2 + 0.9 * depth, 12)))
    fontsize = 9 if width <= 11 else 8
    names = feature_names or [f"x{i}" for i in range(tree.n_features)]
    classes = class_names if class_names is not None else (
        tree.classes if tree.classes is not None else np.arange(tree.n_outputs))
    for node, (x, y) in pos.items():
        if tree.left[node] != -1:
            for child in (int(tree.left[node]), int(tree.right[node])):
                cx, cy = pos[child]
                ax.plot([x, cx], [y, cy], color="0.5", lw=0.8, zorder=1)
    for node, (x, y) in pos.items():
        value = tree.value[node]
        if tree.left[node] != -1:
            text = f"{names[tree.feature[node]]} <= {tree.threshold[node]:.4g}"
            style = dict(boxstyle="round,pad=0.3", fc="white", ec="0.3")
        elif tree.task == "classification":
            best = int(np.argmax(value))
            text = f"class {classes[best]}\nn={value.sum():.0f}"
            style = dict(boxstyle="round,pad=0.3", fc=f"C{best % 10}", ec="0.3", alpha=0.35)
        else:
            text = f"{value[0]:.4g}"
            style = dict(boxstyle="round,pad=0.3", fc="C2", ec="0.3", alpha=0.35)
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, bbox=style, zorder=2)
    ax.set_xlim(-0.6, width - 0.4)
    ax.set_ylim(-depth + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(title or f"{tree.n_nodes} nodes, {tree.n_leaves} leaves, depth {tree.max_depth}")
    return fig
