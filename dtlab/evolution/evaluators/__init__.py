"""GDT fitness evaluators: the protocol, the NumPy reference, the batched CPU evaluator, the registry.

An evaluator is chosen by two independent choices (the project's convention):
``backend``, *where* the work runs (``"cpu"``, ``"cuda"``), and the algorithmic
``variant`` (``"batched"``, the fast kernels; ``"reference"``, the plain NumPy
evaluator the kernels are tested against).  :data:`EVALUATORS` maps
``(backend, variant)`` to a factory ``factory(X, y, n_classes, n_devices=None)``.

A new evaluator (GPU, Dask) plugs in by implementing
:class:`~dtlab.evolution.evaluators.base.Evaluator` and calling
:func:`register_evaluator`; :class:`~dtlab.evolution.GDTClassifier` then finds
it through ``backend`` and ``evaluator``.
"""

from __future__ import annotations

import warnings
from typing import Callable

from .base import Evaluator, LeafStats, check_data, merge_stats
from .cpu import CpuEvaluator
from .reference import NumpyEvaluator

#: The algorithmic variants of an evaluator.
VARIANTS = ("batched", "reference")

#: Evaluator factories by ``(backend, variant)``.
EVALUATORS: dict[tuple[str, str], Callable[..., Evaluator]] = {
    ("cpu", "batched"): CpuEvaluator,
    ("cpu", "reference"): NumpyEvaluator,
}


def register_evaluator(backend: str, factory: Callable[..., Evaluator], variant: str = "batched") -> None:
    """Add (or replace) the evaluator factory for ``(backend, variant)`` (e.g. ``"cuda"``)."""
    if not isinstance(backend, str) or not backend:
        raise ValueError(f"a backend name must be a non-empty string, got {backend!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    EVALUATORS[(backend, variant)] = factory


def resolve_evaluator(backend: str = "auto", variant: str = "batched") -> tuple[str, str]:
    """The :data:`EVALUATORS` key that ``backend`` and ``variant`` select.

    ``backend="auto"`` means ``"cuda"`` when a CUDA evaluator of the variant is
    registered and :func:`dtlab.backend.resolve_backend` picks a real GPU, else
    ``"cpu"``.  The former ``backend="numpy"`` (the reference evaluator) still
    works for one release, with a ``DeprecationWarning``.

    Raises
    ------
    ValueError
        No evaluator is registered for the pair (e.g. ``"cuda"`` before a CUDA
        evaluator exists); the message lists the available ones.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"evaluator must be one of {VARIANTS}, got {variant!r}")
    if backend == "numpy":
        warnings.warn("backend='numpy' is deprecated: backend now says where the work runs; use "
                      "backend='cpu', evaluator='reference'", DeprecationWarning, stacklevel=3)
        backend, variant = "cpu", "reference"
    if backend == "auto":
        from ...backend import resolve_backend

        # resolve_backend("auto") never picks the simulator, so this is a real GPU
        on_gpu = ("cuda", variant) in EVALUATORS and resolve_backend("auto").is_cuda
        return ("cuda" if on_gpu else "cpu"), variant
    if (backend, variant) not in EVALUATORS:
        available = sorted(f"backend={b!r}, evaluator={v!r}" for b, v in EVALUATORS)
        raise ValueError(f"no GDT evaluator is registered for backend={backend!r}, evaluator={variant!r}; "
                         f"available: {available} (or backend='auto'). A CUDA evaluator registers itself "
                         "with dtlab.evolution.register_evaluator('cuda', factory) once it exists.")
    return backend, variant


__all__ = ["EVALUATORS", "VARIANTS", "CpuEvaluator", "Evaluator", "LeafStats", "NumpyEvaluator", "check_data",
           "merge_stats", "register_evaluator", "resolve_evaluator"]
