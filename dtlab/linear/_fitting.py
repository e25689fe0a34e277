"""Fitting without the estimator: the one-vs-rest binary problems in LIBLINEAR's class order, and TRON run on
each (:func:`fit_linear`, which :mod:`.estimators` calls and :mod:`.dask` mirrors on a cluster)."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse

from ..backend import thread_scope, to_host
from ..distributed.executors import uses_dask
from ._data import check_fit_input, class_weights
from .placement import build_objective
from .tron import tron

SOLVERS = {"tron": "trust_region", "newton": "line_search"}

#: On the CPU a dense X with at most this share of non-zeros is converted to CSR once: the CSR kernels
#: read 12 bytes per non-zero where BLAS reads 8 per entry, and they add in LIBLINEAR's order.
DENSE_TO_CSR_MAX_DENSITY = 0.5


def liblinear_class_order(codes: np.ndarray, n_classes: int) -> np.ndarray:
    """LIBLINEAR's multiclass row order: the rows grouped by class, classes in the order of their first row,
    each group in input order (int64, shape (n_samples,))."""
    first = np.full(n_classes, codes.shape[0], np.int64)
    np.minimum.at(first, codes, np.arange(codes.shape[0]))
    rank = np.empty(n_classes, np.int64)
    rank[np.argsort(first)] = np.arange(n_classes)
    return np.argsort(rank[codes], kind="stable").astype(np.int64)


def binary_problems(codes: np.ndarray, n_classes: int, C: float, weights: np.ndarray):
    """The binary problems LIBLINEAR trains for ``-s 0`` / ``-s 2``: ``(y, (C_+, C_-), row order)`` each.

    Two classes: one problem, +1 for ``classes[1]``, ``C_+ = C w_1``, ``C_- = C w_0``.  More: one against the
    rest per class ``k``, +1 for class ``k``, ``C_+ = C w_k`` and ``C_- = C`` (LIBLINEAR weighs only the
    positive side of a one-vs-rest problem), rows in :func:`liblinear_class_order`.
    """
    if n_classes == 2:
        yield np.where(codes == 1, 1.0, -1.0), (C * weights[1], C * weights[0]), None
        return
    order = liblinear_class_order(codes, n_classes)
    for k in range(n_classes):
        yield np.where(codes == k, 1.0, -1.0), (C * weights[k], C), order


def fit_linear(X: Any, y: Any, *, loss: str, C: float = 1.0, tol: float = 0.1, fit_intercept: bool = True,
               max_iter: int = 1000, solver: str = "tron", backend: Any = "auto", n_jobs: int | None = None,
               placement: str = "auto", device_memory: int | None = None, verbose: bool = False,
               class_weight: Any = None, executor: Any = "local") -> dict:
    """Fit ``min_w 1/2 w.w + sum_i C_i loss(y_i (x_i.w + b))`` the way LIBLINEAR does; the estimators' engine.

    Two classes make one problem; more make one per class against the rest (:func:`binary_problems`), each
    solved by TRON with its own tolerance, as LIBLINEAR's ``train`` does.  ``fit_intercept`` (default True, as
    the estimators) appends a constant feature 1 whose weight ``b`` is regularised with ``w`` (LIBLINEAR's
    ``-B 1``); ``fit_intercept=False`` is LIBLINEAR's default ``-B -1`` (``b = 0``).

    Returns
    -------
    dict with ``classes``, ``coef`` (n_problems, n_features), ``intercept`` (n_problems,), ``results`` (one
    :class:`~dtlab.linear.tron.TronResult` per problem), ``eps`` (the scaled tolerances), ``backend``,
    ``placement`` (a dict, see :func:`~dtlab.linear.placement.build_objective`), ``n_threads``.
    With a Dask ``executor`` the rows stay on the cluster's workers (:mod:`dtlab.linear.dask`).
    """
    if uses_dask(executor, X, y):
        from .dask import fit_on_dask

        if class_weight is not None:
            raise ValueError("class_weight is not supported with a Dask executor (fit in one process, "
                             "executor='local')")
        return fit_on_dask(X, y, executor, loss=loss, C=C, tol=tol, fit_intercept=fit_intercept, max_iter=max_iter,
                           method=SOLVERS[solver], verbose=verbose, backend=backend,
                           csr_density=DENSE_TO_CSR_MAX_DENSITY)
    name = "TronLogisticRegression" if loss == "logistic" else "TronLinearSVC"
    Xh, codes, classes, backend = check_fit_input(X, y, backend, fit_intercept, name)
    weights = class_weights(class_weight, classes, codes)
    if not backend.is_cuda and not scipy.sparse.issparse(Xh) and Xh.size and (
            np.count_nonzero(Xh) <= DENSE_TO_CSR_MAX_DENSITY * Xh.size):
        Xh = scipy.sparse.csr_matrix(Xh)
    n = Xh.shape[0]
    results, eps_used, coef = [], [], []
    with thread_scope(n_jobs, blas=not scipy.sparse.issparse(Xh)) as n_threads:
        for y_pm, costs, order in binary_problems(codes, classes.shape[0], C, weights):
            n_pos = int(np.count_nonzero(y_pm > 0))
            # LIBLINEAR's primal_solver_tol: the gradient test scales with the smaller class' share.
            eps = tol * max(min(n_pos, n - n_pos), 1) / n
            objective, where = build_objective(Xh, y_pm, costs, loss, backend, placement, device_memory, order)
            where["format"] = "csr" if scipy.sparse.issparse(Xh) else "dense"
            result = tron(objective, eps=eps, max_iter=max_iter, method=SOLVERS[solver], verbose=bool(verbose))
            w = np.asarray(to_host(result.w), dtype=np.float64)
            if not np.all(np.isfinite(w)):
                raise FloatingPointError("TRON produced a non-finite model; scale the features or lower C")
            results.append(result)
            eps_used.append(eps)
            coef.append(w)
    coef = np.array(coef)
    coef, intercept = (coef[:, :-1], coef[:, -1].copy()) if fit_intercept else (coef, np.zeros(coef.shape[0]))
    return {"classes": classes, "coef": coef, "intercept": intercept, "results": results, "eps": eps_used,
            "backend": backend.name, "placement": where, "n_threads": n_threads}
