"""Declared kernels: every CUDA kernel dtlab launches, with the argument types it is launched with.

A kernel module declares each of its kernels next to the code::

    BITMASK = declare_kernel(
        "inference.bitmask", build=lambda: _bitmask_kernel, blocks=(32, 1024),
        signatures=variants("void({X}[:, ::1], int32[::1], ...)", X=("float32", "float64")),
        model=_bitmask_work, summary="one block per (group of rows, tree): ...")

``build`` returns the kernel as a device runs it (a factory's kernels are
built with the device's compile-time constants, e.g. its threads per block);
``signatures`` are numba signatures, the types of every launch (they
document the kernel, and :func:`dtlab.gpu.launch.launch` refuses any other);
``blocks`` the block sizes it launches with on a device (the compile check
needs them: registers x block must fit the register file); ``model``
counts the bytes and operations of one launch (:mod:`.model`); ``exact``
says the kernel does the CPU's arithmetic bit for bit (the compile check then
rejects any fused multiply-add in its PTX).

``make gpu-compile`` (:mod:`.compile`) imports every module of the package
that declares a kernel (:func:`discover`) and compiles each declared
signature; the launch helper raises for a kernel that was not declared, so a
kernel the package launches is always one the check compiles.

This module imports neither numba.cuda nor a technique.
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np


class LaunchError(ValueError):
    """A launch that a real device would reject, or of an undeclared kernel or signature."""


@dataclass(frozen=True)
class KernelSpec:
    """A declared kernel (see the module docstring)."""

    name: str
    build: Callable[[], Any]
    signatures: tuple[str, ...]
    blocks: tuple[int, ...]
    model: Callable | None = None
    summary: str = ""
    exact: bool = True
    example: Callable | None = None

    @property
    def module(self) -> str:
        return self.name.rsplit(".", 1)[0]


#: name -> spec, in declaration order.
SPECS: dict[str, KernelSpec] = {}
_BY_CODE: dict[Any, KernelSpec] = {}
_INDEXED: set[str] = set()
_PARSED: dict[str, tuple[str, ...]] = {}


def declare_kernel(name: str, *, build: Callable[[], Any], signatures: Iterable[str], blocks: Iterable[int],
                   model: Callable | None = None, summary: str = "", exact: bool = True,
                   example: Callable | None = None) -> KernelSpec:
    """Declare a kernel (see the module docstring); returns its :class:`KernelSpec`.

    ``exact``: the kernel computes the CPU's bits (no contraction into fused multiply-adds, no libdevice
    math); ``make gpu-compile`` fails when its PTX has an FMA.  ``example(n_rows, n_features)``, optional:
    ``(grid, block, args)`` of a representative launch (host arrays), for the model's figures.

    Declaring the same name again (a module reloaded) replaces the declaration.
    """
    signatures, blocks = tuple(signatures), tuple(int(b) for b in blocks)
    if not signatures or not blocks:
        raise ValueError(f"kernel {name!r}: declare at least one signature and one block size")
    spec = KernelSpec(name, build, signatures, blocks, model, summary, exact, example)
    old = SPECS.get(name)
    if old is not None:
        for code in [c for c, s in _BY_CODE.items() if s.name == name]:
            del _BY_CODE[code]
        _INDEXED.discard(name)
    SPECS[name] = spec
    return spec


def variants(template: str, **choices: Iterable[str]) -> tuple[str, ...]:
    """Every signature from ``template`` with each ``{key}`` replaced by each of its ``choices`` (all combinations)."""
    keys = list(choices)
    return tuple(template.format(**dict(zip(keys, combo))) for combo in itertools.product(*choices.values()))


def python_function(kernel) -> Callable:
    """The Python function behind a numba.cuda kernel (a dispatcher, or the simulator's fake kernel)."""
    fn = getattr(kernel, "py_func", None) or getattr(kernel, "fn", None)
    if fn is None:
        raise TypeError(f"{kernel!r} is not a numba.cuda kernel")
    return fn


def _key(fn) -> tuple:
    """What identifies a kernel's source: its code and qualified name (the variants a factory builds share
    both; :func:`dtlab._jit.rebind` variants of one function differ in the name)."""
    return fn.__code__, fn.__qualname__


def spec_of(kernel) -> KernelSpec:
    """The declaration of ``kernel`` (matched by its code and name: every variant a factory builds shares them).

    Raises
    ------
    LaunchError
        The kernel was never declared.
    """
    code = _key(python_function(kernel))
    spec = _BY_CODE.get(code)
    if spec is None:
        for name, candidate in list(SPECS.items()):
            if name not in _INDEXED:
                _BY_CODE[_key(python_function(candidate.build()))] = candidate
                _INDEXED.add(name)
        spec = _BY_CODE.get(code)
    if spec is None:
        fn = python_function(kernel)
        raise LaunchError(f"kernel {fn.__module__}.{fn.__qualname__} is not declared: declare it with "
                          "dtlab.gpu.kernels.declare_kernel next to its code, so that make gpu-compile compiles it")
    return spec


def _contiguity(a: Any) -> str:
    shape = tuple(int(s) for s in a.shape)
    strides = getattr(a, "strides", None)
    if strides is None:
        return "C"
    itemsize = np.dtype(a.dtype).itemsize

    def contiguous(order):
        expected = itemsize
        for n, s in order:
            if n != 1 and s != expected:
                return False
            expected *= n
        return True

    dims = list(zip(shape, strides))
    if contiguous(reversed(dims)):
        return "C"
    return "F" if contiguous(dims) else "A"


def type_name(value: Any) -> str:
    """numba's name of the type a launch argument is compiled for, e.g. ``array(float32, 2d, C)``, ``int64``.

    Works alike for numpy, cupy and numba device arrays (from dtype, dimensions and strides), and for
    Python and numpy scalars.
    """
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, np.generic):
        return np.dtype(type(value)).name
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is None or shape is None:
        raise TypeError(f"a kernel argument of type {type(value).__name__} is neither an array nor a scalar")
    name = "bool" if np.dtype(dtype) == np.bool_ else np.dtype(dtype).name
    return f"array({name}, {len(shape)}d, {_contiguity(value)})"


def signature_types(signature: str) -> tuple[str, ...]:
    """The argument type names of a declared signature, as :func:`type_name` writes them."""
    if signature not in _PARSED:
        from numba.core import sigutils, types

        args, _ = sigutils.normalize_signature(signature)
        _PARSED[signature] = tuple(
            f"array({t.dtype}, {t.ndim}d, {t.layout})" if isinstance(t, types.Array) else str(t) for t in args)
    return _PARSED[signature]


def check_signature(spec: KernelSpec, args: tuple) -> tuple[str, ...]:
    """The argument types of a launch; :class:`LaunchError` unless a declared signature."""
    got = tuple(type_name(a) for a in args)
    if not any(signature_types(s) == got for s in spec.signatures):
        closest = min(spec.signatures, key=lambda s: sum(a != b for a, b in zip(signature_types(s), got))
                      + abs(len(signature_types(s)) - len(got)))
        diff = [f"argument {i}: {b} (declared {a})" for i, (a, b) in enumerate(zip(signature_types(closest), got))
                if a != b]
        raise LaunchError(f"{spec.name} launched with undeclared argument types: {'; '.join(diff) or got}; "
                          "declare the signature next to the kernel so that make gpu-compile compiles it")
    return got


def discover() -> dict[str, KernelSpec]:
    """Import every module of dtlab that declares a kernel (found by its source), then return :data:`SPECS`."""
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        if path.parent == Path(__file__).parent:
            continue
        if "declare_kernel(" in path.read_text():
            parts = path.relative_to(root.parent).with_suffix("").parts
            importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return SPECS
