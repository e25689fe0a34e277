"""Parameter and input checks shared by the greedy estimators."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._validation import check_int, check_sklearn_input_shape, check_X
from ..backend import BACKEND_NAMES, Backend, resolve_threads, thread_scope, to_host
from .builder import as_float32_features


def check_tree_params(est: Any) -> tuple[int | None, int, int]:
    """Validate ``max_depth``, ``min_samples_split``, ``min_samples_leaf``, ``backend`` and ``n_jobs``.

    ``max_depth=0`` is allowed and means the single-leaf tree (scikit-learn
    refuses it; here it is the well-defined limit of "no split").
    """
    max_depth = check_int(est.max_depth, "max_depth", low=0, allow_none=True)
    min_samples_split = check_int(est.min_samples_split, "min_samples_split", low=2)
    min_samples_leaf = check_int(est.min_samples_leaf, "min_samples_leaf", low=1)
    if not isinstance(est.backend, Backend) and est.backend not in BACKEND_NAMES:
        raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {est.backend!r}")
    resolve_threads(est.n_jobs)
    return max_depth, min_samples_split, min_samples_leaf


def check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def fit_features(X: Any) -> np.ndarray:
    """X for ``fit``: float32 (as scikit-learn casts it), finite, at least one row."""
    X = to_host(X)
    check_sklearn_input_shape(X)
    X64 = check_X(X, dtype=np.float64, allow_nan=False, name="X")
    if X64.size and max(X64.max(), -X64.min()) > np.finfo(np.float32).max:
        raise ValueError("X has values too large for float32 (|x| > 3.4e38); scale the features first")
    return as_float32_features(X64)


def predict_features(X: Any, estimator: Any) -> np.ndarray:
    """X for ``predict``: float32 like in ``fit``, so that ``x <= threshold`` agrees with training.

    NaN is allowed (it follows each node's ``missing_left``: the side that got
    more training rows), inf is not.
    """
    X = to_host(X)
    check_sklearn_input_shape(X)
    X64 = check_X(X, dtype=np.float64, allow_nan=True, name="X", min_samples=0)
    if X64.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X64.shape[1]} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input")
    return np.ascontiguousarray(X64, dtype=np.float32)


class FittedTreeMixin:
    """Prediction-side methods shared by the greedy estimators: all read the fitted ``tree_`` (a FlatTree)."""

    def _tree_input(self, X: Any):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        return predict_features(X, self)

    def predict(self, X: Any) -> np.ndarray:
        """Leaf mean (regression) or majority class of the reached leaf (first class on a tie), shape (n_samples,)."""
        X32 = self._tree_input(X)  # first: raises NotFittedError before tree_ is touched
        with thread_scope(self.n_jobs):
            return self.tree_.predict(X32, backend=self.backend_)

    def apply(self, X: Any) -> np.ndarray:
        """Index of the leaf each row reaches, int32 of shape (n_samples,)."""
        X32 = self._tree_input(X)
        with thread_scope(self.n_jobs):
            return self.tree_.apply(X32, backend=self.backend_)

    def get_n_leaves(self) -> int:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    def get_depth(self) -> int:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        return self.tree_.max_depth
