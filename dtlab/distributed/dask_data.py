"""Training data as parts for Dask workers: contiguous row ranges (or column slices) of host or Dask data.

Host data (numpy, pandas, scipy.sparse) is cut on the host and scattered by
:class:`~dtlab.distributed.dask_executor.DaskExecutor` (which keeps the host
copy to send a part again).  A Dask collection stays on the cluster: its row
blocks are computed there and each part gets the futures of a contiguous run
of blocks (Dask moves them to the part's worker, and computes a lost block
again from its graph).  Parts are balanced by rows and keep the row order, so
part 0 holds the first rows, part 1 the next, and so on.

A part's rows are put together on its worker by :func:`stack_rows`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse

from .device_pool import shard_bounds
from .executors import is_dask_collection

__all__ = ["column_parts", "row_parts", "stack_rows"]


def _dask_row_blocks(X: Any) -> list:
    """Delayed objects of ``X``'s row blocks (whole rows), in order: a Dask array's blocks, a DataFrame's or
    Series' partitions."""
    if not hasattr(X, "numblocks"):
        return list(X.to_delayed())
    if X.ndim == 2 and X.numblocks[1] > 1:
        X = X.rechunk({1: -1})  # a row block holds every column: merged on the cluster, not here
    return X.to_delayed().ravel().tolist()


def _block_lengths(X: Any) -> list[int]:
    """Rows of each block of a Dask array or DataFrame (a DataFrame's partitions are counted on the cluster)."""
    if hasattr(X, "chunks"):
        lengths = X.chunks[0]
        if any(np.isnan(c) for c in lengths):
            lengths = X.compute_chunk_sizes().chunks[0]
        return [int(c) for c in lengths]
    return [int(c) for c in X.map_partitions(len).compute()]


def _groups(lengths: list[int], n_parts: int) -> list[tuple[int, int]]:
    """Contiguous runs of blocks, one per part, with as equal row counts as the blocks allow (none empty)."""
    n_parts = max(1, min(n_parts, sum(1 for c in lengths if c > 0)))
    starts = np.concatenate([[0], np.cumsum(lengths)])  # rows before each block boundary
    cuts = [0]
    for k in range(1, n_parts):  # the boundary nearest to an equal share of the rows
        target = starts[-1] * k / n_parts
        i = int(np.searchsorted(starts, target))
        cuts.append(i - 1 if i > 0 and target - starts[i - 1] <= starts[min(i, len(starts) - 1)] - target else i)
    cuts.append(len(lengths))
    for k in range(1, len(cuts)):  # at least one block each, in order
        cuts[k] = min(max(cuts[k], cuts[k - 1] + 1), len(lengths) - (len(cuts) - 1 - k))
    return [(cuts[k], cuts[k + 1]) for k in range(len(cuts) - 1)]


def _align_labels(X: Any, y: Any, lengths: list[int]) -> list:
    """``y``'s blocks matching ``X``'s row blocks: Dask labels rechunked (or repartitioned) to them, host
    labels cut at the same rows."""
    if y is None:
        return [None] * len(lengths)
    if not is_dask_collection(y):
        y = np.asarray(y)
        if y.shape[0] != sum(lengths):
            raise ValueError(f"y has {y.shape[0]} rows but X has {sum(lengths)}")
        ends = np.cumsum([0] + lengths)
        return [y[a:b] for a, b in zip(ends[:-1], ends[1:])]
    if hasattr(y, "chunks") and hasattr(X, "chunks"):
        if sum(y.chunks[0]) != sum(lengths):
            raise ValueError(f"y has {sum(y.chunks[0])} rows but X has {sum(lengths)}")
        return _dask_row_blocks(y.rechunk((tuple(lengths),) + y.chunks[1:]))
    if hasattr(y, "npartitions") and hasattr(X, "npartitions") and y.npartitions == X.npartitions:
        return list(y.to_delayed())
    if hasattr(y, "to_dask_array"):
        y = y.to_dask_array(lengths=True)
    return _align_labels(X, y, lengths) if hasattr(X, "chunks") else _align_labels(
        X.to_dask_array(lengths=True), y, lengths)


def row_parts(client: Any, X: Any, y: Any = None, n_parts: int = 1) -> list[tuple[list, list]]:
    """``[(X blocks, y blocks)]``, one per part: contiguous rows, balanced.

    Host ``X``: one block per part (its rows).  Dask ``X``: futures of the row
    blocks (computed on the cluster), a contiguous run per part.  ``y`` (host
    or Dask, or None) is cut the same way.
    """
    if not is_dask_collection(X):
        n = X.shape[0]
        bounds = shard_bounds(n, max(1, min(n_parts, n))) if n else [(0, 0)]
        ys = _align_labels(X, y, [b - a for a, b in bounds]) if not is_dask_collection(y) else \
            _align_labels(X, np.asarray(y.compute()), [b - a for a, b in bounds])
        return [([_rows(X, a, b)], [yb]) for (a, b), yb in zip(bounds, ys)]
    lengths = _block_lengths(X)
    xs = _dask_row_blocks(X)
    ys = _align_labels(X, y, lengths)
    futures = client.compute(xs + [b for b in ys if b is not None and not isinstance(b, np.ndarray)])
    x_futures, y_futures = futures[:len(xs)], iter(futures[len(xs):])
    y_blocks = [b if b is None or isinstance(b, np.ndarray) else next(y_futures) for b in ys]
    return [(x_futures[a:b], y_blocks[a:b]) for a, b in _groups(lengths, n_parts)]


def column_parts(client: Any, X: Any, slices: list[tuple[int, int]]) -> list[list]:
    """Every row of the columns ``f0:f1`` of each slice: ``[blocks]`` per slice (host arrays, or futures of
    the Dask collection's row blocks cut to those columns on the cluster)."""
    if not is_dask_collection(X):
        if scipy.sparse.issparse(X):
            csc = scipy.sparse.csc_matrix(X)
            return [[csc[:, a:b]] for a, b in slices]
        if hasattr(X, "iloc"):
            return [[X.iloc[:, a:b]] for a, b in slices]
        return [[np.asarray(X)[:, a:b]] for a, b in slices]
    if hasattr(X, "iloc"):
        X = X.to_dask_array(lengths=True)
    blocks = [_dask_row_blocks(X[:, a:b]) for a, b in slices]
    futures = client.compute([d for bl in blocks for d in bl])
    out, k = [], 0
    for bl in blocks:
        out.append(futures[k:k + len(bl)])
        k += len(bl)
    return out


def _rows(X: Any, a: int, b: int) -> Any:
    if hasattr(X, "iloc"):
        return X.iloc[a:b]
    if scipy.sparse.issparse(X):
        return scipy.sparse.csr_matrix(X)[a:b]
    return X[a:b]


def stack_rows(blocks: list) -> Any:
    """One matrix of a part's row blocks, in order: numpy, pandas (kept: its column names and dtypes) or
    CSR (when any block is sparse)."""
    blocks = [b for b in blocks if b is not None]
    if len(blocks) == 1:
        return blocks[0]
    if any(scipy.sparse.issparse(b) for b in blocks):
        return scipy.sparse.vstack([scipy.sparse.csr_matrix(b) for b in blocks], format="csr")
    if all(hasattr(b, "iloc") for b in blocks):
        import pandas as pd

        return pd.concat(blocks)
    return np.concatenate([np.asarray(b) for b in blocks])
