"""GBDTRegressor and GBDTClassifier: second-order gradient boosting with exact or histogram split search."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from .._validation import check_verbose, encode_labels
from ..distributed.executors import uses_dask
from . import _params
from ._docs import PARAMETERS_DOC
from ._gbdt_base import _GBDT
from .dask.fit import fit_on_dask, on_margins
from .inputs import prepare_fit
from .losses import LOSSES


class GBDTRegressor(RegressorMixin, _GBDT):
    __doc__ = f"""Gradient-boosted regression trees (squared error), XGBoost's second-order algorithm.

    Parameters
    ----------{PARAMETERS_DOC}
    Attributes
    ----------
    trees_ : list of BoostedTree
    forest_ : PackedForest, every tree for :mod:`dtlab.trees` kernels (``x <= threshold`` tests); the model as a
        whole is :meth:`to_ensemble`, which :class:`dtlab.inference.Forest` serves (``predict`` goes through it)
    base_margin_ : float
    feature_importances_ : ndarray (n_features,), total split gain per feature, normalised to sum 1
    evals_result_ : dict, ``{{"validation_i": {{"rmse": [...]}}}}``
    best_iteration_ : int or None
    n_features_in_ : int
    """

    def fit(self, X: Any, y: Any, sample_weight: Any = None, eval_set: list | None = None,
            sample_weight_eval_set: list | None = None, callbacks: list | None = None) -> "GBDTRegressor":
        """Boost ``n_estimators`` rounds of regression trees on the squared error.

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric (pandas ``category`` columns are categorical features); NaN is a missing value.  A Dask
            array or DataFrame with a Dask ``executor``.
        y : array-like of shape (n_samples,), numeric, finite
        sample_weight : array-like of shape (n_samples,), float >= 0, optional
            Weights of the rows: they scale every row's ``g`` and ``h``; the default base score is the
            weighted mean.
        eval_set : list of (X, y), optional
            Sets whose loss is recorded after every round (``evals_result_``); early stopping watches the
            last one.
        sample_weight_eval_set : list of array-like or None, optional
            One weight array (or None) per eval set.
        callbacks : list of callable, optional
            ``callback(round, record) -> bool | None`` after every round (:mod:`dtlab.callbacks`;
            ``record`` holds the eval sets' losses; True stops).

        Returns
        -------
        self : GBDTRegressor
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> reg = GBDTRegressor(n_estimators=5, max_depth=2).fit(X, y)
        >>> len(reg.trees_)
        5
        >>> reg.feature_importances_.shape
        (4,)
        """
        check_verbose(self.verbose)
        if uses_dask(self.executor, X, y):
            return fit_on_dask(self, X, y, sample_weight, eval_set, sample_weight_eval_set, callbacks)
        _params.check_params(self)
        inputs = prepare_fit(self, X, y, sample_weight, numeric=True)
        y = np.asarray(inputs.y).astype(np.float32)
        base = (float(np.average(y, weights=inputs.weight)) if self.base_score is None
                else _params.check_real(self.base_score, "base_score"))
        self._fit(X, inputs, y, LOSSES["squared_error"], 1, base, eval_set, sample_weight_eval_set, callbacks)
        return self

    def predict(self, X: Any, pred_contribs: bool = False) -> np.ndarray:
        """Predicted targets, or with ``pred_contribs=True`` each feature's contribution to them.

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric; NaN is a missing value.  A Dask array or DataFrame gives a Dask collection.
        pred_contribs : bool, default=False
            Return exact TreeSHAP contributions instead (XGBoost's ``pred_contribs``).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,), float32
            The base score plus every tree's leaf value (the best iteration's trees with early stopping).
            With ``pred_contribs=True``: float64 of shape (n_samples, n_features + 1), the bias last; a
            row's contributions add up to its prediction.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> reg = GBDTRegressor(n_estimators=5, max_depth=2).fit(X, y)
        >>> pred = reg.predict(X[:5])
        >>> pred.shape, pred.dtype
        ((5,), dtype('float32'))
        >>> contribs = reg.predict(X[:5], pred_contribs=True)
        >>> contribs.shape
        (5, 5)
        >>> bool(np.allclose(contribs.sum(axis=1), pred, atol=1e-4))
        True
        """
        if pred_contribs:
            return self._contributions(X)
        return on_margins(self._margin(X), partial(_margins_out, n_outputs=1))

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Coefficient of determination R^2 of :meth:`predict` on ``X`` against ``y`` (scikit-learn's
        ``RegressorMixin.score``).

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric; NaN is a missing value.  A Dask array or DataFrame gives a Dask collection.
        y : array-like of shape (n_samples,), numeric
            True targets.
        sample_weight : array-like of shape (n_samples,), optional

        Returns
        -------
        score : float
            ``1 - sum((y - pred)^2) / sum((y - mean(y))^2)``: 1 is perfect, 0 is predicting the mean.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTRegressor
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = X[:, 0] - 2 * X[:, 1]
        >>> reg = GBDTRegressor(n_estimators=5, max_depth=2).fit(X, y)
        >>> 0.5 < reg.score(X, y) <= 1.0
        True
        """
        return float(super().score(X, y, sample_weight=sample_weight))


class GBDTClassifier(ClassifierMixin, _GBDT):
    __doc__ = f"""Gradient-boosted classification trees: logistic loss (two classes) or softmax (one tree
    per class and round).

    Parameters
    ----------{PARAMETERS_DOC}
    Attributes
    ----------
    classes_ : ndarray (n_classes,)
    trees_, forest_, base_margin_, feature_importances_, best_iteration_, n_features_in_ : as GBDTRegressor
    evals_result_ : dict, ``{{"validation_i": {{"logloss" | "mlogloss": [...]}}}}``
    """

    def fit(self, X: Any, y: Any, sample_weight: Any = None, eval_set: list | None = None,
            sample_weight_eval_set: list | None = None, callbacks: list | None = None) -> "GBDTClassifier":
        """Boost ``n_estimators`` rounds of trees on the logistic loss (two classes) or softmax (one tree per
        class and round).

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric (pandas ``category`` columns are categorical features); NaN is a missing value.  A Dask
            array or DataFrame with a Dask ``executor``.
        y : array-like of shape (n_samples,)
            Class labels of any kind, at least two classes.
        sample_weight, eval_set, sample_weight_eval_set, callbacks : optional
            As :meth:`GBDTRegressor.fit`: the default base score is the weighted positive rate, the eval
            sets record their log loss and their labels must be among ``y``'s.

        Returns
        -------
        self : GBDTClassifier
            The fitted estimator.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GBDTClassifier(n_estimators=5, max_depth=2).fit(X, y)
        >>> clf.classes_
        array([0, 1])
        >>> len(clf.trees_)  # one tree per round for two classes
        5
        """
        from sklearn.utils.multiclass import check_classification_targets

        check_verbose(self.verbose)

        if uses_dask(self.executor, X, y):
            return fit_on_dask(self, X, y, sample_weight, eval_set, sample_weight_eval_set, callbacks)
        _params.check_params(self)
        inputs = prepare_fit(self, X, y, sample_weight, numeric=False)
        y = inputs.y
        check_classification_targets(y)
        self.classes_, codes = encode_labels(y)
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError(f"y has one class only ({self.classes_[0]!r}); a classifier needs at least two")
        if n_classes == 2:
            loss, n_outputs = LOSSES["logistic"], 1
            p = float(np.average(codes, weights=inputs.weight)) if self.base_score is None else self.base_score
            base = loss.base_margin(_params.check_real(p, "base_score"))
        else:
            loss, n_outputs = LOSSES["softmax"], n_classes
            base = 0.0 if self.base_score is None else _params.check_real(self.base_score, "base_score")
        self._fit(X, inputs, codes if n_outputs > 1 else codes.astype(np.float32), loss, n_outputs, base, eval_set,
                  sample_weight_eval_set, callbacks)
        return self

    def _encode_eval(self, y):
        y = np.asarray(y)
        codes = np.searchsorted(self.classes_, y)
        if (codes >= self.classes_.shape[0]).any() or (self.classes_[np.minimum(codes, len(self.classes_) - 1)]
                                                       != y).any():
            raise ValueError("eval_set holds labels not seen in y")
        return codes.astype(np.int32) if self.classes_.shape[0] > 2 else codes.astype(np.float32)

    def decision_function(self, X: Any) -> np.ndarray:
        """Margins: the base margin plus every tree's leaf value (log-odds of ``classes_[1]`` for two classes,
        softmax inputs otherwise).

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric; NaN is a missing value.  A Dask array or DataFrame gives a Dask collection.

        Returns
        -------
        margins : ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes), float32

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GBDTClassifier(n_estimators=5, max_depth=2).fit(X, y)
        >>> margins = clf.decision_function(X[:5])
        >>> margins.shape, margins.dtype
        ((5,), dtype('float32'))
        >>> bool(np.array_equal(clf.predict(X[:5]), clf.classes_[(margins > 0).astype(int)]))
        True
        """
        # the functions sent with Dask partitions hold no estimator (a Dask-fitted one holds its Client, which
        # Dask cannot tokenize): plain values only
        return on_margins(self._margin(X), partial(_margins_out, n_outputs=self.n_outputs_))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities: the logistic function (two classes) or softmax of the margins.

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric; NaN is a missing value.  A Dask array or DataFrame gives a Dask collection.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float64
            Columns in the order of ``classes_``; each row sums to 1 (for Dask input a Dask array, or a
            Dask DataFrame whose columns are the classes).

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GBDTClassifier(n_estimators=5, max_depth=2).fit(X, y)
        >>> proba = clf.predict_proba(X[:5])
        >>> proba.shape, proba.dtype
        ((5, 2), dtype('float64'))
        >>> bool(np.allclose(proba.sum(axis=1), 1.0))
        True
        """
        return on_margins(self._margin(X), partial(_probabilities, n_outputs=self.n_outputs_),
                          columns=list(self.classes_))

    def predict(self, X: Any, pred_contribs: bool = False) -> np.ndarray:
        """Most probable class label of each row, or with ``pred_contribs=True`` each feature's contribution
        to the margins.

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric; NaN is a missing value.  A Dask array or DataFrame gives a Dask collection.
        pred_contribs : bool, default=False
            Return exact TreeSHAP contributions to the margins instead (XGBoost's ``pred_contribs``).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels of ``classes_``, of its dtype.  With ``pred_contribs=True``: float64 of shape
            (n_samples, n_features + 1) for two classes, else (n_samples, n_classes, n_features + 1), the
            bias last; a row's contributions add up to its margin.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.boosting import GBDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GBDTClassifier(n_estimators=5, max_depth=2).fit(X, y)
        >>> clf.predict(X[:3]).shape
        (3,)
        >>> set(clf.predict(X)) <= {0, 1}
        True
        >>> clf.predict(X[:3], pred_contribs=True).shape
        (3, 5)
        """
        if pred_contribs:
            return self._contributions(X)
        return on_margins(self._margin(X), partial(_labels, classes=self.classes_, n_outputs=self.n_outputs_),
                          dtype=self.classes_.dtype)

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean accuracy of :meth:`predict` on ``X`` against ``y`` (scikit-learn's ``ClassifierMixin.score``).

        Parameters
        ----------
        X : array-like, scipy.sparse matrix or pandas DataFrame of shape (n_samples, n_features)
            Numeric; NaN is a missing value.  A Dask array or DataFrame gives a Dask collection.
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
        >>> from dtlab.boosting import GBDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GBDTClassifier(n_estimators=5, max_depth=2).fit(X, y)
        >>> 0.8 < clf.score(X, y) <= 1.0
        True
        """
        return float(super().score(X, y, sample_weight=sample_weight))


def _margins_out(m: np.ndarray, n_outputs: int) -> np.ndarray:
    return m[:, 0] if n_outputs == 1 else m


def _probabilities(m: np.ndarray, n_outputs: int) -> np.ndarray:
    """Class probabilities, float64 (n_samples, n_classes), of float32 margins (n_samples, n_outputs)."""
    m = m.astype(np.float64)
    if n_outputs == 1:
        p = 1.0 / (1.0 + np.exp(-m[:, 0]))
        return np.column_stack([1.0 - p, p])
    m -= m.max(axis=1, keepdims=True)
    e = np.exp(m)
    return e / e.sum(axis=1, keepdims=True)


def _labels(m: np.ndarray, classes: np.ndarray, n_outputs: int) -> np.ndarray:
    return classes[np.argmax(_probabilities(m, n_outputs), axis=1)]
