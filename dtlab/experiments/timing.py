"""Timing helpers for benchmarks: medians of several runs, thread counts stated on both sides.

Every speed ratio a benchmark records is a :func:`comparison` entry: the
seconds of dtlab and of the peer, the threads each side ran with, and the
speedup (peer seconds / dtlab seconds, so above 1 means dtlab is faster).
Each comparison is made twice: **per core** (one thread on both sides) and for
the **whole machine** (all cores on both sides, where the peer has a way to
use them; where it has none, the entry says so in ``peer_note``).  A ratio of
two threads against one is not a speedup of the method.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

#: The two settings every speed comparison is reported in.
MODES = ("per_core", "whole_machine")


def median_seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs after ``warmup`` untimed runs.

    The warm-up keeps JIT compilation and first-touch allocation out of the
    measurement; the median resists the noise of a shared machine.
    """
    return paired_medians([fn], repeats=repeats, warmup=warmup)[0]


def paired_times(fns: Sequence[Callable[[], Any]], repeats: int = 5, warmup: int = 1) -> list[list[float]]:
    """Wall times of each of ``fns``, timed in alternation after ``warmup`` untimed rounds.

    Alternating (a, b, a, b, ...) exposes every contender to the same bursts of
    load on a shared machine, so their ratio is steadier than timing one after
    the other.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    for _ in range(warmup):
        for fn in fns:
            fn()
    times: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for fn, bucket in zip(fns, times):
            start = time.perf_counter()
            fn()
            bucket.append(time.perf_counter() - start)
    return times


def paired_medians(fns: Sequence[Callable[[], Any]], repeats: int = 5, warmup: int = 1) -> list[float]:
    """Median wall time of each of ``fns``, timed in alternation (:func:`paired_times`)."""
    return [statistics.median(t) for t in paired_times(fns, repeats, warmup)]


def load_average() -> list[float] | None:
    """The machine's 1, 5 and 15-minute load averages (other processes share the cores), None where unknown."""
    import os

    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def machine_threads() -> int:
    """Threads that use the whole machine: numba's thread pool size (one per core unless capped)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


@contextlib.contextmanager
def numba_threads(n: int) -> Iterator[int]:
    """Run the block with ``n`` numba threads (restored afterwards); yields ``n``."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield n
    finally:
        numba.set_num_threads(before)


def threads_for(mode: str) -> int:
    """One thread for ``"per_core"``, every core for ``"whole_machine"``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    return 1 if mode == "per_core" else machine_threads()


@contextlib.contextmanager
def in_row_chunks(fn: Callable[[Any], Any], X: Any, n_threads: int) -> Iterator[Callable[[], None]]:
    """Yield a callable that runs ``fn`` on ``n_threads`` row blocks of ``X`` in a thread pool.

    How a user gives a single-threaded but GIL-releasing peer (scikit-learn's
    Cython ``apply``) every core.  With ``n_threads == 1`` the callable is
    ``fn(X)``.  The pool lives as long as the ``with`` block, so timings do not
    include starting threads.
    """
    if n_threads == 1:
        yield lambda: fn(X)
        return
    n = X.shape[0]
    blocks = [X[i * n // n_threads:(i + 1) * n // n_threads] for i in range(n_threads)]
    with ThreadPoolExecutor(max_workers=n_threads) as pool:
        yield lambda: list(pool.map(fn, blocks))


def comparison(peer: str, mode: str, dtlab_seconds: float, peer_seconds: float, dtlab_threads: int,
               peer_threads: int, peer_note: str | None = None, **extra: Any) -> dict[str, Any]:
    """One speed comparison as recorded in ``results.json``.

    Parameters
    ----------
    peer : str
        What dtlab is compared with (e.g. ``"scikit-learn fit"``).
    mode : {"per_core", "whole_machine"}
    dtlab_seconds, peer_seconds : float
        Medians of the two timings.
    dtlab_threads, peer_threads : int
        The threads each side ran with.
    peer_note : str, optional
        Why the peer ran on fewer threads than the machine has (it has no
        multi-core mode), required in that case for a whole-machine entry.
    **extra
        Other JSON-ready facts (rows, trees, ...).

    Returns
    -------
    dict with ``peer, mode, threads={"dtlab", "peer"}, dtlab_seconds,
    peer_seconds, speedup`` (peer / dtlab seconds) and ``peer_note`` if given.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "per_core" and (dtlab_threads, peer_threads) != (1, 1):
        raise ValueError(f"a per-core comparison runs one thread on both sides, got {dtlab_threads} and "
                         f"{peer_threads}")
    if mode == "whole_machine" and peer_threads < dtlab_threads and not peer_note:
        raise ValueError("a whole-machine comparison whose peer runs on fewer threads must say why (peer_note)")
    entry = {"peer": peer, "mode": mode, "threads": {"dtlab": int(dtlab_threads), "peer": int(peer_threads)},
             "dtlab_seconds": float(dtlab_seconds), "peer_seconds": float(peer_seconds),
             "speedup": float(peer_seconds / dtlab_seconds), **extra}
    if peer_note:
        entry["peer_note"] = peer_note
    return entry


def ratio_keys(entries: Sequence[dict[str, Any]], prefix: str) -> dict[str, float]:
    """``{f"{prefix}_{mode}": speedup}`` for comparison entries of one peer (top-level keys of a result)."""
    return {f"{prefix}_{e['mode']}": e["speedup"] for e in entries}
