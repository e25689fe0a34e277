"""Shared figure helpers: axes and files, the Chess3x3 board, tree drawings.

Every plot has a title, axis labels with units and a legend where more than
one series is drawn; functions take an optional ``ax`` and return the figure.
These helpers take data only: they never import a technique package or an
experiment.  Each technique's own plots live in ``workbench/<slug>/plots.py``.
"""

from .axes import FIGURE_FORMATS, new_axes, new_figure, savefig
from .board import plot_board
from .tree import draw_tree

__all__ = ["FIGURE_FORMATS", "draw_tree", "new_axes", "new_figure", "plot_board", "savefig"]
