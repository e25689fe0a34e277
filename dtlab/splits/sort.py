"""Sorting kernels: a parallel radix sort of 32-bit keys (the swGBDT paper's hot spot) and numpy's sort.

:func:`radix_argsort` sorts float32 values by their order-preserving 32-bit
keys with 8-bit digits (least significant first, four counting passes, a
pass skipped where every key has the same digit), as the paper does: the
array is cut into one segment per worker, the segments are radix-sorted in
parallel, then merged pairwise in ``log2(workers)`` parallel rounds.  Every
step is stable, so the permutation is ``numpy.argsort(kind="stable")``'s.

:func:`numpy_argsort` is the other candidate: one ``np.sort`` of 64-bit
``key << 32 | index`` words (the greedy trees' presort trick), whose order is
the stable one because the words are distinct.  :data:`SORTS` names both and
``"auto"`` (:func:`presort_argsort`), the faster one for the column's size as
measured on this project's busy 2-core machine: numpy's SIMD sort up to 10^5
keys, the radix sort on one worker from :data:`RADIX_MIN_KEYS`; two workers
were slower than one on that machine.  The exact search presorts with
:data:`DEFAULT_SORT`; :func:`workbench.boosting.experiments.sort_timing` measures
the sorts again (``boosting_sort`` in ``figures/results.json``: the times, and
whether this crossover still holds).
"""

from __future__ import annotations

import numba
import numpy as np

from .._jit import NJIT
from .presort import sorted_row_ids

_SIGN = np.uint32(0x80000000)


@numba.njit(**NJIT)
def _float_keys(bits, out):
    """Order-preserving uint32 keys of float32 bit patterns (no NaN): ``a < b`` iff ``key(a) < key(b)``."""
    for i in range(bits.shape[0]):
        b = bits[i]
        out[i] = ~b if b & _SIGN else b | _SIGN


@numba.njit(**NJIT)
def _radix_segment(keys, idx, s, e, tmp_k, tmp_i):
    """Stable LSD radix sort of ``keys[s:e]`` (uint32) carrying ``idx[s:e]``, in place; scratch of the same size."""
    n = e - s
    counts = np.zeros((4, 256), np.int64)
    for i in range(s, e):
        k = keys[i]
        for d in range(4):
            counts[d, (k >> np.uint32(8 * d)) & np.uint32(255)] += 1
    src_k, src_i, dst_k, dst_i = keys, idx, tmp_k, tmp_i
    src_off, dst_off = s, s
    moved = 0
    for d in range(4):
        if counts[d].max() == n:  # every key has this digit: the pass would not move anything
            continue
        start = np.empty(256, np.int64)
        acc = 0
        for b in range(256):
            start[b] = acc
            acc += counts[d, b]
        shift = np.uint32(8 * d)
        for i in range(n):
            k = src_k[src_off + i]
            b = (k >> shift) & np.uint32(255)
            p = start[b]
            dst_k[dst_off + p] = k
            dst_i[dst_off + p] = src_i[src_off + i]
            start[b] = p + 1
        src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        moved += 1
    if moved % 2 == 1:  # the result lies in the scratch
        for i in range(s, e):
            keys[i] = tmp_k[i]
            idx[i] = tmp_i[i]


@numba.njit(**NJIT)
def _merge(src_k, src_i, s, m, e, dst_k, dst_i):
    """Stable merge of the sorted runs ``[s, m)`` and ``[m, e)`` of ``src`` into ``dst[s:e]`` (left first on ties)."""
    a = s
    b = m
    for out in range(s, e):
        if b >= e or (a < m and src_k[a] <= src_k[b]):
            dst_k[out] = src_k[a]
            dst_i[out] = src_i[a]
            a += 1
        else:
            dst_k[out] = src_k[b]
            dst_i[out] = src_i[b]
            b += 1


@numba.njit(parallel=True, **NJIT)
def _radix_sort(keys, idx, n_segments):
    """Sort ``keys`` (uint32) carrying ``idx`` in place: segment sorts in parallel, then pairwise merges."""
    n = keys.shape[0]
    tmp_k = np.empty_like(keys)
    tmp_i = np.empty_like(idx)
    for j in numba.prange(n_segments):
        _radix_segment(keys, idx, j * n // n_segments, (j + 1) * n // n_segments, tmp_k, tmp_i)
    width = 1
    src_k, src_i, dst_k, dst_i = keys, idx, tmp_k, tmp_i
    flipped = False
    while width < n_segments:
        n_pairs = (n_segments + 2 * width - 1) // (2 * width)
        for p in numba.prange(n_pairs):
            first = 2 * width * p
            s = first * n // n_segments
            m = min(first + width, n_segments) * n // n_segments
            e = min(first + 2 * width, n_segments) * n // n_segments
            _merge(src_k, src_i, s, m, e, dst_k, dst_i)
        src_k, src_i, dst_k, dst_i = dst_k, dst_i, src_k, src_i
        flipped = not flipped
        width *= 2
    if flipped:
        keys[:] = tmp_k
        idx[:] = tmp_i


def radix_argsort(values: np.ndarray, n_workers: int | None = None) -> np.ndarray:
    """Stable argsort of float32 values (no NaN) by the parallel radix sort.

    Parameters
    ----------
    values : float32 array (n,)
    n_workers : int, optional; segments sorted in parallel (default: numba's thread count)

    Returns
    -------
    order : int32 array (n,), ``numpy.argsort(values, kind="stable")``
    """
    x = np.ascontiguousarray(values, np.float32) + np.float32(0.0)  # -0.0 and 0.0 get one key
    keys = np.empty(x.shape[0], np.uint32)
    _float_keys(x.view(np.uint32), keys)
    idx = np.arange(x.shape[0], dtype=np.int32)
    if x.shape[0] > 1:
        n_seg = max(1, min(numba.get_num_threads() if n_workers is None else int(n_workers), x.shape[0]))
        if n_seg == 1:  # one segment: no parallel region to start
            _radix_segment(keys, idx, 0, x.shape[0], np.empty_like(keys), np.empty_like(idx))
        else:
            _radix_sort(keys, idx, n_seg)
    return idx


def numpy_argsort(values: np.ndarray, n_workers: int | None = None) -> np.ndarray:
    """Stable argsort of float32 values (no NaN) by one ``np.sort`` of ``key << 32 | index`` words (serial;
    :func:`dtlab.splits.sorted_row_ids`)."""
    x = np.ascontiguousarray(values, np.float32) + np.float32(0.0)  # -0.0 and 0.0 get one key
    return sorted_row_ids(x, np.arange(x.shape[0], dtype=np.uint64)).astype(np.int32)


#: Keys from which the radix sort (one worker) beat numpy's sort in :func:`workbench.boosting.experiments.sort_timing`
#: on this project's 2-core machine (the times: ``boosting_sort`` in ``figures/results.json``).
RADIX_MIN_KEYS = 1 << 20


def presort_argsort(values: np.ndarray) -> np.ndarray:
    """The faster stable argsort for this many keys: numpy's below :data:`RADIX_MIN_KEYS`, else the radix sort."""
    if values.shape[0] >= RADIX_MIN_KEYS:
        return radix_argsort(values, 1)
    return numpy_argsort(values)


SORTS = {"radix": radix_argsort, "numpy": numpy_argsort, "auto": presort_argsort}
#: The sort the exact search presorts with; see the module docstring.
DEFAULT_SORT = "auto"
