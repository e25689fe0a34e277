"""GBDTRegressor and GBDTClassifier: second-order gradient boosting with exact or histogram split search."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import check_verbose, encode_labels
from ..backend import resolve_backend, thread_scope
from ..callbacks import EarlyStopping, ProgressBar, RecordEvaluation, run_callbacks
from ..distributed.executors import is_dask_collection, uses_dask
from ..inference import Forest
from ..trees.boosted_import import boosted_ensemble
from ..trees.ensemble import Ensemble
from ..trees.shap import tree_shap
from . import _params
from ._docs import PARAMETERS_DOC
from .booster import RoundEvaluation, boost
from .dask.fit import fit_on_dask, margins_on_dask, on_margins
from .inputs import numeric_rows, prepare_fit
from .losses import LOSSES
from .sampling import Sampler, seed_of


class _GBDT(BaseEstimator):
    _loss_name = "squared_error"

    def __init__(self, *, n_estimators: int = 100, max_depth: int = 6, learning_rate: float = 0.3,
                 reg_lambda: float = 1.0, gamma: float = 0.0, min_child_weight: float = 1.0, subsample: float = 1.0,
                 colsample_bytree: float = 1.0, colsample_bylevel: float = 1.0, split_method: str = "auto",
                 tree_method: str | None = None, max_bins: int = 256, max_bin: int | None = None,
                 grow_policy: str = "depthwise", max_leaves: int = 0,
                 categorical_features: Any = "auto", max_cat_to_onehot: int = 4, base_score: float | None = None,
                 early_stopping_rounds: int | None = None, backend: str = "auto", n_jobs: int | None = None,
                 random_state: Any = None, verbose: int = 0, executor: Any = "local",
                 dask_hist_loop: str = "collective"):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.subsample = subsample
        self.colsample_bytree = colsample_bytree
        self.colsample_bylevel = colsample_bylevel
        self.split_method = split_method
        self.tree_method = tree_method
        self.max_bins = max_bins
        self.max_bin = max_bin
        self.grow_policy = grow_policy
        self.max_leaves = max_leaves
        self.categorical_features = categorical_features
        self.max_cat_to_onehot = max_cat_to_onehot
        self.base_score = base_score
        self.early_stopping_rounds = early_stopping_rounds
        self.backend = backend
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.executor = executor
        self.dask_hist_loop = dask_hist_loop

    # ------------------------------------------------------------------ fit
    def _fit(self, X, inputs, y_encoded, loss, n_outputs: int, base_margin: float, eval_set,
             sample_weight_eval_set, callbacks, engine=None) -> None:
        """The boosting rounds with eval sets, callbacks and progress; ``engine`` (a Dask fit,
        :mod:`.dask.fit`) brings its own ``backend``, ``evaluation(...)`` and ``boost(...)``."""
        params = _params.check_params(self, categorical=inputs.categorical is not None and inputs.categorical.any())
        verbose = check_verbose(self.verbose)
        self.split_method_ = params["split_method"]
        esr = _params.check_int(self.early_stopping_rounds, "early_stopping_rounds", low=1, allow_none=True)
        if esr is not None and not eval_set:
            raise ValueError("early_stopping_rounds needs an eval_set")
        if callbacks is not None and not all(callable(c) for c in callbacks):
            raise TypeError("callbacks must be a list of callables callback(round, record) -> bool | None")
        eval_set = list(eval_set or [])
        eval_weights = list(sample_weight_eval_set) if sample_weight_eval_set is not None else [None] * len(eval_set)
        if len(eval_weights) != len(eval_set):
            raise ValueError(f"sample_weight_eval_set has {len(eval_weights)} entries for {len(eval_set)} eval sets")
        data = inputs.data
        # once; the Backend object goes down to the split finders
        backend = resolve_backend(self.backend, X) if engine is None else engine.backend
        self.backend_ = backend.name
        self.base_margin_ = float(base_margin)
        self.n_outputs_ = n_outputs
        self.n_features_in_ = data.n_features
        self.categorical_ = inputs.categorical
        self.categories_ = inputs.categories
        if inputs.names is not None:
            self.feature_names_in_ = np.asarray(inputs.names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        metric = "rmse" if loss is LOSSES["squared_error"] else ("logloss" if n_outputs == 1 else "mlogloss")
        self.evals_result_ = {f"validation_{i}": {metric: []} for i in range(len(eval_set))}
        if engine is None:
            evals = []
            for (Xe, ye), we in zip(eval_set, eval_weights):
                blocks = list(_params.predict_rows(numeric_rows(self, Xe), data.n_features))
                n_eval = sum(b.shape[0] for b in blocks)
                evals.append((blocks, self._encode_eval(ye),
                              _params.check_sample_weight(we, n_eval, "sample_weight_eval_set")))
            evaluate = RoundEvaluation(evals, loss, metric, data.n_features, n_outputs, base_margin)
        else:
            if any(w is not None for w in eval_weights):
                raise ValueError("sample_weight_eval_set is not supported with a Dask executor")
            evaluate = engine.evaluation(eval_set, self._encode_eval, loss, metric, n_outputs, base_margin)
        sets = list(self.evals_result_)
        # LightGBM's pattern: recording, early stopping (on the last eval set) and progress are callbacks
        stopping = EarlyStopping(esr, (sets[-1], metric)) if esr is not None else None
        steps = [RecordEvaluation(self.evals_result_, sets), *([stopping] if stopping else []), *(callbacks or [])]
        bar = None
        if verbose:
            shown = (lambda rec: {metric: f"{rec[sets[-1]][metric]:.5f}"}) if sets else None
            bar = ProgressBar(params["n_estimators"], f"GBDT ({params['split_method']})", unit="round",
                              postfix=shown)
            steps.append(bar)
        sampler = None
        if min(params["subsample"], params["colsample_bytree"], params["colsample_bylevel"]) < 1.0:
            sampler = Sampler(seed_of(self.random_state), params["subsample"], params["colsample_bytree"],
                              params["colsample_bylevel"], data.n_samples, data.n_features)

        def on_round(r: int, trees) -> bool:
            return run_callbacks(steps, r, evaluate(trees[-n_outputs:]))

        try:
            with thread_scope(self.n_jobs) as n_threads:
                if engine is None:
                    trees = boost(data, y_encoded, loss, n_outputs, base_margin, params, backend, n_threads,
                                  on_round, sample_weight=inputs.weight, sampler=sampler,
                                  categorical=inputs.categorical)
                else:
                    # without eval sets, callbacks or progress the rounds need not wait for the client
                    trees = engine.boost(data, y_encoded, loss, n_outputs, base_margin, params, backend, n_threads,
                                         on_round, per_round=bool(eval_set or callbacks) or bar is not None)
        finally:
            if bar is not None:
                bar.close()
        self.best_iteration_ = stopping.best_iteration if stopping is not None else None
        self._set_trees(trees)

    def _encode_eval(self, y):
        return np.asarray(y, dtype=np.float32)

    def _set_trees(self, trees) -> None:
        """Keep the trees and the model's PackedForest, validated (a corrupted model file stops here)."""
        names = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None
        self.forest_ = boosted_ensemble(trees, self.n_features_in_, self.n_outputs_, self.base_margin_,
                                        names).forest
        self.trees_ = trees
        self._predictor = Forest(self.to_ensemble())  # built once here: predict leaves the estimator as it is
        importance = np.zeros(self.n_features_in_)
        for t in trees:
            internal = t.left != -1
            np.add.at(importance, t.feature[internal], t.gain[internal])
        total = importance.sum()
        self.feature_importances_ = importance / total if total > 0 else importance

    # ------------------------------------------------------------------ predict
    def to_ensemble(self) -> Ensemble:
        """The fitted model as an :class:`~dtlab.trees.Ensemble` (base margin, one column per output, scale 1;
        the best iteration's trees when early stopping chose one): what :class:`dtlab.inference.Forest` serves."""
        check_is_fitted(self, "trees_")
        n_trees = len(self.trees_)
        if self.best_iteration_ is not None:
            n_trees = (self.best_iteration_ + 1) * self.n_outputs_
        names = list(self.feature_names_in_) if hasattr(self, "feature_names_in_") else None
        return boosted_ensemble(self.trees_[:n_trees], self.n_features_in_, self.n_outputs_, self.base_margin_,
                                names, source=f"dtlab.{type(self).__name__}")

    def _margin(self, X) -> np.ndarray:
        """Margins, float32 (n_samples, n_outputs): the inference engine's sums, on ``backend`` (resolved here,
        so that a model read from a file predicts wherever it is used)."""
        check_is_fitted(self, "trees_")
        if is_dask_collection(X):  # a Dask collection of margins, predicted where the partitions are
            return margins_on_dask(self, X)
        backend = resolve_backend(self.backend)  # GPU input goes to the host for backend="cpu" (predict_rows)
        with thread_scope(self.n_jobs):
            blocks = [self._predictor.predict(b, backend=backend)
                      for b in _params.predict_rows(numeric_rows(self, X), self.n_features_in_, type(self).__name__)]
        if not blocks:
            return np.empty((0, self.n_outputs_), np.float32)
        return np.concatenate(blocks).reshape(-1, self.n_outputs_).astype(np.float32)

    def _n_trees_used(self) -> int:
        return len(self.trees_) if self.best_iteration_ is None else (self.best_iteration_ + 1) * self.n_outputs_

    def apply(self, X: Any) -> np.ndarray:
        """The leaf each row reaches in each tree: int32 (n_samples, n_trees), tree ``t``'s node index in
        ``trees_[t]`` (trees round-major; the best iteration's when early stopping chose one)."""
        check_is_fitted(self, "trees_")
        backend = resolve_backend(self.backend)
        with thread_scope(self.n_jobs):
            blocks = [self._predictor.apply(b, backend=backend)
                      for b in _params.predict_rows(numeric_rows(self, X), self.n_features_in_, type(self).__name__)]
        return np.concatenate(blocks) if blocks else np.empty((0, self._n_trees_used()), np.int32)

    def _contributions(self, X) -> np.ndarray:
        """Exact TreeSHAP of the margin: (n_samples, n_features + 1) for one output, else (n_samples, n_outputs,
        n_features + 1); the last column is the bias (base margin and each tree's expected value)."""
        check_is_fitted(self, "trees_")
        ens = self._predictor.ensemble
        cover = np.concatenate([t.cover for t in self.trees_[:self._n_trees_used()]])
        with thread_scope(self.n_jobs):
            blocks = [tree_shap(ens, cover, self._predictor.prepare(b))
                      for b in _params.predict_rows(numeric_rows(self, X), self.n_features_in_, type(self).__name__)]
        out = np.concatenate(blocks) if blocks else np.empty((0, self.n_outputs_, self.n_features_in_ + 1))
        return out[:, 0, :] if self.n_outputs_ == 1 else out

    def save_json(self, path: str | Path) -> None:
        """Write the fitted model as JSON (no pickle); :class:`dtlab.inference.Forest` reads the file too."""
        check_is_fitted(self, "trees_")
        _params.save(self, path)

    @classmethod
    def load_json(cls, path: str | Path):
        """Read a model written by :meth:`save_json`, validated before it can predict (a corrupted file raises
        :class:`~dtlab.trees.ensemble.ModelFormatError`, a ValueError)."""
        return _params.load(cls, path)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags


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
