"""Timing helpers for benchmarks: medians of several runs, thread counts stated on both sides.

Every speed ratio a benchmark records is a :func:`comparison` entry: the
seconds of dtlab and of the peer, the threads each side ran with, and the
speedup (peer seconds / dtlab seconds, so above 1 means dtlab is faster).
Each comparison is made twice: **per core** (one thread on both sides) and for
the **whole machine** (all cores on both sides, where the peer has a way to
use them; where it has none, the entry says so in ``peer_note``).  A ratio of
two threads against one is not a speedup of the method.

A comparison built from the contenders' run times (``dtlab_times``,
``peer_times``: at least :data:`MIN_RUNS` alternating runs each) also records
the **spread**: the smallest and largest ratio of one round (the two runs
timed next to each other).  A goal counts as met only when the whole spread
meets it (:func:`goal_met`), not the median alone.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Iterator, Sequence

import numpy as np

#: The two settings every speed comparison is reported in.
MODES = ("per_core", "whole_machine")
#: The fewest alternating runs a benchmark's comparison is built from.
MIN_RUNS = 5


class Seconds(float):
    """What a contender returns when it times itself: a peer run in another process (its own clock, without
    the message passing) or a call whose own report is the honest measure.  :func:`paired_times` keeps it
    instead of the wall time around the call."""


def median_seconds(fn: Callable[[], Any], repeats: int = 5, warmup: int = 1) -> float:
    """Median wall time of ``fn()`` over ``repeats`` runs after ``warmup`` untimed runs.

    The warm-up keeps JIT compilation and first-touch allocation out of the
    measurement; the median resists the noise of a shared machine.
    """
    return paired_medians([fn], repeats=repeats, warmup=warmup)[0]


def paired_times(fns: Sequence[Callable[[], Any]], repeats: int = MIN_RUNS, warmup: int = 1) -> list[list[float]]:
    """Wall times of each of ``fns``, timed in alternation after ``warmup`` untimed rounds.

    Alternating (a, b, a, b, ...) exposes every contender to the same bursts of
    load on a shared machine, so their ratio is steadier than timing one after
    the other.  A function that returns :class:`Seconds` is timed by that value.
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
            got = fn()
            wall = time.perf_counter() - start
            bucket.append(float(got) if isinstance(got, Seconds) else wall)
    return times


def paired_medians(fns: Sequence[Callable[[], Any]], repeats: int = MIN_RUNS, warmup: int = 1) -> list[float]:
    """Median wall time of each of ``fns``, timed in alternation (:func:`paired_times`)."""
    return [statistics.median(t) for t in paired_times(fns, repeats, warmup)]


def paired_latencies(fns: Sequence[Callable[[], Any]], calls: int = 500, rounds: int = MIN_RUNS,
                     warmup: int = 20) -> list[list[np.ndarray]]:
    """Seconds of every single call of each of ``fns``: per round, ``calls`` calls of one after the other.

    The contenders alternate by round (a's calls, b's calls, a's calls, ...),
    so each round's percentiles of the contenders are comparable and their
    spread over the rounds is the spread of the ratio.

    Returns
    -------
    list (one per fn) of ``rounds`` float arrays of ``calls`` seconds each
    """
    if rounds < 1 or calls < 1:
        raise ValueError(f"rounds and calls must be >= 1, got {rounds} and {calls}")
    for fn in fns:
        for _ in range(warmup):
            fn()
    out: list[list[np.ndarray]] = [[] for _ in fns]
    clock = time.perf_counter
    for _ in range(rounds):
        for fn, bucket in zip(fns, out):
            seconds = np.empty(calls)
            for i in range(calls):
                start = clock()
                got = fn()
                seconds[i] = float(got) if isinstance(got, Seconds) else clock() - start
            bucket.append(seconds)
    return out


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


def amdahl_fit(counts, seconds) -> tuple[float, float]:
    """``(serial, parallel)`` seconds of Amdahl's ``t(p) = serial + parallel / p`` fitted by least squares (both
    >= 0) to measured ``(counts, seconds)`` (threads, workers or devices); a single count gives ``(0, t * p)``:
    perfect scaling, assumed and to be said so where it is drawn."""
    p = np.asarray(counts, dtype=np.float64)
    t = np.asarray(seconds, dtype=np.float64)
    if len(np.unique(p)) < 2:
        return 0.0, float(np.mean(t * p))
    slope, intercept = np.polyfit(1.0 / p, t, 1)
    if intercept < 0:  # no negative serial part: the best fit through the origin
        return 0.0, float(np.sum(t / p) / np.sum(1.0 / p**2))
    if slope < 0:  # no negative parallel part: all serial
        return float(t.mean()), 0.0
    return float(intercept), float(slope)


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


def comparison(peer: str, mode: str, dtlab_seconds: float | None, peer_seconds: float | None,
               dtlab_threads: int, peer_threads: int, peer_note: str | None = None, *,
               dtlab_times: Sequence[float] | None = None, peer_times: Sequence[float] | None = None,
               **extra: Any) -> dict[str, Any]:
    """One speed comparison as recorded in ``results.json``.

    Parameters
    ----------
    peer : str
        What dtlab is compared with (e.g. ``"scikit-learn fit"``).
    mode : {"per_core", "whole_machine"}
    dtlab_seconds, peer_seconds : float or None
        Medians of the two timings; None to take them from the run times.
    dtlab_threads, peer_threads : int
        The threads each side ran with.
    peer_note : str, optional
        Why the peer ran on fewer threads than the machine has (it has no
        multi-core mode), required in that case for a whole-machine entry.
    dtlab_times, peer_times : sequence of float, optional
        The seconds of every run, in the order they alternated (round ``i`` of
        one side ran next to round ``i`` of the other); at least
        :data:`MIN_RUNS` each.  Given, the entry records the spread.
    **extra
        Other JSON-ready facts (rows, trees, ...).

    Returns
    -------
    dict with ``peer, mode, threads={"dtlab", "peer"}, dtlab_seconds,
    peer_seconds, speedup`` (peer / dtlab seconds), ``time_ratio`` (its
    inverse, how goals are written) and ``peer_note`` if given; with run
    times also ``runs``, ``speedup_spread`` and ``time_ratio_spread`` ([min,
    max] over the rounds).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "per_core" and (dtlab_threads, peer_threads) != (1, 1):
        raise ValueError(f"a per-core comparison runs one thread on both sides, got {dtlab_threads} and "
                         f"{peer_threads}")
    if mode == "whole_machine" and peer_threads < dtlab_threads and not peer_note:
        raise ValueError("a whole-machine comparison whose peer runs on fewer threads must say why (peer_note)")
    spread: dict[str, Any] = {}
    if (dtlab_times is None) != (peer_times is None):
        raise ValueError("give the run times of both sides or of neither")
    if dtlab_times is not None:
        ours, theirs = np.asarray(dtlab_times, float), np.asarray(peer_times, float)
        if ours.shape != theirs.shape or ours.size < MIN_RUNS:
            raise ValueError(f"a comparison needs at least {MIN_RUNS} alternating runs on each side, got "
                             f"{ours.size} and {theirs.size}")
        dtlab_seconds = float(np.median(ours)) if dtlab_seconds is None else dtlab_seconds
        peer_seconds = float(np.median(theirs)) if peer_seconds is None else peer_seconds
        rounds = theirs / ours
        spread = {"runs": int(ours.size), "speedup_spread": [float(rounds.min()), float(rounds.max())],
                  "time_ratio_spread": [float(1 / rounds.max()), float(1 / rounds.min())]}
    if dtlab_seconds is None or peer_seconds is None:
        raise ValueError("give the median seconds or the run times of both sides")
    entry = {"peer": peer, "mode": mode, "threads": {"dtlab": int(dtlab_threads), "peer": int(peer_threads)},
             "dtlab_seconds": float(dtlab_seconds), "peer_seconds": float(peer_seconds),
             "speedup": float(peer_seconds / dtlab_seconds), **extra}
    if spread:
        entry.update(time_ratio=float(dtlab_seconds / peer_seconds), **spread)
    if peer_note:
        entry["peer_note"] = peer_note
    return entry


def goal_met(entry: dict[str, Any], *, max_time_ratio: float | None = None,
             min_speedup: float | None = None) -> bool:
    """Whether a comparison meets a goal over its whole spread (its median alone where it has none).

    ``max_time_ratio``: dtlab's time at most this share of the peer's in every
    round; ``min_speedup``: dtlab at least this many times faster in every round.
    """
    if (max_time_ratio is None) == (min_speedup is None):
        raise ValueError("give exactly one of max_time_ratio and min_speedup")
    worst = entry.get("speedup_spread", [entry["speedup"]] * 2)[0]
    return bool(worst * max_time_ratio >= 1.0 if max_time_ratio is not None else worst >= min_speedup)


def short_of_goal(entry: dict[str, Any], max_time_ratio: float) -> float:
    """How far the worst round's time ratio lies above ``max_time_ratio`` (0 where the goal is met)."""
    worst = entry.get("time_ratio_spread", [1 / entry["speedup"]] * 2)[1]
    return max(float(worst - max_time_ratio), 0.0)


def ratio_keys(entries: Sequence[dict[str, Any]], prefix: str) -> dict[str, float]:
    """``{f"{prefix}_{mode}": speedup}`` for comparison entries of one peer (top-level keys of a result)."""
    return {f"{prefix}_{e['mode']}": e["speedup"] for e in entries}
