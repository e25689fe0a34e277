"""``numpy.random.Generator.choice`` and GDT's ranked picks, rebuilt for numba over the same generator state.

numba runs NumPy's own algorithms for ``Generator.random``, ``integers``,
``uniform`` and ``permutation`` on the generator it is handed (its state is
advanced in place); ``choice`` it does not offer.  These functions redo what
``choice`` does, step for step, so the compiled host loop (:mod:`._operators_cpu`) draws
exactly the numbers the plain reference (:mod:`.operators`, :mod:`.selection`)
draws: ``choice(n, p=...)`` searches one uniform number in the normalised
cumulative probabilities, whose sum NumPy forms by pairwise summation
(:func:`_numpy_sum` reproduces it); ``choice(n, 2, replace=False)`` is
Floyd's sample and a shuffle.  Tests compare both with NumPy's results and
generator states.
"""

from __future__ import annotations

import numba
import numpy as np

_NJIT = dict(cache=True, nogil=True)


@numba.njit(**_NJIT)
def _pairwise_block(a, lo, n):
    """NumPy's sum of at most 128 contiguous float64: a plain loop below 8, else eight interleaved partial sums."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r = a[lo:lo + 8].copy()
    i = 8
    while i < n - n % 8:
        for j in range(8):
            r[j] += a[lo + i + j]
        i += 8
    res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@numba.njit(**_NJIT)
def _numpy_sum(a, lo, n):
    """``np.sum(a[lo:lo + n])`` bit for bit: NumPy's pairwise summation of contiguous float64.

    Above 128 values NumPy sums the two halves (the first a multiple of 8 long)
    recursively and adds them; the recursion runs here on an explicit stack
    (numba cannot cache a recursive function).
    """
    if n <= 128:
        return _pairwise_block(a, lo, n)
    part_lo = np.empty(64, np.int64)
    part_n = np.empty(64, np.int64)
    stage = np.empty(64, np.int64)
    values = np.empty(64)
    part_lo[0], part_n[0], stage[0] = lo, n, 0
    depth, n_values = 1, 0
    while depth:
        i = depth - 1
        half = part_n[i] // 2
        half -= half % 8
        if part_n[i] <= 128:
            values[n_values] = _pairwise_block(a, part_lo[i], part_n[i])
            n_values += 1
            depth -= 1
        elif stage[i] < 2:  # descend into the first half, then the second
            part_lo[depth] = part_lo[i] + (half if stage[i] else 0)
            part_n[depth] = part_n[i] - half if stage[i] else half
            stage[depth] = 0
            stage[i] += 1
            depth += 1
        else:  # both halves summed: first + second
            values[n_values - 2] = values[n_values - 2] + values[n_values - 1]
            n_values -= 1
            depth -= 1
    return values[0]


@numba.njit(**_NJIT)
def _ranking_cdf(n, pressure):
    """The cdf ``Generator.choice(n, p=ranking_probabilities(n, pressure))`` searches, ``cumsum(p) / cumsum(p)[-1]``."""
    expected = np.ones(n)
    if n > 1:
        eta_minus = 2.0 - pressure
        for i in range(n):
            expected[i] = eta_minus + (pressure - eta_minus) * np.float64(i) / np.float64(n - 1)
    total = _numpy_sum(expected, 0, n)
    cdf = np.empty(n)
    acc = 0.0
    for i in range(n):
        acc += expected[i] / total
        cdf[i] = acc
    last = cdf[n - 1]
    for i in range(n):
        cdf[i] /= last
    return cdf


@numba.njit(**_NJIT)
def _selection_cum(n, pressure):
    """:func:`.selection.linear_ranking`'s cumulative probabilities of ranks ``0..n-1``, the last set to 1."""
    cum = _ranking_cdf(n, pressure) if n == 1 else np.empty(n)
    if n > 1:
        eta_minus = 2.0 - pressure
        expected = np.empty(n)
        for i in range(n):
            expected[i] = eta_minus + (pressure - eta_minus) * np.float64(i) / np.float64(n - 1)
        total = _numpy_sum(expected, 0, n)
        acc = 0.0
        for i in range(n):
            acc += expected[i] / total
            cum[i] = acc
    cum[n - 1] = 1.0
    return cum


@numba.njit(**_NJIT)
def _choice_cdf(rng, cdf):
    """``Generator.choice(len(cdf), p=...)``: one uniform draw searched in the normalised cdf."""
    return np.searchsorted(cdf, rng.random(), side="right")


@numba.njit(**_NJIT)
def _choose_two(rng, n):
    """``Generator.choice(n, size=2, replace=False)`` for n < 10,000: Floyd's sample, then a shuffle."""
    first = rng.integers(0, n - 1)
    second = rng.integers(0, n)
    if second == first:
        second = n - 1
    if rng.integers(0, 2) == 0:
        first, second = second, first
    return first, second


@numba.njit(**_NJIT)
def _ranked_pick(rng, key_a, key_b, two_keys, candidates, pressure):
    """:func:`.selection.ranked_pick` with one key (``key_a``) or two (``key_a`` + ``key_b``)."""
    n = candidates.shape[0]
    if n == 1:
        return candidates[0]
    score = np.zeros(n)
    ranks = np.argsort(np.argsort(key_a, kind="mergesort"), kind="mergesort")
    for i in range(n):
        score[i] += ranks[i]
    if two_keys:
        ranks = np.argsort(np.argsort(key_b, kind="mergesort"), kind="mergesort")
        for i in range(n):
            score[i] += ranks[i]
    order = np.argsort(score, kind="mergesort")
    return candidates[order[_choice_cdf(rng, _ranking_cdf(n, pressure))]]
