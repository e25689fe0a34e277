"""Worker threads for the once-per-fit preparations (the histogram search's binning, the exact search's
presort): plain Python threads over ``nogil`` kernels and numpy sorts (which release the GIL).

A level's work is cut into as many feature slices as workers; the calling
thread runs slice 0 and pool threads the others, each a serial numba kernel
that releases the GIL.  An idle pool thread sleeps on a lock (no spinning),
unlike numba's OpenMP workers, which spin after each parallel region and, on a
machine with as many busy threads as cores, take the core from the thread that
runs the serial part of the level (the histogram search on two threads was
slower than on one while another process held a core).  One submission per
worker costs tens of microseconds.  The searches' levels run in one OpenMP
region each instead: in the benchmark, where one search follows the other,
the spinning OpenMP worker then takes the next region at once (the
whole-machine hist comparison with LightGBM was better with the levels on
OpenMP than on this pool; the measured ratios are ``boosting_vs_peers`` in
``figures/results.json``).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

_lock = threading.Lock()
_pools: dict[int, ThreadPoolExecutor] = {}


def _pool(n_threads: int) -> ThreadPoolExecutor:
    with _lock:
        pool = _pools.get(n_threads)
        if pool is None:
            pool = _pools[n_threads] = ThreadPoolExecutor(n_threads, thread_name_prefix="dtlab-boosting")
        return pool


def run_slices(kernel: Callable[..., Any], n_items: int, n_workers: int, *args: Any) -> None:
    """``kernel(i0, i1, w, *args)`` for ``w < n_workers``, items ``[i0, i1)`` cut into equal slices; slice 0 here."""
    run_ranges(kernel, [w * n_items // n_workers for w in range(n_workers + 1)], *args)


def run_ranges(kernel: Callable[..., Any], cuts, *args: Any) -> None:
    """``kernel(cuts[w], cuts[w + 1], w, *args)`` for every worker ``w`` with a non-empty range; the first
    here, the others on pool threads (none when only one range is non-empty)."""
    work = [w for w in range(len(cuts) - 1) if cuts[w + 1] > cuts[w]]
    if len(work) <= 1:
        if work:
            kernel(cuts[work[0]], cuts[work[0] + 1], work[0], *args)
        return
    pool = _pool(len(cuts) - 2)
    futures = [pool.submit(kernel, cuts[w], cuts[w + 1], w, *args) for w in work[1:]]
    kernel(cuts[work[0]], cuts[work[0] + 1], work[0], *args)
    for f in futures:
        f.result()
