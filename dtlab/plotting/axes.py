"""Axes and files: :func:`new_figure`, :func:`new_axes` and :func:`savefig`, used by every plot.

Figures are made with ``matplotlib.figure.Figure``, not ``pyplot.subplots``: pyplot does not know
them, so a notebook shows a figure exactly once (as the value a cell or a widget displays) instead of
once as that value and again when the inline backend flushes every open pyplot figure at the end of
the cell, and a widget callback leaves no open figure behind to pile up or leak into the log console.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

FIGURE_FORMATS = ("png", "svg")


def require_matplotlib():
    """matplotlib, or an ImportError naming the extra that installs it (drawing is not part of the base install)."""
    try:
        import matplotlib
    except ImportError as err:
        raise ImportError("drawing needs matplotlib, which the base install of dtlab leaves out: "
                          "pip install 'dtlab[plot]' (or dtlab[lab] for JupyterLab and the notebooks)") from err
    return matplotlib


def _pyplot():
    matplotlib = require_matplotlib()

    if matplotlib.get_backend().lower() not in ("module://matplotlib_inline.backend_inline", "nbagg", "widget",
                                                  "ipympl", "module://ipympl.backend_nbagg"):
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


_FIGURE_CLASS: list = []


def _figure_class():
    """``NotebookFigure``: a matplotlib Figure that shows itself as a PNG in any notebook front-end.

    pyplot's inline backend registers a PNG formatter for figures only once a
    pyplot figure has been made; ``_repr_png_`` draws ours without that.
    """
    if not _FIGURE_CLASS:
        require_matplotlib()
        from matplotlib.figure import Figure

        class NotebookFigure(Figure):
            def _repr_png_(self) -> bytes:
                import io

                buf = io.BytesIO()
                self.savefig(buf, format="png", dpi=100, bbox_inches="tight")  # the inline backend's settings
                return buf.getvalue()

        _FIGURE_CLASS.append(NotebookFigure)
    return _FIGURE_CLASS[0]


def new_figure(nrows: int = 1, ncols: int = 1, *, figsize=(6.4, 4.2), **subplots_kw):
    """Return ``(fig, axes)`` of a new figure that pyplot does not track (see the module docstring).

    ``axes`` is what ``Figure.subplots(nrows, ncols, **subplots_kw)`` returns: one axes for 1 x 1.
    Display it by ending a cell with it, with :func:`workbench.widgets.show`, or from a widget panel;
    pyplot's ``show`` does not know it.
    """
    _pyplot()  # selects a usable backend (Agg where the configured one cannot work)
    fig = _figure_class()(figsize=figsize, layout="constrained")
    return fig, fig.subplots(nrows, ncols, **subplots_kw)


def new_axes(ax=None, figsize=(6.4, 4.2)):
    """Return ``(fig, ax)``: the given axes' figure, or a new figure (from :func:`new_figure`)."""
    if ax is not None:
        return ax.figure, ax
    return new_figure(figsize=figsize)


def savefig(fig, name: str, out_dir: str | Path = "figures", formats: Sequence[str] = FIGURE_FORMATS) -> list[Path]:
    """Write ``fig`` as ``out_dir/name.png`` (and ``.svg``); returns the paths written."""
    if not name or any(c in name for c in "/\\ "):
        raise ValueError(f"figure name must be a plain file stem without spaces or slashes, got {name!r}")
    matplotlib = require_matplotlib()

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
