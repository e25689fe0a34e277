"""Dask arrays and DataFrames predicted partition by partition, the forest sent to each worker once.

With a ``dask.distributed`` client active, the forest's :class:`~dtlab.trees.ensemble.Ensemble`
is scattered to every worker (``broadcast=True``) and the partitions' tasks
reference that one copy; each worker builds its node layouts once (cached by
the scattered object's identity) and predicts its partitions where they live.
Without a client (dask's local schedulers) the ensemble is one object in the
graph, shared by every task.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

#: Forests built on this worker: id of the ensemble -> (weak reference to it, Forest).
_BUILT: dict = {}


def _forest_of(ensemble, forest_cls):
    key = id(ensemble)
    entry = _BUILT.get(key)
    if entry is None or entry[0]() is not ensemble:  # ids are reused once an object is gone
        forget = weakref.ref(ensemble, lambda _, built=_BUILT: built.pop(key, None))
        _BUILT[key] = entry = (forget, forest_cls(ensemble))
    return entry[1]


def _predict_block(block: np.ndarray, ensemble, method: str, backend: str, n_jobs, forest_cls) -> np.ndarray:
    return _forest_of(ensemble, forest_cls).predict(np.asarray(block), method=method, backend=backend, n_jobs=n_jobs)


def _predict_partition(df, ensemble, method: str, backend: str, n_jobs, columns, forest_cls):
    import pandas as pd

    out = _forest_of(ensemble, forest_cls).predict(df.to_numpy(), method=method, backend=backend, n_jobs=n_jobs)
    if out.ndim == 1:
        return pd.Series(out, index=df.index, name="prediction")
    return pd.DataFrame(out, index=df.index, columns=columns)


def _shared(ensemble) -> Any:
    """The ensemble scattered to every worker when a distributed client is active, else itself."""
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return ensemble
    # a key of its own (hash=False): with the content hash as key, two predictions of one model share a key, and
    # the first one's future, released when it is done, makes the scheduler forget the data the second one needs
    return client.scatter(ensemble, broadcast=True, hash=False)


def predict_dask(forest, X: Any, method: str = "auto", backend: str = "auto", n_jobs: int | None = None) -> Any:
    """``forest.predict`` over a dask array (rows chunked; columns merged into one chunk) or DataFrame.

    ``type(forest)`` is rebuilt from the scattered ensemble once per worker.

    Returns
    -------
    dask array (n_samples,) or (n_samples, n_outputs), or a dask Series / DataFrame for a DataFrame.
    """
    ens = forest.ensemble
    payload = _shared(ens)
    if hasattr(X, "map_partitions"):
        import pandas as pd

        if len(X.columns) != ens.n_features:
            raise ValueError(f"X has {len(X.columns)} features, but {ens.n_features} were expected")
        columns = [f"output_{k}" for k in range(ens.n_outputs)]
        meta = pd.Series([], dtype=np.float64, name="prediction") if ens.n_outputs == 1 else \
            pd.DataFrame({c: pd.Series([], dtype=np.float64) for c in columns})
        return X.map_partitions(_predict_partition, payload, method, backend, n_jobs, columns, type(forest),
                                meta=meta)
    if X.ndim != 2 or X.shape[1] != ens.n_features:
        raise ValueError(f"X must have shape (n_samples, {ens.n_features}), got {X.shape}")
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})
    if ens.n_outputs == 1:
        return X.map_blocks(_predict_block, payload, method, backend, n_jobs, type(forest), drop_axis=1,
                            dtype=np.float64)
    return X.map_blocks(_predict_block, payload, method, backend, n_jobs, type(forest),
                        chunks=(X.chunks[0], (ens.n_outputs,)), dtype=np.float64)
