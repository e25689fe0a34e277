"""Deprecated alias of :mod:`dtlab.evolution.experiments`;
removed in the next release (each technique's experiments and plots live in its package).
"""

import warnings

warnings.warn("dtlab.experiments.gdt is deprecated; import dtlab.evolution.experiments instead",
              DeprecationWarning, stacklevel=2)

from ..evolution.experiments import *  # noqa: E402,F401,F403
