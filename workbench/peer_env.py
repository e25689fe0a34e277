"""Peers that cannot share the project's environment, set up by ``make peers`` (run by ``make bench``).

Two of the strongest peers do not install beside dtlab's own packages:

* **liblinear-multicore** (the LIBLINEAR authors' multi-core release) installs
  the same module name, ``liblinear``, as ``liblinear-official``.  ``make
  peers`` builds its sdist (gcc, OpenMP) into ``.peers/liblinear-multicore``
  with ``pip install --target``; :func:`liblinear_multicore` imports that copy
  under the name ``liblinear_multicore``.  Its package imports itself
  relatively and loads its C library with ``ctypes`` (local symbols), so both
  LIBLINEARs can live in one process; the benchmark still runs the multi-core
  one in a process of its own (:class:`workbench.linear.peers.Liblinear`), where its
  OpenMP threads do not contend with numba's.
* **lleaves** compiles LightGBM models with LLVM through ``llvmlite``, but its
  1.3.0 needs the legacy pass manager that the llvmlite numba needs no longer
  has.  ``make peers`` gives it a venv of its own, ``.peers/lleaves``, with
  ``llvmlite<0.45``; :class:`Worker` runs a script in that venv and talks to it
  in JSON lines, so the benchmark times lleaves' own calls there, alternating
  with the contenders in this process.

``DTLAB_PEERS`` overrides the folder (default: ``.peers`` in the repository).
"""

from __future__ import annotations

import importlib.util
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

#: Versions ``make peers`` installs (the Makefile reads nothing from here; keep the two in step).
LIBLINEAR_MULTICORE = "liblinear-multicore==2.50.0"
LLEAVES = ("lleaves==1.3.0", "llvmlite<0.45")


def peers_dir() -> Path:
    """Where ``make peers`` put the peers' own installs."""
    default = Path(__file__).resolve().parents[1] / ".peers"
    return Path(os.environ.get("DTLAB_PEERS", default))


def liblinear_multicore():
    """The ``liblinear`` module of ``liblinear-multicore`` (``.peers/liblinear-multicore``), imported as
    ``liblinear_multicore.liblinear``.

    Raises
    ------
    ModuleNotFoundError : not built (run ``make peers``)
    """
    name = "liblinear_multicore"
    if name + ".liblinear" in sys.modules:
        return sys.modules[name + ".liblinear"]
    init = liblinear_multicore_dir() / "__init__.py"
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    package = importlib.util.module_from_spec(spec)
    sys.modules[name] = package
    spec.loader.exec_module(package)
    return importlib.import_module(name + ".liblinear")


def liblinear_multicore_dir() -> Path:
    """The folder of liblinear-multicore's ``liblinear`` package, without importing it.

    Raises
    ------
    ModuleNotFoundError : not built (run ``make peers``)
    """
    folder = peers_dir() / "liblinear-multicore" / "liblinear"
    if not (folder / "__init__.py").exists():
        raise ModuleNotFoundError(f"liblinear-multicore is not built at {folder} (run `make peers`)")
    return folder


def peer_python(env: str) -> Path:
    """The python of the peer venv ``.peers/<env>``.

    Raises
    ------
    FileNotFoundError : the venv is not there (run ``make peers``)
    """
    python = peers_dir() / env / "bin" / "python"
    if not python.exists():
        raise FileNotFoundError(f"no venv at {python.parent.parent} (run `make peers`)")
    return python


class WorkerError(RuntimeError):
    """The worker process failed a request (its traceback is in the message) or died."""


class WorkerTimeout(WorkerError):
    """The worker did not answer within the request's timeout; it has been killed."""


class Worker:
    """A script run by another venv's python, answering one JSON line per JSON-line request.

    Parameters
    ----------
    python : path of the interpreter
    script : path of the script; it reads requests from stdin and writes one reply line each, a dict
        with ``"error"`` (a traceback) where a request failed
    *args : str
        Command-line arguments of the script.
    """

    def __init__(self, python: Path | str, script: Path | str, *args: str):
        self.proc = subprocess.Popen([str(python), str(script), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)

    def ask(self, timeout: float | None = None, **request: Any) -> dict[str, Any]:
        """Send ``request``, wait for the reply (at most ``timeout`` seconds: then the worker is killed and
        :class:`WorkerTimeout` raised)."""
        if self.proc.poll() is not None:
            raise WorkerError(f"the worker has exited (code {self.proc.returncode})")
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        # one reply line per request, so nothing is buffered before it: select on the pipe is exact
        if timeout is not None and not select.select([self.proc.stdout], [], [], timeout)[0]:
            self.proc.kill()
            self.proc.wait()
            raise WorkerTimeout(f"the worker did not answer {request.get('cmd')!r} within {timeout:g} s")
        line = self.proc.stdout.readline()
        if not line:
            raise WorkerError(f"the worker died on {request.get('cmd')!r} (code {self.proc.wait()})")
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerError(reply["error"])
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
