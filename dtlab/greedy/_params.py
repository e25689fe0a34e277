"""Parameter and input checks shared by the greedy estimators."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int, check_X
from ..backend import BACKEND_NAMES, Backend
from .builder import as_float32_features


def check_tree_params(est: Any) -> tuple[int | None, int, int]:
    """Validate ``max_depth``, ``min_samples_split``, ``min_samples_leaf`` and ``backend``.

    ``max_depth=0`` is allowed and means the single-leaf tree (scikit-learn
    refuses it; here it is the well-defined limit of "no split").
    """
    max_depth = check_int(est.max_depth, "max_depth", low=0, allow_none=True)
    min_samples_split = check_int(est.min_samples_split, "min_samples_split", low=2)
    min_samples_leaf = check_int(est.min_samples_leaf, "min_samples_leaf", low=1)
    if not isinstance(est.backend, Backend) and est.backend not in BACKEND_NAMES:
        raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {est.backend!r}")
    return max_depth, min_samples_split, min_samples_leaf


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def fit_features(X: Any) -> np.ndarray:
    """X for ``fit``: float32 (as scikit-learn casts it), finite, at least one row."""
    X64 = check_X(X, dtype=np.float64, allow_nan=False, name="X")
    if X64.size and max(X64.max(), -X64.min()) > np.finfo(np.float32).max:
        raise ValueError("X has values too large for float32 (|x| > 3.4e38); scale the features first")
    return as_float32_features(X64)


def predict_features(X: Any, n_features: int) -> np.ndarray:
    """X for ``predict``: float32 like in ``fit``, so that ``x <= threshold`` agrees with training."""
    X64 = check_X(X, dtype=np.float64, allow_nan=True, n_features=n_features, name="X", min_samples=0)
    return np.ascontiguousarray(X64, dtype=np.float32)
