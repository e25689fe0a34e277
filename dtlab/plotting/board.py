"""The Chess3x3 board: points coloured by class, with the 1/3 and 2/3 borders."""

from __future__ import annotations

import numpy as np

from .axes import new_axes, new_figure

_CLASS_RGB = np.array([[0.12, 0.47, 0.71], [1.0, 0.50, 0.05]])  # tab:blue, tab:orange


def plot_board(X: np.ndarray, y: np.ndarray, *, max_points: int = 5000, bins: int | None = None, ax=None,
               title: str = "Chess3x3"):
    """Scatter the first two attributes coloured by class, with the 1/3 and 2/3 borders.

    Parameters
    ----------
    X : array of shape (n_samples, n_features >= 2)
    y : array of shape (n_samples,), classes 0 and 1
    max_points : int
        At most this many points are scattered (the first ones).
    bins : int, optional
        With more rows than ``max_points``, draw *every* row binned on a ``bins`` x ``bins`` grid
        instead of a sample: colour is the bin's class mix, shade its count, so the picture still
        changes with the number of rows (grainy with few rows per bin, smooth with many).

    With noise attributes (``X`` wider than 2) and no ``ax`` given, a second panel draws
    attribute 0 against the last noise attribute: no borders there, the class does not depend on it.
    """
    if ax is None and X.shape[1] > 2:
        fig, (ax, ax_noise) = new_figure(1, 2, figsize=(8.8, 4.4))
        _draw(X, y, ax, max_points, bins, title)
        k = X.shape[1] - 1
        _draw(X[:, [0, k]], y, ax_noise, max_points, bins, f"attribute 0 against noise attribute {k - 1}",
              borders=False, ylabel=f"attribute {k} (noise, unitless, [0, 1))")
        return fig
    fig, ax = new_axes(ax, figsize=(4.6, 4.4))
    _draw(X, y, ax, max_points, bins, title)
    return fig


def _draw(X, y, ax, max_points, bins, title, borders=True, ylabel="attribute 1 (unitless, [0, 1))"):
    n_all = len(y)
    if bins is not None and n_all > max_points:
        edges = np.linspace(0.0, 1.0, bins + 1)
        counts = [np.histogram2d(X[y == cls, 1], X[y == cls, 0], bins=(edges, edges))[0] for cls in (0, 1)]
        total = counts[0] + counts[1]
        share = np.divide(counts[1], total, out=np.zeros_like(total), where=total > 0)
        rgba = np.empty(total.shape + (4,))
        rgba[..., :3] = (1 - share)[..., None] * _CLASS_RGB[0] + share[..., None] * _CLASS_RGB[1]
        top = max(np.quantile(total, 0.99), 1.0)
        rgba[..., 3] = np.clip(total / top, 0.0, 1.0)
        ax.imshow(rgba, origin="lower", extent=(0, 1, 0, 1), interpolation="nearest", aspect="auto")
        for cls in (0, 1):
            ax.scatter([], [], marker="s", color=_CLASS_RGB[cls], label=f"class {cls}")
        shown = (f"all {n_all:,} points in {bins} x {bins} bins; shade: points per bin, full at {top:.0f}")
    else:
        n = min(n_all, max_points)
        for cls, marker, colour in ((0, "x", "tab:blue"), (1, "+", "tab:orange")):
            mask = y[:n] == cls
            ax.scatter(X[:n][mask, 0], X[:n][mask, 1], s=8, marker=marker, c=colour, label=f"class {cls}",
                       linewidths=0.8)
        shown = f"{n:,} of {n_all:,} points"
    for border in (1 / 3, 2 / 3):
        ax.axvline(border, color="k", lw=0.6, ls="--")
        if borders:
            ax.axhline(border, color="k", lw=0.6, ls="--")
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="attribute 0 (unitless, [0, 1))", ylabel=ylabel,
           title=f"{title}\n({shown})")
    ax.title.set_fontsize(9)
    ax.legend(loc="upper right", framealpha=0.9, fontsize=8)
