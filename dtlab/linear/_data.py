"""Input and parameter checks of the linear estimators, and the thread scope of a fit."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse

from .._validation import check_int, check_real, check_sklearn_input_shape, check_X, fit_target, sorted_labels_and_codes
from ..backend import BACKEND_NAMES, Backend, is_device_array, resolve_backend, resolve_threads, to_host
from .placement import PLACEMENTS


def check_params(est: Any, solvers) -> None:
    """Validate the hyper-parameters of a TRON estimator (raises ValueError / TypeError)."""
    if isinstance(est.C, bool) or not isinstance(est.C, (int, float, np.number)) or not np.isfinite(est.C):
        raise TypeError(f"C must be a finite number, got {est.C!r}")
    if est.C <= 0:
        raise ValueError(f"C must be > 0 (it weighs the loss against the regulariser), got {est.C}")
    check_real(est.tol, "tol", low=0.0, low_inclusive=False)
    check_int(est.max_iter, "max_iter", low=1)
    if not isinstance(est.fit_intercept, (bool, np.bool_)):
        raise TypeError(f"fit_intercept must be True or False, got {est.fit_intercept!r}")
    if est.solver not in solvers:
        raise ValueError(f"solver must be one of {tuple(solvers)}, got {est.solver!r}")
    if not isinstance(est.backend, Backend) and est.backend not in BACKEND_NAMES:
        raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {est.backend!r}")
    if est.placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {est.placement!r}")
    check_int(est.device_memory, "device_memory", low=0, allow_none=True)
    resolve_threads(est.n_jobs)


def _check_sparse(X: Any, name: str = "X") -> scipy.sparse.csr_matrix:
    canonical = (isinstance(X, scipy.sparse.csr_matrix) and X.dtype == np.float64 and X.has_canonical_format)
    if not canonical:  # a copy: the caller's matrix is never changed (sum_duplicates works in place)
        X = scipy.sparse.csr_matrix(X).astype(np.float64, copy=True)
    if X.shape[1] == 0:
        raise ValueError(f"{name} has no columns (shape {X.shape}); at least one feature needed")
    if not np.all(np.isfinite(X.data)):
        raise ValueError(f"{name} contains NaN or inf; TRON needs finite values")
    X.sum_duplicates()  # also sorts the indices
    return X


def check_fit_input(X: Any, y: Any, backend: Any, fit_intercept: bool, estimator: Any):
    """Host float64 X (CSR or dense, with the bias column if asked), class codes, classes, Backend.

    Returns
    -------
    X : scipy.sparse CSR matrix or ndarray (n_samples, n_features [+ 1]), float64
    codes : int64 array (n_samples,), the index of each row's label in ``classes``
    classes : ndarray (n_classes,), the sorted labels, at least two
    backend : Backend
    """
    backend = resolve_backend(backend, X) if is_device_array(X) else resolve_backend(backend)
    X = to_host(X)
    check_sklearn_input_shape(X)
    if scipy.sparse.issparse(X):
        Xh = _check_sparse(X)
        if Xh.shape[0] == 0:
            raise ValueError(f"X has 0 rows (shape {Xh.shape}); at least one sample is needed")
    else:
        Xh = check_X(X, dtype=np.float64, allow_nan=False, name="X")
    y = np.asarray(fit_target(y, Xh.shape[0], estimator))
    classes, codes = _classes(y)
    if fit_intercept:
        ones = np.ones((Xh.shape[0], 1))
        Xh = scipy.sparse.hstack([Xh, ones], format="csr") if scipy.sparse.issparse(Xh) else np.hstack([Xh, ones])
    return Xh, codes, classes, backend


def _classes(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted labels of ``y`` and each row's index among them, or a ValueError naming what is wrong (one
    class; more than two values that are not class labels)."""
    from sklearn.utils.multiclass import type_of_target

    classes, codes = sorted_labels_and_codes(y)
    if classes.shape[0] < 2:
        raise ValueError(f"y has only one class ({y[0]!r}); a classifier needs samples of two classes or more")
    if classes.shape[0] > 2 and type_of_target(y) == "continuous":  # two values of any kind are two labels
        raise ValueError("Unknown label type: continuous. y holds real values; TRON's classifiers need class "
                         "labels")
    return classes, codes.astype(np.int64)


def class_weights(class_weight: Any, classes: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """The weight of each class (float64, shape (n_classes,)): LIBLINEAR's ``-wi``, scikit-learn's conventions.

    ``None``: all 1; a dict ``{label: weight}`` (labels not named weigh 1); ``"balanced"``:
    ``n_samples / (n_classes * count)``.  Raises ValueError for a label not in ``classes`` or a weight that
    is not a positive finite number.
    """
    n_classes = classes.shape[0]
    if class_weight is None:
        return np.ones(n_classes)
    if isinstance(class_weight, str) and class_weight == "balanced":
        counts = np.bincount(codes, minlength=n_classes)
        return codes.shape[0] / (n_classes * counts.astype(np.float64))
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict {{label: weight}}, got {class_weight!r}")
    out = np.ones(n_classes)
    for label, weight in class_weight.items():
        where = np.flatnonzero(classes == label)
        if where.shape[0] == 0:
            raise ValueError(f"class_weight names the label {label!r}, which is not in y (classes "
                             f"{classes.tolist()})")
        out[where[0]] = check_real(weight, f"class_weight[{label!r}]", low=0.0, low_inclusive=False)
    return out


def check_predict_input(est: Any, X: Any):
    """X for prediction: host float64 (CSR or dense) with ``n_features_in_`` columns."""
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(est, "coef_")
    X = to_host(X)
    check_sklearn_input_shape(X)
    if scipy.sparse.issparse(X):
        Xh = _check_sparse(X)
    else:
        Xh = check_X(X, dtype=np.float64, allow_nan=False, name="X", min_samples=0)
    if Xh.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {Xh.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input")
    return Xh
