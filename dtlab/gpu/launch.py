"""The one launch path of every dtlab kernel: real-device limits checked before the driver would.

numba's CUDA simulator runs any launch it is given; a real device rejects a
grid ``y`` or ``z`` above 65,535, a grid ``x`` above 2^31 - 1, a block above
1,024 threads, an empty grid, and dynamic shared memory beyond its limit --
with an error from deep inside the driver, or (an empty grid) nothing at all.
:func:`launch` checks all of them first and raises :class:`LaunchError` with
what was asked and what the device allows; a kernel whose work can exceed a
limit plans its launches with :func:`chunks` (several launches, each within
the limits) or loops over its grid (a grid-stride loop), and a test under the
simulator proves it with lowered limits (:func:`device_limits`).

Every launch also

* names a *declared* kernel (:mod:`.kernels`) and is launched with one of its
  declared signatures, so ``make gpu-compile`` compiles exactly what the
  package launches (an undeclared kernel or argument type is an error here,
  under the simulator as on a device);
* passes cupy arrays to numba without the stream synchronisation numba makes
  by default for ``__cuda_array_interface__`` arguments
  (``CUDA_ARRAY_INTERFACE_SYNC``): the kernel runs on the stream the arrays
  were made on (cupy's current stream), so the stream's order already puts
  their producers first, and the sync would only block the host;
* can be recorded (:func:`recording`): the tests read the launch plan of a
  2,000,000-row prediction without simulating its threads, and
  ``make gpu-check`` times each launch with CUDA events against its model.
"""

from __future__ import annotations

import contextlib
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import numpy as np

from . import kernels as _kernels
from .kernels import LaunchError


@dataclass(frozen=True)
class Limits:
    """What a CUDA device accepts per launch (compute capability 7.0 to 10.x alike).

    Attributes
    ----------
    max_grid : (x, y, z) blocks
    max_block : (x, y, z) threads, and ``max_threads`` in all
    max_dynamic_shared : bytes of dynamic shared memory without the per-kernel opt-in
    """

    max_grid: tuple[int, int, int] = (2**31 - 1, 65_535, 65_535)
    max_block: tuple[int, int, int] = (1024, 1024, 64)
    max_threads: int = 1024
    max_dynamic_shared: int = 48 * 1024


#: The limits every launch is checked against; read them with :func:`limits` (tests lower them with
#: :func:`device_limits`, which rebinds this name).
LIMITS = Limits()
_lock = threading.Lock()


def limits() -> Limits:
    """The limits launches are checked against now."""
    return LIMITS


@contextlib.contextmanager
def device_limits(**changes) -> Iterator[Limits]:
    """Launch with other limits for the duration (tests: small limits make the splitting paths run on tiny data)."""
    global LIMITS
    old = LIMITS
    LIMITS = replace(old, **changes)
    try:
        yield LIMITS
    finally:
        LIMITS = old


def _dims(value, what: str) -> tuple[int, int, int]:
    dims = tuple(int(v) for v in (value if isinstance(value, (tuple, list)) else (value,)))
    if not 1 <= len(dims) <= 3:
        raise LaunchError(f"a {what} has 1 to 3 dimensions, got {value!r}")
    return dims + (1,) * (3 - len(dims))


def check_launch(grid, block, shared_bytes: int = 0, name: str = "kernel") -> tuple[tuple, tuple]:
    """The launch's grid and block as 3-tuples, or :class:`LaunchError` where a device would refuse it."""
    g, b = _dims(grid, "grid"), _dims(block, "block")
    lim = limits()
    if min(g) < 1 or min(b) < 1:
        raise LaunchError(f"{name}: an empty launch (grid {g}, block {b}); a device rejects a zero-size grid or "
                          "block: skip the launch when there is no work")
    for axis, (n, top) in enumerate(zip(g, lim.max_grid)):
        if n > top:
            raise LaunchError(f"{name}: grid {'xyz'[axis]} = {n:,} blocks exceeds the device's {top:,}; "
                              "split the launch (dtlab.gpu.launch.chunks) or loop over the grid")
    for axis, (n, top) in enumerate(zip(b, lim.max_block)):
        if n > top:
            raise LaunchError(f"{name}: block {'xyz'[axis]} = {n} threads exceeds the device's {top}")
    if b[0] * b[1] * b[2] > lim.max_threads:
        raise LaunchError(f"{name}: a block of {b[0] * b[1] * b[2]} threads exceeds the device's "
                          f"{lim.max_threads}")
    if shared_bytes < 0 or shared_bytes > lim.max_dynamic_shared:
        raise LaunchError(f"{name}: {shared_bytes:,} bytes of dynamic shared memory; a block may have "
                          f"{lim.max_dynamic_shared:,}")
    return g, b


def chunks(n: int, most: int) -> Iterator[tuple[int, int]]:
    """``(first, count)`` pieces of ``range(n)`` of at most ``most`` each: one launch per piece."""
    for first in range(0, n, most):
        yield first, min(most, n - first)


def grid_for(n: int, per_block: int, axis: int = 0) -> int:
    """Blocks to cover ``n`` items with ``per_block`` each, capped at the limit of grid ``axis`` (the kernel then
    loops over the rest: a grid-stride loop); at least 1."""
    return max(1, min(-(-int(n) // int(per_block)), limits().max_grid[axis]))


@dataclass
class Launch:
    """One recorded launch: the kernel's declared name, its configuration, its arguments' types, and per
    argument its shape (an array) or its value (a scalar)."""

    name: str
    grid: tuple
    block: tuple
    shared_bytes: int
    types: tuple
    shapes: tuple
    args: tuple | None = None
    seconds: float | None = None
    _events: Any = field(default=None, repr=False)

    @property
    def threads(self) -> int:
        return int(np.prod(self.grid)) * int(np.prod(self.block))


class _Recorder:
    def __init__(self, execute: bool, keep_args: bool, timed: bool):
        self.execute, self.keep_args, self.timed = execute, keep_args, timed
        self.launches: list[Launch] = []


_recorders: list[_Recorder] = []


@contextlib.contextmanager
def recording(execute: bool = True, keep_args: bool = False, timed: bool = False) -> Iterator[list[Launch]]:
    """Record every launch made in the block (all threads), as a list of :class:`Launch`.

    Parameters
    ----------
    execute : bool
        False: check and record the launches without running them (a launch plan; results stay unwritten).
    keep_args : bool
        Keep the arguments themselves (for the work models of :mod:`.model`).
    timed : bool
        On a real GPU, time each launch with CUDA events (``Launch.seconds``, read when the block ends).
    """
    rec = _Recorder(execute, keep_args, timed)
    with _lock:
        _recorders.append(rec)
    try:
        yield rec.launches
    finally:
        with _lock:
            _recorders.remove(rec)
        if timed:
            for item in rec.launches:
                if item._events is not None:
                    start, stop = item._events
                    stop.synchronize()
                    item.seconds = start.elapsed_time(stop) / 1e3
                    item._events = None


def _shape(a: Any) -> Any:
    """An array argument's shape, a scalar argument's value."""
    if np.isscalar(a) or getattr(a, "shape", None) is None:
        return a.item() if isinstance(a, np.generic) else a
    return tuple(int(s) for s in a.shape)


def _cupy_stream_ptr() -> int | None:
    import sys

    cupy = sys.modules.get("cupy")
    return None if cupy is None else int(cupy.cuda.get_current_stream().ptr)


def _without_sync(args: tuple, stream_ptr: int) -> tuple:
    """cupy (``__cuda_array_interface__``) arguments as numba device arrays, without numba's stream sync when
    they were made on the launch stream (``stream`` absent, or the launch stream; 1 is the legacy default)."""
    from numba import cuda

    same = {None, stream_ptr} | ({1} if stream_ptr == 0 else set())
    out = []
    for a in args:
        cai = getattr(a, "__cuda_array_interface__", None)
        if cai is not None and not hasattr(a, "_numba_type_"):  # not already a numba device array
            a = cuda.as_cuda_array(a, sync=cai.get("stream") not in same)
        out.append(a)
    return tuple(out)


def launch(kernel, grid, block, *args, shared_bytes: int = 0) -> None:
    """Launch ``kernel[grid, block](*args)`` after the real-device checks (see the module docstring).

    Parameters
    ----------
    kernel : a numba.cuda kernel declared with :func:`dtlab.gpu.kernels.declare_kernel`
    grid, block : int or tuple of 1-3 ints
    *args : the kernel's arguments (numpy arrays under the simulator; cupy or numba device arrays on a GPU)
    shared_bytes : int, dynamic shared memory per block

    Raises
    ------
    LaunchError
        A limit of :data:`LIMITS` is exceeded, the grid or block is empty, the kernel is not declared, or
        the argument types are none of its declared signatures.
    """
    spec = _kernels.spec_of(kernel)
    g, b = check_launch(grid, block, shared_bytes, spec.name)
    types = _kernels.check_signature(spec, args)
    recorders = list(_recorders)
    item = None
    if recorders:
        item = Launch(spec.name, g, b, int(shared_bytes), types, tuple(_shape(a) for a in args),
                      tuple(args) if any(r.keep_args for r in recorders) else None)
        for r in recorders:
            r.launches.append(item)
        if not all(r.execute for r in recorders):
            return
    from ..backend import cuda_simulator_enabled

    if cuda_simulator_enabled():
        kernel[g, b, 0, shared_bytes](*args)
        return
    from numba import cuda

    ptr = _cupy_stream_ptr()  # cupy's current stream: where the cupy arguments were made
    stream = cuda.external_stream(ptr) if ptr else cuda.default_stream()
    args = _without_sync(args, ptr or 0)
    timed = item is not None and any(r.timed for r in recorders)
    if timed:
        start, stop = cuda.event(), cuda.event()
        start.record(stream)
    kernel[g, b, stream, shared_bytes](*args)
    if timed:
        stop.record(stream)
        item._events = (start, stop)
