"""Imports the modules that register figure producers and benchmarks."""

from . import tour  # noqa: F401
from . import greedy  # noqa: F401
from . import gdt  # noqa: F401
from ..linear import experiments as _linear  # noqa: F401
