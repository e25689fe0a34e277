"""Where the rows of X live during a fit: the host, the GPU, or both (the paper's MIX).

``backend="cpu"``
    one host block; a CSR matrix gets the multithreaded numba kernels, a
    dense array numpy's BLAS.
``backend="cuda"``, ``placement="device"``
    one device block: X, y and every per-row vector on the GPU, products by
    cuSPARSE / cuBLAS through cupy; the solver's vectors on the GPU too.
``backend="cuda"``, ``placement="mixed"``
    the first rows that fit in ``device_memory`` on the GPU, the rest on the
    host with the numba kernels; each product is computed by both and the two
    ``n_features`` partial results are added on the host (the solver's
    vectors live there).  The GPU's kernels are launched asynchronously first,
    so the two shares are computed at the same time.
``placement="auto"``
    ``"device"`` when the data fit in the GPU's free memory, else
    ``"mixed"``, with a warning saying so.

Under numba's CUDA simulator the ``cuda`` backend's array module is numpy, so
the device block runs the array-module code path on the host: that is how the
GPU code path is tested without a GPU.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse

from ..backend import Backend
from ._row_blocks import ArrayRows, NumbaCsrRows
from .losses import LOSSES, L2Objective

PLACEMENTS = ("auto", "device", "mixed")

#: Bytes per non-zero a device block may need: data + int32 index, their squares for the
#: preconditioner, and for the L2-SVM the gathered X_I and its squares (worst case: every row active).
_NNZ_BYTES = {"logistic": 24, "squared_hinge": 48}
#: Bytes per row: row pointer and the per-row vectors (y, z, X s, gradient and Hessian weights, temporaries).
_ROW_BYTES = 8 + 10 * 8


def device_bytes(X: Any, loss: str, n_rows: int | None = None) -> int:
    """Device memory a fit on the first ``n_rows`` rows of ``X`` needs (an estimate with some headroom)."""
    n = X.shape[0] if n_rows is None else n_rows
    if scipy.sparse.issparse(X):
        per_value = X.indptr[n] * _NNZ_BYTES[loss]
    else:
        per_value = n * X.shape[1] * _NNZ_BYTES[loss] * 2 // 3  # dense: no index arrays
    return int(per_value + n * _ROW_BYTES + 16 * 8 * X.shape[1])


def _size(n_bytes: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.2f} {unit}"
    return f"{n_bytes} bytes"


def rows_that_fit(X: Any, loss: str, budget: int) -> int:
    """Largest ``k`` with ``device_bytes(X, loss, k) <= budget``."""
    lo, hi = 0, X.shape[0]
    while lo < hi:  # device_bytes grows with k: binary search
        mid = (lo + hi + 1) // 2
        if device_bytes(X, loss, mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def liblinear_order(y: np.ndarray) -> np.ndarray:
    """LIBLINEAR's row order for labels ±1: the positive rows, then the negative ones, each in input order."""
    return np.concatenate([np.flatnonzero(y > 0), np.flatnonzero(y <= 0)]).astype(np.int64)


def class_costs(C: float | tuple[float, float]) -> tuple[float, float]:
    """``(C_+, C_-)``: the loss weight of the rows with y = +1 and of those with y = -1 (LIBLINEAR's ``Cp``,
    ``Cn``; one float gives both)."""
    if isinstance(C, tuple):
        return float(C[0]), float(C[1])
    return float(C), float(C)


def _row_sets(y: np.ndarray, C: float | tuple[float, float], order: np.ndarray | None):
    """The row blocks of one memory and their C: ``[(rows or None, C)]``.

    With one C for both classes, one block (rows ``order``, or None: LIBLINEAR's order for CSR, as given for
    dense); with LIBLINEAR's ``-wi`` weights (``C_+ != C_-``), the positive rows, then the negative ones, each
    in ``order``: the kernels take one C per block, and LIBLINEAR's order puts the positive rows first.
    """
    c_pos, c_neg = class_costs(C)
    if c_pos == c_neg:
        return [(order, c_pos)]
    order = liblinear_order(y) if order is None else order
    positive = y[order] > 0
    return [(rows, c) for rows, c in ((order[positive], c_pos), (order[~positive], c_neg)) if rows.shape[0]]


#: Mean stored entries per row from which a fit reads CSR rows through LIBLINEAR's order instead of copying them
#: into it.  Reading through the order costs a jump per row in every product, the copy once per entry: on the
#: RCV1 subset (78 per row, 1,000 rows) the copy took 0.19 ms of a 2.9 ms fit and the jumps 0-4 us a product;
#: on a9a (14 per row) and w8a (12) each product was 0.06-0.16 ms slower through the order, more than the copy
#: over a fit's 20-40 products.
READ_THROUGH_ORDER_MIN_ROW_NNZ = 48


def _host_parts(make_loss, X: Any, y: np.ndarray, C, order: np.ndarray | None = None) -> list:
    """Host blocks and their losses: CSR rows in LIBLINEAR's order (or ``order``) for the numba kernels, dense
    rows for BLAS."""
    parts = []
    sparse = scipy.sparse.issparse(X)
    for rows, c in _row_sets(y, C, order if sparse else None):  # BLAS's sums have their own order: no copy
        if sparse:
            rows = liblinear_order(y) if rows is None else rows
            if rows.shape[0] == X.shape[0] and X.nnz >= READ_THROUGH_ORDER_MIN_ROW_NNZ * X.shape[0]:
                # a permutation of long rows: read in place through the order, the same sums
                parts.append(make_loss(NumbaCsrRows(X).restrict(rows), np.ascontiguousarray(y[rows]), c))
            elif rows.shape[0] == X.shape[0]:  # a permutation of short rows: the block copies them in order
                parts.append(make_loss(NumbaCsrRows(X, rows), np.ascontiguousarray(y[rows]), c))
            else:  # one class's rows: their own matrix
                parts.append(make_loss(NumbaCsrRows(X[rows]), np.ascontiguousarray(y[rows]), c))
        elif rows is None:
            parts.append(make_loss(ArrayRows(X, np), y, c))
        else:
            parts.append(make_loss(ArrayRows(np.ascontiguousarray(X[rows]), np), y[rows], c))
    return parts


def _device_parts(make_loss, X: Any, y: np.ndarray, C, backend: Backend) -> list:
    """Device blocks and their losses (one per class when the classes' C differ)."""
    xp = backend.xp
    return [make_loss(ArrayRows(backend.to_device(X if rows is None else X[rows]), xp),
                      xp.asarray(y if rows is None else y[rows]), c) for rows, c in _row_sets(y, C, None)]


def build_objective(X: Any, y: np.ndarray, C: float | tuple[float, float], loss: str, backend: Backend,
                    placement: str = "auto", device_memory: int | None = None,
                    order: np.ndarray | None = None) -> tuple[L2Objective, dict]:
    """The objective of a fit, its rows placed on the host, the device or both.

    Parameters
    ----------
    X : scipy.sparse CSR matrix or ndarray of shape (n_samples, n_features), float64, on the host
    y : ndarray of shape (n_samples,), float64 in {-1, +1}
    C : float > 0, or (C_+, C_-)
        The loss weight, or one per class (LIBLINEAR's ``-wi``: ``C_+`` for the rows with y = +1); with two
        different values each memory holds one block per class.
    loss : {"logistic", "squared_hinge"}
    backend : Backend
    placement : {"auto", "device", "mixed"}
        Only for the cuda backend (see the module docstring).
    device_memory : int, optional
        Bytes the device may use; default: the GPU's free memory (unlimited under the simulator).
        A small value forces the mixed split (tests do this).
    order : int array (n_samples,), optional
        Row order of the host's CSR blocks (default: LIBLINEAR's binary order, the positive rows first);
        one-vs-rest passes LIBLINEAR's multiclass order (the rows grouped by class).

    Returns
    -------
    objective : L2Objective
    info : dict
        ``placement`` ("host", "device" or "mixed"), ``device_rows``, ``host_rows``,
        ``device_bytes_needed``, ``device_bytes_budget``.
    """
    make_loss = LOSSES[loss]
    n = X.shape[0]
    if not backend.is_cuda:
        if placement != "auto":
            raise ValueError(f"placement={placement!r} applies to backend='cuda' only; with backend="
                             f"'{backend.name}' every row is on the host (use placement='auto')")
        return L2Objective(_host_parts(make_loss, X, y, C, order), np), {"placement": "host", "device_rows": 0,
                                                                        "host_rows": n}
    need = device_bytes(X, loss)
    budget = backend.free_bytes() if device_memory is None else int(device_memory)
    fits = budget is None or need <= budget
    info = {"device_bytes_needed": need, "device_bytes_budget": budget}
    if placement == "device" and not fits:
        raise MemoryError(f"the data need about {_size(need)} on the GPU but only {_size(budget)} are available; "
                          "use placement='mixed' (GPU and CPU threads share the rows) or backend='cpu'")
    if placement == "device" or (placement == "auto" and fits):
        parts = _device_parts(make_loss, X, y, C, backend)
        return L2Objective(parts, backend.xp), {**info, "placement": "device", "device_rows": n, "host_rows": 0}
    k = n if budget is None else rows_that_fit(X, loss, budget)
    if placement == "auto":
        warnings.warn(f"the data need about {_size(need)} on the GPU but only {_size(budget)} are available: "
                      f"using the mixed placement, {k:,} of {n:,} rows on the GPU and the rest on CPU threads",
                      UserWarning, stacklevel=3)
    parts = []
    if k > 0:
        parts += _device_parts(make_loss, X[:k], y[:k], C, backend)
    if k < n:
        parts += _host_parts(make_loss, X[k:], y[k:], C)
    return L2Objective(parts, np), {**info, "placement": "mixed", "device_rows": k, "host_rows": n - k}
