"""The workers' own exchange for a fit's parts over plain sockets: the workers talk, the scheduler does not.

What LightGBM's and XGBoost's Dask fits do for their histograms: the parts
(one per worker) open TCP connections to each other once per fit and, for
every level of every tree, exchange their partial sums directly.
:meth:`Collective.allreduce` adds numpy arrays over the ranks in rank order
(so the sum is the one the client would have made of the parts' replies, bit
for bit): with two ranks both send their arrays at once and each adds the two;
with more, a star on rank 0, which adds in rank order and sends the totals
back.  :meth:`Collective.swap` is the two-rank exchange of arrays of other
sizes (the halves of a reduce-scatter).

**Only numbers travel, and only between members.**
- *Frames.*  Every message is a frame of raw array bytes behind a fixed
  header: ``DTLC``, the number of arrays, their total bytes, then for each
  array a dtype code from a short allow-list (:data:`DTYPE_CODES`) and its
  shape.  The receiver knows what the exchange expects (its own buffers) and
  checks the header against it before it takes the arrays; a frame that
  differs (length, dtype, shape, count) is a :class:`CollectiveError` naming
  the rank.  Nothing received is ever turned into an object or code: bytes only ever
  land in numeric buffers of the expected size.
- *Membership.*  The client makes a random secret per group
  (:func:`new_secret`) and hands it to the ranks through Dask (the scheduler's
  channel, which carries the cluster's own security).  On connect, rank 0 and
  the joining rank each prove they hold it (HMAC-SHA256 over both sides'
  nonces, the group's key and the rank) before any data.  A connection that
  fails (a stranger, a wrong secret, a rank already taken, an out-of-range
  rank, silence past :data:`HANDSHAKE_S`) is closed and logged, and rank 0
  keeps waiting for the real rank until the join's timeout.
- *TLS clusters.*  These sockets are not encrypted.  A cluster whose workers
  talk TLS (``tls://`` addresses, ``Client(security=...)``) keeps its data on
  its TLS channel: :func:`plain_tcp_cluster` is False there and the fit takes
  the scheduler-routed loop instead, saying so once (see
  :mod:`dtlab.boosting.dask.collective`).

A part never waits without a limit: every receive has a timeout, and a peer
whose process died (its connection reset or closed) or fell silent ends the
exchange with a :class:`CollectiveError` naming its rank and worker.

Setting up (from the client, through whatever runs a function on each part's
worker): :func:`open_group` on rank 0's worker listens on a free port of that
worker's host and returns the address; :func:`join_group` on every rank, run
at the same time with the group's secret, connects and authenticates the
ranks.  The group then lives on each worker under its key until
:func:`close_group`.  Generic: nothing here knows the work; ``distributed`` is
only asked for the worker's host.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from typing import Any

import numpy as np

from .frames import FRAME_FIXED_BYTES, describe_frame, frame_header
from .membership import MembershipError, accept_members, new_secret, prove_membership

__all__ = ["Collective", "CollectiveError", "close_group", "group", "join_group", "new_secret", "open_group",
           "plain_tcp_cluster"]

#: Listening sockets opened by :func:`open_group`, waiting for :func:`join_group` (key -> socket).
_LISTENERS: dict = {}
#: Groups joined on this process: (key, rank) -> Collective (a thread-based cluster holds several ranks).
_GROUPS: dict = {}
_LOCK = threading.Lock()


class CollectiveError(RuntimeError):
    """A peer of the group left, fell silent past the timeout, sent a frame other than expected, or could not be
    reached."""


def plain_tcp_cluster(addresses: list) -> bool:
    """Whether the workers at ``addresses`` talk plain TCP (``tcp://`` or in-process), where these sockets add
    nothing a peer could not already see; False for TLS (``tls://``) and any other transport."""
    return all(str(a).startswith(("tcp://", "inproc://")) for a in addresses)


class Collective:
    """One rank's end of the group: rank 0 holds a socket per peer, every other rank one socket to rank 0.

    Parameters
    ----------
    rank, world : int
    peers : dict
        rank -> connected socket (rank 0: every other rank; other ranks: ``{0: socket}``), each authenticated.
    names : list of str
        The worker of each rank, for the errors.
    timeout : float
        Seconds any receive may wait.

    Attributes
    ----------
    bytes_sent, bytes_received : int
        The arrays' bytes (headers not counted), over the group's life.
    wait_seconds : float
        Seconds spent in the exchanges (sending, waiting and adding), over the group's life.
    """

    def __init__(self, rank: int, world: int, peers: dict, names: list, timeout: float):
        self.rank, self.world, self.peers, self.names, self.timeout = rank, world, peers, list(names), timeout
        self.bytes_sent = self.bytes_received = 0
        self.wait_seconds = 0.0
        for s in peers.values():
            s.settimeout(timeout)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _who(self, rank: int) -> str:
        return f"rank {rank} (worker {self.names[rank]})"

    @contextlib.contextmanager
    def _exchange(self):
        """An exchange: its seconds added to ``wait_seconds``; on a :class:`CollectiveError` this rank's sockets
        closed first, so the peers still waiting on it learn at once, not at their timeout."""
        start = time.perf_counter()
        try:
            yield
        except CollectiveError:
            self.close()
            raise
        finally:
            self.wait_seconds += time.perf_counter() - start

    def allreduce(self, arrays: list) -> list:
        """The element-wise sums over the ranks of C-contiguous numpy ``arrays`` (the same shapes and dtypes on
        every rank), added in rank order, the same bytes on every rank.  Overwrites and returns ``arrays``."""
        with self._exchange():
            if self.world == 1:
                return arrays
            if self.world == 2:
                peer = 1 - self.rank
                theirs = [np.empty_like(a) for a in arrays]
                self._duplex(peer, list(arrays), theirs)
                for a, b in zip(arrays, theirs):  # rank 0's + rank 1's (a + b is b + a in IEEE arithmetic)
                    np.add(a, b, out=a)
                return arrays
            if self.rank != 0:
                self._send_frame(0, arrays)
                self._recv_frame(0, arrays)
                return arrays
            totals = [a.copy() for a in arrays]  # the left fold in rank order: ((rank 0 + rank 1) + rank 2) ...
            buf = [np.empty_like(a) for a in arrays]
            for r in range(1, self.world):
                self._recv_frame(r, buf)
                for t, b in zip(totals, buf):
                    t += b
            for a, t in zip(arrays, totals):
                a[...] = t
            for r in range(1, self.world):
                self._send_frame(r, arrays)
            return arrays

    def swap(self, out: list, into: list) -> None:
        """Two ranks only: send the C-contiguous arrays ``out`` to the other rank while receiving its ``out``
        into ``into`` (C-contiguous, its dtypes and shapes in order): the halves of a reduce-scatter, a gather
        of halves."""
        if self.world != 2:
            raise ValueError(f"swap is between two ranks; this group has {self.world}")
        with self._exchange():
            self._duplex(1 - self.rank, list(out), list(into))

    def _check_header(self, rank: int, got: bytes, expected: bytes) -> None:
        """``got``, the first bytes of a received header, against the same bytes of the ``expected`` one."""
        if got != expected[:len(got)]:
            raise CollectiveError(f"{self._who(rank)} sent {describe_frame(got)} where "
                                  f"{describe_frame(expected)} were expected: a frame other than this exchange's "
                                  "(the ranks are out of step, or the peer is not a dtlab rank)")

    def _send_frame(self, rank: int, arrays: list) -> None:
        try:
            self.peers[rank].sendall(frame_header(arrays))
            for a in arrays:
                self.peers[rank].sendall(memoryview(a).cast("B"))
        except OSError as exc:
            raise CollectiveError(f"cannot send to {self._who(rank)}: it left ({exc})") from exc
        self.bytes_sent += sum(a.nbytes for a in arrays)

    def _recv_frame(self, rank: int, arrays: list) -> None:
        """Receive a frame into ``arrays``: its header checked against theirs before any array is read."""
        expected = frame_header(arrays)
        got = bytearray(FRAME_FIXED_BYTES)
        self._recv_into(rank, memoryview(got))
        self._check_header(rank, bytes(got), expected)
        table = bytearray(len(expected) - FRAME_FIXED_BYTES)
        self._recv_into(rank, memoryview(table))
        self._check_header(rank, bytes(got + table), expected)
        for a in arrays:
            self._recv_into(rank, memoryview(a).cast("B"))
        self.bytes_received += sum(a.nbytes for a in arrays)

    def _recv_into(self, rank: int, view: memoryview) -> None:
        got, n = 0, view.nbytes
        while got < n:
            try:
                k = self.peers[rank].recv_into(view[got:], n - got)
            except socket.timeout:
                raise CollectiveError(f"{self._who(rank)} sent nothing within {self.timeout:g} s: it hangs or "
                                      "left") from None
            except OSError as exc:
                raise CollectiveError(f"the connection to {self._who(rank)} broke: the worker left ({exc})") from exc
            if k == 0:
                raise CollectiveError(f"{self._who(rank)} closed its connection: the worker left")
            got += k

    def _duplex(self, rank: int, out: list, into: list) -> None:
        """Send the arrays ``out`` to ``rank`` while receiving ``into`` from it, both at once (two blocking sends
        of more than the sockets hold would wait on each other for ever), within the timeout; each side's
        frame header goes first and is checked against what this side expects before the arrays are taken."""
        expected = frame_header(into)
        head = bytearray(len(expected))
        sock = self.peers[rank]
        sends = [memoryview(frame_header(out))] + [memoryview(a).cast("B") for a in out if a.nbytes]
        recvs = [memoryview(head)] + [memoryview(a).cast("B") for a in into if a.nbytes]
        checked, received = 0, 0  # bytes of the header checked so far (0, the fixed part, all of it)
        poller = select.poll()
        deadline = time.monotonic() + self.timeout
        sock.setblocking(False)
        try:
            while sends or recvs:
                poller.register(sock, (select.POLLOUT if sends else 0) | (select.POLLIN if recvs else 0))
                events = poller.poll(max(0.0, deadline - time.monotonic()) * 1000.0)
                if not events:
                    raise CollectiveError(f"{self._who(rank)} sent nothing within {self.timeout:g} s: it hangs or "
                                          "left")
                mask = events[0][1]
                # many arrays per system call (a level's histograms are one array per built node)
                if sends and mask & (select.POLLOUT | select.POLLERR | select.POLLHUP):
                    try:
                        k = sock.sendmsg(sends[:_IOV_BATCH])
                    except BlockingIOError:
                        k = 0
                    _consume(sends, k)
                if recvs and mask & (select.POLLIN | select.POLLERR | select.POLLHUP):
                    # never past the header's fixed part before it is checked: its count sizes the rest
                    views = recvs[:1] if checked < FRAME_FIXED_BYTES else recvs[:_IOV_BATCH]
                    try:
                        k = sock.recvmsg_into(views)[0]
                    except BlockingIOError:
                        k = -1
                    if k == 0:
                        raise CollectiveError(f"{self._who(rank)} closed its connection: the worker left")
                    if k > 0:
                        _consume(recvs, k)
                        received += k
                        if checked < FRAME_FIXED_BYTES <= received:
                            self._check_header(rank, bytes(head[:FRAME_FIXED_BYTES]), expected)
                            checked = FRAME_FIXED_BYTES
                        if checked < len(head) <= received:
                            self._check_header(rank, bytes(head), expected)
                            checked = len(head)
        except OSError as exc:
            raise CollectiveError(f"the connection to {self._who(rank)} broke: the worker left ({exc})") from exc
        finally:
            if self.peers:
                sock.settimeout(self.timeout)  # blocking again, with the timeout
        self.bytes_sent += sum(a.nbytes for a in out)
        self.bytes_received += sum(a.nbytes for a in into)

    def close(self) -> None:
        for s in self.peers.values():
            try:
                s.close()
            except OSError:
                pass
        self.peers = {}


#: Buffers handed to one ``sendmsg`` / ``recvmsg_into`` (well below the system's IOV_MAX, 1024 on Linux).
_IOV_BATCH = 64


def _consume(views: list, k: int) -> None:
    """Drop the first ``k`` bytes of the byte views ``views`` (in place): what one call sent or received."""
    while k and views:
        n = views[0].nbytes
        if k >= n:
            views.pop(0)
            k -= n
        else:
            views[0] = views[0][k:]
            k = 0


def _worker_host() -> str:
    """The host of the Dask worker this runs on (its address as the scheduler knows it); loopback elsewhere."""
    try:
        from distributed import get_worker
        from distributed.comm import get_address_host

        return get_address_host(get_worker().address)
    except (ImportError, ValueError):
        return "127.0.0.1"


def open_group(_state: Any, key: str, rank: int, world: int) -> tuple[str, int] | None:
    """Run on every rank's worker: rank 0 listens on a free port of its host for the ``world - 1`` other ranks
    and returns its address (the others return None)."""
    if rank != 0 or world == 1:
        return None if rank != 0 else ("", 0)  # one rank: nobody to listen for
    listener = socket.create_server((_worker_host(), 0), backlog=max(1, world))
    with _LOCK:
        _LISTENERS[key] = listener
    host, port = listener.getsockname()[:2]
    return host, port


def join_group(_state: Any, key: str, rank: int, world: int, address: tuple[str, int], names: list,
               timeout: float, secret: bytes) -> int:
    """Run on every rank's worker at once: connect to rank 0 (rank 0: accept every other rank) and prove
    membership both ways with the group's ``secret`` (:func:`new_secret`), within ``timeout`` seconds; the group
    is then kept on this worker under ``(key, rank)``.  Returns ``rank``."""
    if len(secret) < 16:
        raise ValueError("a group's secret has at least 16 bytes (new_secret() makes 32)")
    peers: dict = {}
    deadline = time.monotonic() + timeout
    try:
        if rank == 0 and world > 1:
            with _LOCK:
                listener = _LISTENERS.pop(key)
            try:
                accept_members(listener, key, world, secret, deadline, peers)
            finally:
                listener.close()
        elif rank > 0:
            conn = socket.create_connection(address, timeout=timeout)
            try:
                prove_membership(conn, key, rank, secret)
            except MembershipError as exc:
                conn.close()
                raise CollectiveError(str(exc)) from None
            except BaseException:
                conn.close()
                raise
            peers[0] = conn
    except socket.timeout:
        missing = sorted(set(range(1, world)) - set(peers)) if rank == 0 else [0]
        for s in peers.values():
            s.close()
        raise CollectiveError(f"rank {rank} could not reach rank(s) {missing} within {timeout:g} s") from None
    with _LOCK:
        _GROUPS[key, rank] = Collective(rank, world, peers, names, timeout)
    return rank


def group(key: str, rank: int) -> Collective:
    """The group joined on this worker under ``(key, rank)``."""
    with _LOCK:
        found = _GROUPS.get((key, rank))
    if found is None:
        raise CollectiveError(f"rank {rank} of group {key} is not on this worker (its worker was restarted?)")
    return found


def close_group(_state: Any, key: str, rank: int) -> None:
    """Run on every rank's worker: close its sockets (and a listener never joined); idempotent."""
    with _LOCK:
        found = _GROUPS.pop((key, rank), None)
        listener = _LISTENERS.pop(key, None) if rank == 0 else None
    if found is not None:
        found.close()
    if listener is not None:
        listener.close()
