"""GDT fitness evaluators: the protocol, the NumPy reference, the batched CPU, device-pool and CUDA evaluators.

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

from typing import Callable

import scipy.sparse

from ...distributed.executors import EXECUTORS, check_executor
from .base import Evaluator, LeafStats, check_data, merge_stats
from .cpu import CpuEvaluator
from .devices import PoolEvaluator
from .reference import NumpyEvaluator

#: The algorithmic variants of an evaluator.
VARIANTS = ("batched", "reference")

def cuda_evaluator(X, y, n_classes: int, n_devices: int | None = None, **options) -> Evaluator:
    """The CUDA evaluator (:class:`~dtlab.evolution.evaluators.cuda.CudaEvaluator`), imported when first asked for."""
    from .cuda import CudaEvaluator

    return CudaEvaluator(X, y, n_classes, n_devices=n_devices, **options)


#: Evaluator factories by ``(backend, variant)``.  The Dask evaluator is not a place but an executor
#: (``GDTClassifier(executor=...)``, :mod:`.dask`): on its workers it runs these same shards.
EVALUATORS: dict[tuple[str, str], Callable[..., Evaluator]] = {
    ("cpu", "batched"): CpuEvaluator,
    ("cpu", "reference"): NumpyEvaluator,
    ("cuda", "batched"): cuda_evaluator,
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
    ``"cpu"``.

    Raises
    ------
    ValueError
        No evaluator is registered for the pair (e.g. ``"cuda"`` with
        ``evaluator="reference"``); the message lists the available ones.
    RuntimeError
        ``backend="cuda"`` on a machine without a usable GPU (and without the
        simulator); the message says what is missing.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be a string, got {type(backend).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"evaluator must be one of {VARIANTS}, got {variant!r}")
    if backend == "auto":
        from ...backend import resolve_backend

        # the one meaning of "auto" (a real GPU, never the simulator), for a variant that has a CUDA evaluator
        return resolve_backend("auto", has_cuda=("cuda", variant) in EVALUATORS).name, variant
    if (backend, variant) not in EVALUATORS:
        available = sorted(f"backend={b!r}, evaluator={v!r}" for b, v in EVALUATORS)
        raise ValueError(f"no GDT evaluator is registered for backend={backend!r}, evaluator={variant!r}; "
                         f"available: {available} (or backend='auto'). A CUDA evaluator registers itself "
                         "with dtlab.evolution.register_evaluator('cuda', factory) once it exists.")
    if backend == "cuda":
        from ...backend import cuda_status

        available, reason = cuda_status()
        if not available:
            raise RuntimeError(f"backend='cuda' is not available on this machine: {reason}; use backend='cpu' "
                               "(or 'auto', which picks the CPU here)")
    return backend, variant


def make_evaluator(key: tuple[str, str], X, y, n_classes: int, n_devices: int | None = None,
                   executor="local") -> Evaluator:
    """The evaluator for an :data:`EVALUATORS` key run by ``executor`` (see :func:`check_executor`).

    With a Dask executor the workers run the batched kernels of ``key``'s
    backend on their shards (:class:`~dtlab.evolution.evaluators.dask.DaskEvaluator`).
    """
    if scipy.sparse.issparse(X):  # CSR evaluators (.sparse): the data are never densified
        from .sparse import sparse_evaluator

        return sparse_evaluator(key, X, y, n_classes, n_devices, executor)
    if check_executor(executor) == "local":
        return EVALUATORS[key](X, y, n_classes, n_devices=n_devices)
    if key[1] != "batched" or key[0] not in ("cpu", "cuda"):
        raise ValueError(f"the Dask executor runs the batched kernels on CPUs or GPUs; backend={key[0]!r}, "
                         f"evaluator={key[1]!r} cannot run on it")
    from .dask import DaskEvaluator

    return DaskEvaluator(X, y, n_classes, n_devices, client=None if executor == "dask" else executor,
                         backend=key[0])


__all__ = ["EVALUATORS", "EXECUTORS", "VARIANTS", "CpuEvaluator", "Evaluator", "LeafStats", "NumpyEvaluator",
           "PoolEvaluator", "check_data", "check_executor", "cuda_evaluator", "make_evaluator", "merge_stats",
           "register_evaluator", "resolve_evaluator"]
