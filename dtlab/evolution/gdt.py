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

from .._validation import check_int, check_real, check_sklearn_input_shape, check_X, encode_labels, fit_target
from ..backend import thread_scope
from ..callbacks import ProgressBar, run_callbacks
from . import checkpoint as ckpt
from .algorithm import EvolutionParams, RunState, initial_state, run
from .defaults import default
from .evaluators import check_executor, make_evaluator, resolve_evaluator
from .individual import Individual, center_thresholds, remove_empty_branches, to_flat_tree
from .operators import OperatorContext

#: Parameters a resumed run may change (they do not alter the search itself).
RESUMABLE_CHANGES = ("max_generations", "max_stagnation", "backend", "evaluator", "n_devices", "executor",
                     "n_jobs", "verbose", "checkpoint", "checkpoint_every", "callback")

#: What a fit sets; removed again when a fit fails, so nothing half-fitted is left behind.
FITTED_ATTRIBUTES = ("tree_", "classes_", "n_features_in_", "history_", "n_generations_", "stop_reason_",
                     "best_fitness_")


def _fit_target(y: Any, n_samples: int, estimator: Any) -> np.ndarray:
    """Class labels for ``fit`` (:func:`~dtlab._validation.fit_target`), refused when continuous."""
    from sklearn.utils.multiclass import type_of_target

    y = np.asarray(fit_target(y, n_samples, estimator))
    if y.dtype.kind == "f" and type_of_target(y) == "continuous":
        raise ValueError("Unknown label type: continuous. GDTClassifier is a classifier and needs discrete "
                         "class labels (ints, strings, or floats with few distinct values); got non-integer floats")
    return y


class GDTClassifier(ClassifierMixin, BaseEstimator):
    """Evolutionary induction of a univariate binary classification tree (GDT).

    Parameters
    ----------
    population_size : int >= 2
    max_generations : int >= 0
        Stop after this many generations.
    max_stagnation : int >= 1
        Stop after this many generations without improvement of the best individual.
    alpha : float >= 0
        Weight of the size penalty in ``Accuracy(T) - alpha * (Size(T) - 1)``
        (size = number of nodes, accuracy on the training data).
    crossover_probability, mutation_probability : float in [0, 1]
        Per pair / per individual and generation.
    n_elite : int >= 1
        Best individuals copied unchanged into each generation (the first is
        the best found so far).
    ranking_pressure : float in [1, 2]
        Expected copies of the best-ranked individual in linear ranking selection.
    prune_probability, exchange_probability, new_test_probability, shift_probability : float >= 0
        Relative weights of the internal-node mutation variants (normalised).
    init_sample_fraction : float in (0, 1]
    init_max_samples : int >= 1
    init_max_depth : int >= 1
        Initial trees are grown on a random fraction of the rows (at most
        ``init_max_samples``) to a random depth limit in ``1..init_max_depth``.
    min_samples_split : int >= 2
        Nodes with fewer objects are not split when growing initial trees.
    max_depth : int >= 1
        Expand mutations never grow deeper trees.
    local_pruning : float in [0, 1]
        Probability that a changed tree, after its evaluation, has the
        subtrees pruned that do not pay for their size in fitness (GDT's local
        fitness maximisation).
    backend : {"auto", "cpu", "cuda"}
        Where the fitness evaluation runs (``"auto"``: a GPU when a CUDA
        evaluator is registered and a GPU is present, else the CPU).
    evaluator : {"batched", "reference"}
        The evaluation algorithm: ``"batched"``, every changed tree of a
        generation in one pass of compiled kernels; ``"reference"``, the plain
        NumPy evaluator, one tree at a time (slow; what the kernels are tested
        against).  Both give the same statistics, hence the same tree.
    n_devices : int or None
        Devices the rows are spread over, each owning its shard for the whole
        run: GPUs for ``backend="cuda"`` (None: as few as hold the data; more
        than present is an error naming how many there are), CPU workers of
        one thread each for ``backend="cpu"`` (None: one copy of the data on
        all of numba's threads; more workers than cores run with a warning),
        shards on the workers with a Dask executor (None: one per worker).
        The fitted tree does not depend on it.
    executor : "local", "dask", scheduler address or distributed.Client
        Who drives the devices.  ``"local"``: host threads of this process
        (one per device).  Otherwise a Dask cluster -- ``"dask"`` for the
        session's default client, an address such as ``"tcp://host:8786"``, or
        a client -- whose workers keep the shards (dask-cuda's
        ``LocalCUDACluster`` gives one worker per GPU).  Kept apart from
        ``backend`` so that ``backend`` means, as everywhere in dtlab, *where*
        the work runs (the CPU or a GPU, here on each worker), while
        ``executor`` says which machines take part; ``evaluator`` names the
        algorithm.  A client object is not copied by ``sklearn.clone`` safely:
        pass an address where estimators are cloned.
    n_jobs : int or None
        numba threads of fit (the batched CPU evaluator with ``n_devices=None``)
        and predict (:func:`dtlab.backend.resolve_threads`: ``None``, numba's
        current thread count; -1, all of numba's threads).  The fitted tree
        does not depend on it.
    random_state : int, numpy Generator/SeedSequence or None
    verbose : bool
        Show a progress bar (:class:`dtlab.callbacks.ProgressBar`) with the best fitness and size.
    checkpoint : str or path or None
        Folder where the run is saved every ``checkpoint_every`` generations,
        at the end and on interruption; ``fit`` resumes from it when it holds a
        checkpoint of the same data and parameters, and reaches the same final
        tree as an uninterrupted run.
    checkpoint_every : int >= 1
    callback : callable or None
        ``callback(generation: int, record: dict) -> bool | None`` after every
        generation (the protocol of :mod:`dtlab.callbacks`, shared with GBDT);
        ``record`` is the generation's history row.  Returning True stops the
        run (the best tree so far is kept); e.g.
        ``dtlab.callbacks.EarlyStopping(50, "best_fitness", minimize=False)``.

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

    Notes
    -----
    The final tree is the best individual with two changes that leave every
    training prediction as it is: splits that received no training object are
    removed (so ``tree_.n_nodes`` can be below ``history_.best_size``), and each
    threshold is moved to the midpoint between the nearest training values on
    either side, as CART places its thresholds (the evolution only pins a
    threshold down to somewhere in that gap).

    Interrupting ``fit`` (Ctrl-C, ``KeyboardInterrupt``) after the initial
    population ends the run at the last completed generation with a warning;
    the fitted attributes hold the best tree found so far, ``stop_reason_`` is
    ``"interrupted"`` and, with ``checkpoint``, the run is saved so that the
    next ``fit`` resumes it exactly.

    The result depends only on the data, the parameters and ``random_state``:
    not on ``n_devices``, the evaluator or the number of threads, because the
    evaluators' random draws are keyed on row ids (see
    :mod:`dtlab.evolution.kernels`).

    Examples
    --------
    >>> from dtlab.datasets import chess3x3
    >>> X, y = chess3x3(2000, seed=0)
    >>> clf = GDTClassifier(max_generations=300, random_state=0).fit(X, y)  # doctest: +SKIP
    >>> clf.tree_.n_nodes  # doctest: +SKIP
    17
    """

    def __init__(self, population_size: int = default("population_size"),
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
                 backend: str = "auto", evaluator: str = "batched", n_devices: int | None = None,
                 executor: Any = "local", n_jobs: int | None = None, random_state: Any = None,
                 verbose: bool = False, checkpoint: str | Path | None = None,
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

    # ------------------------------------------------------------ validation
    def _validated_params(self) -> EvolutionParams:
        population_size = check_int(self.population_size, "population_size", low=2)
        n_elite = check_int(self.n_elite, "n_elite", low=1, high=population_size - 1)
        weights = np.array([check_real(getattr(self, f"{v}_probability"), f"{v}_probability", low=0.0)
                            for v in ("prune", "exchange", "new_test", "shift")])
        if weights.sum() <= 0:
            raise ValueError("prune/exchange/new_test/shift probabilities are all 0; at least one must be > 0")
        return EvolutionParams(
            population_size=population_size,
            max_generations=check_int(self.max_generations, "max_generations", low=0),
            max_stagnation=check_int(self.max_stagnation, "max_stagnation", low=1),
            alpha=check_real(self.alpha, "alpha", low=0.0),
            crossover_probability=check_real(self.crossover_probability, "crossover_probability", low=0.0, high=1.0),
            mutation_probability=check_real(self.mutation_probability, "mutation_probability", low=0.0, high=1.0),
            n_elite=n_elite,
            ranking_pressure=check_real(self.ranking_pressure, "ranking_pressure", low=1.0, high=2.0),
            variant_p=weights / weights.sum(),
            init_sample_fraction=check_real(self.init_sample_fraction, "init_sample_fraction", low=0.0,
                                            high=1.0, low_inclusive=False),
            init_max_samples=check_int(self.init_max_samples, "init_max_samples", low=1),
            init_max_depth=check_int(self.init_max_depth, "init_max_depth", low=1),
            min_samples_split=check_int(self.min_samples_split, "min_samples_split", low=2),
            max_depth=check_int(self.max_depth, "max_depth", low=1),
            local_pruning=check_real(self.local_pruning, "local_pruning", low=0.0, high=1.0),
        )

    def _search_params(self) -> dict[str, Any]:
        """Parameters that shape the search (must match to resume a checkpoint)."""
        params = self.get_params()
        out = {k: v for k, v in params.items() if k not in RESUMABLE_CHANGES and k != "random_state"}
        rs = self.random_state
        out["random_state"] = rs if rs is None or isinstance(rs, numbers.Integral) else repr(rs)
        return out

    # -------------------------------------------------------------------- fit
    def fit(self, X: Any, y: Any) -> "GDTClassifier":
        """Evolve a tree on ``X`` (n_samples, n_features) and ``y`` (n_samples,).

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
        n_devices = check_int(self.n_devices, "n_devices", low=1, allow_none=True)
        checkpoint_every = check_int(self.checkpoint_every, "checkpoint_every", low=1)
        if self.callback is not None and not callable(self.callback):
            raise TypeError(f"callback must be callable or None, got {type(self.callback).__name__}")
        evaluator_key = resolve_evaluator(self.backend, self.evaluator)
        check_executor(self.executor)
        check_sklearn_input_shape(X)
        X = check_X(X, dtype=np.float32)
        y = _fit_target(y, X.shape[0], self)
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
            self._finish(leaf, [], "single_class")
            return self
        evaluator = make_evaluator(evaluator_key, X, y_enc, n_classes, n_devices, self.executor)
        try:
            state = self._start(X, y_enc, n_classes, evaluator, params)
            self._evolve(state, X, y_enc, evaluator, params, checkpoint_every)
        finally:
            evaluator.close()
        return self

    def _start(self, X, y_enc, n_classes, evaluator, params) -> RunState:
        if self.checkpoint is not None and ckpt.exists(self.checkpoint):
            state, saved_params, fingerprint = ckpt.load(self.checkpoint)
            if fingerprint != ckpt.data_fingerprint(X, y_enc):
                raise ValueError(f"the checkpoint in {self.checkpoint} was made on other training data; "
                                 "use another checkpoint folder or delete it to start afresh")
            current = ckpt._jsonable(self._search_params())
            changed = sorted(k for k in set(current) | set(saved_params) if current.get(k) != saved_params.get(k))
            if changed:
                differences = ", ".join(f"{k}: {saved_params.get(k)!r} -> {current.get(k)!r}" for k in changed)
                raise ValueError(f"the checkpoint in {self.checkpoint} was made with other parameters "
                                 f"({differences}); "
                                 f"only {', '.join(RESUMABLE_CHANGES)} may change when resuming")
            if state.stop_reason in ("max_generations", "stagnation", "callback", "interrupted"):
                state.stop_reason = None  # limits may have been raised; run() re-checks them
            return state
        rng = np.random.default_rng(self.random_state)
        return initial_state(X, y_enc, n_classes, evaluator, params, rng)

    def _evolve(self, state: RunState, X, y_enc, evaluator, params: EvolutionParams, checkpoint_every: int) -> None:
        span = (X.max(axis=0).astype(np.float64) - X.min(axis=0).astype(np.float64))
        ctx = OperatorContext(rng=state.rng, fetch_rows=evaluator.rows, feature_span=span, n_samples=X.shape[0],
                              variant_p=params.variant_p, max_depth=params.max_depth,
                              ranking_pressure=params.ranking_pressure)
        fingerprint = ckpt.data_fingerprint(X, y_enc) if self.checkpoint is not None else ""
        search_params = self._search_params()

        def save():
            if self.checkpoint is not None:
                ckpt.save(self.checkpoint, state, search_params, fingerprint)

        bar = None
        if self.verbose:
            bar = ProgressBar(params.max_generations, "GDT", initial=state.generation, unit="gen",
                              postfix=lambda rec: {"fitness": f"{rec['best_fitness']:.5f}", "size": rec["best_size"]})
        callbacks = [c for c in (bar, self.callback) if c is not None]  # dtlab.callbacks' protocol, as GBDT's

        def after_generation(st: RunState, rec: dict) -> bool:
            if st.generation % checkpoint_every == 0:
                save()
            return run_callbacks(callbacks, st.generation, rec)

        try:
            run(state, evaluator, params, ctx, after_generation)
        except KeyboardInterrupt:
            state.stop_reason = "interrupted"
            warnings.warn(f"GDT interrupted after {state.generation} generations; keeping the best tree so far "
                          f"(fitness {state.best.fitness:.6f}, {state.best.n_nodes} nodes)"
                          + (f"; the run is saved in {self.checkpoint} and resumes from there" if self.checkpoint
                             else ""), UserWarning, stacklevel=3)
        finally:
            if bar is not None:
                bar.close()
        save()
        self._finish(state.best, state.history, state.stop_reason, state.generation, X)

    def _finish(self, best: Individual, history: list[dict], stop_reason: str, generations: int = 0,
                X: np.ndarray | None = None) -> None:
        import pandas as pd

        final = remove_empty_branches(best)
        if X is not None:
            final = center_thresholds(final, X)
        self.tree_ = to_flat_tree(final, self.n_features_in_, self.classes_,
                                  metadata={"source": "dtlab.evolution.GDTClassifier",
                                            "fitness": float(best.fitness),
                                            "training_accuracy": float(best.accuracy),
                                            "generations": int(generations)})
        self.best_fitness_ = float(best.fitness)
        self.history_ = pd.DataFrame(history, columns=["generation", "best_fitness", "best_size", "best_leaves",
                                                       "best_accuracy", "mean_fitness", "mean_size",
                                                       "n_evaluated", "seconds", "elapsed_s"])
        self.n_generations_ = int(generations)
        self.stop_reason_ = stop_reason

    # ---------------------------------------------------------------- predict
    def _check_predict_input(self, X: Any) -> np.ndarray:
        if not hasattr(self, "tree_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("this GDTClassifier is not fitted yet; call fit(X, y) first")
        check_sklearn_input_shape(X)
        n_features = getattr(X, "shape", (0, None))[1] if getattr(X, "ndim", 2) == 2 else None
        if n_features is not None and n_features != self.n_features_in_:
            raise ValueError(f"X has {n_features} features, but GDTClassifier is expecting {self.n_features_in_} "
                             "features as input (the number seen during fit)")
        # float32 as in fit, so a test value compares with a threshold exactly as in training
        return check_X(X, dtype=np.float32, n_features=self.n_features_in_, min_samples=0)

    def apply(self, X: Any) -> np.ndarray:
        """Index of the leaf of ``tree_`` each row reaches, int32 of shape (n_samples,)."""
        X = self._check_predict_input(X)
        with thread_scope(self.n_jobs):
            return self.tree_.apply(X, backend="cpu")

    def predict_proba(self, X: Any) -> np.ndarray:
        """Training class frequencies of the reached leaf, float64 of shape (n_samples, n_classes)."""
        X = self._check_predict_input(X)
        with thread_scope(self.n_jobs):
            return self.tree_.predict_proba(X, backend="cpu")

    def predict(self, X: Any) -> np.ndarray:
        """Majority training class of the reached leaf, shape (n_samples,), labels as in ``classes_``."""
        X = self._check_predict_input(X)
        with thread_scope(self.n_jobs):
            return self.tree_.predict(X, backend="cpu")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        return tags
