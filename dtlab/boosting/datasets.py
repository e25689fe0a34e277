"""Data for the boosting experiments: synthetic rows like the swGBDT issue's, their sparse form, a holdout."""

from __future__ import annotations

import numpy as np


def synthetic(n_samples: int = 20_000, n_features: int = 28, missing: float = 0.0, seed: int = 0):
    """Binary classification rows whose label depends on a few features smoothly (an AUC near 0.99).

    Returns
    -------
    X : float32 array (n_samples, n_features), NaN where missing (a fraction ``missing`` of entries)
    y : int32 array (n_samples,)
    """
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_samples, n_features)).astype(np.float32)
    k = min(6, n_features)
    w = rng.normal(size=k)
    z = X[:, :k] @ w + 0.8 * np.sin(2 * X[:, 0]) * X[:, min(1, n_features - 1)]
    y = (z + 0.35 * rng.normal(size=n_samples) > 0).astype(np.int32)
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X, y


def as_csc_without_missing(X: np.ndarray):
    """A scipy CSC matrix holding the non-NaN entries of ``X`` (n_samples, n_features): NaN becomes absent."""
    import scipy.sparse as sp

    r, c = np.nonzero(~np.isnan(X))
    return sp.csc_matrix((X[r, c], (r, c)), shape=X.shape)


def holdout_split(X, y, fraction: float = 0.25):
    """The first rows for training and the last ``fraction`` of them held out: ``X_train, y_train, X_test,
    y_test`` (the generators' rows are independent draws, so no shuffle is needed)."""
    cut = int(X.shape[0] * (1 - fraction))
    return X[:cut], y[:cut], X[cut:], y[cut:]
