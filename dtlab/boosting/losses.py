"""Losses of second-order boosting: gradients and hessians of the margin, as XGBoost computes them (serial
loops: O(n) work, cheaper than a parallel launch on a busy machine).

Each loss maps float32 margins (``n_samples`` or ``(n_samples, n_classes)``)
and the encoded targets to float32 gradients ``g`` and hessians ``h``, in
float32 arithmetic like XGBoost's ``reg:squarederror``, ``binary:logistic``
and ``multi:softprob`` objectives, so that both libraries start every round
from the same statistics.  ``LOSSES`` is the registry the estimators use.
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT

#: XGBoost's floor on a logistic hessian (keeps ``H + lambda`` positive with ``lambda = 0``).
HESS_EPS = np.float32(1e-16)


@numba.njit(**NJIT)
def _squared_error(margin, y, g, h):
    for i in range(margin.shape[0]):
        g[i] = margin[i] - np.float32(y[i])
        h[i] = np.float32(1.0)


@numba.njit(**NJIT)
def _sigmoid32(x):
    return np.float32(1.0) / (np.float32(1.0) + np.exp(-x))


@numba.njit(**NJIT)
def _probability_to_margin32(p):
    """XGBoost's ``ProbToMargin`` of the logistic loss, ``-logf(1.0f / p - 1.0f)``, all in float32: numba's
    float32 ``log`` is the C library's ``logf``, as XGBoost's (NumPy's own float32 log differs in the last bit
    on some inputs)."""
    return -np.log(np.float32(1.0) / p - np.float32(1.0))


@numba.njit(**NJIT)
def _logistic(margin, y, g, h):
    for i in range(margin.shape[0]):
        p = _sigmoid32(margin[i])
        g[i] = p - np.float32(y[i])
        h[i] = max(p * (np.float32(1.0) - p), HESS_EPS)


@numba.njit(**NJIT)
def _softmax(margin, y, g, h):
    """Gradients of every class at once: ``g``, ``h`` of shape (n_samples, n_classes)."""
    n_classes = margin.shape[1]
    for i in range(margin.shape[0]):
        top = margin[i, 0]
        for c in range(1, n_classes):
            top = max(top, margin[i, c])
        total = np.float32(0.0)
        for c in range(n_classes):
            total += np.exp(margin[i, c] - top)
        for c in range(n_classes):
            p = np.exp(margin[i, c] - top) / total
            g[i, c] = p - (np.float32(1.0) if y[i] == c else np.float32(0.0))
            h[i, c] = max(np.float32(2.0) * p * (np.float32(1.0) - p), HESS_EPS)


class SquaredError:
    """``(margin - y)^2 / 2``: ``g = margin - y``, ``h = 1``; the margin is the prediction."""

    name = "squared_error"

    @staticmethod
    def base_margin(base_score: float) -> float:
        return float(base_score)

    @staticmethod
    def gradients(margin: np.ndarray, y: np.ndarray, g: np.ndarray, h: np.ndarray) -> None:
        _squared_error(margin, y, g, h)

    @staticmethod
    def loss(margin: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
        """Root mean squared error (XGBoost's default metric for it), weighted by ``w`` if given."""
        return float(np.sqrt(np.average((margin.astype(np.float64) - y) ** 2, weights=w)))


class Logistic:
    """Binary log loss of ``p = sigmoid(margin)``: ``g = p - y``, ``h = max(p (1 - p), 1e-16)``."""

    name = "logistic"

    @staticmethod
    def base_margin(base_score: float) -> float:
        """The margin of a base probability (XGBoost's ``base_score`` is a probability here), as XGBoost
        computes it: in float32 from the float32 probability.  The float64 ``log(p / (1 - p))`` can land a few
        float32 steps away; every row's first gradients move with it, which at 500,000 rows was enough to
        tip near-equal gains (one threshold of the first tree differed from XGBoost exact's)."""
        if not 0.0 < base_score < 1.0:
            raise ValueError(f"base_score of a logistic model is a probability in (0, 1), got {base_score}")
        return float(_probability_to_margin32(np.float32(base_score)))

    @staticmethod
    def gradients(margin, y, g, h) -> None:
        _logistic(margin, y, g, h)

    @staticmethod
    def loss(margin: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
        """Mean log loss (weighted by ``w`` if given)."""
        m = margin.astype(np.float64)
        return float(np.average(np.logaddexp(0.0, m) - y * m, weights=w))


class Softmax:
    """Multiclass log loss of ``softmax(margin)``: one tree per class and round (XGBoost's ``multi:softprob``)."""

    name = "softmax"

    @staticmethod
    def base_margin(base_score: float) -> float:
        return float(base_score)

    @staticmethod
    def gradients(margin, y, g, h) -> None:
        _softmax(margin, y, g, h)

    @staticmethod
    def loss(margin: np.ndarray, y: np.ndarray, w: np.ndarray | None = None) -> float:
        """Mean multiclass log loss (weighted by ``w`` if given)."""
        m = margin.astype(np.float64)
        top = m.max(axis=1, keepdims=True)
        log_z = top[:, 0] + np.log(np.exp(m - top).sum(axis=1))
        return float(np.average(log_z - m[np.arange(m.shape[0]), y.astype(np.int64)], weights=w))


LOSSES = {"squared_error": SquaredError, "logistic": Logistic, "softmax": Softmax}
