"""The estimators' shared base: parameters, fitting through the booster (in process or on Dask), the fitted
forest and its exports; :mod:`.estimators` adds the regressor's and the classifier's targets and outputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_verbose
from ..backend import resolve_backend, thread_scope
from ..callbacks import EarlyStopping, ProgressBar, RecordEvaluation, run_callbacks
from ..distributed.executors import is_dask_collection
from ..inference import Forest
from ..trees.boosted_import import boosted_ensemble
from ..trees.ensemble import Ensemble
from ..trees.shap import tree_shap
from . import _params
from .booster import RoundEvaluation, boost
from .dask.fit import margins_on_dask
from .inputs import numeric_rows
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
