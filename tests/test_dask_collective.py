"""The workers' exchange of dtlab.distributed.collective, ranks as threads on loopback: arrays added in rank order
and the same bytes on every rank; a silent or departed peer, or a frame other than the exchange expects, is an
error naming it, within the timeout.  Membership and strangers: tests/test_dask_collective_security.py."""

import threading
import time
from functools import reduce

import numpy as np
import pytest

from dtlab.distributed.collective import CollectiveError, close_group, group, join_group, new_secret, open_group

NAMES = ["tcp://a:1", "tcp://b:2", "tcp://c:3"]
#: One group secret for the tests' groups (each group has its own key).
SECRET = new_secret()


def _in_rank_order(values: list) -> np.ndarray:
    return reduce(lambda a, b: a + b, values[1:], values[0].copy())


def run_ranks(world: int, key: str, body, timeout: float = 5.0) -> list:
    """``body(rank)`` on ``world`` threads once they joined the group; their results (or exceptions) by rank."""
    address = open_group(None, key, 0, world)
    out: list = [None] * world

    def rank_thread(rank):
        try:
            join_group(None, key, rank, world, address, NAMES[:world], timeout, SECRET)
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


#: The exchanges: an allreduce (two ranks: both send at once; three: the star on rank 0) and a swap.
EXCHANGES = {"allreduce": lambda c: c.allreduce([np.ones(3)]),
             "swap": lambda c: c.swap([np.ones(3)], [np.empty(3)])}


@pytest.mark.parametrize(("exchange", "world"), [("allreduce", 2), ("allreduce", 3), ("swap", 2)])
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
        join_group(None, "nobody", 0, 2, address, NAMES[:2], 0.3, SECRET)
    assert time.monotonic() - start < 2.0
    with pytest.raises(CollectiveError, match="not on this worker"):
        group("nobody", 0)


def _bad_frames(rank_socket, right: list) -> dict:
    """Frames a faulty or hostile rank 1 might send where ``right`` (its arrays) is expected."""
    from dtlab.distributed.frames import frame_header

    return {
        "dtype": frame_header([a.astype(np.float32) for a in right]) + b"".join(a.astype(np.float32).tobytes()
                                                                               for a in right),
        "shape": frame_header([a.reshape(1, -1) for a in right]) + b"".join(a.tobytes() for a in right),
        "count": frame_header(right + right) + b"".join(a.tobytes() for a in right + right),
        "not a frame": b"\x80\x04\x95" + bytes(200),  # a pickle's first bytes, then anything
        "unknown dtype code": bytes(frame_header(right))[:16] + bytes([99]) + bytes(frame_header(right))[17:],
    }


@pytest.mark.parametrize("world", [2, 3])
@pytest.mark.parametrize("fault", ["dtype", "shape", "count", "not a frame", "unknown dtype code", "short"])
def test_a_frame_other_than_expected_is_an_error_naming_the_rank_within_the_timeout(fault, world):
    """Rank 1 sends, in place of its allreduce's frame, one of another dtype, shape or count, bytes that are no
    frame, or the right header with half its bytes: rank 0 raises a CollectiveError naming rank 1 -- at once where
    the header differs, at its timeout where the bytes stop coming -- and takes none of the bytes as data."""
    right = [np.ones(3), np.arange(4.0)]

    def body(rank):
        c = group(f"bad{fault}{world}", rank)
        if rank == 1:
            frames = _bad_frames(c.peers[0], right)
            if fault == "short":
                from dtlab.distributed.frames import frame_header

                whole = frame_header(right) + b"".join(a.tobytes() for a in right)
                c.peers[0].sendall(whole[:len(whole) // 2])
            else:
                c.peers[0].sendall(frames[fault])
            time.sleep(1.5)  # keeps its connection open: rank 0 must not wait past its timeout
            return None
        if rank == 2:
            try:
                c.allreduce([a.copy() for a in right])
            except CollectiveError as exc:
                return exc
            return None
        start = time.monotonic()
        mine = [a.copy() for a in right]
        try:
            c.allreduce(mine)
        except CollectiveError as exc:
            return exc, time.monotonic() - start, mine
        return None

    out = run_ranks(world, f"bad{fault}{world}", body, timeout=0.5)
    assert out[0] is not None, "rank 0 took the frame"
    exc, waited, mine = out[0]
    assert isinstance(exc, CollectiveError)
    assert "rank 1 (worker tcp://b:2)" in str(exc)
    if fault == "short":
        assert "sent nothing within 0.5 s" in str(exc)
    else:
        assert "where 2 arrays of 56 bytes (float64 (3,), float64 (4,)) were expected" in str(exc), str(exc)
    assert waited < 1.2
    for a, b in zip(mine, right):  # nothing added
        assert np.array_equal(a, b)
