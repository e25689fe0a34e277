"""Variance-reduction regression tree (the "SIMD decision tree" project's learner)."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin

from .._validation import check_sample_weight, fit_target
from ..backend import resolve_backend, thread_scope
from ._node_rules import METHODS
from ._params import FittedTreeMixin, check_choice, check_tree_params, fit_features, has_missing
from .builder import build_greedy_tree


class DecisionTreeRegressor(FittedTreeMixin, RegressorMixin, BaseEstimator):
    """Regression tree grown greedily by largest reduction of the squared error.

    The learner of the "SIMD decision tree" university project (a C
    implementation trained on the Kaggle diabetes prediction data to predict
    age), here with three interchangeable split searches and scikit-learn's
    exact split rules, so that it grows the same tree as
    :class:`sklearn.tree.DecisionTreeRegressor` with the same parameters and
    ``random_state``, up to the choice between splits of exactly equal gain
    (decided by floating-point summation order; see
    :func:`workbench.greedy.compare.tie_report`).

    Parameters
    ----------
    max_depth : int >= 0 or None, default=None
        ``None`` grows until leaves are pure or cannot be split; ``0`` gives a
        single leaf.
    min_samples_split : int >= 2, default=2
        A node with fewer rows is a leaf.
    min_samples_leaf : int >= 1, default=1
        Each child of a split keeps at least this many rows.
    method : {"naive", "incremental", "vectorized"}, default="vectorized"
        ``"naive"`` recomputes both sides' sums for every candidate threshold
        (O(n^2) per feature and node: for teaching and small data);
        ``"incremental"`` sorts each node and moves one row at a time, updating
        the running sums of y and y^2 (O(n log n)); ``"vectorized"`` presorts
        once and evaluates all candidates of a node from prefix sums, numba
        compiled, parallel over features on large nodes.  All three grow the
        same tree.
    random_state : int, RandomState or None, default=None
        Order in which features are tried; it decides between splits of equal
        gain exactly as scikit-learn's ``random_state`` does.
    backend : {"auto", "cpu", "cuda"}, default="auto"
        Where the tree grows (:func:`dtlab.backend.resolve_backend`): ``"cuda"``
        runs the vectorised search as numba.cuda kernels (grown node by node
        from the host; X without missing values); ``"auto"``, a GPU when X is
        already on one or a GPU is present and ``method="vectorized"`` (the
        other methods run on the CPU) and X has no missing value, else the CPU.
    n_jobs : int or None, default=None
        Threads of fit and predict (:func:`dtlab.backend.resolve_threads`:
        ``None``, numba's current thread count; -1, all of numba's threads).

    There is no ``criterion``: the only one is the squared error (scikit-learn's
    default ``criterion="squared_error"``; its other criteria are not
    implemented).  ``method`` names no scikit-learn parameter (``splitter``
    chooses between best and random splits, not how the best is found: here it
    is always ``"best"``, over every feature, ``max_features=None``).  There is
    no ``verbose``: a tree fit has no progress to report (as in scikit-learn).

    Attributes
    ----------
    tree_ : FlatTree
        The fitted tree (``task="regression"``, ``value`` of shape (n_nodes, 1)),
        nodes in scikit-learn's depth-first order.
    node_impurity_ : ndarray of shape (n_nodes,), float64
        Mean squared error of the training rows at each node.
    node_n_samples_ : ndarray of shape (n_nodes,), int64
        Training rows of each node (rows of weight 0 not counted).
    node_weighted_n_samples_ : ndarray of shape (n_nodes,), float64
        Their total ``sample_weight`` (``node_n_samples_`` without weights).
    feature_importances_ : ndarray of shape (n_features_in_,), float64
        Impurity decrease per feature, normalised (scikit-learn's).
    n_features_in_ : int
    backend_ : str
        Backend the tree was grown on.

    Notes
    -----
    X is cast to float32 (as scikit-learn does) and thresholds are midpoints of
    consecutive distinct float32 values; values closer than 1e-7 count as equal.
    Missing values (NaN) are handled as by scikit-learn's trees (>= 1.3): each
    split learns where the rows missing its feature go (the side that gains
    more), ``tree_.missing_left``; a split whose node had none sends NaN at
    predict time to the child that got more training rows
    (:mod:`dtlab.greedy._missing_cpu`).
    """

    def __init__(self, *, max_depth: int | None = None, min_samples_split: int = 2, min_samples_leaf: int = 1,
                 method: str = "vectorized", random_state: Any = None, backend: str = "auto",
                 n_jobs: int | None = None):
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.method = method
        self.random_state = random_state
        self.backend = backend
        self.n_jobs = n_jobs

    def _node_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """Training weight and impurity (MSE) of every node of ``tree_``."""
        return self.node_weighted_n_samples_, self.node_impurity_

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "DecisionTreeRegressor":
        """Grow the tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
            NaN marks a missing value (see Notes); inf is an error.
        y : array-like of shape (n_samples,), numeric, finite
        sample_weight : array-like of shape (n_samples,), float, >= 0, optional
            Row weights, as in scikit-learn: weighted sums in every squared
            error, weighted leaf means; ``min_samples_leaf`` still counts rows;
            rows of weight 0 are left out; integer weights grow the tree of
            repeated rows.  Every ``method`` on the CPU; ``"vectorized"`` on CUDA.

        Returns
        -------
        self : DecisionTreeRegressor
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.greedy import DecisionTreeRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> reg = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
        >>> reg.get_n_leaves() <= 8
        True
        """
        max_depth, min_samples_split, min_samples_leaf = check_tree_params(self)
        method = check_choice(self.method, "method", tuple(METHODS))
        X32 = fit_features(X)
        y = fit_target(y, X32.shape[0], self, numeric=True)
        weights = check_sample_weight(sample_weight, X32.shape[0])
        # the CUDA search has no missing-value scans: "auto" grows such a tree on the CPU
        backend = resolve_backend(self.backend, X, has_cuda=method == "vectorized" and not has_missing(X32))
        if backend.is_cuda and method != "vectorized":
            raise ValueError(f"method={method!r} runs on the CPU only; use method='vectorized' with "
                             "backend='cuda'")
        with thread_scope(self.n_jobs):
            grown = build_greedy_tree(X32, y, task="regression", criterion="squared_error", method=method,
                                      max_depth=max_depth, min_samples_split=min_samples_split,
                                      min_samples_leaf=min_samples_leaf, random_state=self.random_state,
                                      backend=backend, sample_weight=weights)
        self.tree_ = grown.tree
        self.node_impurity_ = grown.impurity
        self.node_n_samples_ = grown.n_node_samples
        self.node_weighted_n_samples_ = grown.weighted_n_node_samples
        self.n_features_in_ = X32.shape[1]
        self.backend_ = backend.name
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Mean training target (weighted by ``sample_weight`` in fit) of the leaf each row reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
            Cast to float32 as in ``fit``; NaN is a missing value, inf an error.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,), float64

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.greedy import DecisionTreeRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> reg = DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y)
        >>> pred = reg.predict(X[:5])
        >>> pred.shape, pred.dtype
        ((5,), dtype('float64'))
        """
        return super().predict(X)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Coefficient of determination R^2 of :meth:`predict` on ``X`` against ``y`` (scikit-learn's
        ``RegressorMixin.score``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
        y : array-like of shape (n_samples,), numeric
            True targets.
        sample_weight : array-like of shape (n_samples,), optional
            Weights of the rows.

        Returns
        -------
        score : float
            ``1 - sum((y - pred)^2) / sum((y - mean(y))^2)``: 1 is perfect, 0 is predicting the mean.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.greedy import DecisionTreeRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> reg = DecisionTreeRegressor(random_state=0).fit(X, y)
        >>> reg.score(X, y)  # a tree grown to single rows fits its training rows
        1.0
        >>> 0.0 < DecisionTreeRegressor(max_depth=3, random_state=0).fit(X, y).score(X, y) < 1.0
        True
        """
        return float(super().score(X, y, sample_weight=sample_weight))
