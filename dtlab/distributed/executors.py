"""Who runs a fit: the ``executor`` parameter shared by every estimator that can use a Dask cluster.

``"local"``: this process (its threads, its devices).  ``"dask"``: the
session's default ``distributed.Client``; a scheduler address
(``"tcp://host:port"``) or a ``distributed.Client``: that cluster.  Dask
collections (arrays, DataFrames, Series) are recognised without importing
dask, so ``import dtlab`` never pulls it in.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EXECUTORS", "check_executor", "is_dask_collection", "uses_dask"]

#: Executors: who drives the work.  ``"local"``: this process; ``"dask"`` (or a ``distributed.Client``, or a
#: scheduler address): the workers of a Dask cluster.
EXECUTORS = ("local", "dask")


def check_executor(executor: Any) -> str:
    """``"local"`` or ``"dask"`` for an ``executor`` parameter; raises for anything else.

    Accepted: ``"local"``, ``"dask"`` (the session's default Dask client), a
    scheduler address (``"tcp://host:port"`` and other ``scheme://`` forms) or
    a ``distributed.Client``.
    """
    if isinstance(executor, str):
        if executor in EXECUTORS:
            return executor
        if "://" in executor:
            return "dask"
        raise ValueError(f"executor must be 'local', 'dask', a Dask scheduler address ('tcp://host:port') or a "
                         f"distributed.Client, got {executor!r}")
    if type(executor).__module__.split(".")[0] == "distributed" and type(executor).__name__ == "Client":
        return "dask"
    raise TypeError(f"executor must be 'local', 'dask', a scheduler address or a distributed.Client, "
                    f"got {type(executor).__name__}")


def is_dask_collection(X: Any) -> bool:
    """Whether ``X`` is a Dask collection (array, DataFrame, Series), without importing dask."""
    return type(X).__module__.split(".")[0] == "dask" and hasattr(X, "__dask_graph__")


def uses_dask(executor: Any, *data: Any) -> bool:
    """Whether a fit with this ``executor`` on this data runs on a Dask cluster.

    Raises
    ------
    ValueError
        A Dask collection with ``executor="local"``: it lives on a cluster, so the fit must run there.
    """
    kind = check_executor(executor)
    if kind == "local" and any(is_dask_collection(d) for d in data):
        raise ValueError("X or y is a Dask collection: fit it on its cluster with executor='dask' (the default "
                         "client), a scheduler address or a distributed.Client")
    return kind == "dask"
