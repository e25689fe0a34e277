"""The inference benchmark's peers: each library's own predict call on one model, as a user makes it.

Every contender is ``predict(X, threads) -> raw scores`` (n_samples,) float,
timed as a whole: the library's own input checks and conversions included
(TL2cgen's ``DMatrix`` is built inside the call, as its users build one per
batch).  The compiled engines carry their compile time (dtlab needs none):

* **TL2cgen** 1.x: the model read by treelite, C emitted by TL2cgen, compiled
  with gcc into a shared library, loaded by ``tl2cgen.Predictor`` with
  ``nthread`` threads.  The model is split into one translation unit per
  :data:`TREES_PER_UNIT` trees (``parallel_comp``, as TL2cgen's docs advise for
  large models), compiled by one gcc per core: gcc's time grows faster than
  the size of a function, so 500 trees of depth 10 compile in under 3 min in
  250 units here, and did not finish in 14 min in 2.
* **lleaves** (LightGBM models only): compiled with LLVM in its own venv
  (:mod:`workbench.peer_env`), timed there by its own clock.

A compile that takes longer than :func:`compile_limit` seconds (500 trees of
depth 10 take gcc and LLVM many minutes) is stopped and the engine left out
of that case, with the limit given as the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from workbench.peer_env import Worker, WorkerTimeout, peer_python
from workbench.timing import Seconds

#: Trees per TL2cgen translation unit.
TREES_PER_UNIT = 2
#: Seconds a compiled engine may take to compile one model (environment ``DTLAB_COMPILE_LIMIT_S``).
COMPILE_LIMIT_S = 600.0


class CompileTimeout(RuntimeError):
    """A compiled engine did not finish compiling a model within :func:`compile_limit` seconds."""


def compile_limit() -> float:
    """Seconds a compiled engine may take to compile one model."""
    return float(os.environ.get("DTLAB_COMPILE_LIMIT_S", COMPILE_LIMIT_S))


@dataclass
class Contender:
    """One way to predict a model: ``predict(X, threads)`` returns raw scores (or, for a peer timed in its own
    process, :class:`~workbench.timing.Seconds`), ``result(X, threads)`` the scores in any case."""

    name: str
    predict: Callable[[np.ndarray, int], Any]
    compile_seconds: float | None = None
    result: Callable[[np.ndarray, int], np.ndarray] | None = None
    close: Callable[[], None] = field(default=lambda: None)

    def scores(self, X: np.ndarray, threads: int) -> np.ndarray:
        out = (self.result or self.predict)(X, threads)
        return np.asarray(out, np.float64).reshape(X.shape[0], -1)[:, -1]  # binary: the positive class


def xgboost_contender(booster) -> Contender:
    current = {}

    def predict(X, threads):
        if current.get("nthread") != threads:  # a setting, made once per thread count as a user would
            booster.set_param({"nthread": threads})
            current["nthread"] = threads
        return booster.inplace_predict(X, predict_type="margin")
    return Contender("XGBoost inplace_predict", predict)


def lightgbm_contender(booster) -> Contender:
    return Contender("LightGBM predict", lambda X, t: booster.predict(X, raw_score=True, num_threads=t))


def sklearn_contender(forest) -> Contender:
    def predict(X, threads):
        if forest.n_jobs != threads:
            forest.set_params(n_jobs=threads)
        return forest.predict_proba(X)[:, 1]
    return Contender("scikit-learn predict_proba", predict)


def tl2cgen_contender(model: Any, kind: str, workdir: Path, threads: tuple[int, ...]) -> Contender:
    """TL2cgen on an XGBoost Booster or LightGBM Booster (``kind``), compiled with gcc into ``workdir``."""
    import tl2cgen
    import treelite

    if kind == "xgboost":
        tree_model = treelite.frontend.from_xgboost(model)
    else:
        path = workdir / "lightgbm.txt"
        model.save_model(str(path))
        tree_model = treelite.frontend.load_lightgbm_model(path)
    lib = workdir / f"tl2cgen_{kind}.so"
    saved = workdir / f"treelite_{kind}.bin"
    tree_model.serialize(str(saved))
    units = max(max(threads), -(-tree_model.num_tree // TREES_PER_UNIT))
    seconds = _export_within_limit(saved, lib, parallel_comp=units, threads=max(threads), limit=compile_limit())
    # TL2cgen refuses nthread above OpenMP's default thread count (omp_get_max_threads), which work earlier in
    # the same process can leave lowered: in a `make bench` run (2026-12-04) it was 1 by the time the inference
    # benchmarks came, after the boosting, GDT and greedy ones, and both failed; set it back to what a fresh
    # process has before the predictors are made
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=max(threads), user_api="openmp")  # no ``with``: the limit stays for the predictors
    predictors = {t: tl2cgen.Predictor(lib, nthread=t) for t in threads}

    def predict(X, t):
        return predictors[t].predict(tl2cgen.DMatrix(X), pred_margin=True)
    return Contender("TL2cgen predict (gcc)", predict, compile_seconds=seconds)


_EXPORT = """import sys, time, treelite, tl2cgen
model = treelite.Model.deserialize(sys.argv[1])
start = time.perf_counter()
tl2cgen.export_lib(model, toolchain="gcc", libpath=sys.argv[2], params={"parallel_comp": int(sys.argv[3])},
                   nthread=int(sys.argv[4]))
print(time.perf_counter() - start)
"""


def _export_within_limit(model_file: Path, lib: Path, parallel_comp: int, threads: int, limit: float) -> float:
    """``tl2cgen.export_lib`` (gcc, ``parallel_comp`` translation units, ``threads`` gcc processes at a time) in
    a child process group, killed with its gcc processes after ``limit`` seconds; the export's seconds, timed in
    the child (its start-up and the model's loading left out).

    Raises
    ------
    CompileTimeout : past ``limit``
    RuntimeError : the export failed (its stderr in the message)
    """
    proc = subprocess.Popen([sys.executable, "-c", _EXPORT, str(model_file), str(lib), str(parallel_comp),
                             str(threads)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # gcc runs in the child's group: stop it too
        proc.communicate()
        raise CompileTimeout(f"TL2cgen's gcc compile did not finish within {limit:g} s") from None
    if proc.returncode:
        raise RuntimeError(f"tl2cgen.export_lib failed: {err[-2000:]}")
    return float(out.split()[-1])


def lleaves_contender(booster, X: np.ndarray, workdir: Path) -> Contender:
    """lleaves on a LightGBM Booster and the rows ``X`` (sent once), in the ``.peers/lleaves`` venv.

    Raises
    ------
    FileNotFoundError : the venv is missing (``make peers``)
    """
    worker = Worker(peer_python("lleaves"), Path(__file__).with_name("lleaves_worker.py"))
    try:
        path = workdir / "lightgbm.txt"
        booster.save_model(str(path))
        try:
            seconds = worker.ask(cmd="compile", model=str(path), timeout=compile_limit())["seconds"]
        except WorkerTimeout:
            raise CompileTimeout(f"lleaves' LLVM compile did not finish within {compile_limit():g} s") from None
        rows = workdir / "rows.npy"
        np.save(rows, X)
        worker.ask(cmd="data", path=str(rows))
    except Exception:
        worker.close()
        raise
    saved = workdir / "lleaves_out.npy"

    def predict(X_, t):
        return Seconds(worker.ask(cmd="predict", n_jobs=t)["seconds"])

    def result(X_, t):
        worker.ask(cmd="predict", n_jobs=t, save=str(saved))
        return np.load(saved)
    return Contender("lleaves predict (LLVM)", predict, compile_seconds=seconds, result=result,
                     close=worker.close)


def peer_contenders(kind: str, model: Any, X: np.ndarray, threads: tuple[int, ...], workdir: Path,
                    skipped: dict[str, str]) -> list[Contender]:
    """The library's own predict and the compiled engines that read its models; a compiled engine that cannot
    run here is left out with the reason in ``skipped``."""
    own = {"xgboost": xgboost_contender, "lightgbm": lightgbm_contender, "sklearn": sklearn_contender}[kind]
    out = [own(model)]
    if kind in ("xgboost", "lightgbm"):
        try:
            out.append(tl2cgen_contender(model, kind, workdir, threads))
        except CompileTimeout as err:
            skipped["TL2cgen predict (gcc)"] = str(err)
    if kind == "lightgbm":
        try:
            out.append(lleaves_contender(model, X, workdir))
        except (FileNotFoundError, OSError, CompileTimeout) as err:
            skipped["lleaves predict (LLVM)"] = str(err)
    return out


def scratch_dir() -> tempfile.TemporaryDirectory:
    """A folder for compiled libraries and exchanged files, removed afterwards."""
    return tempfile.TemporaryDirectory(prefix="dtlab-inference-")
