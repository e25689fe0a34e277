"""Stateful parts on Dask (numbered messages, kept replies, the journal), parts of host and Dask data, and
the cut points of data spread over workers."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dtlab.boosting.dask.bins import ColumnKeys, distributed_cuts, float32_keys, keys_to_float32
from dtlab.boosting.grower import ColumnData
from dtlab.boosting.hist import bin_edges
from dtlab.distributed.executors import check_executor, is_dask_collection, uses_dask
from dtlab.distributed.replicas import Journal, _build, _step

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

from dtlab.distributed.cluster import local_cluster  # noqa: E402
from dtlab.distributed.dask_data import row_parts, stack_rows  # noqa: E402
from dtlab.distributed.replicas import Replicas  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use:UserWarning")


class Counter:
    """A toy state: a running sum of the messages, built from a starting value."""

    def __init__(self, start):
        self.total = float(np.sum(start))

    def handle(self, message, replay):
        self.total += message
        return None if replay else self.total


def _total(state):
    return state.total


def test_a_message_is_applied_once_and_a_rebuilt_part_replays_the_journal():
    journal = Journal()
    part = _build(Counter, journal, np.array([1.0, 2.0]))
    assert _step(part, 1, 10) == 13.0
    assert _step(part, 1, 10) == 13.0  # the same round again (its worker left half way): the kept reply
    journal.seq, journal.messages = 1, [10]
    with pytest.raises(RuntimeError, match="out of step"):
        _step(part, 3, 1)
    assert _step(part, 2, 5) == 18.0
    journal.seq = 2
    journal.record(5, restart=False)
    again = _build(Counter, journal, np.array([1.0, 2.0]))  # on another worker, from the host's copy
    assert again.state.total == 18.0 and again.seq == 2
    journal.record(7, restart=True)
    assert journal.messages == [7]


def test_executor_selector_and_dask_collections():
    assert check_executor("local") == "local" and check_executor("tcp://127.0.0.1:8786") == "dask"
    with pytest.raises(ValueError, match="executor must be"):
        check_executor("gpu")
    with pytest.raises(TypeError, match="executor must be"):
        check_executor(3)
    X = da.zeros((4, 2))
    assert is_dask_collection(X) and not is_dask_collection(np.zeros(3))
    with pytest.raises(ValueError, match="Dask collection"):
        uses_dask("local", X)
    assert not uses_dask("local", np.zeros(3)) and uses_dask("dask", np.zeros(3))


def test_replicas_on_a_cluster_and_row_parts_of_host_and_dask_data():
    X = np.arange(40, dtype=np.float64).reshape(20, 2)
    with local_cluster(n_workers=2, processes=False) as client:
        host = row_parts(client, X, np.arange(20), n_parts=3)
        assert [p[0][0].shape[0] for p in host] == [7, 7, 6]
        dask = row_parts(client, da.from_array(X, chunks=(3, 1)), da.from_array(np.arange(20), chunks=5), 2)
        rows = [stack_rows(client.gather(xb)) for xb, _ in dask]
        assert np.array_equal(np.concatenate(rows), X) and abs(rows[0].shape[0] - rows[1].shape[0]) <= 3
        labels = np.concatenate([stack_rows(client.gather(yb)) for _, yb in dask])
        assert np.array_equal(labels, np.arange(20))
        reps = Replicas(client, [(xb[0],) for xb, _ in host], Counter)
        try:
            assert reps.send(1.0) == [sum(p[0][0].sum() for p in host[:1]) + 1.0,
                                      host[1][0][0].sum() + 1.0, host[2][0][0].sum() + 1.0]
            assert reps.ask(_total) == reps.send(0.0)
            assert reps.journal.seq == 2 and reps.sent_bytes == 2 * 3 * 8  # two scalar messages to three parts
        finally:
            reps.close()


def test_float32_keys_keep_the_order_of_the_values():
    v = np.array([-np.inf, -3.5, -1e-30, -0.0, 0.0, 1e-30, 2.0, np.inf], np.float32)
    k = float32_keys(v)
    assert np.all(np.diff(k.astype(np.int64)) >= 0) and k[3] == k[4]  # -0.0 is 0.0
    assert np.array_equal(keys_to_float32(k), v + np.float32(0.0))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 2500), max_bins=st.integers(2, 256),
       n_parts=st.integers(1, 4), distinct=st.integers(1, 600), per_bin=st.sampled_from([1, 2, 32]))
def test_property_cuts_of_parts_equal_the_cuts_of_the_whole(seed, n, max_bins, n_parts, distinct, per_bin):
    rng = np.random.default_rng(seed)
    X = np.empty((n, 3), np.float32)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.integers(0, distinct, size=n)
    X[:, 2] = np.where(rng.random(n) < 0.3, np.nan, rng.choice([-0.0, 0.0, 1.5, -2.0], size=n))
    bounds = np.sort(rng.integers(0, n + 1, n_parts - 1))
    parts = [ColumnData.from_input(p) for p in np.split(X, bounds) if p.shape[0]]
    keys = [ColumnKeys(p.indptr, p.values) for p in parts]
    # per_bin 1, 2: sketches of a few keys, wide brackets; 32 (the default): often every key
    cuts, n_present = distributed_cuts(3, max_bins, lambda: [k.summary(max_bins, per_bin) for k in keys],
                                       lambda brackets: [k.windows(brackets) for k in keys])
    for f in range(3):
        col = X[:, f][~np.isnan(X[:, f])]
        assert np.array_equal(cuts[f], bin_edges(col, max_bins)), f
        assert n_present[f] == col.shape[0]


def test_parts_are_contiguous_balanced_and_never_empty():
    from dtlab.boosting.dask.exact import feature_slices
    from dtlab.distributed.dask_data import _groups

    assert _groups([3] * 6 + [2], 2) == [(0, 3), (3, 7)]
    assert _groups([10, 0, 0, 5], 2) == [(0, 1), (1, 4)]
    assert _groups([4], 3) == [(0, 1)]  # never more parts than blocks with rows
    assert feature_slices(np.ones(7), 3) == [(0, 3), (3, 5), (5, 7)]
    assert feature_slices(np.array([100, 1, 1, 1]), 2) == [(0, 1), (1, 4)]
    assert feature_slices(np.ones(2), 5) == [(0, 1), (1, 2)]
