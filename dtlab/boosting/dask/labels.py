"""Targets and eval sets of a Dask fit: summaries where the labels are, per-round losses where the rows are.

:func:`summarize_targets` reduces each label block to its rows, distinct
labels and counts (classification) or its sum (regression) on the worker
holding it, so the classes, the positive share and the mean target -- the
base margin -- are those of the whole data without moving it; they equal the
single-process values where one process computes them exactly (class counts
always; the float32 mean of small-integer targets).

:class:`RoundEvaluationParts` gives the estimator's per-round eval record: a
host eval set is evaluated on the client (:class:`~..booster.RoundEvaluation`),
a Dask one on the workers holding its partitions -- each keeps its rows'
margins and adds every round's trees to them -- and the per-part losses are
combined on the client.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ...distributed.dask_data import row_parts, stack_rows
from ...distributed.executors import is_dask_collection
from ...distributed.replicas import Replicas
from .. import _params
from ..booster import RoundEvaluation
from ..losses import LOSSES
from .hist import block_summary as _block_summary
from .hist import encode_part_labels

__all__ = ["RoundEvaluationParts", "Targets", "combine_summaries", "gather_labels", "summarize_targets"]


@dataclass
class Targets:
    """The whole data's targets, summarised: rows; classes and rows of ``classes[-1]`` (classification);
    the float32 mean (regression)."""

    n_samples: int
    classes: np.ndarray | None = None
    positive: int = 0
    mean: float = 0.0


def summarize_targets(client: Any, parts: list, classifier: bool) -> Targets:
    """:class:`Targets` of every part's label blocks (host arrays or futures), each block summarised where
    it is."""
    from distributed import Future

    blocks = [b for _, yb in parts for b in yb]
    remote = [b for b in blocks if isinstance(b, Future)]
    done = dict(zip(map(id, remote), client.gather(client.map(_block_summary, remote, classifier=classifier,
                                                             pure=False)))) if remote else {}
    return combine_summaries([done[id(b)] if isinstance(b, Future) else _block_summary(b, classifier)
                              for b in blocks], classifier)


def combine_summaries(summaries: list, classifier: bool) -> Targets:
    """:class:`Targets` of the label blocks' summaries (:func:`.hist.block_summary`), in block order."""
    n = sum(s[0] for s in summaries)
    if n == 0:
        raise ValueError("y is empty: at least one sample is needed")
    if not classifier:
        if len(summaries) == 1:
            return Targets(n, mean=summaries[0][3][1])
        total = np.float32(sum(s[3][0] for s in summaries))
        return Targets(n, mean=float(np.float32(total / np.intp(n))))  # numpy's float32 mean of an exact sum
    values = np.unique(np.concatenate([s[1] for s in summaries]))
    _check_classification(values)
    top = sum(int(s[2][s[1] == values[-1]].sum()) for s in summaries)
    return Targets(n, classes=values, positive=top)


def _check_classification(values: np.ndarray) -> None:
    from sklearn.utils.multiclass import type_of_target

    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError("y contains NaN or inf")
    kind = type_of_target(values)
    if kind not in ("binary", "multiclass"):
        raise ValueError(f"Unknown label type: {kind}. y must hold class labels")


def gather_labels(client: Any, y: Any) -> np.ndarray:
    """All of ``y`` on the client, as a 1-D numpy array (the exact fit's boosting loop runs there)."""
    if is_dask_collection(y):
        y = client.compute(y).result()
    y = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    return y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y


class EvalPart:
    """A worker's rows of an eval set, their margins carried round by round (:class:`RoundEvaluation`)."""

    def __init__(self, X_blocks: list, y_blocks: list, classes, loss: str, metric: str, n_features: int,
                 n_outputs: int, base_margin: float):
        blocks = list(_params.predict_rows(stack_rows(X_blocks), n_features))
        y = encode_part_labels(y_blocks, classes, n_outputs)
        self.n_rows = sum(b.shape[0] for b in blocks)
        self.metric = metric
        self.evaluation = RoundEvaluation([(blocks, y, None)], LOSSES[loss], metric, n_features, n_outputs,
                                          base_margin)

    def handle(self, round_trees: list, replay: bool):
        value = self.evaluation(round_trees)["validation_0"][self.metric]
        return None if replay else (self.n_rows, value)


def _combine(metric: str, replies: list) -> float:
    n = sum(r[0] for r in replies)
    if metric == "rmse":
        return float(np.sqrt(sum(r[0] * r[1] ** 2 for r in replies) / n))
    return float(sum(r[0] * r[1] for r in replies) / n)


class RoundEvaluationParts:
    """``evaluate(round_trees) -> {"validation_i": {metric: loss}}`` over host and Dask eval sets.

    ``opened`` collects the Dask eval sets' :class:`~dtlab.distributed.replicas.Replicas` (closed by the fit).
    """

    def __init__(self, client: Any, eval_set: list, encode: Callable, classes, loss, metric: str, n_features: int,
                 n_outputs: int, base_margin: float, opened: list):
        from ...distributed.dask_executor import alive_workers

        self.metric = metric
        self.sets: list = []
        for Xe, ye in eval_set:
            if is_dask_collection(Xe) or is_dask_collection(ye):
                parts = row_parts(client, Xe, ye, n_parts=len(alive_workers(client)))
                reps = Replicas(client, [(xb, yb, classes, loss.name, metric, n_features, n_outputs, base_margin)
                                         for xb, yb in parts], EvalPart)
                opened.append(reps)
                self.sets.append(reps)
            else:
                rows = list(_params.predict_rows(Xe, n_features))
                self.sets.append(RoundEvaluation([(rows, encode(ye), None)], loss, metric, n_features, n_outputs,
                                                 base_margin))

    def __call__(self, round_trees: list) -> dict:
        record = {}
        for i, ev in enumerate(self.sets):
            if isinstance(ev, Replicas):
                value = _combine(self.metric, ev.send(round_trees))
            else:
                value = ev(round_trees)["validation_0"][self.metric]
            record[f"validation_{i}"] = {self.metric: value}
        return record
