"""Plotting: one function per kind of figure, and :func:`savefig`.

Every plot has a title, axis labels with units and a legend where more than one
series is drawn.  Functions take an optional ``ax`` and return the figure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

FIGURE_FORMATS = ("png", "svg")


def _pyplot():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "nbagg", "widget",
                                                  "ipympl", "module://ipympl.backend_nbagg"):
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def new_axes(ax=None, figsize=(6.4, 4.2)):
    """Return ``(fig, ax)``: the given axes' figure, or a new figure."""
    plt = _pyplot()
    if ax is not None:
        return ax.figure, ax
    fig, ax = plt.subplots(figsize=figsize, layout="constrained")
    return fig, ax


def savefig(fig, name: str, out_dir: str | Path = "figures", formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Write ``fig`` as ``out_dir/name.png`` (and ``.svg``); returns the paths written."""
    if not name or any(c in name for c in "/\\ "):
        raise ValueError(f"figure name must be a plain file stem without spaces or slashes, got {name!r}")
    import matplotlib

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        path = out / f"{name}.{fmt}"
        # No date and a fixed id salt keep SVGs byte-stable across regenerations.
        metadata = {"Date": None} if fmt == "svg" else {"Software": "dtlab"}
        with matplotlib.rc_context({"svg.hashsalt": "dtlab"}):
            fig.savefig(path, dpi=120, metadata=metadata)
        paths.append(path)
    _pyplot().close(fig)
    return paths


# ---------------------------------------------------------------- datasets
def plot_board(X: np.ndarray, y: np.ndarray, *, max_points: int = 5000, ax=None, title: str = "Chess3x3"):
    """Scatter the first two attributes coloured by class, with the 1/3 and 2/3 borders."""
    fig, ax = new_axes(ax, figsize=(4.6, 4.4))
    n = min(len(y), max_points)
    for cls, marker, colour in ((0, "x", "tab:blue"), (1, "+", "tab:orange")):
        mask = y[:n] == cls
        ax.scatter(X[:n][mask, 0], X[:n][mask, 1], s=8, marker=marker, c=colour, label=f"class {cls}",
                   linewidths=0.8)
    for border in (1 / 3, 2 / 3):
        ax.axvline(border, color="k", lw=0.6, ls="--")
        ax.axhline(border, color="k", lw=0.6, ls="--")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="attribute 0 (unitless, [0, 1))",
           ylabel="attribute 1 (unitless, [0, 1))", title=f"{title} ({n:,} of {len(y):,} points)")
    ax.legend(loc="upper right", framealpha=0.9, fontsize=8)
    return fig


# ------------------------------------------------------------------ trees
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

    import sys

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
    fig, ax = new_axes(ax, figsize=(min(2 + 1.3 * width, 18), min(1.5 + 1.1 * depth, 12)))
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
        ax.text(x, y, text, ha="center", va="center", fontsize=7, bbox=style, zorder=2)
    ax.set_xlim(-0.8, width - 0.2)
    ax.set_ylim(-depth + 0.4, 0.6)
    ax.axis("off")
    ax.set_title(title or f"{tree.n_nodes} nodes, {tree.n_leaves} leaves, depth {tree.max_depth}")
    return fig
