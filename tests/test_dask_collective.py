"""The sockets' reduce-and-broadcast of dtlab.distributed.collective, ranks as threads on loopback: the values
combined in rank order and the same bytes on every rank; a silent or departed peer is an error naming it, within
the timeout."""

import threading
import time
from functools import reduce

import numpy as np
import pytest

from dtlab.distributed.collective import CollectiveError, close_group, group, join_group, open_group

NAMES = ["tcp://a:1", "tcp://b:2", "tcp://c:3"]


def _in_rank_order(values: list) -> np.ndarray:
    return reduce(lambda a, b: a + b, values[1:], values[0].copy())


def run_ranks(world: int, key: str, body, timeout: float = 5.0) -> list:
    """``body(rank)`` on ``world`` threads once they joined the group; their results (or exceptions) by rank."""
    address = open_group(None, key, 0, world)
    out: list = [None] * world

    def rank_thread(rank):
        try:
            join_group(None, key, rank, world, address, NAMES[:world], timeout)
            out[rank] = body(rank)
        except Exception as exc:  # handed to the test
            out[rank] = exc
        finally:
            if not isinstance(out[rank], CollectiveError):
                close_group(None, key, rank)

    threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a rank hangs"
    return out


@pytest.mark.parametrize("world", [1, 2, 3])
def test_values_are_combined_in_rank_order_and_every_rank_gets_the_same_bytes(world):
    rng = np.random.default_rng(world)
    values = [rng.normal(size=(4, 5)) * 10.0 ** rng.integers(-8, 8, size=(4, 5)) for _ in range(world)]
    expected = _in_rank_order(values)

    def body(rank):
        return [group(f"k{world}", rank).reduce_broadcast(values[rank] * (i + 1), _in_rank_order)
                for i in range(3)]

    out = run_ranks(world, f"k{world}", body)
    for rank in range(world):
        assert not isinstance(out[rank], Exception), out[rank]
        for i in range(3):  # bit for bit the left fold in rank order, on every rank, round after round
            assert out[rank][i].tobytes() == _in_rank_order([v * (i + 1) for v in values]).tobytes()
    assert out[0][0].tobytes() == expected.tobytes()


@pytest.mark.parametrize("world", [1, 2, 3])
def test_allreduce_adds_raw_arrays_in_rank_order_on_every_rank(world):
    """Arrays larger than the sockets' buffers (two ranks send at once), and tiny ones, level after level."""
    rng = np.random.default_rng(10 + world)
    shapes = [(3,), (64, 28, 256), (5, 2)]
    values = [[rng.normal(size=s) * 10.0 ** rng.integers(-8, 8, size=s) for s in shapes] for _ in range(world)]
    counts = [rng.integers(0, 1000, size=7) for _ in range(world)]

    def body(rank):
        return [group(f"a{world}", rank).allreduce([v * (i + 1) for v in values[rank]] + [counts[rank].copy()])
                for i in range(3)]

    out = run_ranks(world, f"a{world}", body)
    for rank in range(world):
        assert not isinstance(out[rank], Exception), out[rank]
        for i in range(3):
            for j in range(len(shapes)):
                want = _in_rank_order([values[r][j] * (i + 1) for r in range(world)])
                assert out[rank][i][j].tobytes() == want.tobytes()
            assert np.array_equal(out[rank][i][-1], sum(counts))


def test_swap_sends_each_rank_the_others_arrays_of_other_sizes():
    """Two ranks swap arrays of different sizes (uneven halves), bool and float, larger than the socket buffers."""
    sizes = [(3, 70000), (4, 70000)]

    def body(rank):
        out = [np.full(sizes[rank], rank + 1.0), np.arange(sizes[rank][0]) % 2 == rank]
        into = [np.empty(sizes[1 - rank]), np.empty(sizes[1 - rank][0], np.bool_)]
        group("swap", rank).swap(out, into)
        return into

    out = run_ranks(2, "swap", body)
    for rank in range(2):
        assert not isinstance(out[rank], Exception), out[rank]
        other = 1 - rank
        assert np.array_equal(out[rank][0], np.full(sizes[other], other + 1.0))
        assert np.array_equal(out[rank][1], np.arange(sizes[other][0]) % 2 == other)


#: The two exchanges: pickled values through rank 0, raw arrays (with two ranks both sending at once).
EXCHANGES = {"reduce_broadcast": lambda c: c.reduce_broadcast(np.ones(3), _in_rank_order),
             "allreduce": lambda c: c.allreduce([np.ones(3)])}


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("exchange", list(EXCHANGES))
def test_a_silent_peer_is_an_error_naming_it_within_the_timeout(exchange, world):
    silent = world - 1
    name = NAMES[silent]

    def body(rank):
        c = group(f"silent{exchange}{world}", rank)
        if rank == silent:
            time.sleep(2.0)  # says nothing past the others' timeout
            return None
        start = time.monotonic()
        try:
            EXCHANGES[exchange](c)
        except CollectiveError as exc:
            return exc, time.monotonic() - start
        return None

    out = run_ranks(world, f"silent{exchange}{world}", body, timeout=0.5)
    exc, waited = out[0]
    assert f"rank {silent} (worker {name}) sent nothing within 0.5 s" in str(exc)
    assert waited < 1.5
    if world == 3:
        assert isinstance(out[1][0], CollectiveError)  # rank 1 waited for rank 0, which gave up


@pytest.mark.parametrize("exchange", list(EXCHANGES))
def test_a_peer_that_left_is_an_error_naming_it_at_once(exchange):
    def body(rank):
        c = group(f"left{exchange}", rank)
        if rank == 1:
            c.close()  # the process of rank 1 is gone: its sockets closed
            return None
        start = time.monotonic()
        # closed (its end shut) or broke (reset: it closed with our bytes unread), either way named at once
        with pytest.raises(CollectiveError, match=r"rank 1 \(worker tcp://b:2\) (closed its connection|broke)") \
                as info:
            EXCHANGES[exchange](c)
        return info.value, time.monotonic() - start

    out = run_ranks(2, f"left{exchange}", body, timeout=30.0)
    assert out[0][1] < 5.0  # noticed from the closed connection, not the 30 s timeout


def test_a_rank_that_never_joins_is_an_error_within_the_timeout():
    address = open_group(None, "nobody", 0, 2)
    start = time.monotonic()
    with pytest.raises(CollectiveError, match=r"rank 0 could not reach rank\(s\) \[1\] within 0.3 s"):
        join_group(None, "nobody", 0, 2, address, NAMES[:2], 0.3)
    assert time.monotonic() - start < 2.0
    with pytest.raises(CollectiveError, match="not on this worker"):
        group("nobody", 0)
