"""Deprecated alias of :mod:`dtlab.greedy.experiments`;
removed in the next release (each technique's experiments and plots live in its package).
"""

import warnings

warnings.warn("dtlab.experiments.greedy is deprecated; import dtlab.greedy.experiments instead",
              DeprecationWarning, stacklevel=2)

from ..greedy.experiments import *  # noqa: E402,F401,F403
