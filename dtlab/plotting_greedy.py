"""Deprecated alias of :mod:`dtlab.greedy.plots`;
removed in the next release (each technique's experiments and plots live in its package).
"""

import warnings

warnings.warn("dtlab.plotting_greedy is deprecated; import dtlab.greedy.plots instead",
              DeprecationWarning, stacklevel=2)

from .greedy.plots import *  # noqa: E402,F401,F403
