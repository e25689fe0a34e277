"""Row blocks of the data matrix and the products TRON needs from them.

A *row block* holds some rows of ``X`` (all of them, or the device's or the
host's share in the mixed placement) in one memory and offers:

``matvec(v)``           ``X @ v``                          (n_rows,)
``rmatvec(u)``          ``X_R.T @ u``                      (n_features,)
``hv(coef, s)``         ``X_R.T @ (coef * (X_R @ s))``     (n_features,)
``sq_rmatvec(a, c, i)`` ``i + (X_R ** 2).T @ (a * c)``    (n_features,)
``rmatvec_sq(u, a, c, i)`` both of the above, in one pass where the block can
``restrict(rows)``      the block seen through the row subset ``R`` (the L2-SVM active set)

Two implementations:

:class:`ArrayRows`
    the array-module path: ``xp`` products on a dense array or a
    ``scipy.sparse`` / ``cupyx.scipy.sparse`` CSR matrix (cuBLAS and
    cuSPARSE on a GPU).  ``restrict`` forms ``X_I`` in the block's own memory,
    so on a GPU the active set and ``X_I`` never leave the device (the
    paper's TRON-SVM-GPU).
:class:`NumbaCsrRows`
    multithreaded numba kernels over a host CSR matrix (:mod:`._products_cpu`);
    ``restrict`` keeps an index array and reads ``X_I`` in place.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import scipy.sparse

from . import _products_cpu


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
            # Squared once per block (per active set for the L2-SVM), not per product; squaring the
            # stored values is X * X for a canonical CSR matrix, in scipy and cupyx alike.
            X = self.X
            if _is_sparse(X):
                self._X2 = X.copy()
                self._X2.data *= self._X2.data
            else:
                self._X2 = X * X
        return init + self._X2.T @ (scale * coef)

    def rmatvec_sq(self, u, scale, coef, init=0.0):
        """``(rmatvec(u), sq_rmatvec(scale, coef, init))``."""
        return self.rmatvec(u), self.sq_rmatvec(scale, coef, init)

    def restrict(self, rows) -> "ArrayRows":
        """``X_I`` as a new block in the same memory (a row gather of the CSR / dense array)."""
        return ArrayRows(self.X[rows], self.xp)


_ALL_ROWS = np.empty(0, dtype=np.int64)


def csr_arrays(X: scipy.sparse.csr_matrix, order: np.ndarray | None = None) -> dict:
    """The kernels' arrays of ``X`` (uint64 row pointers, uint32 indices, float64 values), rows in ``order``.

    A row order is applied by copying the rows (in parallel), so that the
    products stream through memory instead of jumping between the rows of
    the two classes.  A binary ``X`` (every stored value 1.0) gets an empty
    ``data``: the kernels then read no values (:mod:`._products_cpu`).
    """
    binary = bool(np.all(X.data == 1.0))
    if order is None or np.array_equal(order, np.arange(len(order))):
        indptr = np.ascontiguousarray(X.indptr, dtype=np.uint64)
        indices = np.ascontiguousarray(X.indices, dtype=np.uint32)
        data = np.empty(0) if binary else np.ascontiguousarray(X.data, dtype=np.float64)
    else:
        lengths = np.diff(X.indptr)[order]
        indptr = np.zeros(len(order) + 1, dtype=np.uint64)
        np.cumsum(lengths, out=indptr[1:])
        indices, data = np.empty(X.nnz, dtype=np.uint32), np.empty(0 if binary else X.nnz)
        _products_cpu.kernels(X.nnz)["_csr_take_rows"](X.indptr, X.indices, X.data,
                                                       np.ascontiguousarray(order, np.int64), indptr, indices, data)
    return {"indptr": indptr, "indices": indices, "data": data, "shape": X.shape, "partial": None}


class NumbaCsrRows:
    """Rows of a host CSR matrix; products by the numba kernels of :mod:`._products_cpu`.

    Parameters
    ----------
    X : scipy.sparse CSR matrix (n_rows, n_features), float64
    order : int array or None
        Row order of this block's per-row vectors (default: as in X).  The
        estimators pass LIBLINEAR's order (positive rows first), so that a
        one-thread fit adds in LIBLINEAR's order and retraces its iterates
        exactly.
    """

    xp = np

    def __init__(self, X: scipy.sparse.csr_matrix | None, order: np.ndarray | None = None, *,
                 _shared: dict | None = None, _rows: np.ndarray | None = None):
        self._s = csr_arrays(X, order) if _shared is None else _shared
        self.n_features = self._s["shape"][1]
        indptr = self._s["indptr"]
        if _rows is None:  # all rows, in order: the kernels skip the indirection for an empty index array
            self.rows, self.n_rows, self.nnz = _ALL_ROWS, self._s["shape"][0], int(indptr[-1])
        else:
            self.rows, self.n_rows = _rows, len(_rows)
            self.nnz = int((indptr[_rows + 1] - indptr[_rows]).sum())

    def _kernels(self, slot: str = "partial", out=None):
        """Kernels for this block's size, the output vector (``out``, or a new one) and the per-chunk scratch it
        is reduced from."""
        k = _products_cpu.kernels(self.nnz)
        out = np.empty(self.n_features) if out is None else out
        n_chunks = max(1, min(numba.get_num_threads(), self.n_rows)) if k is _products_cpu.PARALLEL else 1
        if n_chunks == 1:
            return k, out, out.reshape(1, -1)
        p = self._s.get(slot)
        if p is None or p.shape[0] != n_chunks:
            p = self._s[slot] = np.empty((n_chunks, self.n_features))
        return k, out, p

    def matvec(self, v):
        s = self._s
        out = np.empty(self.n_rows)
        _products_cpu.kernels(self.nnz)["_csr_matvec"](s["indptr"], s["indices"], s["data"], self.rows,
                                             np.ascontiguousarray(v), out)
        return out

    def rmatvec(self, u):
        s = self._s
        k, out, partial = self._kernels()
        k["_csr_rmatvec"](s["indptr"], s["indices"], s["data"], self.rows, u, partial, out)
        return out

    def hv(self, coef, v, out=None):
        s = self._s
        k, out, partial = self._kernels(out=out)
        k["_csr_hv"](s["indptr"], s["indices"], s["data"], self.rows, coef, np.ascontiguousarray(v), partial, out)
        return out

    def sq_rmatvec(self, scale, coef, init=0.0):
        s = self._s
        k, out, partial = self._kernels()
        k["_csr_sq_rmatvec"](s["indptr"], s["indices"], s["data"], self.rows, float(scale), coef, float(init),
                             partial, out)
        return out

    def rmatvec_sq(self, u, scale, coef, init=0.0, out=None, out2=None):
        """``(rmatvec(u), sq_rmatvec(scale, coef, init))`` in one pass over the rows (into ``out``, ``out2``
        when given)."""
        s = self._s
        k, out, partial = self._kernels(out=out)
        _, out2, partial2 = self._kernels("partial2", out2)
        k["_csr_rmatvec_sq"](s["indptr"], s["indices"], s["data"], self.rows, u, float(scale), coef, float(init),
                             partial, out, partial2, out2)
        return out, out2

    def restrict(self, positions) -> "NumbaCsrRows":
        """The rows at ``positions`` of this block (in its own order), read in place (no copy of X_I)."""
        positions = np.asarray(positions, dtype=np.int64)
        return NumbaCsrRows(None, _shared=self._s, _rows=positions if self.rows is _ALL_ROWS else self.rows[positions])
