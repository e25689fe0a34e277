"""LIBLINEAR itself (the ``liblinear-official`` package), run the way the tests and benchmarks compare with it.

LIBLINEAR prints its per-iteration log from C to file descriptor 1; the
runs here capture that descriptor to count the Newton iterations and read the
objective and gradient norm per iteration.  The objective of the returned
model is recomputed here with dtlab's formula, so both sides are measured by
the same ruler.  The official package is single-threaded and runs in this
process.  The multi-core LIBLINEAR (a separate release, ``make peers``) runs
in a process of its own (:mod:`._liblinear_worker`, no numba there), which
times its ``train`` call: in this process its OpenMP threads would contend
with numba's.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import scipy.sparse

SOLVER_FLAGS = {"logistic": 0, "squared_hinge": 2}
_ITER = re.compile(r"^iter\s+(\d+)\s+(?:act\s+\S+\s+pre\s+\S+\s+delta\s+\S+\s+)?f\s+(\S+)\s+\|g\|\s+(\S+)")


@dataclass
class LiblinearRun:
    """One LIBLINEAR training run.

    Attributes
    ----------
    coef : ndarray of shape (n_features,), float64
        Weights for y = +1 meaning the larger label (dtlab's convention).
    intercept : float
    objective : float
        ``1/2 |w|^2 + C sum loss``, with the bias in ``w`` (LIBLINEAR regularises it).
    n_iter : int
        Newton iterations (``iter`` lines of LIBLINEAR's log).
    seconds : float
        Wall time of the C ``train`` call alone (median over the timed repeats).
    log : str
    objective_per_iter, grad_norm_per_iter : list of float
        As LIBLINEAR prints them (3 significant digits).
    version : int
    """

    coef: np.ndarray
    intercept: float
    objective: float
    n_iter: int
    seconds: float
    log: str = ""
    objective_per_iter: list = field(default_factory=list)
    grad_norm_per_iter: list = field(default_factory=list)
    version: int = 0


@contextlib.contextmanager
def capture_fd1() -> Iterator[list]:
    """Capture what C code writes to file descriptor 1; the text is appended to the yielded list."""
    sys.stdout.flush()
    saved = os.dup(1)
    out: list = []
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 1)
        try:
            yield out
        finally:
            sys.stdout.flush()
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            out.append(tmp.read().decode(errors="replace"))


def objective_value(X: Any, y_pm: np.ndarray, w: np.ndarray, b: float, C: float, loss: str) -> float:
    """``1/2 (|w|^2 + b^2) + C sum_i loss(y_i (x_i.w + b))``: the objective both sides are judged by."""
    t = y_pm * (np.asarray(X @ w).ravel() + b)
    if loss == "logistic":
        total = np.logaddexp(0.0, -t).sum()
    else:
        total = np.square(np.maximum(0.0, 1.0 - t)).sum()
    return float(0.5 * (w @ w + b * b) + C * total)


class Liblinear:
    """One dataset in LIBLINEAR's format (built once), trained with ``-s 0`` / ``-s 2`` on demand.

    Parameters
    ----------
    X : scipy.sparse matrix or ndarray of shape (n_samples, n_features)
    y : array of shape (n_samples,), two distinct labels; the larger is +1 (dtlab's convention)
    fit_intercept : bool
        LIBLINEAR's ``-B 1``.
    threads : int or None
        None: ``liblinear-official`` (single-threaded); a number: ``liblinear-multicore`` with ``-m threads``,
        in its own process (call :meth:`close` when done, or use the object as a context manager).

    Raises
    ------
    ModuleNotFoundError : ``threads`` given and liblinear-multicore not built (``make peers``)
    """

    def __init__(self, X: Any, y: Any, fit_intercept: bool = False, threads: int | None = None):
        classes = np.unique(y)
        if len(classes) != 2:
            raise ValueError(f"LIBLINEAR runs here are for two classes, got {len(classes)}")
        self.threads = threads
        self.y_pm = np.where(np.asarray(y) == classes[1], 1.0, -1.0)
        self.X = scipy.sparse.csr_matrix(X, dtype=np.float64)
        self.X.sort_indices()
        self.fit_intercept = fit_intercept
        self.worker = None
        if threads is None:
            from liblinear import liblinear as ll

            self.ll = ll
            self.prob = ll.problem(self.y_pm, self.X)
        else:
            self.worker, self.version = _multicore_worker(self.X, self.y_pm)

    def close(self) -> None:
        """End the multi-core LIBLINEAR's process (nothing to do for the single-threaded one)."""
        if self.worker is not None:
            self.worker.close()

    def __enter__(self) -> "Liblinear":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _options(self, loss: str, C: float, eps: float) -> str:
        options = f"-s {SOLVER_FLAGS[loss]} -c {C!r} -e {eps!r}" + (" -B 1" if self.fit_intercept else "")
        return options + (f" -m {int(self.threads)}" if self.threads is not None else "")

    def _train(self, loss: str, C: float, eps: float, quiet: bool):
        ll = self.ll
        param = ll.parameter(self._options(loss, C, eps) + (" -q" if quiet else ""))
        self.prob.set_bias(param.bias)
        ll.liblinear.set_print_string_function(param.print_func)
        start = time.perf_counter()
        model = ll.toPyModel(ll.liblinear.train(self.prob, param))
        return model, time.perf_counter() - start

    def seconds(self, loss: str = "logistic", C: float = 1.0, eps: float = 0.1) -> float:
        """Wall time of one quiet ``train`` call (the C solver alone, as the paper timed ``tron()``; the
        multi-core one timed in its own process)."""
        if self.worker is not None:
            return float(self.worker.ask(cmd="train", options=self._options(loss, C, eps))["seconds"])
        return self._train(loss, C, eps, quiet=True)[1]

    def fit(self, loss: str = "logistic", C: float = 1.0, eps: float = 0.1) -> LiblinearRun:
        """Train once with the log captured; weights in dtlab's sign convention."""
        if self.worker is not None:
            reply = self.worker.ask(cmd="train", options=self._options(loss, C, eps), details=True)
            log, seconds, version = reply["log"], reply["seconds"], self.version
            w, b, first_label = np.array(reply["w"]), reply["bias"], reply["first_label"]
        else:
            with capture_fd1() as captured:
                model, seconds = self._train(loss, C, eps, quiet=False)
            log, version = captured[0], _version(self.ll)
            w = np.array([model.get_decfun_coef(j + 1) for j in range(self.X.shape[1])])
            b, first_label = float(model.get_decfun_bias()), model.get_labels()[0]
        b = b if self.fit_intercept else 0.0
        if first_label != 1:  # LIBLINEAR's w decides for its first label
            w, b = -w, -b
        rows = [m.groups() for m in map(_ITER.match, log.splitlines()) if m]
        return LiblinearRun(coef=w, intercept=b, objective=objective_value(self.X, self.y_pm, w, b, C, loss),
                            n_iter=len(rows), seconds=seconds, log=log,
                            objective_per_iter=[float(r[1]) for r in rows],
                            grad_norm_per_iter=[float(r[2]) for r in rows], version=version)


def liblinear_fit(X: Any, y: Any, *, loss: str = "logistic", C: float = 1.0, eps: float = 0.1,
                  fit_intercept: bool = False, repeats: int = 0) -> LiblinearRun:
    """Train LIBLINEAR ``-s 0`` / ``-s 2`` with ``-c C -e eps`` (and ``-B 1``) once, log captured.

    Parameters
    ----------
    X : scipy.sparse matrix or ndarray of shape (n_samples, n_features)
    y : array of shape (n_samples,), two distinct labels
    repeats : int
        Extra quiet runs to time (median); 0 times the logged run.

    Returns
    -------
    LiblinearRun
    """
    peer = Liblinear(X, y, fit_intercept)
    run = peer.fit(loss, C, eps)
    if repeats:
        run.seconds = float(np.median([peer.seconds(loss, C, eps) for _ in range(repeats)]))
    return run


def _version(ll: Any) -> int:
    import ctypes

    try:
        return int(ctypes.c_int.in_dll(ll.liblinear, "liblinear_version").value)
    except (ValueError, AttributeError):
        return 0


def _multicore_worker(X: scipy.sparse.csr_matrix, y_pm: np.ndarray):
    """A :class:`~workbench.peer_env.Worker` running liblinear-multicore on ``(X, y_pm)``, and the
    version it reports."""
    from workbench.peer_env import Worker, liblinear_multicore_dir

    folder = liblinear_multicore_dir()
    worker = Worker(sys.executable, Path(__file__).with_name("liblinear_worker.py"), str(folder))
    try:
        with tempfile.TemporaryDirectory(prefix="dtlab-liblinear-") as tmp:
            path = Path(tmp) / "problem.npz"
            np.savez(path, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y_pm)
            version = worker.ask(cmd="data", path=str(path))["version"]
    except Exception:
        worker.close()
        raise
    return worker, int(version)
