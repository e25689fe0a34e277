"""Bin cut points of data spread over Dask workers, equal to those of the whole data in one process.

:func:`dtlab.boosting.hist.bin_edges` cuts a feature's sorted present values
``srt`` at midpoints between distinct values when they are at most
``max_bins - 1``, else at the order statistics ``srt[steps]`` of equally
spaced ranks.  Computed once per fit for the whole data, by a procedure that
does not depend on how the rows are partitioned:

1. every worker sends, per feature, its count of present values, its
   smallest one, and its distinct values when they are few (at most
   ``max_bins - 1``); the union of the few decides the midpoint case exactly;
2. otherwise each wanted order statistic is found by bisection over the
   32-bit order-preserving key of float32 values: per step every worker
   counts its values with a key at most the probe (a binary search in its
   sorted keys) for all features and ranks at once, and the counts are added
   (integers: the order does not matter).  32 steps give the exact value.

So the cuts -- and with exact sums the trees -- are the single-process ones
for any number of workers.  What crosses the network is counts and at most
``max_bins`` values per feature and worker, never rows.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["ColumnKeys", "distributed_cuts", "float32_keys", "keys_to_float32"]

_SIGN = np.uint32(0x80000000)


def float32_keys(values: np.ndarray) -> np.ndarray:
    """uint32 keys ordered as the float32 values (``-0.0`` taken as ``0.0``; no NaN)."""
    v = np.asarray(values, np.float32) + np.float32(0.0)  # -0.0 + 0.0 is +0.0
    bits = v.view(np.uint32)
    return np.where(bits & _SIGN, ~bits, bits | _SIGN)


def keys_to_float32(keys: np.ndarray) -> np.ndarray:
    """The float32 values of :func:`float32_keys`."""
    keys = np.asarray(keys, np.uint32)
    bits = np.where(keys & _SIGN, keys & ~_SIGN, ~keys)
    return bits.astype(np.uint32).view(np.float32)


class ColumnKeys:
    """A worker's present values, per feature: sorted keys, for the summaries and counts of the procedure.

    Parameters
    ----------
    indptr : int64 (n_features + 1,), values : float32 (nnz,) (a :class:`~dtlab.boosting.grower.ColumnData`'s)
    """

    def __init__(self, indptr: np.ndarray, values: np.ndarray):
        self.indptr = indptr
        self.keys = np.empty(values.shape[0], np.uint32)
        for f in range(indptr.shape[0] - 1):
            a, b = indptr[f], indptr[f + 1]
            self.keys[a:b] = np.sort(float32_keys(values[a:b]))

    def summary(self, max_bins: int) -> list[tuple[int, int, np.ndarray | None]]:
        """Per feature ``(present values, smallest key or 0, its distinct keys if at most max_bins - 1 else None)``."""
        out = []
        for f in range(self.indptr.shape[0] - 1):
            k = self.keys[self.indptr[f]:self.indptr[f + 1]]
            if k.shape[0] == 0:
                out.append((0, 0, k))
                continue
            new = np.empty(k.shape[0], np.bool_)
            new[0] = True
            np.not_equal(k[1:], k[:-1], out=new[1:])
            n_distinct = int(new.sum())
            out.append((int(k.shape[0]), int(k[0]), k[new] if n_distinct <= max_bins - 1 else None))
        return out

    def count_at_most(self, features: np.ndarray, probes: np.ndarray) -> np.ndarray:
        """``[count of keys <= probes[i]] of feature features[i]``, int64 (n_probes,)."""
        out = np.empty(probes.shape[0], np.int64)
        for f in np.unique(features):
            at = np.flatnonzero(features == f)
            k = self.keys[self.indptr[f]:self.indptr[f + 1]]
            out[at] = np.searchsorted(k, probes[at].astype(np.uint32), side="right")
        return out


def distributed_cuts(n_features: int, max_bins: int, summaries: Callable[[], list],
                     counts: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """The cut points of every feature from the workers' :class:`ColumnKeys`.

    Parameters
    ----------
    n_features, max_bins : int
    summaries : callable() -> list, every worker's :meth:`ColumnKeys.summary` (one query)
    counts : callable(features, probes) -> int64 array, :meth:`ColumnKeys.count_at_most` added over the
        workers (one query)

    Returns
    -------
    cuts : list of float32 arrays, :func:`~dtlab.boosting.hist.bin_edges` of each feature's values
    n_present : int64 array (n_features,), present values per feature over all rows
    """
    parts = summaries()
    n_present = np.array([sum(p[f][0] for p in parts) for f in range(n_features)], np.int64)
    cuts: list[np.ndarray | None] = [None] * n_features
    lowest = np.zeros(n_features, np.uint32)
    wanted_f, wanted_rank = [], []
    for f in range(n_features):
        mins = [p[f][1] for p in parts if p[f][0] > 0]
        if not mins:
            cuts[f] = np.empty(0, np.float32)
            continue
        lowest[f] = min(mins)
        few = [p[f][2] for p in parts]
        distinct = np.unique(np.concatenate([k for k in few if k is not None])) \
            if all(k is not None for k in few) else None
        if distinct is not None and distinct.shape[0] <= max_bins - 1:
            d = keys_to_float32(distinct)
            if d.shape[0] <= 1:
                cuts[f] = np.empty(0, np.float32)
            else:  # bin_edges' midpoints
                mids = (d[:-1] + d[1:]) * np.float32(0.5)
                cuts[f] = np.where(mids == d[:-1], d[1:], mids).astype(np.float32)
            continue
        steps = np.linspace(0, n_present[f] - 1, max_bins)[1:-1].round().astype(np.int64)
        cuts[f] = np.empty(0, np.float32)  # max_bins = 2: no order statistic wanted, no cut
        wanted_f.append(np.full(steps.shape[0], f, np.int64))
        wanted_rank.append(steps)
    if wanted_f:
        features, ranks = np.concatenate(wanted_f), np.concatenate(wanted_rank)
        lo = np.zeros(features.shape[0], np.uint64)
        hi = np.full(features.shape[0], 2**32 - 1, np.uint64)
        while (lo < hi).any():  # the smallest key with more than `rank` values at or below it
            mid = (lo + hi) // 2
            enough = counts(features, mid) >= ranks + 1
            hi = np.where(enough, mid, hi)
            lo = np.where(enough, lo, mid + 1)
        values = keys_to_float32(lo.astype(np.uint32))
        for f in np.unique(features):
            picked = np.unique(values[features == f])
            cuts[f] = picked[picked > keys_to_float32(lowest[f:f + 1])[0]]  # no empty first bin
    return [np.asarray(c, np.float32) for c in cuts], n_present
