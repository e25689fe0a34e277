"""Who may join a collective group (dtlab.distributed.membership): only ranks that prove they hold the group's
secret; a stranger -- one that claims a rank and sends a pickle, one with a wrong secret, one that claims a rank
taken or outside the group, one that says nothing -- is closed and logged while rank 0 keeps waiting for the real
rank; and nothing a stranger sends becomes an object.  Ranks as threads on loopback."""

import logging
import pickle
import socket
import struct
import threading
import time

import numpy as np
import pytest

from dtlab.distributed import membership
from dtlab.distributed.collective import CollectiveError, close_group, group, join_group, new_secret, open_group

NAMES = ["tcp://a:1", "tcp://b:2", "tcp://c:3"]


class WritesAFile:
    """A pickle that, when loaded, creates ``path``: what a stranger would send to run code on a worker."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def _old_protocol_attack(path) -> bytes:
    """What the collective once took from anyone: an 8-byte rank (1), then a length-prefixed pickle."""
    payload = pickle.dumps(WritesAFile(path))
    return struct.pack("!Q", 1) + struct.pack("!Q", len(payload)) + payload


def _stranger(address, send: bytes | None, hold: float = 0.0, out: list | None = None):
    """Connect to rank 0 first; send ``send`` (unless None), keep the connection ``hold`` seconds; record what came
    back."""
    conn = socket.create_connection(address, timeout=5)
    try:
        if send is not None:
            conn.sendall(send)
        conn.settimeout(max(hold, 0.1))
        got = b""
        try:
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                got += chunk
        except (socket.timeout, OSError):
            pass
        if out is not None:
            out.append(got)
    finally:
        conn.close()


def _join_with_a_stranger_first(key, stranger_send, *, secret=None, hold=0.0, world=2, timeout=10.0,
                                stranger_secret=None, stranger_rank=1):
    """Rank 0 listens; a stranger connects and does its thing; then the real ranks join and run one allreduce.

    ``stranger_secret``: the stranger runs the real handshake with this secret (a wrong one) as ``stranger_rank``.
    Returns (each rank's sum or exception, bytes the stranger got back)."""
    secret = secret or new_secret()
    address = open_group(None, key, 0, world)
    got: list = []
    if stranger_secret is not None:
        def attempt():
            conn = socket.create_connection(address, timeout=5)
            try:
                membership.prove_membership(conn, key, stranger_rank, stranger_secret)
                got.append(b"admitted")
            except Exception as exc:  # refused: what the test wants
                got.append(repr(exc).encode())
            finally:
                conn.close()

        stranger = threading.Thread(target=attempt)
    else:
        stranger = threading.Thread(target=_stranger, args=(address, stranger_send, hold, got))
    stranger.start()
    time.sleep(0.2)  # the stranger is first at the door
    out: list = [None] * world

    def rank_thread(rank):
        try:
            join_group(None, key, rank, world, address, NAMES[:world], timeout, secret)
            out[rank] = group(key, rank).allreduce([np.full(4, rank + 1.0)])[0]
        except Exception as exc:  # handed to the test
            out[rank] = exc
        finally:
            close_group(None, key, rank)

    threads = [threading.Thread(target=rank_thread, args=(r,)) for r in range(world)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    stranger.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a rank hangs"
    return out, got


def _assert_joined(out, world=2):
    total = sum(range(1, world + 1))
    for rank in range(world):
        assert not isinstance(out[rank], Exception), out[rank]
        assert np.array_equal(out[rank], np.full(4, float(total)))


def test_a_stranger_claiming_rank_1_with_a_pickle_is_refused_and_runs_no_code(tmp_path, caplog):
    marker = tmp_path / "pwned"
    with caplog.at_level(logging.WARNING, logger="dtlab.distributed.collective"):
        out, got = _join_with_a_stranger_first("rogue", _old_protocol_attack(marker))
    _assert_joined(out)
    assert not marker.exists()
    assert any("refused a connection" in r.getMessage() for r in caplog.records)
    # the stranger got at most rank 0's challenge (a reset may drop even that): no proof of the secret, no data
    assert got[0] == b"" or (got[0][:4] == b"DTLJ" and len(got[0]) == membership._HELLO.size)


def test_a_wrong_secret_is_refused_both_ways(caplog):
    with caplog.at_level(logging.WARNING, logger="dtlab.distributed.collective"):
        out, got = _join_with_a_stranger_first("wrongsecret", None, stranger_secret=new_secret())
    _assert_joined(out)
    assert b"closed the connection while it joined" in got[0]
    assert any("did not prove it holds the group's secret" in r.getMessage() for r in caplog.records)


def test_a_rank_outside_the_group_is_refused(caplog):
    secret = new_secret()
    with caplog.at_level(logging.WARNING, logger="dtlab.distributed.collective"):
        out, got = _join_with_a_stranger_first("outside", None, secret=secret, stranger_secret=secret,
                                               stranger_rank=7)
    _assert_joined(out)
    assert any("rank 7 is not in the group" in r.getMessage() for r in caplog.records)


def test_a_silent_stranger_holds_the_door_at_most_the_handshake_time(monkeypatch, caplog):
    monkeypatch.setattr(membership, "HANDSHAKE_S", 0.3)
    start = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="dtlab.distributed.collective"):
        out, _ = _join_with_a_stranger_first("silent", None, hold=3.0, world=3)
    _assert_joined(out, world=3)
    assert time.monotonic() - start < 3.0  # the ranks did not wait for the stranger to leave
    assert any("no valid membership proof" in r.getMessage() for r in caplog.records)


def test_strangers_only_end_the_join_in_an_error_within_its_timeout():
    secret = new_secret()
    address = open_group(None, "onlystrangers", 0, 2)
    stranger = threading.Thread(target=_stranger, args=(address, b"\x00" * 100, 0.5))
    stranger.start()
    start = time.monotonic()
    with pytest.raises(CollectiveError, match=r"rank 0 could not reach rank\(s\) \[1\] within 1 s"):
        join_group(None, "onlystrangers", 0, 2, address, NAMES[:2], 1.0, secret)
    assert time.monotonic() - start < 3.0
    stranger.join()


def test_a_joining_rank_refuses_a_rank_0_without_the_secret():
    """A listener that answers the challenge with anything but the group's proof is not rank 0."""
    server = socket.create_server(("127.0.0.1", 0))
    address = server.getsockname()[:2]

    def fake_rank_0():
        conn, _ = server.accept()
        conn.sendall(membership._HELLO.pack(b"DTLJ", bytes(32)))
        conn.recv(membership._CLAIM.size, socket.MSG_WAITALL)
        conn.sendall(bytes(32))  # not the accept proof
        time.sleep(0.5)
        conn.close()

    t = threading.Thread(target=fake_rank_0)
    t.start()
    with pytest.raises(CollectiveError, match="did not prove it holds the group's secret"):
        join_group(None, "fake0", 1, 2, address, NAMES[:2], 5.0, new_secret())
    t.join()
    server.close()
    with pytest.raises(CollectiveError, match="not on this worker"):
        group("fake0", 1)
