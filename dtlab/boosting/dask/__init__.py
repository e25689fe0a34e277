"""GBDTRegressor / GBDTClassifier on a Dask cluster: how a fit travels.

A fit with a Dask ``executor`` (``fit`` hands it to :func:`.fit.fit_on_dask`) goes through these steps; every
one gives the numbers one process would compute, so the model is an ordinary fitted estimator.

1. **Parts** -- the rows are cut into one part per live worker and put there once
   (:func:`dtlab.distributed.dask_data.row_parts` for ``"hist"``, whole column slices for ``"exact"``); each
   part lives in a replica on its worker for the whole fit (:class:`dtlab.distributed.replicas.Replicas`:
   numbered messages, a lost worker's part rebuilt from the journal).
2. **Bins** (``"hist"``) -- the bin cuts of the whole data from two queries of per-part sketches, equal to
   the single-process cuts whatever the partitioning (:mod:`.bins`).
3. **Labels** -- classes, counts and the base margin from per-part summaries where the labels are; eval
   sets on Dask evaluated where their rows are (:mod:`.labels`).
4. **The hist loop** (:mod:`.hist`, data-parallel) -- per tree and level the parts build the histograms of
   their rows and the split decisions come back; how the histograms are exchanged is the estimator's
   ``dask_hist_loop``: ``"collective"`` (default), the workers add them among themselves over sockets of
   their own, one task per worker for the whole fit or per round (:mod:`.collective`, over
   :mod:`dtlab.distributed.collective`: numeric frames only, members proven by a per-fit secret); or
   ``"scheduler"``, one round trip through the scheduler per level (:func:`.fit.boost_on_workers`).  Both
   add in part order and grow the same trees; on a TLS cluster the collective is not formed and the fit
   takes the scheduler loop with a warning.
5. **The exact loop** (:mod:`.exact`, feature-parallel, swGBDT's core groups across machines) -- each worker
   holds every row of a slice of the columns, sorted once; per level the rows' sides go out as one bit
   per row and each worker's best splits come back; the client runs the single-process grower, so the
   trees are the single-process trees for any number of workers.
6. **The model** -- the estimator's own loop of eval sets, callbacks, early stopping and progress runs on
   the client (:class:`.fit.DaskEngine`); ``predict`` on Dask input returns Dask collections
   (:func:`.fit.margins_on_dask`, :class:`dtlab.inference.Forest` over the partitions).

``dask_stats_`` of a fitted estimator holds what the fit sent and received, per level, and which loop ran.
"""
