"""CART / C4.5 classification tree: the baseline the GDT paper compares with."""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from .._validation import check_real, check_sample_weight, encode_labels, fit_target
from ..backend import resolve_backend, thread_scope
from ._params import FittedTreeMixin, check_choice, check_tree_params, fit_features, has_missing
from .builder import build_greedy_tree
from .pruning import pessimistic_prune

CRITERIA = ("gini", "entropy", "log_loss", "gain_ratio")
#: scikit-learn's synonyms: the criterion the tree builder is given.
CRITERION_SYNONYMS = {"log_loss": "entropy"}
PRUNING = (None, "pessimistic")


class DecisionTreeClassifier(FittedTreeMixin, ClassifierMixin, BaseEstimator):
    """Classification tree grown greedily: CART (Gini) or C4.5 (gain ratio).

    With ``criterion="gini"`` (or ``"entropy"``) it grows the same tree as
    :class:`sklearn.tree.DecisionTreeClassifier` with the same parameters and
    ``random_state``.  ``criterion="gain_ratio"`` with
    ``pruning="pessimistic"`` approximates C4.5 / Weka's J48, the top-down
    baseline of the GDT paper: each feature's threshold maximises the
    information gain, the gain is MDL-corrected (C4.5 release 8), and the
    feature with the best gain ratio among those with at least average gain is
    chosen; then the grown tree is pruned by C4.5's pessimistic error estimate.

    Parameters
    ----------
    criterion : {"gini", "entropy", "log_loss", "gain_ratio"}, default="gini"
        ``"log_loss"`` is scikit-learn's other name of ``"entropy"`` (the
        same information gain, the same tree).
    max_depth : int >= 0 or None, default=None
    min_samples_split : int >= 2, default=2
    min_samples_leaf : int >= 1, default=1
        (J48's ``-M`` is 2.)
    pruning : {None, "pessimistic"}, default=None
        C4.5's pruning.  scikit-learn's ``ccp_alpha`` (minimal cost-complexity
        pruning) is another method, so no name here stands for it.
    confidence : float in (0, 0.5], default=0.25
        C4.5's confidence factor for pessimistic pruning; smaller prunes more.
    random_state : int, RandomState or None, default=None
        Decides between splits of equal score exactly as scikit-learn does.
    backend : {"auto", "cpu", "cuda"}, default="auto"
        Where the tree grows (:func:`dtlab.backend.resolve_backend`): ``"cuda"``
        runs the split search as numba.cuda kernels (grown node by node from
        the host; Gini and entropy only; X without missing values); ``"auto"``,
        a GPU when X is already on one or a GPU is present and the criterion
        has a CUDA search (and X no missing value), else the CPU.
    n_jobs : int or None, default=None
        Threads of fit and predict (:func:`dtlab.backend.resolve_threads`).

    The split search is always scikit-learn's ``splitter="best"`` over every
    feature (``max_features=None``); its other parameters (``max_features``,
    ``max_leaf_nodes``, ``min_impurity_decrease``, ``class_weight``, ...) are
    not implemented, so they are not accepted.  There is no ``verbose``: a
    tree fit has no progress to report (as in scikit-learn).

    Attributes
    ----------
    tree_ : FlatTree
        ``value`` holds the training class counts of each node.
    classes_ : ndarray of shape (n_classes,)
    n_classes_ : int
    node_impurity_ : ndarray of shape (n_nodes,), float64
        Gini or entropy (bits) of each node of the grown (unpruned) tree.
    unpruned_tree_ : FlatTree
        The tree before pruning (the same object as ``tree_`` without pruning).
    feature_importances_ : ndarray of shape (n_features_in_,), float64
        Impurity decrease per feature over ``tree_``, normalised (scikit-learn's).
    n_features_in_ : int
    backend_ : str

    Notes
    -----
    Missing values (NaN) are handled as by scikit-learn's trees (>= 1.3): each
    split learns where the rows missing its feature go, ``tree_.missing_left``
    (:mod:`dtlab.greedy._missing_cpu`); ``criterion="gain_ratio"`` refuses them
    (C4.5 spreads such rows over both children by weight, not implemented here).
    """

    def __init__(self, *, criterion: str = "gini", max_depth: int | None = None, min_samples_split: int = 2,
                 min_samples_leaf: int = 1, pruning: str | None = None, confidence: float = 0.25,
                 random_state: Any = None, backend: str = "auto", n_jobs: int | None = None):
        self.criterion = criterion
        self.max_depth = max_depth
        self.min_samples_split = min_samples_split
        self.min_samples_leaf = min_samples_leaf
        self.pruning = pruning
        self.confidence = confidence
        self.random_state = random_state
        self.backend = backend
        self.n_jobs = n_jobs

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> "DecisionTreeClassifier":
        """Grow (and optionally prune) the tree.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
            NaN marks a missing value (see Notes); inf is an error.
        y : array-like of shape (n_samples,), class labels
        sample_weight : array-like of shape (n_samples,), float, >= 0, optional
            Row weights, as in scikit-learn: weighted class counts in every
            impurity, ``tree_.value`` and the importances; ``min_samples_leaf``
            still counts rows; rows of weight 0 are left out (their labels still
            count in ``classes_``); integer weights grow the tree of repeated
            rows.  Every backend (CUDA: Gini and entropy); with
            ``criterion="gain_ratio"``, C4.5's fractional cases (gain and split
            information from weighted counts); there, as in C4.5, a weight is a
            number of cases, so scaling every weight changes the MDL correction
            and the pessimistic pruning (Gini and entropy trees do not change).

        Returns
        -------
        self : DecisionTreeClassifier
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.greedy import DecisionTreeClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
        >>> clf.classes_
        array([0, 1])
        >>> clf.get_depth() <= 3
        True
        """
        max_depth, min_samples_split, min_samples_leaf = check_tree_params(self)
        criterion = check_choice(self.criterion, "criterion", CRITERIA)
        criterion = CRITERION_SYNONYMS.get(criterion, criterion)
        if self.pruning not in PRUNING:
            raise ValueError(f"pruning must be one of {PRUNING}, got {self.pruning!r}")
        confidence = check_real(self.confidence, "confidence", low=0.0, high=0.5, low_inclusive=False)
        X32 = fit_features(X)
        y = fit_target(y, X32.shape[0], self, numeric=False)
        check_classification_targets(y)
        classes, codes = encode_labels(y)
        weights = check_sample_weight(sample_weight, X32.shape[0])
        # the CUDA search has no missing-value scans nor a gain-ratio one: "auto" grows such a tree on the CPU
        backend = resolve_backend(self.backend, X, has_cuda=criterion != "gain_ratio" and not has_missing(X32))
        with thread_scope(self.n_jobs):
            grown = build_greedy_tree(X32, codes, task="classification", criterion=criterion, method="vectorized",
                                      max_depth=max_depth, min_samples_split=min_samples_split,
                                      min_samples_leaf=min_samples_leaf, random_state=self.random_state,
                                      backend=backend, classes=classes, sample_weight=weights)
        self.unpruned_tree_ = grown.tree
        self.tree_ = pessimistic_prune(grown.tree, confidence) if self.pruning == "pessimistic" else grown.tree
        self.node_impurity_ = grown.impurity
        self.classes_ = classes
        self.n_classes_ = int(len(classes))
        self.n_features_in_ = X32.shape[1]
        self.backend_ = backend.name
        return self

    def _node_statistics(self) -> tuple[np.ndarray, np.ndarray]:
        """Training rows and impurity of every node of ``tree_`` (pruned or not) from its class counts: Gini
        for ``criterion="gini"``, entropy in bits otherwise (gain ratio splits still decrease the entropy)."""
        counts = self.tree_.value
        n_rows = counts.sum(axis=1)
        p = counts / np.maximum(n_rows, 1.0)[:, None]
        if self.criterion == "gini":
            return n_rows, 1.0 - (p * p).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return n_rows, -np.where(p > 0, p * np.log2(p), 0.0).sum(axis=1)

    def predict(self, X: Any) -> np.ndarray:
        """Majority class of the leaf each row reaches (the first of ``classes_`` on a tie).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
            Cast to float32 as in ``fit``; NaN is a missing value, inf an error.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels of ``classes_``, of its dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.greedy import DecisionTreeClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
        >>> clf.predict(X[:3]).shape
        (3,)
        >>> set(clf.predict(X)) <= {0, 1}
        True
        """
        return super().predict(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class frequencies (weighted by ``sample_weight`` in fit) of the training rows of the leaf each row reaches.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
            Cast to float32 as in ``fit``; NaN is a missing value, inf an error.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float64
            Columns in the order of ``classes_``; each row sums to 1.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.greedy import DecisionTreeClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = DecisionTreeClassifier(max_depth=3, random_state=0).fit(X, y)
        >>> proba = clf.predict_proba(X[:5])
        >>> proba.shape, proba.dtype
        ((5, 2), dtype('float64'))
        >>> bool(np.allclose(proba.sum(axis=1), 1.0))
        True
        """
        X32 = self._tree_input(X)
        with thread_scope(self.n_jobs):
            return self.tree_.predict_proba(X32, backend=self.backend_)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean accuracy of :meth:`predict` on ``X`` against ``y`` (scikit-learn's ``ClassifierMixin.score``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), numeric
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
        >>> from dtlab.greedy import DecisionTreeClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = DecisionTreeClassifier(random_state=0).fit(X, y)
        >>> clf.score(X, y)  # a tree grown to purity fits its training rows
        1.0
        """
        return float(super().score(X, y, sample_weight=sample_weight))
