"""Seeded, order-independent draws of rows (``subsample``) and features (``colsample_bytree`` / ``_bylevel``).

Every draw is a hash of ``(seed, tree, level, index)`` (splitmix64's
finalizer over the packed key, :func:`dtlab._hashing.mix64`), compared with the fraction or ranked:

* a row is in tree ``t``'s sample when ``u(seed, t, row) < subsample``, ``u``
  uniform in ``[0, 1)``: the same rows however the data are split between
  threads, devices or workers, and on the CPU and CUDA paths alike (each row's
  draw depends on its index only);
* tree ``t`` tests the ``max(1, round(colsample_bytree * n_features))``
  features of smallest hash ``(seed, t, 0, f)``, and level ``l`` of it the
  ``max(1, round(colsample_bylevel * k))`` of those ``k`` with the smallest
  hash ``(seed, t, l + 1, f)`` (XGBoost's nesting of the two fractions).

A row outside the sample gets ``g = h = 0`` for that tree (XGBoost leaves it
out of every sum in the same way); its leaf value is still added to its margin.
"""

from __future__ import annotations

import numba
import numpy as np

from .._hashing import GOLDEN, mix64, splitmix64
from .._jit import NJIT, compile_functions

#: splitmix64's mix without its increment (:func:`dtlab._hashing.mix64`), compiled for the CPU (the draws are
#: made on the host, for the CPU and CUDA paths alike); a variant of its own in numba's cache.
_mix = compile_functions([splitmix64, mix64], numba.njit(**NJIT), variant="boosting_sampling")["mix64"]


@numba.njit(**NJIT)
def _key(seed, tree, level):
    """The hash state of one (seed, tree, level): three rounds of mixing."""
    z = _mix(np.uint64(seed) + GOLDEN)
    z = _mix(z ^ (np.uint64(tree) * GOLDEN))
    return _mix(z ^ (np.uint64(level) + GOLDEN))


@numba.njit(**NJIT)
def _uniforms(seed, tree, level, n, out):
    """``out[i] = u(seed, tree, level, i)`` in ``[0, 1)`` (53 random bits), for ``i < n``."""
    base = _key(seed, tree, level)
    scale = 1.0 / 9007199254740992.0  # 2^-53
    for i in range(n):
        out[i] = (_mix(base ^ (np.uint64(i) * GOLDEN)) >> np.uint64(11)) * scale


def uniforms(seed: int, tree: int, level: int, n: int) -> np.ndarray:
    """``n`` hash-uniform values of ``(seed, tree, level, i)``, float64 in ``[0, 1)``."""
    out = np.empty(n)
    _uniforms(np.uint64(seed), np.uint64(tree), np.uint64(level), n, out)
    return out


def row_sample(seed: int, tree: int, n_samples: int, fraction: float) -> np.ndarray | None:
    """Rows of tree ``tree``'s sample as a bool mask (n_samples,), or None when ``fraction >= 1``."""
    if fraction >= 1.0:
        return None
    return uniforms(seed, tree, 0, n_samples) < fraction


def feature_sample(seed: int, tree: int, level: int, allowed: np.ndarray | None, n_features: int,
                   fraction: float) -> np.ndarray | None:
    """The features drawn among ``allowed`` (a bool mask, or None for all): the ``max(1, round(fraction *
    k))`` of smallest hash; None when nothing is left out."""
    if fraction >= 1.0:
        return allowed
    u = uniforms(seed, tree, level, n_features)
    pool = np.arange(n_features) if allowed is None else np.flatnonzero(allowed)
    k = max(1, int(round(fraction * pool.shape[0])))
    keep = pool[np.argsort(u[pool], kind="stable")[:k]]
    mask = np.zeros(n_features, bool)
    mask[keep] = True
    return mask


class Sampler:
    """The draws of one fit.

    Parameters
    ----------
    seed : int
        From ``random_state`` (an int, or drawn once from a RandomState / ``None``).
    subsample, colsample_bytree, colsample_bylevel : float in (0, 1]
    n_samples, n_features : int
    """

    def __init__(self, seed: int, subsample: float, colsample_bytree: float, colsample_bylevel: float,
                 n_samples: int, n_features: int):
        self.seed = int(seed) % 2**64
        self.subsample, self.bytree, self.bylevel = subsample, colsample_bytree, colsample_bylevel
        self.n_samples, self.n_features = n_samples, n_features
        self.tree_features: np.ndarray | None = None
        self.tree = 0

    @property
    def samples_features(self) -> bool:
        return self.bytree < 1.0 or self.bylevel < 1.0

    def start_tree(self, tree: int, g: np.ndarray, h: np.ndarray) -> None:
        """Tree ``tree``'s rows (``g``, ``h`` zeroed outside the sample, in place) and features."""
        self.tree = tree
        rows = row_sample(self.seed, tree, self.n_samples, self.subsample)
        if rows is not None:
            g[~rows] = 0.0
            h[~rows] = 0.0
        self.tree_features = feature_sample(self.seed, tree, 0, None, self.n_features, self.bytree)

    def level_features(self, depth: int) -> np.ndarray | None:
        """The features level ``depth`` of the current tree may split on (bool mask), None for all."""
        return feature_sample(self.seed, self.tree, depth + 1, self.tree_features, self.n_features, self.bylevel)


def seed_of(random_state) -> int:
    """An int seed from ``random_state`` (scikit-learn's convention: None draws a fresh one)."""
    from sklearn.utils import check_random_state

    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state) % 2**64
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


def gate_gains(f_gain, allowed: np.ndarray | None) -> None:
    """Zero the per-feature gains (rows of ``f_gain``, shape (n_features, n_nodes)) of the features not
    ``allowed`` (a gain of 0 is no split): the level's column sample, applied before the best feature is
    chosen.  ``f_gain`` may be a host or a device array."""
    if allowed is None:
        return
    for f in np.flatnonzero(~allowed):
        f_gain[f] = 0.0
