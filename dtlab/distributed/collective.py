"""A reduce-and-broadcast between the parts of a fit over plain sockets: the workers talk, the scheduler does not.

What LightGBM's and XGBoost's Dask fits do for their histograms: the parts
(one per worker) open TCP connections to each other once per fit and, for
every level of every tree, exchange their partial sums directly.  A star on
rank 0 (part 0): every other rank sends its value to rank 0; rank 0 combines
the values *in rank order* (so the sum is the one the client would have made
of the parts' replies, bit for bit) and sends the combined value back to every
rank.  Every rank then holds the same bytes and takes the same decisions.

:meth:`Collective.allreduce` is the same sum for numpy arrays, sent as their
raw bytes (no pickling, no copy into a message): with two ranks both send
their arrays at once and each adds the two in rank order (one transfer on the
way instead of two, and no rank waits for the other's addition); with more,
the star above.

A part never waits without a limit: every receive has a timeout, and a peer
whose process died (its connection reset or closed) or fell silent ends the
exchange with a :class:`CollectiveError` naming its rank and worker.

Setting up (from the client, through whatever runs a function on each part's
worker): :func:`open_group` on rank 0's worker listens on a free port of that
worker's host and returns the address; :func:`join_group` on every rank, run
at the same time, connects the ranks to it.  The group then lives on each
worker under its key until :func:`close_group`.  Generic: nothing here knows
the work; ``distributed`` is only asked for the worker's host.
"""

from __future__ import annotations

import contextlib
import pickle
import select
import socket
import struct
import threading
import time
from typing import Any, Callable

import numpy as np

__all__ = ["Collective", "CollectiveError", "close_group", "group", "join_group", "open_group"]

_HEADER = struct.Struct("!Q")
#: Listening sockets opened by :func:`open_group`, waiting for :func:`join_group` (key -> socket).
_LISTENERS: dict = {}
#: Groups joined on this process: (key, rank) -> Collective (a thread-based cluster holds several ranks).
_GROUPS: dict = {}
_LOCK = threading.Lock()


class CollectiveError(RuntimeError):
    """A peer of the group left, fell silent past the timeout, or could not be reached."""


class Collective:
    """One rank's end of the group: rank 0 holds a socket per peer, every other rank one socket to rank 0.

    Parameters
    ----------
    rank, world : int
    peers : dict
        rank -> connected socket (rank 0: every other rank; other ranks: ``{0: socket}``).
    names : list of str
        The worker of each rank, for the errors.
    timeout : float
        Seconds any receive may wait.

    Attributes
    ----------
    bytes_sent, bytes_received : int
    wait_seconds : float
        Seconds spent in :meth:`reduce_broadcast` (sending, waiting and combining), over the group's life.
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

    def _send(self, rank: int, value: Any) -> None:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.peers[rank].sendall(_HEADER.pack(len(payload)) + payload)
        except OSError as exc:
            raise CollectiveError(f"cannot send to {self._who(rank)}: it left ({exc})") from exc
        self.bytes_sent += len(payload)

    def _recv_exact(self, rank: int, n: int) -> bytearray:
        buf = bytearray(n)
        self._recv_into(rank, memoryview(buf))
        return buf

    def _recv(self, rank: int) -> Any:
        (n,) = _HEADER.unpack(self._recv_exact(rank, _HEADER.size))
        self.bytes_received += n
        return pickle.loads(self._recv_exact(rank, n))

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

    def reduce_broadcast(self, value: Any, combine: Callable[[list], Any]) -> Any:
        """``combine([value of rank 0, value of rank 1, ...])``, computed on rank 0, returned on every rank."""
        with self._exchange():
            if self.world == 1:
                return combine([value])
            if self.rank != 0:
                self._send(0, value)
                return self._recv(0)
            combined = combine([value] + [self._recv(r) for r in range(1, self.world)])
            for r in range(1, self.world):
                self._send(r, combined)
            return combined

    def allreduce(self, arrays: list) -> list:
        """The element-wise sums over the ranks of C-contiguous numpy ``arrays`` (the same shapes and dtypes on
        every rank), added in rank order, the same bytes on every rank.  Overwrites and returns ``arrays``."""
        with self._exchange():
            if self.world == 1:
                return arrays
            nbytes = sum(a.nbytes for a in arrays)
            if self.world == 2:
                peer = 1 - self.rank
                theirs = [np.empty_like(a) for a in arrays]
                self._duplex(peer, list(arrays), theirs)
                for a, b in zip(arrays, theirs):  # rank 0's + rank 1's (a + b is b + a in IEEE arithmetic)
                    np.add(a, b, out=a)
                return arrays
            if self.rank != 0:
                self._send_raw(0, arrays, nbytes)
                self._recv_raw(0, arrays, nbytes)
                return arrays
            totals = [a.copy() for a in arrays]  # the left fold in rank order: ((rank 0 + rank 1) + rank 2) ...
            buf = [np.empty_like(a) for a in arrays]
            for r in range(1, self.world):
                self._recv_raw(r, buf, nbytes)
                for t, b in zip(totals, buf):
                    t += b
            for a, t in zip(arrays, totals):
                a[...] = t
            for r in range(1, self.world):
                self._send_raw(r, arrays, nbytes)
            return arrays

    def swap(self, out: list, into: list) -> None:
        """Two ranks only: send the C-contiguous arrays ``out`` to the other rank while receiving its ``out``
        into ``into`` (C-contiguous, its sizes in order): the halves of a reduce-scatter, a gather of halves."""
        if self.world != 2:
            raise ValueError(f"swap is between two ranks; this group has {self.world}")
        with self._exchange():
            self._duplex(1 - self.rank, list(out), list(into))

    def _send_raw(self, rank: int, arrays: list, nbytes: int) -> None:
        try:
            self.peers[rank].sendall(_HEADER.pack(nbytes))
            for a in arrays:
                self.peers[rank].sendall(memoryview(a).cast("B"))
        except OSError as exc:
            raise CollectiveError(f"cannot send to {self._who(rank)}: it left ({exc})") from exc
        self.bytes_sent += nbytes

    def _recv_raw(self, rank: int, arrays: list, nbytes: int) -> None:
        (n,) = _HEADER.unpack(self._recv_exact(rank, _HEADER.size))
        if n != nbytes:
            raise CollectiveError(f"{self._who(rank)} sent {n} bytes where {nbytes} were expected: the ranks are "
                                  "out of step")
        for a in arrays:
            self._recv_into(rank, memoryview(a).cast("B"))
        self.bytes_received += nbytes

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
        bytes go first, to be checked against what the other expects."""
        n_out, n_in = sum(a.nbytes for a in out), sum(a.nbytes for a in into)
        out = [np.array([n_out], np.uint64)] + out
        into = [np.zeros(1, np.uint64)] + into
        sock = self.peers[rank]
        sends = [memoryview(a).cast("B") for a in out if a.nbytes]
        recvs = [memoryview(a).cast("B") for a in into if a.nbytes]
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
                    try:
                        k = sock.recvmsg_into(recvs[:_IOV_BATCH])[0]
                    except BlockingIOError:
                        k = -1
                    if k == 0:
                        raise CollectiveError(f"{self._who(rank)} closed its connection: the worker left")
                    if k > 0:
                        _consume(recvs, k)
        except OSError as exc:
            raise CollectiveError(f"the connection to {self._who(rank)} broke: the worker left ({exc})") from exc
        finally:
            if self.peers:
                sock.settimeout(self.timeout)  # blocking again, with the timeout
        (n,) = into[0]
        if n != n_in:
            raise CollectiveError(f"{self._who(rank)} sent {n} bytes where {n_in} were expected: the ranks are "
                                  "out of step")
        self.bytes_sent += n_out
        self.bytes_received += n_in

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
               timeout: float) -> int:
    """Run on every rank's worker at once: connect to rank 0 (rank 0: accept every other rank) within
    ``timeout`` seconds; the group is then kept on this worker under ``(key, rank)``.  Returns ``rank``."""
    peers: dict = {}
    try:
        if rank == 0 and world > 1:
            with _LOCK:
                listener = _LISTENERS.pop(key)
            listener.settimeout(timeout)
            try:
                while len(peers) < world - 1:
                    conn, _ = listener.accept()
                    conn.settimeout(timeout)
                    (peer,) = _HEADER.unpack(conn.recv(_HEADER.size, socket.MSG_WAITALL))
                    peers[int(peer)] = conn
            finally:
                listener.close()
        elif rank > 0:
            conn = socket.create_connection(address, timeout=timeout)
            conn.sendall(_HEADER.pack(rank))
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
