"""Timing helpers: medians, thread settings, row blocks in a thread pool, comparison entries."""

import time

import numba
import numpy as np
import pytest

from workbench.text import speedup_spread
from workbench.timing import (
    Seconds,
    comparison,
    goal_met,
    in_row_chunks,
    machine_threads,
    median_seconds,
    numba_threads,
    paired_latencies,
    paired_medians,
    paired_times,
    ratio_keys,
    short_of_goal,
    threads_for,
)


def test_medians_call_every_function_after_warmup():
    calls = []
    times = paired_medians([lambda: calls.append("a"), lambda: calls.append("b")], repeats=3, warmup=1)
    assert calls == ["a", "b"] * 4 and len(times) == 2 and min(times) >= 0
    assert median_seconds(lambda: None, repeats=1) >= 0
    with pytest.raises(ValueError, match="repeats"):
        median_seconds(lambda: None, repeats=0)


def test_numba_threads_are_restored():
    before = numba.get_num_threads()
    with numba_threads(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == before
    assert threads_for("per_core") == 1 and threads_for("whole_machine") == machine_threads() >= 1
    with pytest.raises(ValueError, match="mode"):
        threads_for("both")


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_row_chunks_cover_every_row_once(n_threads):
    X = np.arange(10)
    seen = []
    with in_row_chunks(lambda rows: seen.extend(rows.tolist()), X, n_threads) as run:
        run()
    assert sorted(seen) == list(range(10))


def test_comparison_entries_state_threads_and_refuse_unfair_settings():
    entry = comparison("peer", "per_core", 1.0, 3.0, 1, 1, n_rows=5)
    assert entry == {"peer": "peer", "mode": "per_core", "threads": {"dtlab": 1, "peer": 1}, "dtlab_seconds": 1.0,
                     "peer_seconds": 3.0, "speedup": 3.0, "n_rows": 5}
    with pytest.raises(ValueError, match="one thread on both sides"):
        comparison("peer", "per_core", 1.0, 3.0, 2, 1)
    with pytest.raises(ValueError, match="peer_note"):
        comparison("peer", "whole_machine", 1.0, 3.0, 2, 1)
    whole = comparison("peer", "whole_machine", 1.0, 2.0, 2, 1, peer_note="one thread only")
    assert whole["peer_note"] == "one thread only"
    assert ratio_keys([entry, whole], "speedup") == {"speedup_per_core": 3.0, "speedup_whole_machine": 2.0}


def test_comparison_from_run_times_records_the_spread_and_goals_need_all_of_it():
    entry = comparison("peer", "per_core", None, None, 1, 1, dtlab_times=[1.0, 2.0, 1.0, 1.0, 1.0],
                       peer_times=[2.0, 2.0, 2.0, 3.0, 2.0])
    assert entry["runs"] == 5 and entry["speedup"] == 2.0 and entry["time_ratio"] == 0.5
    assert entry["speedup_spread"] == [1.0, 3.0] and entry["time_ratio_spread"] == [1 / 3, 1.0]
    assert goal_met(entry, min_speedup=1.0) and not goal_met(entry, min_speedup=1.5)
    assert goal_met(entry, max_time_ratio=1.0) and not goal_met(entry, max_time_ratio=0.6)  # the median alone: met
    assert short_of_goal(entry, 0.6) == pytest.approx(0.4) and short_of_goal(entry, 1.0) == 0.0
    with pytest.raises(ValueError, match="at least 5"):
        comparison("peer", "per_core", None, None, 1, 1, dtlab_times=[1.0] * 4, peer_times=[1.0] * 4)
    with pytest.raises(ValueError, match="both sides"):
        comparison("peer", "per_core", None, None, 1, 1, dtlab_times=[1.0] * 5)
    with pytest.raises(ValueError, match="exactly one"):
        goal_met(entry)
    assert speedup_spread(entry) == "2x (1-3x over 5 runs)" and speedup_spread({"speedup": 2.0}) == "2x"


def test_a_self_timed_contender_is_timed_by_its_own_report():
    times = paired_times([lambda: Seconds(0.25), lambda: time.sleep(0.001)], repeats=5, warmup=0)
    assert times[0] == [0.25] * 5 and all(t >= 0.001 for t in times[1])
    runs = paired_latencies([lambda: Seconds(1e-6), lambda: None], calls=7, rounds=5, warmup=1)
    assert len(runs) == 2 and len(runs[0]) == 5 and runs[0][0].shape == (7,) and (runs[0][0] == 1e-6).all()
    with pytest.raises(ValueError, match="rounds"):
        paired_latencies([lambda: None], rounds=0)


def test_amdahl_fit_recovers_a_known_law_and_keeps_both_parts_non_negative():
    from workbench.timing import amdahl_fit

    serial, parallel = amdahl_fit([1, 2, 4], [3.0 + 8.0 / w for w in (1, 2, 4)])
    assert serial == pytest.approx(3.0) and parallel == pytest.approx(8.0)
    assert amdahl_fit([1], [5.0]) == (0.0, 5.0)  # one count: perfect scaling assumed
    assert amdahl_fit([1, 2], [5.0, 6.0]) == (5.5, 0.0)  # slower on 2: all serial, no negative parallel part
    assert amdahl_fit([1, 2], [4.0, 1.5]) == (0.0, pytest.approx(3.8))  # superlinear: no negative serial part
