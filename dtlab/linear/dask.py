"""TRON on a Dask cluster: the distributed Newton method of Zhuang, Chin, Juan and Lin (2015).

"Distributed Newton methods for regularized logistic regression" (PAKDD
2015, by LIBLINEAR's authors): the rows are partitioned over the workers,
each worker keeps its rows and every per-row vector (``z = X w``, the
logistic weights ``D`` or the L2-SVM's active set) for the whole fit, and
each quantity the solver needs is a sum over workers: ``f(w)`` (a scalar),
the gradient with the preconditioner's Hessian diagonal (one round), and
every Hessian-vector product of CG (one vector of ``n_features`` per worker,
added up: the paper's all-reduce, here through the client, which runs the
trust region or line search of :func:`dtlab.linear.tron` unchanged on its
host vectors).  What crosses the network per product is ``n_features`` floats
each way per worker; the rows never move.

Each worker's block is the single-process block (:func:`.placement._host_parts`:
CSR rows in LIBLINEAR's order for the numba kernels, dense rows for BLAS), so
the objective is the single-process objective added in another order: equal
to ~1e-15 relative, the same iterations.

A worker lost mid-fit: its block is rebuilt on another worker from the host's
copy (or the Dask collection's graph) and brought back to the solver's point
by replaying the journal (:mod:`dtlab.distributed.replicas`): the last
``f(w)`` and what followed it.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse

from ..backend import thread_scope
from ..distributed.dask_data import row_parts, stack_rows
from ..distributed.replicas import Replicas
from .losses import LOSSES, LiblinearVectorOps

__all__ = ["DaskL2Objective", "LinearPart", "fit_on_dask", "label_summary"]


def _worker_threads() -> int:
    """Threads of the Dask worker this runs on (1 outside a worker)."""
    try:
        from distributed import get_worker

        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):
        return 1


def label_summary(y: Any) -> tuple[int, np.ndarray, int]:
    """A block of labels: ``(rows, sorted distinct labels, rows equal to the largest label)``."""
    y = np.asarray(y)
    if y.ndim != 1:
        y = y.reshape(-1) if y.ndim == 2 and y.shape[1] == 1 else y
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf")
    values = np.unique(y)
    return int(y.shape[0]), values, int(np.count_nonzero(y == values[-1])) if values.size else 0


class LinearPart:
    """One worker's rows of the objective: a block loss of :data:`~dtlab.linear.losses.LOSSES`.

    Parameters
    ----------
    X_blocks, y_blocks : lists of row blocks (numpy, pandas, scipy.sparse) and their labels
    classes : the two labels, ``classes[1]`` the positive one
    loss : {"logistic", "squared_hinge"}
    C : float
    fit_intercept : bool
    csr_density : float, dense rows with at most this share of non-zeros become CSR (the estimators'
        ``DENSE_TO_CSR_MAX_DENSITY``, passed in: this module is imported by them)
    """

    def __init__(self, X_blocks: list, y_blocks: list, classes: np.ndarray, loss: str, C: float,
                 fit_intercept: bool, csr_density: float = 0.5):
        from ._data import _check_sparse
        from .placement import _host_parts

        X = stack_rows(X_blocks)
        if scipy.sparse.issparse(X):
            X = _check_sparse(X)
        else:
            X = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
            if not np.all(np.isfinite(X)):
                raise ValueError("X contains NaN or inf; TRON needs finite values")
        y = np.concatenate([np.asarray(b).reshape(-1) for b in y_blocks])
        y_pm = np.where(y == classes[1], 1.0, -1.0)
        if fit_intercept:
            ones = np.ones((X.shape[0], 1))
            X = scipy.sparse.hstack([X, ones], format="csr") if scipy.sparse.issparse(X) else np.hstack([X, ones])
        if not scipy.sparse.issparse(X) and X.size and np.count_nonzero(X) <= csr_density * X.size:
            X = scipy.sparse.csr_matrix(X)  # as the single-process fit: the CSR kernels where X is sparse enough
        self.n_threads = _worker_threads()
        self.dense = not scipy.sparse.issparse(X)
        (self.part,) = _host_parts(LOSSES[loss], X, y_pm, C)  # one C: one block

    def handle(self, message: tuple, replay: bool):
        kind, arg = message
        with thread_scope(self.n_threads, blas=self.dense):
            if kind == "fun":
                return float(self.part.value(arg))
            if kind == "grad":
                self.part.prepare_hessian()
                g = self.part.grad_part(0.0)
                return None if replay else (g, self.part.diag)
            if kind == "line_prepare":
                self.part.line_prepare(arg)
                return None
            if kind == "line_accept":
                self.part.line_accept(arg)
                return None
        raise ValueError(f"unknown message {kind!r}")

    def hv(self, s: np.ndarray) -> np.ndarray:
        with thread_scope(self.n_threads, blas=self.dense):
            return self.part.hv_part(s)

    def line_value(self, alpha: float) -> float:
        with thread_scope(self.n_threads, blas=self.dense):
            return float(self.part.line_value(alpha))


def _hv(state: LinearPart, s):
    return state.hv(s)


def _line_value(state: LinearPart, alpha):
    return state.line_value(alpha)


class DaskL2Objective:
    """``f(w) = 1/2 w.w + sum over workers of their rows' loss``: :class:`~dtlab.linear.losses.L2Objective`'s
    interface, every product one round over the workers (their vectors added in part order on the client).

    Parameters
    ----------
    client : distributed.Client, scheduler address or None
    parts : list of (X blocks, y blocks), one per worker (:func:`dtlab.distributed.dask_data.row_parts`)
    classes, loss, C, fit_intercept : as :class:`LinearPart`
    n_features : int, columns of X (the intercept's column not counted)

    Attributes
    ----------
    replicas : :class:`~dtlab.distributed.replicas.Replicas` (bytes sent and received, round and work seconds)
    seconds : dict, the paper's three products' cumulative seconds (``"Xw"``, ``"XTu"``, ``"Hv"``)
    """

    xp = np

    def __init__(self, client: Any, parts: list, classes: np.ndarray, loss: str, C: float, fit_intercept: bool,
                 n_features: int, csr_density: float = 0.5):
        self.replicas = Replicas(client, [(xb, yb, classes, loss, float(C), bool(fit_intercept), float(csr_density))
                                          for xb, yb in parts], LinearPart)
        self.n_features = n_features + int(bool(fit_intercept))
        self.ops = LiblinearVectorOps()
        self.regularizer_first = False  # the sum over workers comes first, w.w / 2 last (any worker count)
        self.seconds = {"Xw": 0.0, "XTu": 0.0, "Hv": 0.0}
        self.wTw = 0.0
        self._diag = None

    @staticmethod
    def _sum(vectors: list) -> np.ndarray:
        total = vectors[0].copy()
        for v in vectors[1:]:
            total += v
        return total

    def fun(self, w) -> float:
        start = time.perf_counter()
        w = np.ascontiguousarray(w, dtype=np.float64)
        self.wTw = self.ops.seq_dot(w, w)
        # a new point: every part's state (z = X w) is made again from it, so a lost part replays from here
        f = sum(self.replicas.send(("fun", w), restart=True)) + 0.5 * self.wTw
        self.seconds["Xw"] += time.perf_counter() - start
        return f

    def grad(self, w):
        """Gradient at the point of the last :meth:`fun` call; the Hessian diagonal comes in the same round."""
        start = time.perf_counter()
        replies = self.replicas.send(("grad", None))
        g = w + self._sum([r[0] for r in replies])
        self._diag = 1.0 + self._sum([r[1] for r in replies])
        self.seconds["XTu"] += time.perf_counter() - start
        return g

    def hv(self, s):
        start = time.perf_counter()
        out = s + self._sum(self.replicas.ask(_hv, np.ascontiguousarray(s, dtype=np.float64)))
        self.seconds["Hv"] += time.perf_counter() - start
        return out

    def diag(self):
        return self._diag

    def line_prepare(self, w, s) -> tuple[float, float]:
        start = time.perf_counter()
        self.replicas.send(("line_prepare", np.ascontiguousarray(s, dtype=np.float64)))
        self.seconds["Xw"] += time.perf_counter() - start
        return self.ops.seq_dot(s, w), self.ops.seq_dot(s, s)

    def line_fun(self, alpha: float, wTs: float, sTs: float) -> float:
        start = time.perf_counter()
        loss = sum(self.replicas.ask(_line_value, float(alpha)))
        self.seconds["Xw"] += time.perf_counter() - start
        return loss + (alpha * alpha * sTs + self.wTw) / 2.0 + alpha * wTs

    def line_accept(self, alpha: float, wTs: float, sTs: float) -> None:
        self.replicas.send(("line_accept", float(alpha)))
        self.wTw += alpha * alpha * sTs + 2 * alpha * wTs

    def close(self) -> None:
        self.replicas.close()


def summarize_labels(client: Any, parts: list) -> tuple[int, np.ndarray, int]:
    """``(rows, the two sorted labels, rows of the larger label)`` over every part's label blocks, computed
    where the labels are; a clear ValueError for one class or more than two."""
    from distributed import Future

    blocks = [b for _, yb in parts for b in yb]
    remote = [b for b in blocks if isinstance(b, Future)]
    done = dict(zip(map(id, remote), client.gather(client.map(label_summary, remote, pure=False)))) \
        if remote else {}
    summaries = [done[id(b)] if isinstance(b, Future) else label_summary(b) for b in blocks]
    n = sum(s[0] for s in summaries)
    values = np.unique(np.concatenate([s[1] for s in summaries]))
    if values.size < 2:
        raise ValueError(f"y has only one class ({values[0]!r}); a binary classifier needs samples of two classes"
                         if values.size else "y is empty")
    if values.size > 2:
        raise ValueError(f"a Dask fit trains two classes only (one-vs-rest runs in one process, executor='local'): "
                         f"y has {values.size} classes "
                         f"({values[:5].tolist()}{' ...' if values.size > 5 else ''})")
    n_top = sum(s[2] for s in summaries if s[1].size and s[1][-1] == values[-1])
    return n, values, n_top


def fit_on_dask(X: Any, y: Any, executor: Any, *, loss: str, C: float, tol: float, fit_intercept: bool,
                max_iter: int, method: str, verbose: bool, backend: Any = "auto", csr_density: float = 0.5) -> dict:
    """:func:`dtlab.linear.fit_linear` on a Dask cluster: its rows partitioned over the workers.

    Two classes only, without class weights (one problem, summed over the workers).  Returns the same dict
    as ``fit_linear`` (one problem; ``placement``: ``{"placement": "dask", "workers": ...,
    "rows": [...]}``; ``n_threads``: threads of the client's solver, 1).
    """
    from ..distributed.dask_executor import alive_workers, connect
    from .tron import tron

    if backend not in ("auto", "cpu"):
        raise ValueError(f"the Dask executor runs TRON's CPU kernels on its workers; backend={backend!r} cannot "
                         "run there (use backend='cpu' or 'auto')")
    if y is None:
        raise ValueError("TRON requires y to be passed, but the target y is None")
    if X is None or not hasattr(X, "shape") or len(X.shape) != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got {getattr(X, 'shape', type(X).__name__)}")
    n_features = int(X.shape[1])
    if n_features == 0:
        raise ValueError(f"X has no columns (shape {X.shape}); at least one feature needed")
    client = connect(None if executor == "dask" else executor)
    objective = None
    try:
        parts = row_parts(client, X, y, n_parts=len(alive_workers(client)))
        n, classes, n_pos = summarize_labels(client, parts)
        if isinstance(X.shape[0], (int, np.integer)) and n != X.shape[0]:  # a DataFrame's row count is lazy
            raise ValueError(f"X has {X.shape[0]} rows but y has {n}")
        objective = DaskL2Objective(client, parts, classes, loss, C, fit_intercept, n_features, csr_density)
        eps = tol * max(min(n_pos, n - n_pos), 1) / n  # LIBLINEAR's primal_solver_tol, as the local fit
        result = tron(objective, eps=eps, max_iter=max_iter, method=method, verbose=bool(verbose))
        workers = list(objective.replicas.executor.workers)
    finally:
        if objective is not None:
            objective.close()
        if isinstance(executor, str) and executor != "dask":
            client.close()  # connected here by address: ours to close
    w = np.asarray(result.w, dtype=np.float64)
    if not np.all(np.isfinite(w)):
        raise FloatingPointError("TRON produced a non-finite model; scale the features or lower C")
    coef, intercept = (w[None, :-1], w[-1:].copy()) if fit_intercept else (w[None, :], np.zeros(1))
    where = {"placement": "dask", "workers": workers, "format": "per part", "host_rows": 0, "device_rows": 0,
             "bytes_sent": objective.replicas.sent_bytes, "bytes_received": objective.replicas.received_bytes,
             "resent": objective.replicas.executor.resent}
    return {"classes": classes, "coef": coef, "intercept": intercept, "results": [result], "eps": [eps],
            "backend": "cpu", "placement": where, "n_threads": 1}
