"""Linear ranking selection (Michalewicz, *Genetic Algorithms + Data Structures*, 1996), as used by GDT.

Individuals are sorted by fitness; the one of rank ``r`` (0 = worst, ``n-1`` =
best) is expected to be copied ``eta_minus + (eta_plus - eta_minus) * r / (n-1)``
times with ``eta_minus = 2 - eta_plus``, so only the order of fitness values
matters (Jurczuk, Czajkowski, Kretowski 2021, section 2.4.1).  The same
ranking picks the node a mutation changes (section 2.4.3).
"""

from __future__ import annotations

import numpy as np


def ranking_probabilities(n: int, pressure: float) -> np.ndarray:
    """Selection probability of ranks ``0..n-1`` (worst to best), float64 of shape (n,), summing to 1."""
    if n == 1:
        return np.ones(1)
    eta_minus = 2.0 - pressure
    expected = eta_minus + (pressure - eta_minus) * np.arange(n) / (n - 1)
    return expected / expected.sum()


def linear_ranking(fitness: np.ndarray, n_select: int, pressure: float, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``n_select`` individuals drawn by linear ranking with stochastic universal sampling.

    Stochastic universal sampling (Baker 1987) draws all individuals with one
    random offset, so each gets within one of its expected number of copies.
    Ties in fitness are ranked by index (stable sort), so the draw is
    deterministic given ``rng``.

    Parameters
    ----------
    fitness : ndarray of shape (n,), float64 (larger is better)
    n_select : int
    pressure : float in [1, 2]
        Expected copies of the best individual.
    rng : numpy Generator

    Returns
    -------
    ndarray of shape (n_select,), int64, in random order
    """
    order = np.argsort(fitness, kind="stable")  # worst first
    cum = np.cumsum(ranking_probabilities(len(fitness), pressure))
    cum[-1] = 1.0
    pointers = (rng.random() + np.arange(n_select)) / n_select
    chosen = order[np.searchsorted(cum, pointers, side="right").clip(0, len(fitness) - 1)]
    return rng.permutation(chosen)


def ranked_pick(keys: list[np.ndarray], candidates: np.ndarray, pressure: float, rng: np.random.Generator) -> int:
    """Pick one of ``candidates`` by linear ranking on the sum of their ranks under several keys.

    Parameters
    ----------
    keys : list of ndarray of shape (len(candidates),)
        Larger key = more likely to be picked (e.g. depth, misclassified objects).
    candidates : ndarray of int
    pressure : float in [1, 2]
    rng : numpy Generator

    Returns
    -------
    int : the chosen candidate
    """
    n = len(candidates)
    if n == 1:
        return int(candidates[0])
    score = np.zeros(n)
    for key in keys:
        score += np.argsort(np.argsort(key, kind="stable"), kind="stable")
    order = np.argsort(score, kind="stable")  # least likely first
    return int(candidates[order[rng.choice(n, p=ranking_probabilities(n, pressure))]])
