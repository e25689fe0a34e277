"""Imports the modules that register figure producers and benchmarks."""

from ..linear import experiments as _linear  # noqa: F401
from . import (
    gdt,  # noqa: F401
    greedy,  # noqa: F401
    tour,  # noqa: F401
)
