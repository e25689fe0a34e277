"""SplitMix64: the 64-bit integer hash behind every seeded, order-independent draw (GDT's fitness draw,
boosting's row and feature samples).

Plain functions that keep the rules of :mod:`dtlab._jit`: a technique compiles
them with ``numba.njit`` for its CPU kernels and with
``numba.cuda.jit(device=True)`` for its CUDA kernels
(:func:`dtlab._jit.compile_functions`, callees first: :func:`mix64` calls
:func:`splitmix64` by that name), and numpy runs them, vectorised, on arrays of
uint64 (array arithmetic wraps modulo 2**64 like C).  Nothing here is compiled
at import.
"""

from __future__ import annotations

import numpy as np

#: SplitMix64's increment, ``2**64`` over the golden ratio.
GOLDEN = np.uint64(0x9E3779B97F4A7C15)

_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)


def splitmix64(x):
    """SplitMix64 finaliser: a bijective 64-bit mix (Steele et al., 2014) of ``x + GOLDEN``.

    Works on a numba ``uint64`` scalar and, vectorised, on a numpy ``uint64``
    array (numpy wraps array arithmetic modulo 2**64 like C).

    Parameters
    ----------
    x : uint64 scalar or ndarray of uint64

    Returns
    -------
    uint64 scalar or ndarray of uint64
    """
    z = x + GOLDEN
    z = (z ^ (z >> _S30)) * _MIX1
    z = (z ^ (z >> _S27)) * _MIX2
    return z ^ (z >> _S31)


def mix64(z):
    """splitmix64's mix alone, without its increment: ``mix64(z) == splitmix64(z - GOLDEN)`` (modulo 2**64, the
    increment taken back): a bijection of uint64 whose output bits each depend on every input bit.

    Calls :func:`splitmix64` by that name: compile both, ``compile_functions([splitmix64, mix64], jit)``.
    A numba ``uint64`` scalar or a numpy ``uint64`` array.
    """
    return splitmix64(z - GOLDEN)


_INV_MIX1 = np.uint64(pow(0xBF58476D1CE4E5B9, -1, 2**64))
_INV_MIX2 = np.uint64(pow(0x94D049BB133111EB, -1, 2**64))
_S60 = np.uint64(60)
_S54 = np.uint64(54)
_S62 = np.uint64(62)


def unsplitmix64(z):
    """The inverse of :func:`splitmix64`: ``unsplitmix64(splitmix64(x)) == x`` for every uint64 ``x``.

    A draw hash is ``splitmix64(seed ^ row) ^ salt``, a bijection of the row id,
    so a kernel that keeps only the smallest hashes of a leaf (with atomic
    minima, as GDT's CUDA evaluator does) recovers their rows exactly:
    ``row = unsplitmix64(hash ^ salt) ^ seed``.  Scalar (numba) or ndarray of uint64.
    """
    z = z ^ (z >> _S31) ^ (z >> _S62)  # x ^= x >> s is undone by x ^ (x >> s) ^ (x >> 2s) ^ ... (s >= 22)
    z = z * _INV_MIX2
    z = z ^ (z >> _S27) ^ (z >> _S54)
    z = z * _INV_MIX1
    z = z ^ (z >> _S30) ^ (z >> _S60)
    return z - GOLDEN
