"""Reductions of the split scans: plain loops numba compiles for the CPU and, called from a scan compiled as
a CUDA device function, for CUDA."""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT


@numba.njit(**NJIT)
def largest(values, count):
    """The largest of ``values[:count]`` (NaN ignored; -inf if none): eight independent running maxima, so
    the comparisons overlap instead of each waiting for the one before."""
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = -np.inf
    k = 0
    while k + 8 <= count:
        v0, v1, v2, v3 = values[k], values[k + 1], values[k + 2], values[k + 3]
        v4, v5, v6, v7 = values[k + 4], values[k + 5], values[k + 6], values[k + 7]
        m0 = v0 if v0 > m0 else m0
        m1 = v1 if v1 > m1 else m1
        m2 = v2 if v2 > m2 else m2
        m3 = v3 if v3 > m3 else m3
        m4 = v4 if v4 > m4 else m4
        m5 = v5 if v5 > m5 else m5
        m6 = v6 if v6 > m6 else m6
        m7 = v7 if v7 > m7 else m7
        k += 8
    while k < count:
        v0 = values[k]
        m0 = v0 if v0 > m0 else m0
        k += 1
    m0 = m1 if m1 > m0 else m0
    m2 = m3 if m3 > m2 else m2
    m4 = m5 if m5 > m4 else m4
    m6 = m7 if m7 > m6 else m6
    m0 = m2 if m2 > m0 else m0
    m4 = m6 if m6 > m4 else m4
    return m4 if m4 > m0 else m0
