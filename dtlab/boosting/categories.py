"""Categorical features of the GBDT estimators: which columns they are, and their values as category codes.

``categorical_features="auto"`` (the default) takes the pandas ``category``
columns of a DataFrame, as LightGBM does; a list of column indices or names,
or a boolean mask, names integer-coded columns too.  A pandas column is
replaced by its codes (NaN for a missing value) and its categories are kept,
so that prediction maps a DataFrame's categories to the same codes by value
(a category not seen in fit becomes a code beyond the trees' sets and goes
right, as in LightGBM).  An integer-coded column must hold non-negative whole
numbers below ``2**24`` (exact in float32) or NaN.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse


def _is_frame(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _is_category(dtype: Any) -> bool:
    return getattr(dtype, "name", None) == "category"


def categorical_mask(X: Any, spec: Any, n_features: int) -> np.ndarray:
    """The categorical features of ``X`` (bool array (n_features,)) from ``categorical_features``."""
    mask = np.zeros(n_features, bool)
    frame = _is_frame(X)
    if spec is None:
        pass
    elif isinstance(spec, str):
        if spec != "auto":
            raise ValueError(f"categorical_features must be 'auto', None, indices, names or a boolean mask, got "
                             f"{spec!r}")
        if frame:
            mask[:] = [_is_category(t) for t in X.dtypes]
    else:
        items = np.asarray(list(spec))
        if items.dtype == bool:
            if items.shape != (n_features,):
                raise ValueError(f"a boolean categorical_features needs one entry per feature ({n_features}), "
                                 f"got {items.shape[0]}")
            mask[:] = items
        elif items.size and items.dtype.kind in "UO":
            if not frame:
                raise ValueError("categorical_features given by name needs a DataFrame with those columns")
            columns = [str(c) for c in X.columns]
            for name in items:
                if str(name) not in columns:
                    raise ValueError(f"categorical_features names {name!r}, which is not a column of X")
                mask[columns.index(str(name))] = True
        elif items.size:
            if items.dtype.kind not in "iu" or (items < 0).any() or (items >= n_features).any():
                raise ValueError(f"categorical_features indices must lie in [0, {n_features}), got {items.tolist()}")
            mask[items] = True
    if frame:
        for f, (name, t) in enumerate(zip(X.columns, X.dtypes)):
            if _is_category(t) and not mask[f]:
                raise ValueError(f"column {name!r} is categorical (pandas category dtype) but not among "
                                 "categorical_features; add it (categorical_features='auto' takes every such column)")
    return mask


def encode(X: Any, categories: dict[int, list] | None = None) -> tuple[Any, dict[int, list]]:
    """``X`` with its pandas category columns as codes (float64 array), and their categories.

    ``categories`` (from fit) maps column ``f`` to the categories of fit: prediction codes by those (a value
    among them gets its fit code, any other value ``len(categories[f])``).  X that is not a DataFrame with
    category columns is returned unchanged (with no categories).
    """
    if not _is_frame(X) or not any(_is_category(t) for t in X.dtypes):
        if categories:
            raise ValueError("the model was fitted on a DataFrame with categorical columns; pass a DataFrame with "
                             "the same columns")
        return X, {}
    import pandas as pd

    found = {}
    columns = []
    for f in range(X.shape[1]):
        col = X.iloc[:, f]
        if not _is_category(col.dtype):
            columns.append(pd.to_numeric(col, errors="raise").to_numpy(np.float64, na_value=np.nan))
            continue
        cats = list(col.cat.categories) if categories is None else categories.get(f)
        if cats is None:
            raise ValueError(f"column {X.columns[f]!r} is categorical here but was not in fit")
        codes = pd.Categorical(col, categories=cats).codes.astype(np.float64)
        unseen = (codes < 0) & col.notna().to_numpy()
        codes[codes < 0] = np.nan
        codes[unseen] = len(cats)  # beyond every set: goes right
        columns.append(codes)
        found[f] = cats
    return np.column_stack(columns), found


def check_codes(X: Any, mask: np.ndarray) -> None:
    """Raise ValueError unless every categorical column of X (array or sparse) holds non-negative whole
    numbers below 2**24, or NaN."""
    for f in np.flatnonzero(mask):
        col = X[:, [f]].toarray().ravel() if scipy.sparse.issparse(X) else np.asarray(X[:, f], np.float64)
        present = col[~np.isnan(col)]
        if ((present < 0) | (present != np.round(present)) | (present >= 2**24)).any():
            raise ValueError(f"categorical feature {f} must hold non-negative integer codes below 2**24 (or NaN); "
                             "encode the categories as 0, 1, 2, ... or pass a pandas category column")
