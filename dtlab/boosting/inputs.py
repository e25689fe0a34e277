"""What a GBDT fit starts from: checked rows, targets and weights, the categorical features and their codes.

Rows of weight 0 are left out before anything is built from them (as
scikit-learn's trees leave them out): a weight-0 row then changes nothing,
not even the candidate thresholds, so weights of 0 and 2 are the same model
as removing the row and repeating it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse

from .._validation import check_sklearn_input_shape, fit_target
from ..backend import to_host
from . import _params
from .categories import categorical_mask, check_codes, encode
from .grower import ColumnData


@dataclass
class FitInputs:
    """The pieces of one fit (see :func:`prepare_fit`)."""

    data: ColumnData
    y: np.ndarray
    weight: np.ndarray | None
    names: list | None
    categorical: np.ndarray
    categories: dict


def _take_rows(X: Any, keep: np.ndarray) -> Any:
    if scipy.sparse.issparse(X):
        return scipy.sparse.csr_matrix(X)[keep]
    return np.asarray(X)[keep]


def prepare_fit(est: Any, X: Any, y: Any, sample_weight: Any, numeric: bool) -> FitInputs:
    """Check and convert a fit's input: pandas categories to codes, integer codes checked, weight-0 rows out.

    Parameters
    ----------
    est : the GBDT estimator (its ``categorical_features`` and ``split_method``)
    X : array-like, sparse matrix or DataFrame (n_samples, n_features)
    y : targets (n_samples,); ``numeric`` for regression
    sample_weight : array-like (n_samples,) or None
    """
    check_sklearn_input_shape(X)
    names = _params.column_names(X)
    # a DataFrame's categorical columns are known by their dtype, before they become codes
    mask = categorical_mask(X, est.categorical_features, X.shape[1]) if hasattr(X, "dtypes") else None
    X, categories = encode(X)
    X = to_host(X)
    if not hasattr(X, "shape"):  # a list, or any object with __array__
        X = np.asarray(X)
    n = X.shape[0]
    y = fit_target(y, n, est, numeric=numeric)
    w = _params.check_sample_weight(sample_weight, n)
    if w is not None and (w == 0).any():
        keep = w > 0
        X, y, w = _take_rows(X, keep), np.asarray(y)[keep], w[keep]
    data = ColumnData.from_input(X)
    if mask is None:
        mask = categorical_mask(X, est.categorical_features, data.n_features)
    if mask.any():
        if _params.chosen_split_method(est) == "exact":
            raise ValueError("categorical features need split_method='hist' (XGBoost's exact method has no "
                             "categorical splits either); or set categorical_features=None to split the codes as "
                             "numbers")
        check_codes(X, mask)
    return FitInputs(data, y, w, names, mask, categories)


def numeric_rows(est: Any, X: Any) -> Any:
    """X for prediction: a DataFrame's category columns coded with the fit's categories."""
    categories = getattr(est, "categories_", {})
    if categories:
        return encode(X, categories)[0]
    if hasattr(X, "dtypes") and any(getattr(t, "name", None) == "category" for t in X.dtypes):
        raise ValueError("X has pandas category columns, but the model was fitted without them")
    return X
