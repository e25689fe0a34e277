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


def _check_float32_range(X64: np.ndarray) -> None:
    """Values beyond float32's range would become inf in the float32 cast: an error, like inf itself."""
    largest = np.nanmax(np.abs(X64), initial=0.0) if X64.size else 0.0
    if largest > np.finfo(np.float32).max:
        raise ValueError("X has values too large for float32 (|x| > 3.4e38); scale the features first")


def has_missing(X32: np.ndarray) -> bool:
    """Whether X (from :func:`fit_features`) holds a missing value (NaN)."""
    return bool(np.isnan(X32).any())


def fit_features(X: Any) -> np.ndarray:
    """X for ``fit``: float32 (as scikit-learn casts it), at least one row; NaN marks a missing value, inf is
    refused."""
    X = to_host(X)
    check_sklearn_input_shape(X)
    X64 = check_X(X, dtype=np.float64, allow_nan=True, name="X")
    _check_float32_range(X64)
    return as_float32_features(X64)


def predict_features(X: Any, estimator: Any) -> np.ndarray:
    """X for ``predict``: float32 like in ``fit``, so that ``x <= threshold`` agrees with training.

    NaN is allowed (it follows each split's ``missing_left``: where the
    training rows missing that feature went, or the child that got more
    training rows where none was missing), inf is not.
    """
    X = to_host(X)
    check_sklearn_input_shape(X)
    X64 = check_X(X, dtype=np.float64, allow_nan=True, name="X", min_samples=0)
    if X64.shape[1] != estimator.n_features_in_:
        raise ValueError(f"X has {X64.shape[1]} features, but {type(estimator).__name__} is expecting "
                         f"{estimator.n_features_in_} features as input")
    _check_float32_range(X64)
    return np.ascontiguousarray(X64, dtype=np.float32)


class FittedTreeMixin:
    """Prediction-side methods shared by the greedy estimators: all read the fitted ``tree_`` (a FlatTree)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # NaN is a missing value, at fit and predict
        return tags

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

    @property
    def feature_importances_(self) -> np.ndarray:
        """Impurity-based importances, scikit-learn's: each split's ``N_t i_t - N_l i_l - N_r i_r`` (training
        rows ``N``, impurity ``i`` of the node and its children) summed by feature and normalised to sum 1 (all
        0 for a tree that is one leaf); float64 array (n_features_in_,)."""
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        n_rows, impurity = self._node_statistics()
        tree = self.tree_
        inner = np.flatnonzero(tree.left >= 0)
        weighted = n_rows * impurity
        decrease = weighted[inner] - weighted[tree.left[inner]] - weighted[tree.right[inner]]
        out = np.bincount(tree.feature[inner], weights=decrease, minlength=self.n_features_in_).astype(np.float64)
        total = out.sum()
        return out / total if total > 0 else out

    def get_n_leaves(self) -> int:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        return self.tree_.n_leaves

    def get_depth(self) -> int:
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "tree_")
        return self.tree_.max_depth
