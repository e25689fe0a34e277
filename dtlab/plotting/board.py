"""The Chess3x3 board: points coloured by class, with the 1/3 and 2/3 borders."""

from __future__ import annotations

import numpy as np

from .axes import new_axes


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
