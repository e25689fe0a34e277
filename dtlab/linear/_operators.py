"""Row blocks of the data matrix and the products TRON needs from them.

A *row block* holds some rows of ``X`` (all of them, or the device's or the
host's share in the mixed placement) in one memory and offers:

``matvec(v)``           ``X @ v``                          (n_rows,)
``rmatvec(u)``          ``X_R.T @ u``                      (n_features,)
``hv(coef, s)``         ``X_R.T @ (coef * (X_R @ s))``     (n_features,)
``sq_rmatvec(a, c, i)`` ``i + (X_R ** 2).T @ (a * c)``    (n_features,)
``restrict(rows)``      the block seen through the row subset ``R`` (the L2-SVM active set)

Two implementations:

:class:`ArrayRows`
    the array-module path: ``xp`` products on a dense array or a
    ``scipy.sparse`` / ``cupyx.scipy.sparse`` CSR matrix (cuBLAS and
    cuSPARSE on a GPU).  ``restrict`` forms ``X_I`` in the block's own memory,
    so on a GPU the active set and ``X_I`` never leave the device (the
    paper's TRON-SVM-GPU).
:class:`NumbaCsrRows`
    multithreaded numba kernels over a host CSR matrix (:mod:`._cpu`);
    ``restrict`` keeps an index array and reads ``X_I`` in place.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse

from . import _cpu


def _is_sparse(X: Any) -> bool:
    return scipy.sparse.issparse(X) or type(X).__module__.startswith("cupyx")


class ArrayRows:
    """Rows of X as an ``xp`` array or sparse matrix; products by the array module.

    Parameters
    ----------
    X : ndarray (n_rows, n_features) float64, or CSR matrix of ``xp``'s sparse module
    xp : module, numpy or cupy
    """

    def __init__(self, X: Any, xp: Any):
        self.X = X
        self.xp = xp
        self.n_rows, self.n_features = X.shape
        self._X2 = None

    def matvec(self, v):
        return self.X @ v

    def rmatvec(self, u):
        return self.X.T @ u

    def hv(self, coef, s):
        return self.X.T @ (coef * (self.X @ s))

    def sq_rmatvec(self, scale, coef, init=0.0):
        if self._X2 is None:
            # Squared once per block (per active set for the L2-SVM), not per product.
            X = self.X
            self._X2 = X.multiply(X).tocsr() if _is_sparse(X) else X * X
        return init + self._X2.T @ (scale * coef)

    def restrict(self, rows) -> "ArrayRows":
        """``X_I`` as a new block in the same memory (a row gather of the CSR / dense array)."""
        return ArrayRows(self.X[rows], self.xp)


class NumbaCsrRows:
    """Rows of a host CSR matrix, visited in a given order; products by the numba kernels of :mod:`._cpu`.

    Parameters
    ----------
    X : scipy.sparse CSR matrix (n_rows, n_features), float64
    rows : int64 array or None
        The rows this block is, in the order its per-row vectors use (default: all, in order).
        The estimators pass LIBLINEAR's order (positive rows first), so that a one-thread fit
        adds in LIBLINEAR's order and retraces its iterates exactly.
    """

    xp = np

    def __init__(self, X: scipy.sparse.csr_matrix | None, rows: np.ndarray | None = None, *,
                 _shared: dict | None = None):
        if _shared is None:
            _shared = {"indptr": np.ascontiguousarray(X.indptr, dtype=np.int64),
                       "indices": np.ascontiguousarray(X.indices, dtype=np.int32),
                       "data": np.ascontiguousarray(X.data, dtype=np.float64),
                       "shape": X.shape, "partial": None}
        self._s = _shared
        self.n_features = _shared["shape"][1]
        self.rows = (np.arange(_shared["shape"][0], dtype=np.int64) if rows is None
                     else np.ascontiguousarray(rows, dtype=np.int64))
        self.n_rows = len(self.rows)

    def _out_and_partial(self):
        """Output vector and the per-thread scratch it is reduced from (reused across calls)."""
        out = np.empty(self.n_features)
        n_chunks = max(1, min(numba.get_num_threads(), self.n_rows))
        if n_chunks == 1:
            return out, out.reshape(1, -1)
        p = self._s["partial"]
        if p is None or p.shape[0] != n_chunks:
            p = self._s["partial"] = np.empty((n_chunks, self.n_features))
        return out, p

    def matvec(self, v):
        s = self._s
        out = np.empty(self.n_rows)
        _cpu._csr_matvec(s["indptr"], s["indices"], s["data"], self.rows, np.ascontiguousarray(v), out)
        return out

    def rmatvec(self, u):
        s = self._s
        out, partial = self._out_and_partial()
        _cpu._csr_rmatvec(s["indptr"], s["indices"], s["data"], self.rows, u, partial, out)
        return out

    def hv(self, coef, v):
        s = self._s
        out, partial = self._out_and_partial()
        _cpu._csr_hv(s["indptr"], s["indices"], s["data"], self.rows, coef, np.ascontiguousarray(v), partial, out)
        return out

    def sq_rmatvec(self, scale, coef, init=0.0):
        s = self._s
        out, partial = self._out_and_partial()
        _cpu._csr_sq_rmatvec(s["indptr"], s["indices"], s["data"], self.rows, float(scale), coef, float(init),
                             partial, out)
        return out

    def restrict(self, rows) -> "NumbaCsrRows":
        """The rows at positions ``rows`` of this block (positions in its own order), read in place."""
        return NumbaCsrRows(None, self.rows[np.asarray(rows, dtype=np.int64)], _shared=self._s)
