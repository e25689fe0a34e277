"""Axes and files: :func:`new_axes` and :func:`savefig`, used by every plot."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

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
