"""Who may join a collective group: a per-group secret and a mutual HMAC challenge-response before any data.

The client makes the secret (:func:`new_secret`) and hands it to the ranks
through Dask, whose channel carries the cluster's own security.  Rank 0 sends
each connection a fresh nonce; the joining rank answers with its rank, its own
nonce and ``HMAC-SHA256(secret, "join" | key | rank | both nonces)``; rank 0
checks it (and that the rank is in the group and not taken) and answers with
the ``"accept"`` HMAC over the same, which the joining rank checks.  Neither
side learns anything that would let it answer another challenge, and a
recorded exchange cannot be replayed (fresh nonces).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import socket
import struct
import time

__all__ = ["HANDSHAKE_S", "MembershipError", "accept_members", "new_secret", "prove_membership"]

_LOG = logging.getLogger("dtlab.distributed.collective")

#: Seconds one connection may take to prove its membership before rank 0 drops it and waits for the next.
HANDSHAKE_S = 5.0
_HELLO = struct.Struct("!4s32s")  # rank 0 -> joining rank: magic, rank 0's nonce
_HELLO_MAGIC = b"DTLJ"
_CLAIM = struct.Struct("!I32s32s")  # joining rank -> rank 0: its rank, its nonce, its proof
_PROOF = hashlib.sha256().digest_size


class MembershipError(ConnectionError):
    """The peer at rank 0's address did not admit this rank, or did not prove it is rank 0 of the group."""


def new_secret() -> bytes:
    """A group's secret: 32 random bytes, made on the client and handed to every rank through Dask."""
    return secrets.token_bytes(32)


class _Refused(Exception):
    """A connection to rank 0 that is not a member of the group (said why)."""


def _proof(secret: bytes, role: bytes, key: str, rank: int, nonce_0: bytes, nonce_rank: bytes) -> bytes:
    """HMAC-SHA256 binding a side's role, the group, the joining rank and both sides' fresh nonces."""
    message = b"|".join((b"dtlab-collective", role, key.encode(), struct.pack("!I", rank), nonce_0, nonce_rank))
    return hmac.new(secret, message, hashlib.sha256).digest()


def _recv_exactly(conn: socket.socket, n: int) -> bytes:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        k = conn.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError(f"closed after {got} of {n} bytes")
        got += k
    return bytes(buf)


def accept_members(listener: socket.socket, key: str, world: int, secret: bytes, deadline: float,
                    peers: dict) -> None:
    """Rank 0: accept connections until every other rank has proved its membership (into ``peers``); a
    connection that does not is closed and logged, and the wait goes on until ``deadline``."""
    while len(peers) < world - 1:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise socket.timeout
        listener.settimeout(remaining)
        conn, where = listener.accept()
        try:
            conn.settimeout(min(HANDSHAKE_S, max(remaining, 0.01)))
            nonce_0 = secrets.token_bytes(32)
            conn.sendall(_HELLO.pack(_HELLO_MAGIC, nonce_0))
            rank, nonce_rank, proof = _CLAIM.unpack(_recv_exactly(conn, _CLAIM.size))
            if not hmac.compare_digest(proof, _proof(secret, b"join", key, rank, nonce_0, nonce_rank)):
                raise _Refused(f"it did not prove it holds the group's secret (claimed rank {rank})")
            if not 1 <= rank < world or rank in peers:
                raise _Refused(f"rank {rank} is {'taken' if rank in peers else 'not in the group'}")
            conn.sendall(_proof(secret, b"accept", key, rank, nonce_0, nonce_rank))
        except (_Refused, OSError) as exc:  # OSError: socket.timeout, a reset, a close mid-handshake
            _LOG.warning("dtlab collective %s: refused a connection from %s: %s", key, where,
                         exc if isinstance(exc, _Refused) else f"no valid membership proof ({exc!r})")
            conn.close()
            continue
        peers[rank] = conn


def prove_membership(conn: socket.socket, key: str, rank: int, secret: bytes) -> None:
    """A joining rank: answer rank 0's challenge with this rank's proof, then check rank 0's proof."""
    try:
        magic, nonce_0 = _HELLO.unpack(_recv_exactly(conn, _HELLO.size))
    except ConnectionError as exc:
        raise MembershipError(f"rank {rank}: rank 0 closed the connection before it joined ({exc})") from None
    if magic != _HELLO_MAGIC:
        raise MembershipError(f"rank {rank}: the address given for rank 0 is not a dtlab collective")
    try:
        nonce_rank = secrets.token_bytes(32)
        conn.sendall(_CLAIM.pack(rank, nonce_rank, _proof(secret, b"join", key, rank, nonce_0, nonce_rank)))
        answer = _recv_exactly(conn, _PROOF)
    except ConnectionError as exc:
        raise MembershipError(f"rank {rank}: rank 0 closed the connection while it joined (refused: {exc})") \
            from None
    if not hmac.compare_digest(answer, _proof(secret, b"accept", key, rank, nonce_0, nonce_rank)):
        raise MembershipError(f"rank {rank}: the peer at the address of rank 0 did not prove it holds the group's "
                              "secret")
