"""Timing helpers: medians, thread settings, row blocks in a thread pool, comparison entries."""

import numba
import numpy as np
import pytest

from dtlab.experiments.timing import (
    comparison,
    in_row_chunks,
    machine_threads,
    median_seconds,
    numba_threads,
    paired_medians,
    ratio_keys,
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
