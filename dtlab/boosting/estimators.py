"""GBDTRegressor and GBDTClassifier: second-order gradient boosting with exact or histogram split search."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._validation import encode_labels, fit_target
from ..backend import resolve_backend, thread_scope
from ..callbacks import EarlyStopping, ProgressBar, RecordEvaluation, run_callbacks
from ..distributed.executors import is_dask_collection, uses_dask
from ..inference import Forest
from ..trees.boosted_import import boosted_ensemble
from ..trees.ensemble import Ensemble
from . import _params
from .booster import RoundEvaluation, boost
from .dask_fit import fit_on_dask, margins_on_dask, on_margins
from .losses import LOSSES

_DOC_PARAMS = """
    n_estimators : int >= 1, default=100
        Boosting rounds (one tree per round, or one per class and round).
    max_depth : int >= 1, default=6
        Trees grow level by level to this depth.
    learning_rate : float > 0, default=0.3
        Shrinkage of every leaf value.
    reg_lambda : float >= 0, default=1.0
        L2 penalty of the leaf weights: a leaf's weight is ``-G / (H + reg_lambda)``.
    gamma : float >= 0, default=0.0
        Minimum loss change of a split, compared as XGBoost's ``min_split_loss``
        is (with ``G_L^2/(H_L+lambda) + G_R^2/(H_R+lambda) - G^2/(H+lambda)``,
        the textbook gain without its factor 1/2); splits below it are pruned
        bottom up.
    min_child_weight : float >= 0, default=1.0
        Minimum hessian sum of each child.
    split_method : {"exact", "hist"}, default="exact"
        ``"exact"``: every distinct value is a candidate (features sorted once,
        prefix sums, stable partitions; XGBoost's ``tree_method="exact"``).
        ``"hist"``: candidates are ``max_bins`` quantile bins (one histogram per
        node, the sibling by subtraction).
    max_bins : int in [2, 256], default=256
        Bins per feature for ``"hist"`` (one of them holds the missing values).
    base_score : float or None, default=None
        Initial prediction (a probability for binary classification, as in
        XGBoost); ``None``: the mean target (regression), the positive rate
        (binary), 0 margins (multiclass).
    early_stopping_rounds : int or None, default=None
        Stop when the last ``eval_set`` has not improved for this many rounds;
        prediction then uses the best round.
    backend : {"auto", "cpu", "cuda"}, default="auto"
        Where the split search and prediction run (:func:`dtlab.backend.resolve_backend`; ``"auto"``: a GPU
        when X is on one or a GPU is present).  ``"cuda"``: numba.cuda kernels -- for
        ``"hist"`` the histograms, scans and per-node reduction (the rows'
        partition stays on the host), for ``"exact"`` the prefix-sum scans of
        the sorted lists (a block per node and feature), the rows' sides and the
        lists' stable partition; the same trees as ``"cpu"``.  Prediction is
        :class:`dtlab.inference.Forest`'s on the same backend.
    n_jobs : int or None, default=None
        Threads of fit (feature slices) and predict (:func:`dtlab.backend.resolve_threads`: ``None``, numba's
        current thread count; -1, all of numba's threads).
    random_state : int or None, default=None
        Unused: the algorithm draws nothing at random (no subsampling); kept for
        the scikit-learn convention.
    verbose : bool, default=False
        A tqdm progress bar over the rounds (:class:`dtlab.callbacks.ProgressBar`).
    executor : "local", "dask", scheduler address or distributed.Client, default="local"
        Who fits (GDT's selector): this process, or the workers of a Dask cluster -- ``"dask"`` for the
        session's default client, an address, or a client.  ``"hist"`` is data-parallel there (each worker
        keeps a partition of the rows; histograms are added up, split decisions sent back:
        :mod:`dtlab.boosting.dask_hist`), ``"exact"`` feature-parallel (each worker keeps every row of a
        slice of the columns; the rows' sides go out as one bit per row: :mod:`dtlab.boosting.dask_exact`).
        Exact gives the single-process trees for any number of workers, hist where the sums are exact.
        Dask arrays and DataFrames (labels as a Dask array or Series) need a Dask executor; numpy, pandas
        and scipy.sparse input is scattered.  ``predict`` on Dask input returns Dask collections whatever
        the executor.
"""


class _GBDT(BaseEstimator):
    _loss_name = "squared_error"

    def __init__(self, *, n_estimators: int = 100, max_depth: int = 6, learning_rate: float = 0.3,
                 reg_lambda: float = 1.0, gamma: float = 0.0, min_child_weight: float = 1.0,
                 split_method: str = "exact", max_bins: int = 256, base_score: float | None = None,
                 early_stopping_rounds: int | None = None, backend: str = "auto", n_jobs: int | None = None,
                 random_state: Any = None, verbose: bool = False, executor: Any = "local"):
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.learning_rate = learning_rate
        self.reg_lambda = reg_lambda
        self.gamma = gamma
        self.min_child_weight = min_child_weight
        self.split_method = split_method
        self.max_bins = max_bins
        self.base_score = base_score
        self.early_stopping_rounds = early_stopping_rounds
        self.backend = backend
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.executor = executor

    # ------------------------------------------------------------------ fit
    def _fit(self, X, y_encoded, loss, n_outputs: int, base_margin: float, data, names, eval_set,
             callbacks, engine=None) -> None:
        """The boosting rounds with eval sets, callbacks and progress; ``engine`` (a Dask fit,
        :mod:`.dask_fit`) brings its own ``backend``, ``evaluation(...)`` and ``boost(...)``."""
        params = _params.check_params(self)
        esr = _params.check_int(self.early_stopping_rounds, "early_stopping_rounds", low=1, allow_none=True)
        if esr is not None and not eval_set:
            raise ValueError("early_stopping_rounds needs an eval_set")
        if callbacks is not None and not all(callable(c) for c in callbacks):
            raise TypeError("callbacks must be a list of callables callback(round, record) -> bool | None")
        # once; the Backend object goes down to the split finders
        backend = resolve_backend(self.backend, X) if engine is None else engine.backend
        self.backend_ = backend.name
        self.base_margin_ = float(base_margin)
        self.n_outputs_ = n_outputs
        self.n_features_in_ = data.n_features
        if names is not None:
            self.feature_names_in_ = np.asarray(names, dtype=object)
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        metric = "rmse" if loss is LOSSES["squared_error"] else ("logloss" if n_outputs == 1 else "mlogloss")
        self.evals_result_ = {f"validation_{i}": {metric: []} for i in range(len(eval_set or []))}
        if engine is None:
            evals = [(list(_params.predict_rows(Xe, data.n_features)), self._encode_eval(ye))
                     for Xe, ye in eval_set or []]
            evaluate = RoundEvaluation(evals, loss, metric, data.n_features, n_outputs, base_margin)
        else:
            evaluate = engine.evaluation(eval_set or [], self._encode_eval, loss, metric, n_outputs, base_margin)
        sets = list(self.evals_result_)
        # LightGBM's pattern: recording, early stopping (on the last eval set) and progress are callbacks
        stopping = EarlyStopping(esr, (sets[-1], metric)) if esr is not None else None
        steps = [RecordEvaluation(self.evals_result_, sets), *([stopping] if stopping else []), *(callbacks or [])]
        bar = None
        if self.verbose:
            shown = (lambda rec: {metric: f"{rec[sets[-1]][metric]:.5f}"}) if sets else None
            bar = ProgressBar(params["n_estimators"], f"GBDT ({params['split_method']})", unit="round",
                              postfix=shown)
            steps.append(bar)

        def on_round(r: int, trees) -> bool:
            return run_callbacks(steps, r, evaluate(trees[-n_outputs:]))

        try:
            with thread_scope(self.n_jobs) as n_threads:
                run = boost if engine is None else engine.boost
                trees = run(data, y_encoded, loss, n_outputs, base_margin, params, backend, n_threads, on_round)
        finally:
            if bar is not None:
                bar.close()
            if engine is not None:
                engine.close()
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
                      for b in _params.predict_rows(X, self.n_features_in_, type(self).__name__)]
        if not blocks:
            return np.empty((0, self.n_outputs_), np.float32)
        return np.concatenate(blocks).reshape(-1, self.n_outputs_).astype(np.float32)

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
    ----------{_DOC_PARAMS}
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

    def fit(self, X: Any, y: Any, eval_set: list | None = None, callbacks: list | None = None) -> "GBDTRegressor":
        """Fit on X (dense with NaN for missing, scipy.sparse, or pandas) and y (n_samples,).

        ``eval_set``: a list of ``(X, y)`` whose loss is recorded after every round (``evals_result_``);
        ``callbacks``: ``callback(round, record) -> bool | None`` after every round (:mod:`dtlab.callbacks`;
        ``record`` holds the eval sets' losses; True stops)."""
        if uses_dask(self.executor, X, y):
            return fit_on_dask(self, X, y, eval_set, callbacks)
        data, names = _params.fit_data(X)
        y = fit_target(y, data.n_samples, self, numeric=True).astype(np.float32)
        base = float(np.mean(y)) if self.base_score is None else _params.check_real(self.base_score, "base_score")
        self._fit(X, y, LOSSES["squared_error"], 1, base, data, names, eval_set, callbacks)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predictions, float32 array (n_samples,) (a Dask array or Series for Dask input)."""
        return on_margins(self._margin(X), lambda m: m[:, 0])


class GBDTClassifier(ClassifierMixin, _GBDT):
    __doc__ = f"""Gradient-boosted classification trees: logistic loss (two classes) or softmax (one tree
    per class and round).

    Parameters
    ----------{_DOC_PARAMS}
    Attributes
    ----------
    classes_ : ndarray (n_classes,)
    trees_, forest_, base_margin_, feature_importances_, best_iteration_, n_features_in_ : as GBDTRegressor
    evals_result_ : dict, ``{{"validation_i": {{"logloss" | "mlogloss": [...]}}}}``
    """

    def fit(self, X: Any, y: Any, eval_set: list | None = None, callbacks: list | None = None) -> "GBDTClassifier":
        """Fit on X (dense with NaN for missing, scipy.sparse, or pandas) and class labels y (n_samples,);
        ``eval_set`` and ``callbacks`` as :meth:`GBDTRegressor.fit`."""
        from sklearn.utils.multiclass import check_classification_targets

        if uses_dask(self.executor, X, y):
            return fit_on_dask(self, X, y, eval_set, callbacks)
        data, names = _params.fit_data(X)
        y = fit_target(y, data.n_samples, self)
        check_classification_targets(y)
        self.classes_, codes = encode_labels(y)
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError(f"y has one class only ({self.classes_[0]!r}); a classifier needs at least two")
        if n_classes == 2:
            loss, n_outputs = LOSSES["logistic"], 1
            p = float(np.mean(codes)) if self.base_score is None else self.base_score
            base = loss.base_margin(_params.check_real(p, "base_score"))
        else:
            loss, n_outputs = LOSSES["softmax"], n_classes
            base = 0.0 if self.base_score is None else _params.check_real(self.base_score, "base_score")
        self._fit(X, codes if n_outputs > 1 else codes.astype(np.float32), loss, n_outputs, base, data, names,
                  eval_set, callbacks)
        return self

    def _encode_eval(self, y):
        y = np.asarray(y)
        codes = np.searchsorted(self.classes_, y)
        if (codes >= self.classes_.shape[0]).any() or (self.classes_[np.minimum(codes, len(self.classes_) - 1)]
                                                       != y).any():
            raise ValueError("eval_set holds labels not seen in y")
        return codes.astype(np.int32) if self.classes_.shape[0] > 2 else codes.astype(np.float32)

    def decision_function(self, X: Any) -> np.ndarray:
        """Margins: (n_samples,) for two classes, (n_samples, n_classes) otherwise."""
        # the functions sent with Dask partitions hold no estimator (a Dask-fitted one holds its Client, which
        # Dask cannot tokenize): plain values only
        return on_margins(self._margin(X), partial(_margins_out, n_outputs=self.n_outputs_))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities, float64 array (n_samples, n_classes) (a Dask array or DataFrame for Dask
        input, columns the classes)."""
        return on_margins(self._margin(X), partial(_probabilities, n_outputs=self.n_outputs_),
                          columns=list(self.classes_))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class label of each row (a Dask array or Series for Dask input)."""
        return on_margins(self._margin(X), partial(_labels, classes=self.classes_, n_outputs=self.n_outputs_),
                          dtype=self.classes_.dtype)


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
