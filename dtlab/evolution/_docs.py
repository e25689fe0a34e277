"""The parameters section of GDTClassifier's docstring (kept apart: the estimator's module holds its code)."""

PARAMETERS_DOC = """
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
    size_alpha : None, float >= 0 or "cv"
        Which tree of the run's size-accuracy front (``front_``) becomes
        ``tree_``: None, the evolution's best by its fitness (weight
        ``alpha``); a float, the front's tree maximising training accuracy
        ``- size_alpha * (nodes - 1)``, as ``ccp_alpha`` picks a pruned tree;
        ``"cv"``, the weight whose trees score best on ``size_cv`` held-out
        folds of the training rows (one more GDT run per fold,
        :func:`dtlab.evolution.front.cv_size_alpha`).
    size_cv : int >= 2
        Folds for ``size_alpha="cv"``.
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
        Who drives the devices: ``"local"`` host threads (one per device), or
        a Dask cluster (``"dask"``: the default client; ``"tcp://host:8786"``;
        a client; dask-cuda's ``LocalCUDACluster`` gives one worker per GPU)
        whose workers keep the shards; ``backend`` still says *where* each
        worker computes.  Pass an address where estimators are cloned (a
        client object does not clone safely).
    n_jobs : int or None
        numba threads of fit (the batched CPU evaluator with ``n_devices=None``)
        and predict (:func:`dtlab.backend.resolve_threads`: ``None``, numba's
        current thread count; -1, all of numba's threads).  The fitted tree
        does not depend on it.
    random_state : int, numpy Generator/SeedSequence or None
    verbose : int >= 0 or bool, default=0
        Progress reporting, scikit-learn's convention: 0 is silent, True and
        False count as 1 and 0.  From 1, a progress bar over the generations
        (:class:`dtlab.callbacks.ProgressBar`) with the best fitness and size.
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
        ``dtlab.callbacks.EarlyStopping(50, "best_fitness", minimize=False)``."""
