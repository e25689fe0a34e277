"""scikit-learn estimators for L2-regularised logistic regression and the L2-SVM, trained by TRON."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_verbose
from ..backend import thread_scope
from ._data import check_params, check_predict_input
from ._fitting import SOLVERS, fit_linear


class _TronClassifier(ClassifierMixin, BaseEstimator):
    _loss = ""

    def __init__(self, *, C: float = 1.0, tol: float = 0.1, fit_intercept: bool = True, max_iter: int = 1000,
                 solver: str = "tron", class_weight: Any = None, backend: str = "auto", n_jobs: int | None = None,
                 placement: str = "auto", device_memory: int | None = None, executor: Any = "local",
                 verbose: int = 0):
        self.C = C
        self.tol = tol
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.solver = solver
        self.class_weight = class_weight
        self.backend = backend
        self.n_jobs = n_jobs
        self.placement = placement
        self.device_memory = device_memory
        self.executor = executor
        self.verbose = verbose

    def fit(self, X: Any, y: Any) -> "_TronClassifier":
        """Train on ``X`` and ``y``: one problem for two classes, one per class against the rest for more (as
        LIBLINEAR).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite
            Dense or sparse (CSR is used as is); a cupy array stays on its GPU; a Dask array or DataFrame
            with a Dask ``executor``.
        y : array-like of shape (n_samples,)
            Class labels of any kind, at least two classes.

        Returns
        -------
        self : TronLogisticRegression or TronLinearSVC
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.linear import TronLinearSVC, TronLogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = TronLogisticRegression(backend="cpu").fit(X, y)
        >>> clf.coef_.shape, clf.coef_.dtype
        ((1, 4), dtype('float64'))
        >>> bool(clf.converged_)
        True
        """
        check_params(self, SOLVERS)
        verbose = check_verbose(self.verbose)
        fit = fit_linear(X, y, loss=self._loss, C=float(self.C), tol=float(self.tol),
                         fit_intercept=bool(self.fit_intercept), max_iter=int(self.max_iter), solver=self.solver,
                         backend=self.backend, n_jobs=self.n_jobs, placement=self.placement,
                         device_memory=self.device_memory, verbose=verbose, class_weight=self.class_weight,
                         executor=self.executor)
        results = fit["results"]
        one = len(results) == 1  # two classes: scalars, as before; one-vs-rest: one entry per class

        def per_problem(values, dtype=np.float64):
            return dtype(values[0]) if one else np.asarray(values, dtype=dtype)

        self.classes_ = fit["classes"]
        self.coef_ = np.ascontiguousarray(fit["coef"])
        self.intercept_ = fit["intercept"]
        self.n_features_in_ = self.coef_.shape[1]
        self.n_iter_ = max(int(r.n_iter) for r in results)
        self.n_cg_iter_ = sum(int(r.n_cg) for r in results)
        self.objective_ = per_problem([r.fun for r in results])
        self.grad_norm_ = per_problem([r.grad_norm for r in results])
        histories = [{k: np.asarray(v) for k, v in r.history.items()} for r in results]
        self.history_ = histories[0] if one else histories
        self.converged_ = all(bool(r.converged) for r in results)
        self.backend_ = fit["backend"]
        self.placement_ = fit["placement"]
        self.n_threads_ = fit["n_threads"]
        for k, (res, eps) in enumerate(zip(results, fit["eps"])):
            if not res.converged and res.message == "max_iter reached":
                which = "" if one else f" (class {self.classes_[k]!r} against the rest)"
                warnings.warn(f"TRON did not converge in max_iter={self.max_iter} Newton iterations{which} "
                              f"(|g| = {res.grad_norm:.3g}, target {eps * res.grad_norm0:.3g}); "
                              "raise max_iter or tol", ConvergenceWarning, stacklevel=2)
        return self

    def decision_function(self, X: Any) -> np.ndarray:
        """The decision values ``X @ coef_.T + intercept_``.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite

        Returns
        -------
        decision : ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes), float64
            Two classes: positive means ``classes_[1]``.  More: one column per class against the rest.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.linear import TronLinearSVC, TronLogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> svm = TronLinearSVC(backend="cpu").fit(X, y)
        >>> d = svm.decision_function(X[:5])
        >>> d.shape, d.dtype
        ((5,), dtype('float64'))
        >>> bool(np.array_equal(svm.predict(X[:5]), svm.classes_[(d > 0).astype(int)]))
        True
        """
        Xh = check_predict_input(self, X)
        with thread_scope(self.n_jobs, blas=not scipy.sparse.issparse(Xh)):  # a dense product is BLAS's
            if self.coef_.shape[0] == 1:
                return np.asarray(Xh @ self.coef_[0]).ravel() + self.intercept_[0]
            return np.asarray(Xh @ self.coef_.T) + self.intercept_

    def predict(self, X: Any) -> np.ndarray:
        """Class labels: the sign of the decision value for two classes, the largest one-vs-rest decision value
        otherwise (LIBLINEAR's ``predict``).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels of ``classes_``, of its dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.linear import TronLinearSVC, TronLogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = TronLogisticRegression(backend="cpu").fit(X, y)
        >>> clf.predict(X[:3]).shape
        (3,)
        >>> set(clf.predict(X)) <= {0, 1}
        True
        """
        d = self.decision_function(X)  # first: raises NotFittedError before classes_ is read
        if d.ndim == 1:
            return self.classes_[(d > 0).astype(np.intp)]
        return self.classes_[np.argmax(d, axis=1)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean accuracy of :meth:`predict` on ``X`` against ``y`` (scikit-learn's ``ClassifierMixin.score``).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite
        y : array-like of shape (n_samples,)
            True labels.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the rows in the mean.

        Returns
        -------
        score : float
            Share of rows predicted right, in [0, 1].

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.linear import TronLinearSVC, TronLogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = TronLinearSVC(backend="cpu").fit(X, y)
        >>> 0.9 < clf.score(X, y) <= 1.0
        True
        """
        return float(super().score(X, y, sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = True
        return tags


class TronLogisticRegression(_TronClassifier):
    """L2-regularised logistic regression trained by TRON (LIBLINEAR ``-s 0``), on CPU threads, a GPU or both.

    Minimises ``1/2 (w.w + b^2) + sum_i C_i log(1 + exp(-y_i (x_i.w + b)))`` over ``w``
    and ``b`` (``b = 0`` without ``fit_intercept``), y in {-1, +1} from two labels of any kind;
    with more classes, one such problem per class against the rest (LIBLINEAR's
    one-vs-rest for ``-s 0`` and ``-s 2``: the same weights as LIBLINEAR's).

    Parameters
    ----------
    C : float > 0, default=1.0
        Weight of the loss against the regulariser.
    tol : float > 0, default=0.1
        LIBLINEAR's ``-e``: stop when ``||grad f(w)|| <= tol * max(min(#pos, #neg), 1) / n_samples
        * ||grad f(0)||``.
    fit_intercept : bool, default=True
        Append a constant feature 1 whose weight is the intercept (LIBLINEAR's ``-B 1``); like
        LIBLINEAR's ``-B 1`` and scikit-learn's ``LinearSVC(intercept_scaling=1)``, the intercept is
        regularised (``1/2 (w.w + b^2)``).  LIBLINEAR's own default is ``-B -1``, no intercept: pass
        ``fit_intercept=False`` for its model.
    max_iter : int >= 1, default=1000
        Most accepted Newton steps.
    solver : {"tron", "newton"}, default="tron"
        ``"tron"``: the trust-region Newton method of LIBLINEAR 2.20 - 2.30 (the paper's base);
        ``"newton"``: the line-search Newton method that replaced it in LIBLINEAR 2.40 (what
        ``liblinear-official`` >= 2.40 runs).  Both use the same preconditioned CG and stopping test.
    class_weight : dict {label: weight}, "balanced" or None, default=None
        LIBLINEAR's ``-wi``: ``C_i = C * weight[label_i]``.  Two classes: both sides weighted; one-vs-rest:
        the class's own rows get ``C * weight``, the rest ``C`` (as LIBLINEAR does).  ``"balanced"``:
        ``n_samples / (n_classes * count)``, as scikit-learn.
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
        trust region or line search runs here (Zhuang, Chin, Juan, Lin 2015; :mod:`dtlab.linear.dask`).
        Dask arrays (dense or CSR chunks) and DataFrames need a Dask executor; host data is scattered.
    verbose : int >= 0 or bool, default=0
        Progress reporting, scikit-learn's convention: 0 is silent, True and
        False count as 1 and 0.  From 1, one printed line per Newton iteration,
        as LIBLINEAR prints them.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Sorted labels; with two, ``classes_[1]`` is the positive class (y = +1).
    coef_ : ndarray of shape (1, n_features) for two classes, else (n_classes, n_features), float64
        Row ``k``: class ``k`` against the rest.
    intercept_ : ndarray of shape (1,) or (n_classes,), float64
        0.0 without ``fit_intercept``.
    n_iter_ : int
        Newton iterations (CG solves, rejected trust-region steps included); the most of any one-vs-rest
        problem.
    n_cg_iter_ : int
        Conjugate-gradient iterations (Hessian-vector products) in all.
    objective_ : float, or ndarray of shape (n_classes,) for one-vs-rest
        Final value of the objective (of each problem).
    grad_norm_ : float, or ndarray of shape (n_classes,)
    converged_ : bool
        Every problem converged.
    history_ : dict of str -> ndarray (a list of them, one per class, for one-vs-rest)
        Per iteration (row 0: the start): ``objective``, ``grad_norm``, ``delta`` (trust-region
        radius), ``step_size``, ``cg_iter``, ``accepted``, ``seconds`` and the cumulative seconds of
        the paper's three products ``t_Xw``, ``t_XTu``, ``t_Hv``.
    backend_ : str
    placement_ : dict
        Where the rows were: ``placement`` ("host", "device", "mixed"), ``device_rows``, ``host_rows``,
        and ``format`` ("csr" or "dense"; on the CPU a dense X that is at most half non-zeros is
        converted to CSR, see :data:`._fitting.DENSE_TO_CSR_MAX_DENSITY`).
    n_threads_ : int

    Notes
    -----
    The names are scikit-learn's (``LogisticRegression``, ``LinearSVC``) with
    LIBLINEAR's meanings (``C`` is ``-c``, ``tol`` is ``-e``, ``fit_intercept``
    is ``-B 1``, ``class_weight`` is ``-wi``, ``max_iter`` bounds the Newton
    iterations as scikit-learn's does for LIBLINEAR) and scikit-learn's default
    ``fit_intercept=True``; ``fit_intercept=False`` is LIBLINEAR's default
    ``-B -1``, the model through the origin.  Not accepted, because
    nothing here could differ: ``penalty`` (always ``"l2"``), ``loss`` and
    ``dual`` (the loss is the class's, solved in the primal as ``dual=False``),
    ``multi_class`` (always one-vs-rest), ``intercept_scaling`` (the constant
    feature is 1, as ``-B 1``) and ``random_state`` (TRON draws nothing).
    scikit-learn's ``solver`` values (``"lbfgs"``, ``"liblinear"``, ...) name
    other algorithms, or another LIBLINEAR version, so none is an alias of
    ``"tron"`` or ``"newton"``.

    Halloran and Rocke, "GPU-accelerated primal learning for extremely fast large-scale
    classification" (NeurIPS 2020); Lin, Weng and Keerthi, "Trust region Newton method for
    large-scale logistic regression" (JMLR 2008).
    """

    _loss = "logistic"

    def predict_proba(self, X: Any) -> np.ndarray:
        """Probabilities of ``classes_``: the logistic function of the decision value for two classes; for
        one-vs-rest each class's logistic value, normalised to sum 1 (LIBLINEAR's ``predict_probability``).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float64
            Columns in the order of ``classes_``; each row sums to 1.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.linear import TronLogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = TronLogisticRegression(backend="cpu").fit(X, y)
        >>> proba = clf.predict_proba(X[:5])
        >>> proba.shape, proba.dtype
        ((5, 2), dtype('float64'))
        >>> bool(np.allclose(proba.sum(axis=1), 1.0))
        True
        """
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """Log of :meth:`predict_proba`, computed without underflow.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes), float64
            Columns in the order of ``classes_``; every value <= 0.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.linear import TronLogisticRegression
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = TronLogisticRegression(backend="cpu").fit(X, y)
        >>> log_proba = clf.predict_log_proba(X[:5])
        >>> log_proba.shape, log_proba.dtype
        ((5, 2), dtype('float64'))
        >>> bool(np.allclose(np.exp(log_proba), clf.predict_proba(X[:5])))
        True
        """
        d = self.decision_function(X)
        if d.ndim == 1:
            return np.column_stack([-np.logaddexp(0.0, d), -np.logaddexp(0.0, -d)])
        log_p = -np.logaddexp(0.0, -d)  # log sigma(d) of each class
        return log_p - np.logaddexp.reduce(log_p, axis=1, keepdims=True)


class TronLinearSVC(_TronClassifier):
    """L2-regularised L2-loss (squared hinge) linear SVM trained by TRON (LIBLINEAR ``-s 2``).

    Minimises ``1/2 (w.w + b^2) + C sum_i max(0, 1 - y_i (x_i.w + b))^2`` (``b = 0``
    without ``fit_intercept``).  Each Newton iteration recomputes the active set
    ``I = {i : 1 - y_i (x_i.w + b) > 0}``; the gradient and Hessian-vector products
    use ``X_I`` only (on a GPU, ``I`` and ``X_I`` are formed on the device).

    Parameters and attributes are those of :class:`TronLogisticRegression`
    (no ``predict_proba``), and so are its Notes on scikit-learn's names.
    """

    _loss = "squared_hinge"
