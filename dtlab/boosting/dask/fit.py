"""GBDTRegressor / GBDTClassifier on a Dask cluster: the data put on the workers, the fit's engine, Dask
predictions.

:func:`fit_on_dask` is what the estimators' ``fit`` runs with a Dask
``executor``.  ``split_method="hist"`` keeps a partition of the rows on each
worker (:mod:`.hist`; targets, margins and gradients stay there too;
the workers exchange each level's histograms among themselves,
:mod:`.collective`, or through the client, :func:`boost_on_workers`),
``"exact"`` a slice of the columns with every row (:mod:`.exact`; the
client runs the single-process boosting loop on the targets).  Either way the
estimator's own loop of eval sets, callbacks and progress runs on the client
(:meth:`_GBDT._fit` with this module's :class:`DaskEngine`), and the fitted
model is an ordinary one: ``predict`` works anywhere, and on Dask input it
returns Dask collections (:class:`dtlab.inference.Forest` over the partitions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...backend import resolve_backend
from ...distributed.dask_data import column_parts, row_parts
from ...distributed.replicas import Replicas
from .. import _params
from .._params import HIST_LOOPS
from ..booster import boost
from ..grower import grow_boosted_tree
from ..inputs import FitInputs
from ..losses import LOSSES
from .exact import DaskExactSearch, ExactPart, feature_slices
from .hist import DaskHistSearch, HistPart, TreeStart, first_summaries
from .labels import RoundEvaluationParts, combine_summaries, gather_labels, summarize_targets

__all__ = ["HIST_LOOPS", "DaskEngine", "fit_on_dask", "margins_on_dask", "on_margins"]

#: How a hist fit's levels are exchanged (the estimators' ``dask_hist_loop``): ``"collective"`` (the workers
#: send each other their histograms over sockets, one task per worker per round: :mod:`.collective`; the
#: scheduler-driven loop where they cannot) or ``"scheduler"`` (one round trip through the scheduler per level:
#: :func:`boost_on_workers`; the same trees).  ``dask_stats_["loop"]`` says which one a fit ran.


@dataclass
class ClusterData:
    """What the boosting loop reads of data that stays on the cluster: its shape."""

    n_samples: int
    n_features: int


def _feature_names(X: Any) -> list[str] | None:
    cols = getattr(X, "columns", None)
    return list(cols) if cols is not None and all(isinstance(c, str) for c in cols) else None


def boost_on_workers(search: DaskHistSearch, n_outputs: int, params: dict,
                     on_round: Callable[[int, list], bool] | None = None) -> list:
    """The boosting loop of :func:`~dtlab.boosting.booster.boost` with margins and gradients on the workers:
    round-major trees, the grower unchanged, each tree's node values sent with the next tree."""
    grow = dict(max_depth=params["max_depth"], learning_rate=params["learning_rate"],
                reg_lambda=params["reg_lambda"], gamma=params["gamma"], min_child_weight=params["min_child_weight"])
    trees: list = []
    for r in range(params["n_estimators"]):
        for c in range(n_outputs):
            tree, node_leaf = grow_boosted_tree(search, TreeStart(c, c == 0), None, **grow)
            search.tree_done(c, tree.value[node_leaf])
            trees.append(tree)
        if on_round is not None and on_round(r, trees):
            break
    return trees


class DaskEngine:
    """A fit's work on the cluster, as :meth:`_GBDT._fit` drives it: ``backend``, ``evaluation``, ``boost``.

    Attributes
    ----------
    replicas : :class:`~dtlab.distributed.replicas.Replicas` of the training parts
    search : :class:`~dtlab.boosting.dask.hist.DaskHistSearch` or :class:`~dtlab.boosting.dask.exact.DaskExactSearch`
    """

    backend = resolve_backend("cpu")

    def __init__(self, client: Any, owns_client: bool, replicas: Replicas, search: Any, classes, n_features: int,
                 hist_loop: str = "collective"):
        self.client, self._owns_client, self.n_features = client, owns_client, n_features
        self.hist_loop = hist_loop
        self.replicas, self.search, self.classes = replicas, search, classes
        self._evals: list = []
        self.collective = None
        self.loop = "scheduler" if isinstance(search, DaskHistSearch) else "exact"

    def evaluation(self, eval_set: list, encode: Callable, loss, metric: str, n_outputs: int, base_margin: float):
        """Per-round losses of the eval sets: on the client for host data, on the workers for Dask data."""
        return RoundEvaluationParts(self.client, eval_set, encode, self.classes, loss, metric, self.n_features,
                                    n_outputs, base_margin, self._evals)

    def boost(self, data, y, loss, n_outputs, base_margin, params, backend, n_threads, on_round,
              per_round: bool = True):
        """The fit's trees; ``per_round``: ``on_round`` has work between rounds (eval sets, callbacks, progress),
        else it may be called for each round after the fact (the collective loop then batches rounds)."""
        if isinstance(self.search, DaskHistSearch):
            if self.hist_loop == "collective":
                from .collective import start_collective

                self.collective = start_collective(self.search)
            if self.collective is not None:
                self.loop = "collective"
                return self.collective.boost(n_outputs, params, on_round, per_round)
            return boost_on_workers(self.search, n_outputs, params, on_round)
        return boost(data, y, loss, n_outputs, base_margin, params, backend, n_threads, on_round, search=self.search)

    def stats(self) -> dict:
        """Bytes and seconds of the fit's rounds: what the notebook and the benchmark's model read."""
        r = self.replicas
        stats = {"loop": self.loop, "workers": list(r.executor.workers), "bytes_sent": r.sent_bytes,
                 "bytes_received": r.received_bytes, "round_seconds": r.seconds["round"],
                 "work_seconds": r.seconds["work"], "level_bytes": list(self.search.level_bytes),
                 "resent": r.executor.resent, "round_trips": r.round_trips}
        c = self.collective
        if c is not None:  # the rounds ran outside the replicas' messages: their seconds and bytes added here
            stats["round_seconds"] += c.seconds["round"]
            stats["work_seconds"] += c.seconds["work"]
            stats["exchange_seconds"] = c.seconds["exchange"]
            stats["bytes_received"] += sum(b for _, b in c.level_bytes)
            stats["level_bytes"] += c.level_bytes
            stats["round_trips"] += c.round_trips
        return stats

    def close(self) -> None:
        """Release the parts on the workers (and a client connected by address); idempotent."""
        if getattr(self, "dask_stats", None) is not None:
            return
        self.dask_stats = self.stats()
        for ev in self._evals:
            ev.close()
        if self.collective is not None:
            self.collective.close()
        self.replicas.close()
        if self._owns_client:
            self.client.close()


def _unsupported_on_dask(params: dict, sample_weight: Any, sample_weight_eval_set: Any, X: Any) -> None:
    """A clear error for the options the Dask fit does not carry (rather than a model that ignores them)."""
    if sample_weight is not None or sample_weight_eval_set is not None:
        raise ValueError("sample_weight is not supported with a Dask executor (fit in one process, "
                         "executor='local')")
    if min(params["subsample"], params["colsample_bytree"], params["colsample_bylevel"]) < 1.0:
        raise ValueError("subsample and colsample_* below 1 are not supported with a Dask executor")
    if params["grow_policy"] != "depthwise":
        raise ValueError("grow_policy='lossguide' is not supported with a Dask executor (the workers grow level "
                         "by level)")
    dtypes = getattr(X, "dtypes", None)
    if dtypes is not None and any(str(t) == "category" for t in dtypes):
        raise ValueError("categorical columns are not supported with a Dask executor; encode them as numbers")


def fit_on_dask(est, X: Any, y: Any, sample_weight: Any, eval_set: list | None, sample_weight_eval_set: Any,
                callbacks: list | None):
    """``est.fit(X, y, eval_set=..., callbacks=...)`` on the Dask cluster of ``est.executor``; returns ``est``.

    Sets ``est.dask_stats_`` (workers, bytes sent and received, round and work seconds, bytes per level).
    """
    from ...distributed.dask_executor import alive_workers, connect

    params = _params.check_params(est)
    _unsupported_on_dask(params, sample_weight, sample_weight_eval_set, X)
    if est.backend not in ("auto", "cpu"):
        raise ValueError(f"the Dask executor runs the CPU split searches on its workers; backend={est.backend!r} "
                         "cannot run there (use backend='cpu' or 'auto')")
    if y is None:
        raise ValueError(f"{type(est).__name__} requires y to be passed, but the target y is None")
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got {getattr(X, 'shape', type(X).__name__)}")
    n_features = int(shape[1])
    if n_features == 0:
        raise ValueError(f"X has shape {tuple(shape)}; at least one row and one feature needed")
    classifier = hasattr(est, "predict_proba")
    owns = isinstance(est.executor, str) and est.executor != "dask"
    client = connect(None if est.executor == "dask" else est.executor)
    try:
        n_workers = len(alive_workers(client))
        n_rows = shape[0] if isinstance(shape[0], (int, np.integer)) else None  # a DataFrame's is not known
        if params["split_method"] == "hist":
            parts = row_parts(client, X, y, n_parts=n_workers)
            replicas = Replicas(client, [(xb, yb, params["max_bins"]) for xb, yb in parts], HistPart)
            try:  # the parts' columns and labels summarised in one query
                columns, labels = first_summaries(replicas, params["max_bins"], classifier)
                targets = combine_summaries(labels, classifier)
                _same_rows(n_rows, targets.n_samples)
                loss, n_outputs, base, classes, y_codes = _targets(est, targets, classifier)
                search = DaskHistSearch(replicas, n_features, targets.n_samples, params["max_bins"], 1,
                                        (classes, loss.name, n_outputs, base), columns)
            except BaseException:
                replicas.close()
                raise
        else:
            y_host = gather_labels(client, y)
            targets = summarize_targets(client, [([], [y_host])], classifier)
            _same_rows(n_rows, targets.n_samples)
            loss, n_outputs, base, classes, y_codes = _targets(est, targets, classifier, y_host)
            slices = feature_slices(np.ones(n_features), n_workers)
            blocks = column_parts(client, X, slices)
            replicas = Replicas(client, [(b, f0) for b, (f0, _) in zip(blocks, slices)], ExactPart)
            search = DaskExactSearch(replicas, targets.n_samples)
        engine = DaskEngine(client, owns, replicas, search, classes, n_features, est.dask_hist_loop)
    except BaseException:
        if owns:
            client.close()
        raise
    if classifier:
        est.classes_ = classes
    try:
        inputs = FitInputs(ClusterData(targets.n_samples, n_features), y_codes, None, _feature_names(X),
                           np.zeros(n_features, bool), {})
        est._fit(X, inputs, y_codes, loss, n_outputs, base, eval_set, None, callbacks, engine=engine)
    finally:
        engine.close()  # also where _fit stopped before its rounds
    est.dask_stats_ = engine.dask_stats
    return est


def _same_rows(n_rows: int | None, n_targets: int) -> None:
    if n_rows is not None and n_rows != n_targets:
        raise ValueError(f"X has {n_rows} rows but y has {n_targets}")


def _targets(est, targets, classifier: bool, y_host: np.ndarray | None = None):
    """Loss, outputs, base margin, classes and (with ``y_host``) the encoded targets, as the local fit has them."""
    if not classifier:
        base = targets.mean if est.base_score is None else _params.check_real(est.base_score, "base_score")
        y = None if y_host is None else np.asarray(y_host, np.float32)
        return LOSSES["squared_error"], 1, float(base), None, y
    classes = targets.classes
    if classes.shape[0] < 2:
        raise ValueError(f"y has one class only ({classes[0]!r}); a classifier needs at least two")
    codes = None if y_host is None else np.searchsorted(classes, y_host).astype(np.int32)
    if classes.shape[0] == 2:
        loss = LOSSES["logistic"]
        p = targets.positive / targets.n_samples if est.base_score is None else est.base_score
        return loss, 1, loss.base_margin(_params.check_real(p, "base_score")), classes, \
            None if codes is None else codes.astype(np.float32)
    base = 0.0 if est.base_score is None else _params.check_real(est.base_score, "base_score")
    return LOSSES["softmax"], classes.shape[0], base, classes, codes


def margins_on_dask(est, X: Any):
    """The model's float32 margins of a Dask array (a Dask array (n_samples, n_outputs)) or DataFrame
    (a Dask DataFrame of ``n_outputs`` columns), partition by partition through :class:`dtlab.inference.Forest`."""
    if X.ndim == 2 and X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input")
    return _Margins(est._predictor.predict(X), frame=hasattr(X, "columns"))


class _Margins:
    """Dask margins and whether they came from a DataFrame (predictions then keep its index)."""

    def __init__(self, raw: Any, frame: bool):
        self.raw, self.frame = raw, frame


def on_margins(margins: Any, fn: Callable[[np.ndarray], np.ndarray], columns: list | None = None,
               dtype: Any = None):
    """``fn`` of float32 margins (n_samples, n_outputs): directly for numpy, per partition for Dask margins
    (a Dask array, or a Series / DataFrame -- ``columns`` -- for DataFrame input)."""
    if not isinstance(margins, _Margins):
        return fn(margins)
    import pandas as pd

    def block(raw):
        values = np.asarray(raw)
        return fn(values.reshape(values.shape[0], -1).astype(np.float32))

    probe = block(np.zeros((1, 1) if margins.raw.ndim == 1 else (1, margins.raw.shape[1])))
    out_dtype = probe.dtype if dtype is None else dtype
    if margins.frame:
        def frame(part):
            out = block(part.to_numpy())
            if out.ndim == 1:
                return pd.Series(out, index=part.index, name="prediction")
            return pd.DataFrame(out, index=part.index, columns=columns)

        meta = pd.Series([], dtype=out_dtype, name="prediction") if probe.ndim == 1 else \
            pd.DataFrame({c: pd.Series([], dtype=out_dtype) for c in columns})
        return margins.raw.map_partitions(frame, meta=meta)
    raw = margins.raw
    if probe.ndim == 1:
        return raw.map_blocks(block, drop_axis=list(range(1, raw.ndim)), dtype=out_dtype)
    chunks = (raw.chunks[0], (probe.shape[1],))
    return raw.map_blocks(block, chunks=chunks, dtype=out_dtype, new_axis=None if raw.ndim == 2 else 1)

