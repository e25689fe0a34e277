"""One plain function, compiled for the CPU (``numba.njit``) and for CUDA (``numba.cuda.jit(device=True)``).

A per-row or per-node computation (a tree walk, a hash, an accumulation) is
written once as plain Python and compiled twice: with ``numba.njit`` and called
from ``prange`` loops on the CPU, and with ``numba.cuda.jit(device=True)`` and
called from ``cuda.grid`` kernels on the GPU.  Plain functions that call each
other do so by their global names; :func:`compile_functions` compiles them
callees first and gives each compiled copy a namespace in which those names are
the compiled callees (numba resolves a global by name when it compiles).  The
same mechanism selects a variant: bind a helper name to another plain function
(e.g. the row-major or column-major accessor of :mod:`dtlab.trees.walk`).

What a function must keep to compile for both targets (a *device function*):

* scalars (ints, floats, bools) and indexing into arrays passed as arguments;
  tuples of scalars as return values;
* loops, branches, integer and float arithmetic, ``math`` functions;
* calls to other such functions, by global name;
* no allocation (no ``np.empty``, lists, dicts or strings), no exceptions, no
  Python objects, no I/O: a GPU thread cannot allocate, and on the CPU an
  allocation in a per-row function would run per row;
* no writes that another thread may make at the same time: a GPU kernel gives
  each caller its own output slots (or uses atomics itself); the function does not.

Nothing here imports numba.cuda: :func:`cuda_device` imports it when called,
which only CUDA code paths do (``import dtlab`` never imports numba.cuda).
"""

from __future__ import annotations

import types
from typing import Callable, Iterable, Mapping

#: The options of every numba CPU kernel of the project (``numba.njit(**NJIT)``; ``parallel=True`` added
#: where a kernel has ``prange`` loops).  ``error_model="numpy"``: a float division by zero gives inf
#: instead of raising, so divisions carry no per-element check and loops over them vectorise (no kernel
#: divides by zero where it matters: every side of a candidate split is non-empty).  ``cache=True``: numba
#: keys each cached function on its own file only, so the cache folder is keyed on all of dtlab's sources
#: (:mod:`dtlab._numba_cache`): an edited callee never leaves a stale caller.  ``nogil=True``: kernels run on
#: several host threads at once.
NJIT = dict(cache=True, nogil=True, error_model="numpy")


def rebind(fn: Callable, names: Mapping[str, object], variant: str = "") -> Callable:
    """A copy of plain function ``fn`` whose global names in ``names`` refer to the given objects.

    Parameters
    ----------
    fn : plain Python function
    names : mapping of global name -> object (usually a compiled function)
    variant : str
        Appended to the copy's ``__qualname__``.  numba names its on-disk cache
        after the qualified name, so two variants of one function compiled with
        ``cache=True`` must differ here or one would load the other's machine code.

    Returns
    -------
    A new function with the same code, name, defaults and docstring.
    """
    scope = dict(fn.__globals__)
    scope.update(names)
    copy = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    copy.__qualname__ = f"{fn.__qualname__}__{variant}" if variant else fn.__qualname__
    copy.__module__, copy.__doc__ = fn.__module__, fn.__doc__
    return copy


def compile_functions(functions: Iterable[Callable], jit: Callable, names: Mapping[str, object] | None = None,
                      variant: str = "") -> dict:
    """Compile plain functions with decorator ``jit``, callees first.

    Parameters
    ----------
    functions : iterable of plain functions, every callee before its callers
    jit : decorator, e.g. ``numba.njit(cache=True)`` or ``numba.cuda.jit(device=True)``
    names : mapping of global name -> already compiled function, optional
        Extra bindings the functions see (a variant's accessor, a shared helper).
    variant : str
        Names this set of bindings (see :func:`rebind`); needed with ``cache=True``
        when the same functions are compiled with different ``names``.

    Returns
    -------
    dict mapping each function's ``__name__`` (and every name of ``names``) to
    its compiled form.
    """
    compiled: dict = dict(names or {})
    for fn in functions:
        compiled[fn.__name__] = jit(rebind(fn, compiled, variant))
    return compiled


def cpu_jit(**options) -> Callable:
    """``numba.njit`` with ``nogil=True`` and ``options`` (override or add); for plain functions compiled
    per variant (:func:`compile_functions`), which are not cached on disk (see :data:`NJIT` for kernels)."""
    import numba

    return numba.njit(**{"nogil": True, **options})


def cuda_device() -> Callable:
    """``numba.cuda.jit(device=True)``: imports numba.cuda, so call it only on a CUDA code path."""
    from numba import cuda

    return cuda.jit(device=True)
