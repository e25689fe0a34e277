"""A pool of devices driven from the host: one thread per device, each owning the state built for it.

The data-parallel scheme of the GDT paper (Jurczuk, Czajkowski, Kretowski
2021, section 3.2): every device holds a shard of the data for the whole run,
the host sends each device the same small work item (the individuals of a
generation) and merges what the devices send back.  A device is a GPU, or a
CPU worker standing in for one (a thread running a serial kernel), so the
number of devices is a measurable quantity on any machine.

:class:`DevicePool` gives each device its own single-thread executor, so a
device's state (a GPU context made current on that thread, cupy arrays, a
NumPy shard) is built and used on one thread for the whole run, and kernels
that release the GIL run on all devices at once.  :func:`plan_shards` decides
how many devices the data need and refuses data that cannot fit before
anything is allocated.

Generic: nothing here knows what the work is (the GDT evaluators of
:mod:`dtlab.evolution.evaluators` use it); nothing here imports numba.cuda.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["DevicePool", "DeviceError", "plan_shards", "shard_bounds"]

GIB = 2**30


class DeviceError(RuntimeError):
    """Work failed on one device of a pool; the message names the device."""


def shard_bounds(n_rows: int, n_shards: int) -> list[tuple[int, int]]:
    """Contiguous, nearly equal ``(start, stop)`` row ranges (the first ``n_rows % n_shards`` one row longer)."""
    if not 1 <= n_shards <= max(n_rows, 1):
        raise ValueError(f"cannot split {n_rows} rows into {n_shards} non-empty shards")
    sizes = np.full(n_shards, n_rows // n_shards, dtype=np.int64)
    sizes[: n_rows % n_shards] += 1
    stops = np.cumsum(sizes)
    return [(int(b - s), int(b)) for s, b in zip(sizes, stops)]


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GIB:.2f} GiB"


def plan_shards(n_rows: int, bytes_per_row: int, free_bytes: Sequence[int | None], n_devices: int | None = None,
                fixed_bytes: int = 0, what: str = "the data", kind: str = "device") -> int:
    """How many devices to spread ``n_rows`` over so that every shard fits; raise before allocating if none does.

    Parameters
    ----------
    n_rows : int
    bytes_per_row : int
        Device memory one row needs (features and label).
    free_bytes : sequence of int or None, one per device present
        Free memory of each device; None where it cannot be known (assumed to fit).
    n_devices : int or None
        Asked for: use exactly this many (the first ones).  None: the fewest
        devices whose shards fit (one when the data fit on one device).
    fixed_bytes : int
        Memory each device needs besides its rows (work arrays).
    what, kind : str
        Words for the messages ("the data", "GPU").

    Returns
    -------
    int : the number of devices (shards), at most ``n_rows``.

    Raises
    ------
    ValueError
        ``n_devices`` exceeds the devices present (the message says how many there are).
    MemoryError
        A shard does not fit its device; the message gives what is needed and what is free.
    """
    present = len(free_bytes)
    if present == 0:
        raise ValueError(f"no {kind} is present")
    if n_devices is not None and n_devices > present:
        raise ValueError(f"n_devices={n_devices} but this machine has {present} {kind}"
                         f"{'s' if present != 1 else ''}; ask for at most {present}")

    def fits(k: int) -> bool:
        longest = -(-n_rows // k)
        return all(f is None or longest * bytes_per_row + fixed_bytes <= f for f in free_bytes[:k])

    candidates = [n_devices] if n_devices is not None else list(range(1, present + 1))
    for k in candidates:
        if fits(min(k, max(n_rows, 1))):
            return min(k, max(n_rows, 1))
    k = candidates[-1]
    need = n_rows * bytes_per_row + k * fixed_bytes
    known = [f for f in free_bytes[:k] if f is not None]
    raise MemoryError(
        f"{what} need {_gib(need)} of {kind} memory ({n_rows:,} rows x {bytes_per_row} bytes"
        + (f" + {_gib(fixed_bytes)} per {kind}" if fixed_bytes else "") + f") spread over {k} {kind}"
        + ("s" if k != 1 else "") + f", but {'they have' if k > 1 else 'it has'} {_gib(sum(known))} free"
        + (f" (per {kind}: {', '.join(_gib(f) for f in known)})" if k > 1 else "")
        + ("; ask for more devices (n_devices)" if n_devices is not None and n_devices < present else "")
        + "; use fewer rows or more devices. Nothing was allocated.")


class DevicePool:
    """One host thread per device, each owning the state built for its device.

    Parameters
    ----------
    n_devices : int >= 1
    serialize : bool
        Run the devices' work one at a time (numba's CUDA simulator is not
        thread-safe across concurrent launches); the results are the same.
    name : str
        Prefix of the threads' names (seen in a debugger or profiler).

    Examples
    --------
    >>> pool = DevicePool(2)
    >>> pool.start(lambda device: {"rows": device * 10})
    >>> pool.map(lambda state, k: state["rows"] + k, 1)
    [1, 11]
    >>> pool.close()
    """

    def __init__(self, n_devices: int, serialize: bool = False, name: str = "dtlab-device"):
        if n_devices < 1:
            raise ValueError(f"a device pool needs at least one device, got {n_devices}")
        self.n_devices = int(n_devices)
        self._threads = [ThreadPoolExecutor(1, thread_name_prefix=f"{name}-{i}") for i in range(self.n_devices)]
        self._lock = threading.Lock() if serialize else None
        self.states: list[Any] = [None] * self.n_devices
        #: Wall seconds each device spent on the last :meth:`map` (its own work, not the waiting).
        self.last_seconds: list[float] = [0.0] * self.n_devices

    def _run(self, device: int, fn: Callable, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            if self._lock is None:
                return fn(*args)
            with self._lock:
                return fn(*args)
        finally:
            self.last_seconds[device] = time.perf_counter() - start

    def _gather(self, futures: list, doing: str) -> list:
        results, errors = [], []
        for device, future in enumerate(futures):
            try:
                results.append(future.result())
            except BaseException as exc:  # every device finishes before one error is raised
                errors.append((device, exc))
        if errors:
            device, exc = errors[0]
            if isinstance(exc, (MemoryError, KeyboardInterrupt)):
                raise exc
            raise DeviceError(f"{doing} failed on device {device} of {self.n_devices}: "
                              f"{type(exc).__name__}: {exc}") from exc
        return results

    def start(self, make_state: Callable[[int], Any]) -> None:
        """Build each device's state on its own thread: ``states[i] = make_state(i)``."""
        self._check_open()
        futures = [pool.submit(self._run, i, make_state, i) for i, pool in enumerate(self._threads)]
        self.states = self._gather(futures, "setting up")

    def map(self, fn: Callable[..., Any], *args: Any) -> list[Any]:
        """``[fn(states[i], *args) for every device i]``, the devices working at once; results in device order."""
        self._check_open()
        futures = [pool.submit(self._run, i, fn, self.states[i], *args) for i, pool in enumerate(self._threads)]
        return self._gather(futures, getattr(fn, "__name__", "work"))

    def _check_open(self) -> None:
        if self._threads is None:
            raise RuntimeError("this device pool is closed")

    def close(self) -> None:
        """Drop the states (freeing device memory) and stop the threads; idempotent."""
        if self._threads is None:
            return
        closers = [getattr(state, "close", None) for state in self.states]
        for pool, close in zip(self._threads, closers):
            if close is not None:
                pool.submit(close).result()
            pool.shutdown(wait=True)
        self.states = []
        self._threads = None
