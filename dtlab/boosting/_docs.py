"""The parameters section shared by the docstrings of GBDTRegressor and GBDTClassifier."""

PARAMETERS_DOC = """
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
        bottom up.  LightGBM's ``min_split_gain`` is not accepted as its alias:
        it refuses a split while the tree grows, where ``gamma`` prunes a grown
        tree from its leaves up (a split below ``gamma`` stays when a split
        under it passes).
    min_child_weight : float >= 0, default=1.0
        Minimum hessian sum of each child.
    subsample : float in (0, 1], default=1.0
        Share of the rows each tree is grown on (the others get ``g = h = 0`` for it): row ``i`` is in tree
        ``t``'s sample when a hash of ``(random_state, t, i)`` falls below it, so the same rows on any number
        of threads or devices (:mod:`dtlab.boosting.sampling`).
    colsample_bytree, colsample_bylevel : float in (0, 1], default=1.0
        Share of the features each tree, and each level of it among the tree's, may split on (XGBoost's
        nesting), drawn by the same seeded hash.
    split_method : {"auto", "exact", "hist"}, default="auto"
        ``"exact"``: every distinct value is a candidate (features sorted once,
        prefix sums, stable partitions; XGBoost's ``tree_method="exact"``).
        ``"hist"``: candidates are ``max_bins`` quantile bins (one histogram per
        node, the sibling by subtraction).  ``"auto"`` runs ``"exact"`` where it
        serves and ``"hist"`` where only it does: ``grow_policy="lossguide"``
        and categorical features (as XGBoost's former ``tree_method="auto"``
        chose by the data).  ``split_method_`` says which one a fit ran.
        XGBoost 2, LightGBM and scikit-learn's HistGradientBoosting default to
        histograms; ``"auto"`` keeps exact search, this package's subject, for
        the fits it can grow.
    tree_method : {"auto", "exact", "hist"} or None, default=None
        XGBoost's name of ``split_method``, accepted so that XGBoost code runs
        unchanged (``"approx"`` has no counterpart here: use ``"hist"``); None
        leaves ``split_method`` in charge.  Setting both to different methods
        is an error.
    max_bins : int in [2, 256], default=256
        Bins per feature for ``"hist"`` (one of them holds the missing values).
    max_bin : int in [2, 256] or None, default=None
        XGBoost's and LightGBM's name of ``max_bins``; None leaves ``max_bins``
        in charge.  Setting both to different values is an error.
    grow_policy : {"depthwise", "lossguide"}, default="depthwise"
        ``"depthwise"``: level by level to ``max_depth``; ``"lossguide"`` (``"hist"`` only, as in XGBoost):
        leaf-wise, always the leaf of largest loss change next, LightGBM's growth.
    max_leaves : int >= 0, default=0
        Most leaves of a ``"lossguide"`` tree (LightGBM's ``num_leaves``; 0: no limit but ``max_depth``,
        which may then be 0 for none).  ``num_leaves`` is not accepted as its alias: LightGBM always grows
        leaf-wise, where ``max_leaves`` also needs ``grow_policy="lossguide"`` (depthwise growth, the
        default, refuses it), so LightGBM's code would not run unchanged anyway; set both.
    categorical_features : "auto", None, indices, names or bool mask, default="auto"
        Features split as categories (``"hist"`` only, as in XGBoost and LightGBM): ``"auto"`` takes the
        pandas ``category`` columns; integer-coded columns (non-negative whole numbers) can be named.  A
        split sends a set of categories left: the categories ordered by ``G/H`` and the best prefix taken
        (LightGBM's and XGBoost's partition method), or one category against the rest for a feature of at
        most ``max_cat_to_onehot`` categories; unseen categories go right, missing ones the learnt way.
        The name is scikit-learn's (``HistGradientBoosting*``); LightGBM's ``categorical_feature`` (a
        ``fit`` argument) and XGBoost's ``enable_categorical`` (with the pandas dtypes) are not aliases.
    max_cat_to_onehot : int >= 1, default=4
        Features with at most this many categories split one category against the rest.
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
        :class:`dtlab.inference.Forest`'s on the same backend.  XGBoost's
        ``device`` (LightGBM's ``device_type``) is not accepted as its alias: it
        also picks a GPU by ordinal (``"cuda:1"``), which ``backend`` does not
        (the current numba device is used), and has no ``"auto"``.
    n_jobs : int or None, default=None
        Threads of fit (feature slices) and predict (:func:`dtlab.backend.resolve_threads`: ``None``, numba's
        current thread count; -1, all of numba's threads).
    random_state : int, RandomState or None, default=None
        Seed of ``subsample`` and ``colsample_*`` (nothing is drawn when they are 1): the same seed gives the
        same model on every backend, thread and device count.
    verbose : int >= 0 or bool, default=0
        Progress reporting, scikit-learn's convention: 0 is silent, True and
        False count as 1 and 0.  From 1, a tqdm progress bar over the rounds
        (:class:`dtlab.callbacks.ProgressBar`).  Not XGBoost's ``verbosity``
        (which sets the level of its log messages, warnings at its default 1)
        nor LightGBM's ``verbose`` (whose silent value -1 is an error here: use 0).
    executor : "local", "dask", scheduler address or distributed.Client, default="local"
        Who fits (GDT's selector): this process, or the workers of a Dask cluster -- ``"dask"`` for the
        session's default client, an address, or a client.  ``"hist"`` is data-parallel there (each worker
        keeps a partition of the rows; histograms are added up, split decisions sent back:
        :mod:`dtlab.boosting.dask.hist`; the workers exchange them over sockets of their own, numeric frames
        only and only between ranks that prove they hold the fit's secret: :mod:`dtlab.distributed.collective`;
        on a cluster whose workers talk TLS, through the scheduler instead, with a warning), ``"exact"``
        feature-parallel (each worker keeps every row of a
        slice of the columns; the rows' sides go out as one bit per row: :mod:`dtlab.boosting.dask.exact`).
        Exact gives the single-process trees for any number of workers, hist where the sums are exact.
        Dask arrays and DataFrames (labels as a Dask array or Series) need a Dask executor; numpy, pandas
        and scipy.sparse input is scattered.  ``predict`` on Dask input returns Dask collections whatever
        the executor.
    dask_hist_loop : {"collective", "scheduler"}, default="collective"
        How a ``"hist"`` fit on a Dask executor exchanges each level's histograms (LightGBM's Dask interface
        has ``tree_learner`` for the same kind of choice): ``"collective"``, the workers send them to each
        other over sockets of their own (one task per worker for the whole fit, or per round where eval sets
        or callbacks need the client between rounds; the scheduler loop where the group cannot be formed);
        ``"scheduler"``, one round trip through the scheduler per level.  Both grow the same trees;
        ``dask_stats_["loop"]`` says which one ran.  Ignored without a Dask executor.
"""
