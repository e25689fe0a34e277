"""Device pools and the Dask executor: scatter shards once, map work, merge results (foundation).

:class:`DevicePool`
    One host thread per device (a GPU, or a CPU worker standing in for one),
    each owning the state built for its device for a whole run.
:func:`plan_shards`, :func:`shard_bounds`
    How many devices the data need, and the rows of each; a clear
    ``MemoryError`` before anything is allocated when they cannot fit.
:class:`~dtlab.distributed.dask_executor.DaskExecutor`
    The same shape on a ``dask.distributed`` cluster (imported lazily:
    ``from dtlab.distributed.dask_executor import DaskExecutor``).

Generic: the techniques bring the work (GDT's evaluators in
:mod:`dtlab.evolution.evaluators`); this package never imports a technique,
numba.cuda, cupy or dask at import time.
"""

from .device_pool import DeviceError, DevicePool, plan_shards, shard_bounds

__all__ = ["DeviceError", "DevicePool", "plan_shards", "shard_bounds"]
