"""GDTClassifier: global (evolutionary) induction of univariate binary classification trees.

The Global Decision Tree system as described by Jurczuk, Czajkowski and
Kretowski ("Multi-GPU approach to global induction of classification trees
for large-scale data mining", Applied Intelligence 51, 2021, section 2.4):
tree structure, tests and predictions are searched together by an
evolutionary algorithm whose fitness ``Accuracy(T) - alpha * (Size(T) - 1)``
rewards small accurate trees.  The fitness evaluation, the expensive part, is
delegated to an evaluator (:mod:`dtlab.evolution.evaluators`) chosen by
``backend`` (where it runs) and ``evaluator`` (the batched kernels or the
NumPy reference).
"""

from __future__ import annotations

import numbers
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets

from .._validation import check_int, check_sklearn_input_shape, check_verbose, encode_labels, fit_target
from ..backend import thread_scope
from . import checkpoint as ckpt
from ._docs import PARAMETERS_DOC
from ._sparse import check_gdt_X, tree_call
from .algorithm import EvolutionParams, RunState, initial_state
from .defaults import default
from .evaluators import check_executor, make_evaluator, resolve_evaluator
from .front import check_size_alpha
from .individual import Individual
from .inspection import TreeInspectionMixin, remember_feature_names

#: Parameters a resumed run may change (they do not alter the search itself).
RESUMABLE_CHANGES = ("max_generations", "max_stagnation", "backend", "evaluator", "n_devices", "executor",
                     "n_jobs", "verbose", "checkpoint", "checkpoint_every", "callback", "size_alpha", "size_cv")

#: What a fit sets; removed again when a fit fails, so nothing half-fitted is left behind.
FITTED_ATTRIBUTES = ("tree_", "classes_", "n_features_in_", "feature_names_in_", "history_", "n_generations_",
                     "stop_reason_", "best_fitness_", "best_tree_", "front_", "size_path_", "size_alpha_",
                     "cv_results_")


class GDTClassifier(TreeInspectionMixin, ClassifierMixin, BaseEstimator):
    __doc__ = f"""Evolutionary induction of a univariate binary classification tree (GDT).

    Parameters
    ----------{PARAMETERS_DOC}

    Attributes
    ----------
    tree_ : FlatTree
        The best tree; ``value`` holds training class counts, ``classes`` the labels.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    history_ : pandas.DataFrame
        One row per generation (0 = initial population): ``generation``,
        ``best_fitness``, ``best_size`` (nodes), ``best_leaves``,
        ``best_accuracy`` (training), ``mean_fitness``, ``mean_size``,
        ``n_evaluated`` (individuals evaluated that generation), ``seconds``
        (that generation's wall time) and ``elapsed_s`` (cumulative).
    n_generations_ : int
        Generations run (excluding the initial population).
    stop_reason_ : str
        ``"max_generations"``, ``"stagnation"``, ``"callback"``, ``"interrupted"`` or ``"single_class"``.
    best_fitness_ : float
        Fitness of the evolution's best tree.
    front_ : list of FlatTree
        The run's non-dominated trees by size and training accuracy, smallest
        first (every tree the run evaluated was a candidate, finished like ``tree_``).
    size_path_ : pandas.DataFrame
        The front's trees some ``size_alpha`` chooses: ``front_index, n_nodes,
        n_leaves, train_accuracy, alpha_low, alpha_high`` (chosen for
        ``alpha_low <= size_alpha < alpha_high``), largest weight first.
    best_tree_ : FlatTree
        The evolution's best tree (``tree_`` when ``size_alpha`` is None).
    size_alpha_ : float or None
        The weight that chose ``tree_`` (None: the evolution's best).
    cv_results_ : dict or None
        With ``size_alpha="cv"``: the candidate weights and their mean held-out accuracy.

    Notes
    -----
    A fitted tree is its individual with two changes that leave every
    training prediction as it is: splits that received no training object are
    removed (so ``tree_.n_nodes`` can be below ``history_.best_size``), and each
    threshold is moved to the midpoint of its gap between training values, as
    CART places its thresholds.

    Interrupting ``fit`` (Ctrl-C) after the initial population ends the run at
    the last completed generation with a warning, keeps the best tree so far
    (``stop_reason_ == "interrupted"``) and, with ``checkpoint``, saves the
    run so that the next ``fit`` resumes it exactly.

    The result depends only on the data, the parameters and ``random_state``:
    not on ``n_devices``, the evaluator or the number of threads, because the
    evaluators' random draws are keyed on row ids (see
    :mod:`dtlab.evolution.evaluators.draws`).

    Examples
    --------
    >>> from dtlab.datasets import chess3x3
    >>> X, y = chess3x3(2000, seed=0)
    >>> clf = GDTClassifier(max_generations=300, random_state=0).fit(X, y)  # doctest: +SKIP
    >>> clf.tree_.n_nodes  # doctest: +SKIP
    17
    """

    def __init__(self, *, population_size: int = default("population_size"),
                 max_generations: int = default("max_generations"),
                 max_stagnation: int = default("max_stagnation"),
                 alpha: float = default("alpha"),
                 crossover_probability: float = default("crossover_probability"),
                 mutation_probability: float = default("mutation_probability"),
                 n_elite: int = default("n_elite"),
                 ranking_pressure: float = default("ranking_pressure"),
                 prune_probability: float = default("prune_probability"),
                 exchange_probability: float = default("exchange_probability"),
                 new_test_probability: float = default("new_test_probability"),
                 shift_probability: float = default("shift_probability"),
                 init_sample_fraction: float = default("init_sample_fraction"),
                 init_max_samples: int = default("init_max_samples"),
                 init_max_depth: int = default("init_max_depth"),
                 min_samples_split: int = default("min_samples_split"),
                 max_depth: int = default("max_depth"),
                 local_pruning: float = default("local_pruning"),
                 size_alpha: float | str | None = None, size_cv: int = 3,
                 backend: str = "auto", evaluator: str = "batched", n_devices: int | None = None,
                 executor: Any = "local", n_jobs: int | None = None, random_state: Any = None,
                 verbose: int = 0, checkpoint: str | Path | None = None,
                 checkpoint_every: int = default("checkpoint_every"),
                 callback: Callable[[int, dict], Any] | None = None):
        self.population_size = population_size
        self.max_generations = max_generations
        self.max_stagnation = max_stagnation
        self.alpha = alpha
        self.crossover_probability = crossover_probability
        self.mutation_probability = mutation_probability
        self.n_elite = n_elite
        self.ranking_pressure = ranking_pressure
        self.prune_probability = prune_probability
        self.exchange_probability = exchange_probability
        self.new_test_probability = new_test_probability
        self.shift_probability = shift_probability
        self.init_sample_fraction = init_sample_fraction
        self.init_max_samples = init_max_samples
        self.init_max_depth = init_max_depth
        self.min_samples_split = min_samples_split
        self.max_depth = max_depth
        self.local_pruning = local_pruning
        self.size_alpha = size_alpha
        self.size_cv = size_cv
        self.backend = backend
        self.evaluator = evaluator
        self.n_devices = n_devices
        self.executor = executor
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.callback = callback

    def _validated_params(self) -> EvolutionParams:
        return EvolutionParams.from_estimator(self)

    def _search_params(self) -> dict[str, Any]:
        """Parameters that shape the search (must match to resume a checkpoint)."""
        params = self.get_params()
        out = {k: v for k, v in params.items() if k not in RESUMABLE_CHANGES and k != "random_state"}
        rs = self.random_state
        out["random_state"] = rs if rs is None or isinstance(rs, numbers.Integral) else repr(rs)
        return out

    def fit(self, X: Any, y: Any) -> "GDTClassifier":
        """Evolve a tree on ``X`` and ``y``.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite
            Cast to float32 (a CSR matrix is kept sparse, a CSC one converted to CSR); at least
            ``min_samples_split`` rows.
        y : array-like of shape (n_samples,)
            Class labels of any kind.

        Returns
        -------
        self : GDTClassifier
            The fitted estimator.

        Raises
        ------
        TypeError
            Non-numeric features or parameters of the wrong type.
        ValueError
            NaN/inf features, mismatched shapes, fewer rows than
            ``min_samples_split``, out-of-range parameters, an unknown backend,
            more devices than present.
        RuntimeError
            ``backend="cuda"`` without a usable GPU; a Dask client that is
            closed or unreachable, or a cluster that lost every worker.
        MemoryError
            Data too large for the devices (raised before anything is allocated).

        A failed fit leaves no fitted attribute behind (the estimator is unfitted).

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.evolution import GDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GDTClassifier(population_size=8, max_generations=10, random_state=0).fit(X, y)
        >>> clf.classes_
        array([0, 1])
        >>> clf.n_generations_ <= 10
        True
        """
        try:
            with thread_scope(self.n_jobs):
                return self._fit(X, y)
        except BaseException:
            for name in FITTED_ATTRIBUTES:
                self.__dict__.pop(name, None)
            raise

    def _fit(self, X: Any, y: Any) -> "GDTClassifier":
        params = self._validated_params()
        check_verbose(self.verbose)
        size_alpha = check_size_alpha(self.size_alpha)
        size_cv = check_int(self.size_cv, "size_cv", low=2)
        n_devices = check_int(self.n_devices, "n_devices", low=1, allow_none=True)
        checkpoint_every = check_int(self.checkpoint_every, "checkpoint_every", low=1)
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable or None, got {type(self.callback).__name__}")
        evaluator_key = resolve_evaluator(self.backend, self.evaluator)
        check_executor(self.executor)
        check_sklearn_input_shape(X)
        remember_feature_names(self, X)
        X = check_gdt_X(X)  # float32 array, or CSR (never densified) for scipy.sparse input
        y = np.asarray(fit_target(y, X.shape[0], self))
        check_classification_targets(y)  # "Unknown label type: continuous" for non-integer floats
        if X.shape[0] < params.min_samples_split:
            raise ValueError(f"X has n_samples={X.shape[0]}, fewer than min_samples_split={params.min_samples_split};"
                             " GDT needs at least that many training objects to grow a test")
        self.classes_, y_enc = encode_labels(y)
        self.n_features_in_ = X.shape[1]
        n_classes = len(self.classes_)
        if n_classes == 1:
            warnings.warn(f"y has a single class ({self.classes_[0]!r}); the tree is one leaf predicting it",
                          UserWarning, stacklevel=2)
            leaf = Individual.leaf(1)
            leaf.counts[0, 0] = X.shape[0]
            leaf.accuracy, leaf.fitness, leaf.evaluated = 1.0, 1.0, True
            self._finish(leaf, [leaf], [], "single_class")
            return self
        evaluator = make_evaluator(evaluator_key, X, y_enc, n_classes, n_devices, self.executor)
        try:
            state = self._start(X, y_enc, n_classes, evaluator, params)
            self._evolve(state, X, y_enc, evaluator, params, checkpoint_every)
        finally:
            evaluator.close()
        if size_alpha == "cv":
            from .front import cv_size_alpha

            size_alpha, self.cv_results_ = cv_size_alpha(self, X, y, size_cv, self.random_state)
        self._choose(size_alpha)
        return self

    def _start(self, X, y_enc, n_classes, evaluator, params) -> RunState:
        if self.checkpoint is not None and ckpt.exists(self.checkpoint):
            return ckpt.resume(self.checkpoint, X, y_enc, n_classes, ckpt._jsonable(self._search_params()),
                               RESUMABLE_CHANGES)
        rng = np.random.default_rng(self.random_state)
        return initial_state(X, y_enc, n_classes, evaluator, params, rng)

    def _evolve(self, state: RunState, X, y_enc, evaluator, params: EvolutionParams, checkpoint_every: int) -> None:
        from .session import evolve

        evolve(state, X, evaluator, params, verbose=check_verbose(self.verbose) > 0, callback=self.callback,
               checkpoint=self.checkpoint, checkpoint_every=checkpoint_every, search_params=self._search_params(),
               fingerprint=ckpt.data_fingerprint(X, y_enc) if self.checkpoint is not None else "")
        self._finish(state.best_individual(), state.front.non_dominated(), state.history, state.stop_reason,
                     state.generation, X)

    def _finish(self, best: Individual, front: list[Individual], history: list[dict], stop_reason: str,
                generations: int = 0, X: np.ndarray | None = None) -> None:
        import pandas as pd

        from .front import finish

        self.tree_, self.front_, self.size_path_ = finish(best, front, X, self.n_features_in_, self.classes_,
                                                          generations)
        self.best_tree_, self.size_alpha_, self.cv_results_ = self.tree_, None, None
        self.best_fitness_ = float(best.fitness)
        self.history_ = pd.DataFrame(history, columns=["generation", "best_fitness", "best_size", "best_leaves",
                                                       "best_accuracy", "mean_fitness", "mean_size",
                                                       "n_evaluated", "seconds", "elapsed_s"])
        self.n_generations_ = int(generations)
        self.stop_reason_ = stop_reason

    def _choose(self, size_alpha: float | None) -> None:
        """``tree_``: the evolution's best (None), or the front's tree for complexity weight ``size_alpha``."""
        from .front import choose_tree

        self.size_alpha_ = size_alpha
        self.tree_ = self.best_tree_ if size_alpha is None else choose_tree(self.front_, size_alpha)

    def _check_predict_input(self, X: Any) -> np.ndarray:
        self._fitted_tree()  # NotFittedError before X is looked at
        check_sklearn_input_shape(X)
        n_features = getattr(X, "shape", (0, None))[1] if getattr(X, "ndim", 2) == 2 else None
        if n_features is not None and n_features != self.n_features_in_:
            raise ValueError(f"X has {n_features} features, but GDTClassifier is expecting {self.n_features_in_} "
                             "features as input (the number seen during fit)")
        # float32 as in fit, so a test value compares with a threshold exactly as in training
        return check_gdt_X(X, n_features=self.n_features_in_, min_samples=0)

    def apply(self, X: Any) -> np.ndarray:
        """Index of the leaf of ``tree_`` each row reaches, int32 of shape (n_samples,)."""
        X = self._check_predict_input(X)
        with thread_scope(self.n_jobs):
            return tree_call(self.tree_, "apply", X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Training class frequencies of the leaf each row reaches.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite
            Cast to float32 as in ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes), float64
            Columns in the order of ``classes_``; each row sums to 1.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.evolution import GDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GDTClassifier(population_size=8, max_generations=10, random_state=0).fit(X, y)
        >>> proba = clf.predict_proba(X[:5])
        >>> proba.shape, proba.dtype
        ((5, 2), dtype('float64'))
        >>> bool(np.allclose(proba.sum(axis=1), 1.0))
        True
        """
        X = self._check_predict_input(X)
        with thread_scope(self.n_jobs):
            return tree_call(self.tree_, "predict_proba", X)

    def predict(self, X: Any) -> np.ndarray:
        """Majority training class of the leaf each row reaches.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features), numeric, finite
            Cast to float32 as in ``fit``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Labels of ``classes_``, of its dtype.

        Examples
        --------
        >>> import numpy as np
        >>> from dtlab.evolution import GDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GDTClassifier(population_size=8, max_generations=10, random_state=0).fit(X, y)
        >>> clf.predict(X[:3]).shape
        (3,)
        >>> set(clf.predict(X)) <= {0, 1}
        True
        """
        X = self._check_predict_input(X)
        with thread_scope(self.n_jobs):
            return tree_call(self.tree_, "predict", X)

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
        >>> from dtlab.evolution import GDTClassifier
        >>> rng = np.random.default_rng(0)
        >>> X = rng.normal(size=(100, 4))
        >>> y = (X[:, 0] + X[:, 1] > 0).astype(int)
        >>> clf = GDTClassifier(population_size=8, max_generations=10, random_state=0).fit(X, y)
        >>> 0.5 < clf.score(X, y) <= 1.0
        True
        """
        return float(super().score(X, y, sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan, tags.input_tags.sparse = False, True  # scipy.sparse: CSR, CSC converted
        return tags
