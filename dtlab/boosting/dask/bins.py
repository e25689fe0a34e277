"""Bin cut points of data spread over Dask workers, equal to those of the whole data in one process.

:func:`dtlab.boosting.hist.bin_edges` cuts a feature's sorted present values
``srt`` at midpoints between distinct values when they are at most
``max_bins - 1``, else at the order statistics ``srt[steps]`` of equally
spaced ranks.  Computed once per fit for the whole data, by a procedure that
does not depend on how the rows are partitioned:

1. every worker sends, per feature, its count of present values, its
   smallest one, its distinct values when they are few (at most
   ``max_bins - 1``) and a sketch of its sorted keys (every ``s``-th one and
   the last, :func:`sketch_positions`); the union of the few decides the
   midpoint case exactly;
2. otherwise each wanted order statistic is bracketed from the sketches:
   between two keys ``lo <= hi`` such that at most ``rank`` values lie below
   ``lo`` and more than ``rank`` at or below ``hi`` on any partitioning the
   sketches allow.  Every worker sends, per feature, its count of values below
   each (merged) bracket and its distinct keys inside the brackets with their
   counts; added over the workers (integers: the order does not matter), these
   give the exact count of values at or below every key in a bracket, so the
   order statistic itself.

Two queries, whatever the data (a bisection over the 32-bit keys took 32, each
a round trip through the scheduler: most of a small fit's time).

So the cuts -- and with exact sums the trees -- are the single-process ones
for any number of workers.  What crosses the network is counts and keys: per
feature and worker at most ``max_bins`` distinct values, the sketch
(:data:`SKETCH_PER_BIN` ``x max_bins`` keys) and the keys inside the brackets
(about ``2 x n_workers x s`` per wanted statistic), never rows.
"""

from __future__ import annotations

from typing import Callable

import numba
import numpy as np

from ..._jit import NJIT

__all__ = ["ColumnKeys", "distributed_cuts", "float32_keys", "keys_to_float32", "sketch_positions"]

_SIGN = np.uint32(0x80000000)
#: Keys of a worker's sketch per bin: more keys, narrower brackets (fewer keys in the second query).
SKETCH_PER_BIN = 16


def sketch_positions(n: int, step: int) -> np.ndarray:
    """Positions (int64, increasing) of the sorted keys in a sketch of ``n`` keys: every ``step``-th and the
    last."""
    if n == 0:
        return np.empty(0, np.int64)
    pos = np.arange(0, n, step, dtype=np.int64)
    return pos if pos[-1] == n - 1 else np.append(pos, n - 1)


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
        scratch = np.empty(int(np.diff(indptr).max(initial=0)), np.uint32)
        for f in range(indptr.shape[0] - 1):
            a, b = indptr[f], indptr[f + 1]
            _keys_into(values[a:b], self.keys[a:b])  # no temporaries: a Dask worker would fault each one in
            _radix_sort(self.keys[a:b], scratch[:b - a])

    def summary(self, max_bins: int, per_bin: int = SKETCH_PER_BIN) -> list[tuple]:
        """Per feature ``(present values, smallest key or 0, its distinct keys if at most max_bins - 1 else None,
        its sketch: the keys at :func:`sketch_positions` (about ``per_bin x max_bins`` of them), their step)``."""
        out = []
        for f in range(self.indptr.shape[0] - 1):
            k = self.keys[self.indptr[f]:self.indptr[f + 1]]
            if k.shape[0] == 0:
                out.append((0, 0, k, k, 1))
                continue
            new = np.empty(k.shape[0], np.bool_)
            new[0] = True
            np.not_equal(k[1:], k[:-1], out=new[1:])
            n_distinct = int(new.sum())
            step = max(1, -(-k.shape[0] // (per_bin * max_bins)))
            out.append((int(k.shape[0]), int(k[0]), k[new] if n_distinct <= max_bins - 1 else None,
                        k[sketch_positions(k.shape[0], step)], step))
        return out

    def windows(self, brackets: list) -> list:
        """Per ``(feature, lo, hi)`` of ``brackets`` (uint32 ``lo``, ``hi``: disjoint, increasing brackets of
        the feature): ``(feature, below, keys, counts)`` -- int64 counts of keys ``< lo`` per bracket, and the
        distinct keys (uint32, increasing) inside the brackets with their int64 counts."""
        out = []
        for f, lo, hi in brackets:
            k = self.keys[self.indptr[f]:self.indptr[f + 1]]
            a = np.searchsorted(k, lo, side="left")
            b = np.searchsorted(k, hi, side="right")
            inside = np.concatenate([k[i:j] for i, j in zip(a, b)]) if a.shape[0] else k[:0]
            starts = _runs(inside)
            counts = np.diff(np.append(starts, inside.shape[0]))
            out.append((f, a.astype(np.int64), inside[starts], counts.astype(np.int64)))
        return out


@numba.njit(**NJIT)
def _keys_into(values, out):
    """``out[:] = float32_keys(values)`` (C-contiguous float32 ``values``, no NaN), in one pass."""
    bits = values.view(np.uint32)
    sign = np.uint32(0x80000000)
    for i in range(bits.shape[0]):
        b = bits[i]
        if b == sign:  # -0.0 is 0.0
            b = np.uint32(0)
        out[i] = ~b if b & sign else b | sign


@numba.njit(**NJIT)
def _radix_sort(keys, scratch):
    """Sort uint32 ``keys`` in place: four stable passes of 8 bits (``scratch``: as long as ``keys``).  A
    quarter of ``np.sort``'s time on a 250,000-row column."""
    n = keys.shape[0]
    src, dst = keys, scratch
    count = np.empty(256, np.int64)
    for shift in range(0, 32, 8):
        count[:] = 0
        for i in range(n):
            count[(src[i] >> shift) & 255] += 1
        total = 0
        for d in range(256):
            c = count[d]
            count[d] = total
            total += c
        for i in range(n):
            d = (src[i] >> shift) & 255
            dst[count[d]] = src[i]
            count[d] += 1
        src, dst = dst, src  # after four passes the sorted keys are back in keys


def _runs(sorted_keys: np.ndarray) -> np.ndarray:
    """Start of every run of equal keys in a sorted array (int64)."""
    new = np.empty(sorted_keys.shape[0], np.bool_)
    new[:1] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new[1:])
    return np.flatnonzero(new)


def _brackets(n: list, sketches: list, steps: list, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``lo, hi`` (uint32, per rank) with the ``rank``-th smallest value of the whole data between them.

    ``lo``: the largest sketch key with at most ``rank`` values surely below it (a worker has fewer than the
    position of its first sketch key ``>= lo`` there); ``hi``: the smallest with more than ``rank`` values
    surely at or below it (a worker has at least the position + 1 of its last sketch key ``<= hi``).  The
    smallest key of all qualifies as ``lo``, the largest as ``hi``.
    """
    cand = np.sort(np.concatenate(sketches))  # np.unique hashes: slower on these few sorted runs
    cand = cand[_runs(cand)]
    most_below = np.zeros(cand.shape[0], np.int64)
    least_upto = np.zeros(cand.shape[0], np.int64)
    for nw, k, step in zip(n, sketches, steps):
        pos = np.append(sketch_positions(nw, step), nw)
        most_below += pos[np.searchsorted(k, cand, side="left")]
        last = np.searchsorted(k, cand, side="right") - 1
        least_upto += np.where(last >= 0, pos[np.maximum(last, 0)] + 1, 0)
    lo = cand[np.searchsorted(most_below, ranks, side="right") - 1]
    hi = cand[np.searchsorted(least_upto, ranks + 1, side="left")]
    return lo, hi


def _merge(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of increasing brackets ``[lo_i, hi_i]`` as disjoint increasing ones."""
    start = np.ones(lo.shape[0], np.bool_)
    start[1:] = lo[1:] > np.maximum.accumulate(hi)[:-1]
    first = np.flatnonzero(start)
    return lo[first], np.maximum.reduceat(hi, first)


def distributed_cuts(n_features: int, max_bins: int, summaries: Callable[[], list],
                     windows: Callable[[list], list]) -> tuple[list[np.ndarray], np.ndarray]:
    """The cut points of every feature from the workers' :class:`ColumnKeys`.

    Parameters
    ----------
    n_features, max_bins : int
    summaries : callable() -> list, every worker's :meth:`ColumnKeys.summary` (one query)
    windows : callable(brackets) -> list, every worker's :meth:`ColumnKeys.windows` (one query, only where a
        feature has more than ``max_bins - 1`` distinct values)

    Returns
    -------
    cuts : list of float32 arrays, :func:`~dtlab.boosting.hist.bin_edges` of each feature's values
    n_present : int64 array (n_features,), present values per feature over all rows
    """
    parts = summaries()
    n_present = np.array([sum(p[f][0] for p in parts) for f in range(n_features)], np.int64)
    cuts: list[np.ndarray | None] = [None] * n_features
    lowest = np.zeros(n_features, np.uint32)
    wanted: dict[int, np.ndarray] = {}
    brackets = []
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
        if steps.shape[0] == 0:
            continue
        lo, hi = _brackets([p[f][0] for p in parts], [p[f][3] for p in parts], [p[f][4] for p in parts], steps)
        wanted[f] = steps
        brackets.append((f, *_merge(lo, hi)))
    if brackets:
        replies = windows(brackets)
        for i, (f, _, _) in enumerate(brackets):
            below = sum(r[i][1] for r in replies)
            keys = np.concatenate([r[i][2] for r in replies])
            order = np.argsort(keys, kind="stable")  # a merge of the workers' sorted runs
            keys = keys[order]
            runs = _runs(keys)
            uniq = keys[runs]
            total = np.add.reduceat(np.concatenate([r[i][3] for r in replies])[order], runs) if runs.shape[0] \
                else np.zeros(0, np.int64)
            # values at or below each key: those below its bracket, then the bracket's keys up to it
            which = np.searchsorted(brackets[i][1], uniq, side="right") - 1
            within = np.cumsum(total)
            start = np.searchsorted(which, np.arange(below.shape[0]), side="left")  # each bracket's first key
            before = np.where(start > 0, within[np.maximum(start - 1, 0)], 0)
            upto = below[which] + within - before[which]
            picked = np.unique(keys_to_float32(uniq[np.searchsorted(upto, wanted[f] + 1, side="left")]))
            cuts[f] = picked[picked > keys_to_float32(lowest[f:f + 1])[0]]  # no empty first bin
    return [np.asarray(c, np.float32) for c in cuts], n_present
