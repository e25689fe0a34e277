"""GDT on scipy.sparse input: validation to one CSR form, CSR walks, and the host-side reads of a CSR matrix.

A sparse ``X`` (CSR or CSC, ``*_matrix`` or ``*_array``) is converted once to
CSR (a CSC matrix is *converted*, one pass over its entries) with sorted
column indices and summed duplicates, float32 values as the dense path's, and
is never densified as a whole: implicit entries are the value 0.0, as in
scikit-learn's sparse trees, so a row's value at feature ``f`` is the stored
value when ``f`` is among the row's ``indices`` and 0.0 otherwise
(:func:`csr_value`, a binary search in the row's sorted slice).  Explicit
entries are kept as given (an explicit ``-0.0`` stays, so a drawn dipole
threshold is the dense path's bit for bit).

Inside numba code a CSR matrix travels as the tuple ``(indptr, indices, data)``
(int64, int32, float32), and with its column count as a fourth item where host
operators that take either layout need it (:func:`numba_rows`).  The generic
accessors :func:`cell` and :func:`n_columns` let one compiled operator (the
dipole test of :mod:`._operators_cpu`) read a dense array and that tuple alike.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse
from numba.core import types
from numba.extending import overload

from .._jit import compile_functions, cpu_jit
from .._validation import check_X
from ..trees.walk import descend, find_leaf, no_record, record_margins, record_nearest


def csr_value(X, row, f):
    """``X[row, f]`` of a CSR matrix given as ``(indptr, indices, data)``: the stored value, or 0.0 (float64).

    A binary search in the row's sorted ``indices`` slice; a plain function
    compiled for the CPU and as a CUDA device function (:mod:`dtlab._jit`'s rules).
    """
    indptr, indices, data = X[0], X[1], X[2]
    lo = indptr[row]
    end = indptr[row + 1]
    hi = end
    while lo < hi:
        mid = (lo + hi) // 2
        if indices[mid] < f:
            lo = mid + 1
        else:
            hi = mid
    if lo < end and indices[lo] == f:
        return np.float64(data[lo])
    return np.float64(0.0)


def compile_csr_walks(jit) -> dict:
    """The walks of :mod:`dtlab.trees.walk` reading a CSR tuple: ``find_leaf`` and ``record_margins``."""
    value = jit(csr_value)
    return {
        "find_leaf": compile_functions([descend, find_leaf], jit, {"value_at": value, "record": jit(no_record)},
                                       "csr")["find_leaf"],
        "record_margins": compile_functions([descend, record_margins], jit,
                                            {"value_at": value, "record": jit(record_nearest)},
                                            "csr_margins")["record_margins"],
    }


_walks = compile_csr_walks(cpu_jit(inline="always"))
_csr_find_leaf, _csr_record_margins = _walks["find_leaf"], _walks["record_margins"]


# ---------------------------------------------------------------- one operator for both layouts
def cell(X, row, f):
    """``X[row, f]`` of a dense array or of a :func:`numba_rows` CSR tuple (in numba: its overload)."""
    return csr_value(X, row, f) if isinstance(X, tuple) else X[row, f]


def n_columns(X):
    """Number of features of a dense array or of a :func:`numba_rows` CSR tuple (in numba: its overload)."""
    return X[3] if isinstance(X, tuple) else X.shape[1]


@overload(cell)
def _cell(X, row, f):
    if isinstance(X, types.Array):
        return lambda X, row, f: X[row, f]
    if isinstance(X, types.BaseTuple):
        return lambda X, row, f: _csr_value(X, row, f)
    return None


@overload(n_columns)
def _n_columns(X):
    if isinstance(X, types.Array):
        return lambda X: X.shape[1]
    if isinstance(X, types.BaseTuple):
        return lambda X: X[3]
    return None


_csr_value = numba.njit(inline="always")(csr_value)


# ---------------------------------------------------------------- host side
def is_sparse(X: Any) -> bool:
    return scipy.sparse.issparse(X)


def check_gdt_X(X: Any, n_features: int | None = None, min_samples: int = 1):
    """GDT's feature matrix: a C-contiguous float32 array, or, for sparse input, a canonical float32 CSR matrix.

    Parameters
    ----------
    X : array-like or scipy.sparse matrix/array of shape (n_samples, n_features)
        A canonical CSR matrix (sorted indices, no duplicates) is read as it
        is (its values cast to float32 where they are not); CSC and the other
        sparse formats are converted to CSR (one pass over the stored
        entries, never to a dense array), duplicates summed.
    n_features : int, optional
        Expected number of columns (the one seen in ``fit``).
    min_samples : int

    Returns
    -------
    ndarray of shape (n_samples, n_features), float32, or scipy.sparse.csr_matrix with
    ``indptr`` int64, ``indices`` int32 (sorted per row), ``data`` float32.

    Raises
    ------
    ValueError
        NaN or inf among the stored values (the dense path's message), too few
        rows, no columns, another column count than ``n_features``.
    """
    if not is_sparse(X):
        return check_X(X, dtype=np.float32, n_features=n_features, min_samples=min_samples)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D of shape (n_samples, n_features), got shape {X.shape}")
    if X.dtype.kind not in "biuf":
        raise TypeError(f"X must be numeric (bool, int or float), got dtype {X.dtype}")
    n_rows, n_cols = X.shape
    if n_rows < min_samples:
        raise ValueError(f"X has {n_rows} rows; at least {min_samples} needed")
    if n_cols == 0:
        raise ValueError(f"X has no columns (shape {X.shape}); at least one feature needed")
    if n_features is not None and n_cols != n_features:
        raise ValueError(f"X has {n_cols} features, but {n_features} were expected (the number seen during fit)")
    if X.format == "csr" and X.has_canonical_format:
        csr = X  # read, never modified: no copy
    else:  # CSC, COO, ... -> CSR (a conversion); duplicates summed in their own dtype, as toarray() sums them
        csr = scipy.sparse.csr_matrix(X, copy=True)
        csr.sum_duplicates()  # sorts the indices too (what csr_value's binary search needs)
    data = csr.data.astype(np.float32, copy=False)  # then float32, as the dense path casts
    if not np.isfinite(data).all():
        raise ValueError("X contains NaN or inf; this estimator needs finite values")
    out = scipy.sparse.csr_matrix((data, csr.indices.astype(np.int32, copy=False),
                                   csr.indptr.astype(np.int64, copy=False)), shape=csr.shape, copy=False)
    out.has_sorted_indices = out.has_canonical_format = True
    return out


def csr_arrays(X) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indptr, indices, data)`` of a canonical CSR matrix from :func:`check_gdt_X`, as the kernels take them."""
    return (np.ascontiguousarray(X.indptr, dtype=np.int64), np.ascontiguousarray(X.indices, dtype=np.int32),
            np.ascontiguousarray(X.data))


def numba_rows(X):
    """What the compiled operators read rows from: a dense array as it is, a CSR matrix as ``(*csr_arrays, n_cols)``."""
    if is_sparse(X):
        return (*csr_arrays(X), np.int64(X.shape[1]))
    return X


def feature_span(X) -> np.ndarray:
    """``max - min`` of every feature, float64 of shape (n_features,) (implicit zeros count for a sparse ``X``)."""
    if is_sparse(X):
        return (X.max(axis=0).toarray().ravel().astype(np.float64)
                - X.min(axis=0).toarray().ravel().astype(np.float64))
    return X.max(axis=0).astype(np.float64) - X.min(axis=0).astype(np.float64)


def margins_csr(X, feature, threshold, left, right, missing_left, below, above) -> None:
    """:func:`._operators_cpu._margins` of a canonical CSR matrix, walked in CSR (``below`` and ``above`` in place)."""
    _margins_csr(csr_arrays(X), np.int64(X.shape[0]), feature, threshold, left, right, missing_left, below, above)


@numba.njit(cache=True, nogil=True)
def _margins_csr(X, n_rows, feature, threshold, left, right, missing_left, below, above):
    for row in range(n_rows):
        _csr_record_margins(X, row, feature, threshold, left, right, missing_left, below, above)


@numba.njit(cache=True, nogil=True, parallel=True)
def _apply_csr(X, n_rows, feature, threshold, left, right, missing_left, out):
    for row in numba.prange(n_rows):
        out[row] = _csr_find_leaf(X, row, 0, feature, threshold, left, right, missing_left)


def apply_csr(tree, X) -> np.ndarray:
    """Leaf of ``tree`` (a FlatTree) each row of a canonical CSR ``X`` reaches, int32 (n_samples,), not densified."""
    out = np.empty(X.shape[0], np.int32)
    if X.shape[0]:
        _apply_csr(csr_arrays(X), np.int64(X.shape[0]), tree.feature, tree.threshold, tree.left, tree.right,
                   tree.missing_left, out)
    return out


def tree_call(tree, method: str, X) -> np.ndarray:
    """``tree.<method>(X, backend="cpu")`` (``apply``, ``predict``, ``predict_proba``), a sparse ``X`` walked in CSR."""
    if not is_sparse(X):
        return getattr(tree, method)(X, backend="cpu")
    leaves = apply_csr(tree, X)
    if method == "apply":
        return leaves
    counts = tree.value[leaves]
    if method == "predict_proba":
        totals = counts.sum(axis=1, keepdims=True)
        return np.divide(counts, totals, out=np.full_like(counts, 1.0 / counts.shape[1]), where=totals > 0)
    best = np.argmax(counts, axis=1)
    return tree.classes[best] if tree.classes is not None else best


class DenseSamples:
    """A CSR matrix whose row selections ``X[rows]`` come out dense: for the initial trees, grown on samples of
    at most ``init_max_samples`` rows (only the sample is densified)."""

    def __init__(self, X):
        self.X, self.shape = X, X.shape

    def __getitem__(self, rows) -> np.ndarray:
        return self.X[rows].toarray()


def dense_samples(X):
    """``X`` itself when dense, else :class:`DenseSamples` of it."""
    return DenseSamples(X) if is_sparse(X) else X
