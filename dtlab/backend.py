"""CPU / CUDA backend resolution, and the number of CPU threads: where and how wide the work runs.

One place decides where an array computation runs.  Every public entry point
takes ``backend="auto" | "cpu" | "cuda"`` and calls :func:`resolve_backend`
once; algorithms then receive the resolved :class:`Backend` (not its name),
use ``backend.xp`` (numpy or cupy) and ``backend.to_device`` /
``backend.to_host``, and kernels pick the numba CPU or numba.cuda
implementation by ``backend.name``.  ``"auto"`` means the same everywhere: the
GPU when the input already lives there or a real GPU (with cupy) is present,
else the CPU.

Every estimator's ``fit`` and ``predict`` (and :meth:`dtlab.inference.Forest.predict`)
run inside :func:`thread_scope` ``(n_jobs)``: numba's parallel kernels use
:func:`resolve_threads` ``(n_jobs)`` threads there, and the setting before is
restored after.

Nothing here imports cupy or numba.cuda at module import time: the package
must import on a machine without CUDA.  Under numba's CUDA simulator
(``NUMBA_ENABLE_CUDASIM=1``) the ``cuda`` backend exists, its kernels run in
the simulator, and its ``xp`` is numpy (cupy needs a real device).
"""

from __future__ import annotations

import contextlib
import functools
import os
from dataclasses import dataclass, field
from numbers import Integral
from types import ModuleType
from typing import Any, Callable, Iterator

import numpy as np
import scipy.sparse

BACKEND_NAMES = ("auto", "cpu", "cuda")


def cuda_simulator_enabled() -> bool:
    """True when numba's CUDA simulator is requested by the environment."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") == "1"


@dataclass(frozen=True)
class Device:
    """One compute device: a GPU, or a CPU worker standing in for one.

    Attributes
    ----------
    kind : {"gpu", "cpu-worker", "simulated-gpu"}
    index : int
        Device ordinal (CUDA device id, or worker number).
    name : str
        Human readable name, e.g. ``"NVIDIA H200"``.
    memory_bytes : int or None
        Total device memory, when known.
    """

    kind: str
    index: int
    name: str
    memory_bytes: int | None = None


@dataclass(frozen=True)
class Backend:
    """Where computations run.

    Attributes
    ----------
    name : {"cpu", "cuda"}
    xp : module
        Array module, ``numpy`` or ``cupy`` (numpy under the CUDA simulator).
    sparse : module
        ``scipy.sparse`` or ``cupyx.scipy.sparse``.
    simulated : bool
        True when the cuda backend runs in numba's CUDA simulator.
    """

    name: str
    xp: ModuleType
    sparse: ModuleType
    simulated: bool = False
    _devices: Callable[[], list[Device]] = field(default=lambda: [], repr=False, compare=False)

    @property
    def is_cuda(self) -> bool:
        return self.name == "cuda"

    def to_host(self, array: Any) -> Any:
        """Return a numpy array (or scipy sparse matrix) holding ``array``'s values."""
        array = to_host(array)
        return array if scipy.sparse.issparse(array) else np.asarray(array)

    def to_device(self, array: Any) -> Any:
        """Return ``array`` in this backend's array module (a no-op on the CPU)."""
        if self.xp is np:
            return self.to_host(array)
        if scipy.sparse.issparse(array):
            return self.sparse.csr_matrix(array)
        return self.xp.asarray(array)

    def devices(self) -> list[Device]:
        """The GPUs of this backend, or the CPU workers that stand in for them."""
        return self._devices()

    def free_bytes(self) -> int | None:
        """Memory free for new arrays where this backend computes: the current GPU's, or the host's
        available RAM; None where it cannot be known (the simulator, an OS without the query)."""
        if self.simulated:
            return None
        if self.is_cuda:
            from numba import cuda

            return int(cuda.current_context().get_memory_info()[0])
        try:
            return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
        except (ValueError, OSError, AttributeError):
            return None

    def check_fits(self, n_bytes: int, what: str = "the data") -> None:
        """Raise ``MemoryError`` with a clear message when ``n_bytes`` exceed the free memory of this backend.

        Called before anything is allocated, so that data too large for a
        device fail with a sentence rather than deep inside a kernel.
        """
        free = self.free_bytes()
        if free is not None and n_bytes > free:
            where = "on the GPU" if self.is_cuda else "in host memory"
            hint = ("use backend='cpu', fewer rows, or shard over more devices" if self.is_cuda
                    else "use fewer rows or a larger machine")
            raise MemoryError(f"{what} need {n_bytes / 2**30:.2f} GiB {where} but only {free / 2**30:.2f} GiB "
                              f"are free; {hint}")


def cpu_cores() -> int:
    """CPU cores this process may run on (its affinity mask where the OS has one)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _cpu_workers() -> list[Device]:
    return [Device("cpu-worker", i, f"CPU worker {i}") for i in range(cpu_cores())]


@functools.lru_cache(maxsize=1)
def _cupy_or_none() -> ModuleType | None:
    try:
        import cupy  # noqa: F401

        return cupy
    except Exception:  # ImportError, or a CUDA runtime error raised while importing
        return None


def cuda_status() -> tuple[bool, str]:
    """Whether the cuda backend can be used here, and why not if it cannot.

    Returns
    -------
    available : bool
    reason : str
        Empty when available; otherwise what is missing.
    """
    if cuda_simulator_enabled():
        return True, ""
    try:
        from numba import cuda
    except Exception as exc:  # numba-cuda missing or broken
        return False, f"numba.cuda cannot be imported ({exc}); install numba-cuda"
    try:
        if not cuda.is_available():
            return False, "no CUDA driver or GPU was found (numba.cuda.is_available() is False)"
    except Exception as exc:
        return False, f"the CUDA driver could not be queried ({exc})"
    if _cupy_or_none() is None:
        return False, "cupy is not installed; install the gpu extra: pip install 'dtlab[gpu]'"
    return True, ""


def real_gpu_available() -> bool:
    """A real, usable GPU (with cupy): what a GPU measurement needs; the simulator never counts."""
    return not cuda_simulator_enabled() and cuda_status()[0]


def _gpu_devices() -> list[Device]:
    from numba import cuda

    if cuda_simulator_enabled():
        return [Device("simulated-gpu", 0, "numba CUDA simulator")]
    found = []
    for gpu in cuda.gpus:
        with gpu:
            ctx = cuda.current_context()
            free, total = ctx.get_memory_info()
            name = gpu.name.decode() if isinstance(gpu.name, bytes) else str(gpu.name)
            found.append(Device("gpu", gpu.id, name, int(total)))
    return found


def is_device_array(array: Any) -> bool:
    """Whether ``array`` lives on a GPU (a cupy array or cupyx sparse matrix): the one place this is decided."""
    return type(array).__module__.split(".")[0] in ("cupy", "cupyx")


def to_host(array: Any) -> Any:
    """A GPU array copied to host memory (numpy / scipy.sparse); anything else returned unchanged."""
    return array.get() if is_device_array(array) and hasattr(array, "get") else array


def resolve_backend(backend: str | Backend = "auto", *arrays: Any, has_cuda: bool = True) -> Backend:
    """Resolve a backend name into a :class:`Backend`: the one meaning of ``backend`` in dtlab.

    Parameters
    ----------
    backend : {"auto", "cpu", "cuda"} or Backend
        ``"auto"`` picks ``cuda`` when any of ``arrays`` already lives on a GPU
        or when a real GPU and cupy are available, else ``cpu``.  The simulator
        never makes ``auto`` pick ``cuda`` (it is for tests, not speed).
    *arrays : array-like
        Inputs of the call; a cupy array among them forces ``cuda``.
    has_cuda : bool, default=True
        Whether the work asked for has a CUDA implementation (an algorithmic
        variant may be CPU-only); without one ``"auto"`` means the CPU (and
        the caller moves GPU input to the host).

    Raises
    ------
    ValueError
        ``backend`` is not one of the names above.
    RuntimeError
        ``"cuda"`` was asked for on a machine where it cannot run; the message
        says what is missing.
    """
    if isinstance(backend, Backend):
        return backend
    if not isinstance(backend, str) or backend not in BACKEND_NAMES:
        raise ValueError(f"backend must be one of {BACKEND_NAMES}, got {backend!r}")
    on_gpu = any(is_device_array(a) for a in arrays)
    if backend == "cpu" and on_gpu:
        raise ValueError("backend='cpu' was asked for but the input is a cupy (GPU) array; "
                         "call .get() on it first or use backend='cuda'")
    if backend == "auto":
        if not has_cuda:
            backend = "cpu"
        elif on_gpu:
            backend = "cuda"
        elif not cuda_simulator_enabled() and cuda_status()[0]:
            backend = "cuda"
        else:
            backend = "cpu"
    if backend == "cpu":
        return Backend("cpu", np, scipy.sparse, False, _cpu_workers)
    available, reason = cuda_status()
    if not available:
        raise RuntimeError(f"backend='cuda' is not available on this machine: {reason}")
    if cuda_simulator_enabled():
        return Backend("cuda", np, scipy.sparse, True, _gpu_devices)
    import cupy
    import cupyx.scipy.sparse

    return Backend("cuda", cupy, cupyx.scipy.sparse, False, _gpu_devices)


def resolve_threads(n_jobs: Any = None) -> int:
    """CPU threads for an ``n_jobs`` parameter (scikit-learn's convention, over numba's threads).

    Parameters
    ----------
    n_jobs : int or None
        ``None``: numba's current thread count (all of numba's threads unless a
        ``numba.set_num_threads`` -- e.g. an enclosing :func:`thread_scope` --
        lowered it); ``-1``: all of numba's threads (``NUMBA_NUM_THREADS``);
        ``k >= 1``: ``min(k, NUMBA_NUM_THREADS)``; ``-k``: all but ``k - 1``
        (at least one).

    Returns
    -------
    int >= 1

    Raises
    ------
    ValueError
        ``n_jobs`` is 0, a bool or not an integer.
    """
    import numba

    most = int(numba.config.NUMBA_NUM_THREADS)
    if n_jobs is None:
        return int(numba.get_num_threads())
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    return min(n_jobs, most) if n_jobs > 0 else max(1, most + 1 + n_jobs)


@contextlib.contextmanager
def thread_scope(n_jobs: Any = None, blas: bool = False) -> Iterator[int]:
    """Run the body with :func:`resolve_threads` ``(n_jobs)`` numba threads (and BLAS threads when ``blas``).

    numba's setting is per calling thread and restored afterwards, so kernels
    launched from the body use exactly that many threads and nothing outside
    changes.  The BLAS limit (threadpoolctl) is set only when asked: inspecting
    the loaded libraries costs milliseconds, worth it only where dense products
    use BLAS.

    Yields
    ------
    int : the number of threads.
    """
    import numba

    n = resolve_threads(n_jobs)
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        if blas:
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=n, user_api="blas"):
                yield n
        else:
            yield n
    finally:
        numba.set_num_threads(before)


def describe() -> dict[str, Any]:
    """What this machine offers, as printed by ``python -m dtlab info``."""
    import platform

    import numba

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "cpu_workers": len(_cpu_workers()),
        "cuda_simulator": cuda_simulator_enabled(),
    }
    available, reason = cuda_status()
    info["cuda_available"] = available
    if available:
        info["gpus"] = [d.__dict__ for d in _gpu_devices()]
    else:
        info["cuda_missing"] = reason
    cupy = _cupy_or_none()
    info["cupy"] = getattr(cupy, "__version__", None)
    return info


def enable_cuda_simulator() -> None:
    """Switch numba.cuda to its simulator; must run before numba.cuda is imported.

    Sets ``NUMBA_ENABLE_CUDASIM=1`` and, since numba reads its config once when
    it is first imported (which a startup hook of numba-cuda may already have
    done), numba's config value too.
    """
    import sys

    if "numba.cuda" in sys.modules and not cuda_simulator_enabled():
        raise RuntimeError("numba.cuda was already imported without the simulator; "
                           "enable it before anything imports numba.cuda")
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    if "numba.core.config" in sys.modules:
        from numba.core import config

        config.ENABLE_CUDASIM = True


def use_simulator_unless_gpu() -> str:
    """Turn numba's CUDA simulator on when this machine has no usable GPU.

    For notebooks: call before anything imports numba.cuda, so that the CUDA
    code paths run (simulated) on a laptop and for real on a GPU machine.

    Returns
    -------
    mode : {"gpu", "simulator"}
        What the ``cuda`` backend will use.  When numba.cuda was already
        imported the current setting is kept and reported.
    """
    import subprocess
    import sys

    if "NUMBA_ENABLE_CUDASIM" in os.environ or "numba.cuda" in sys.modules:
        return "simulator" if cuda_simulator_enabled() else "gpu"
    probe = "from numba import cuda; print(cuda.is_available())"
    try:
        found = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               timeout=120).stdout.strip() == "True"
    except (OSError, subprocess.TimeoutExpired):
        found = False
    if found:
        return "gpu"
    enable_cuda_simulator()
    return "simulator"
