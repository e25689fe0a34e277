"""Deprecated alias of :mod:`dtlab.evolution.plots`;
removed in the next release (each technique's experiments and plots live in its package).
"""

import warnings

warnings.warn("dtlab.plotting_gdt is deprecated; import dtlab.evolution.plots instead",
              DeprecationWarning, stacklevel=2)

from .evolution.plots import *  # noqa: E402,F401,F403
