"""scikit-learn estimators for L2-regularised logistic regression and the L2-SVM, trained by TRON."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from ..backend import thread_scope, to_host
from ..distributed.executors import uses_dask
from ._data import check_fit_input, check_params, check_predict_input
from .placement import build_objective
from .tron import tron

SOLVERS = {"tron": "trust_region", "newton": "line_search"}

#: On the CPU a dense X with at most this share of non-zeros is converted to CSR once: the CSR kernels
#: read 12 bytes per non-zero where BLAS reads 8 per entry, and they add in LIBLINEAR's order.
DENSE_TO_CSR_MAX_DENSITY = 0.5


def fit_linear(X: Any, y: Any, *, loss: str, C: float = 1.0, tol: float = 0.1, fit_intercept: bool = False,
               max_iter: int = 1000, solver: str = "tron", backend: Any = "auto", n_jobs: int | None = None,
               placement: str = "auto", device_memory: int | None = None, verbose: bool = False,
               executor: Any = "local") -> dict:
    """Fit ``min_w 1/2 w.w + C sum_i loss(y_i (x_i.w + b))`` the way LIBLINEAR does; the estimators' engine.

    Returns
    -------
    dict with ``classes``, ``coef`` (n_features,), ``intercept`` (float), ``result``
    (:class:`~dtlab.linear.tron.TronResult`), ``eps`` (the scaled tolerance), ``backend``,
    ``placement`` (a dict, see :func:`~dtlab.linear.placement.build_objective`), ``n_threads``.
    With a Dask ``executor`` the rows stay on the cluster's workers (:mod:`dtlab.linear.dask_fit`).
    """
    if uses_dask(executor, X, y):
        from .dask_fit import fit_on_dask

        return fit_on_dask(X, y, executor, loss=loss, C=C, tol=tol, fit_intercept=fit_intercept, max_iter=max_iter,
                           method=SOLVERS[solver], verbose=verbose, backend=backend,
                           csr_density=DENSE_TO_CSR_MAX_DENSITY)
    name = "TronLogisticRegression" if loss == "logistic" else "TronLinearSVC"
    Xh, y_pm, classes, backend = check_fit_input(X, y, backend, fit_intercept, name)
    if not backend.is_cuda and not scipy.sparse.issparse(Xh) and Xh.size and (
            np.count_nonzero(Xh) <= DENSE_TO_CSR_MAX_DENSITY * Xh.size):
        Xh = scipy.sparse.csr_matrix(Xh)
    n = Xh.shape[0]
    n_pos = int(np.count_nonzero(y_pm > 0))
    # LIBLINEAR's primal_solver_tol: the gradient test scales with the smaller class' share.
    eps = tol * max(min(n_pos, n - n_pos), 1) / n
    with thread_scope(n_jobs, blas=not scipy.sparse.issparse(Xh)) as n_threads:
        objective, where = build_objective(Xh, y_pm, C, loss, backend, placement, device_memory)
        where["format"] = "csr" if scipy.sparse.issparse(Xh) else "dense"
        result = tron(objective, eps=eps, max_iter=max_iter, method=SOLVERS[solver], verbose=bool(verbose))
    w = np.asarray(to_host(result.w), dtype=np.float64)
    if not np.all(np.isfinite(w)):
        raise FloatingPointError("TRON produced a non-finite model; scale the features or lower C")
    coef, intercept = (w[:-1], float(w[-1])) if fit_intercept else (w, 0.0)
    return {"classes": classes, "coef": coef, "intercept": intercept, "result": result, "eps": eps,
            "backend": backend.name, "placement": where, "n_threads": n_threads}


class _TronClassifier(ClassifierMixin, BaseEstimator):
    _loss = ""

    def __init__(self, *, C: float = 1.0, tol: float = 0.1, fit_intercept: bool = False, max_iter: int = 1000,
                 solver: str = "tron", backend: str = "auto", n_jobs: int | None = None, placement: str = "auto",
                 device_memory: int | None = None, executor: Any = "local", verbose: int = 0):
        self.C = C
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.solver = solver
        self.backend = backend
        self.n_jobs = n_jobs
        self.placement = placement
        self.device_memory = device_memory
        self.executor = executor
        self.verbose = verbose

    def fit(self, X: Any, y: Any) -> "_TronClassifier":
        """Train on ``X`` (dense or sparse, shape (n_samples, n_features)) and labels ``y`` of two values.

        Returns
        -------
        self
        """
        check_params(self, SOLVERS)
        fit = fit_linear(X, y, loss=self._loss, C=float(self.C), tol=float(self.tol),
                         fit_intercept=bool(self.fit_intercept), max_iter=int(self.max_iter), solver=self.solver,
                         backend=self.backend, n_jobs=self.n_jobs, placement=self.placement,
                         device_memory=self.device_memory, verbose=self.verbose, executor=self.executor)
        res = fit["result"]
        self.classes_ = fit["classes"]
        self.coef_ = fit["coef"].reshape(1, -1)
        self.intercept_ = np.array([fit["intercept"]])
        self.n_features_in_ = self.coef_.shape[1]
        self.n_iter_ = int(res.n_iter)
        self.n_cg_iter_ = int(res.n_cg)
        self.objective_ = float(res.fun)
        self.grad_norm_ = float(res.grad_norm)
        self.history_ = {k: np.asarray(v) for k, v in res.history.items()}
        self.converged_ = bool(res.converged)
        self.backend_ = fit["backend"]
        self.placement_ = fit["placement"]
        self.n_threads_ = fit["n_threads"]
        if not res.converged and res.message == "max_iter reached":
            warnings.warn(f"TRON did not converge in max_iter={self.max_iter} Newton iterations "
                          f"(|g| = {res.grad_norm:.3g}, target {fit['eps'] * res.grad_norm0:.3g}); "
                          "raise max_iter or tol", ConvergenceWarning, stacklevel=2)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """``X @ coef_ + intercept_``, shape (n_samples,), float64; positive means ``classes_[1]``."""
        Xh = check_predict_input(self, X)
        with thread_scope(self.n_jobs, blas=not scipy.sparse.issparse(Xh)):  # a dense product is BLAS's
            return np.asarray(Xh @ self.coef_[0]).ravel() + self.intercept_[0]

    def predict(self, X: Any) -> np.ndarray:
        """Class labels, shape (n_samples,), of ``classes_``'s dtype."""
        positive = self.decision_function(X) > 0  # first: raises NotFittedError before classes_ is read
        return self.classes_[positive.astype(np.intp)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags


class TronLogisticRegression(_TronClassifier):
    """L2-regularised logistic regression trained by TRON (LIBLINEAR ``-s 0``), on CPU threads, a GPU or both.

    Minimises ``1/2 w.w + C sum_i log(1 + exp(-y_i (x_i.w + b)))`` over ``w``
    (and ``b`` with ``fit_intercept``), y in {-1, +1} from two labels of any kind.

    Parameters
    ----------
    C : float > 0, default=1.0
        Weight of the loss against the regulariser.
    tol : float > 0, default=0.1
        LIBLINEAR's ``-e``: stop when ``||grad f(w)|| <= tol * max(min(#pos, #neg), 1) / n_samples
        * ||grad f(0)||``.
    fit_intercept : bool, default=False
        Append a constant feature 1 whose weight is the intercept (LIBLINEAR's ``-B 1``); like
        LIBLINEAR, the intercept is regularised.
    max_iter : int >= 1, default=1000
        Most accepted Newton steps.
    solver : {"tron", "newton"}, default="tron"
        ``"tron"``: the trust-region Newton method of LIBLINEAR 2.20 - 2.30 (the paper's base);
        ``"newton"``: the line-search Newton method that replaced it in LIBLINEAR 2.40 (what
        ``liblinear-official`` >= 2.40 runs).  Both use the same preconditioned CG and stopping test.
    backend : {"auto", "cpu", "cuda"}, default="auto"
        Where the work runs; ``"auto"`` is the GPU when one (and cupy) is present.
    n_jobs : int or None, default=None
        CPU threads of fit and predict: numba's for the sparse products, BLAS's for dense ones
        (:func:`dtlab.backend.resolve_threads`: ``None``, numba's current thread count; -1, all of numba's
        threads).
    placement : {"auto", "device", "mixed"}, default="auto"
        With ``backend="cuda"``: all rows on the GPU, or the rows that fit on the GPU and the rest
        on CPU threads (the paper's MIX); ``"auto"`` chooses mixed only when the data do not fit,
        with a warning.  Must stay ``"auto"`` with the CPU backend.
    device_memory : int or None, default=None
        Bytes of GPU memory the fit may use (default: what is free).
    executor : "local", "dask", scheduler address or distributed.Client, default="local"
        Who runs the fit (GDT's selector): this process, or the workers of a Dask cluster -- ``"dask"`` for
        the session's default client, an address, or a client -- each keeping a partition of the rows for
        the whole fit; f, the gradient and every Hessian-vector product are summed over the workers, the
        trust region or line search runs here (Zhuang, Chin, Juan, Lin 2015; :mod:`dtlab.linear.dask_fit`).
        Dask arrays (dense or CSR chunks) and DataFrames need a Dask executor; host data is scattered.
    verbose : int, default=0
        Print one line per Newton iteration, as LIBLINEAR does.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        Sorted labels; ``classes_[1]`` is the positive class (y = +1).
    coef_ : ndarray of shape (1, n_features), float64
    intercept_ : ndarray of shape (1,), float64
        0.0 without ``fit_intercept``.
    n_iter_ : int
        Newton iterations (CG solves, rejected trust-region steps included).
    n_cg_iter_ : int
        Conjugate-gradient iterations (Hessian-vector products) in all.
    objective_ : float
        Final value of the objective.
    grad_norm_ : float
    converged_ : bool
    history_ : dict of str -> ndarray
        Per iteration (row 0: the start): ``objective``, ``grad_norm``, ``delta`` (trust-region
        radius), ``step_size``, ``cg_iter``, ``accepted``, ``seconds`` and the cumulative seconds of
        the paper's three products ``t_Xw``, ``t_XTu``, ``t_Hv``.
    backend_ : str
    placement_ : dict
        Where the rows were: ``placement`` ("host", "device", "mixed"), ``device_rows``, ``host_rows``,
        and ``format`` ("csr" or "dense"; on the CPU a dense X that is at most half non-zeros is
        converted to CSR, see :data:`DENSE_TO_CSR_MAX_DENSITY`).
    n_threads_ : int

    Notes
    -----
    Halloran and Rocke, "GPU-accelerated primal learning for extremely fast large-scale
    classification" (NeurIPS 2020); Lin, Weng and Keerthi, "Trust region Newton method for
    large-scale logistic regression" (JMLR 2008).
    """

    _loss = "logistic"

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities of ``classes_``, shape (n_samples, 2), float64."""
        d = self.decision_function(X)
        p = np.empty_like(d)
        pos = d >= 0
        p[pos] = 1.0 / (1.0 + np.exp(-d[pos]))
        e = np.exp(d[~pos])
        p[~pos] = e / (1.0 + e)
        return np.column_stack([1.0 - p, p])

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log of :meth:`predict_proba`, computed without underflow, shape (n_samples, 2)."""
        d = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0.0, d), -np.logaddexp(0.0, -d)])


class TronLinearSVC(_TronClassifier):
    """L2-regularised L2-loss (squared hinge) linear SVM trained by TRON (LIBLINEAR ``-s 2``).

    Minimises ``1/2 w.w + C sum_i max(0, 1 - y_i (x_i.w + b))^2``.  Each Newton
    iteration recomputes the active set ``I = {i : 1 - y_i x_i.w > 0}``; the
    gradient and Hessian-vector products use ``X_I`` only (on a GPU, ``I`` and
    ``X_I`` are formed on the device).

    Parameters and attributes are those of :class:`TronLogisticRegression`
    (no ``predict_proba``).
    """

    _loss = "squared_hinge"
