"""Stateful parts on a Dask cluster: numbered messages, replies kept once, a journal to rebuild a lost part.

A distributed fit keeps state on its workers between rounds (the rows'
nodes of the tree being grown, the margins, a solver's ``X w``): more than
:class:`~dtlab.distributed.dask_executor.DaskExecutor`'s "build once, map a
pure function" covers.  Two rules make such state safe when a worker is lost:

* **Numbered messages, applied once.**  Every message that changes a part's
  state carries the next sequence number; a part applies message ``k`` only
  if it is at ``k - 1``, and answers a repeated ``k`` with the reply it kept.
  A round that the executor runs again (its worker left half way through)
  therefore changes no part twice: the parts that had finished answer from
  memory, the part sent again computes.
* **A journal on the host.**  The messages applied since the last restart
  point (a message sent with ``restart=True``: the start of a tree, a new
  point of a solver) are kept on the host, inside each part's arguments.  A
  part sent again to another worker is rebuilt from its data and replays the
  journal, as scattered at that moment, before it takes the new message; it
  then holds exactly the state the lost part had.

Queries that change no state (:meth:`Replicas.ask`) carry no number and are
not journaled.  The state object brings the work: ``state.handle(message,
replay) -> reply`` (``replay``: rebuilding from the journal, no reply wanted).

Generic: nothing here knows the work; ``distributed`` is imported lazily.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

__all__ = ["Journal", "Replicas"]


class Journal:
    """The messages every part has applied since the last restart point (host side, scattered with a part).

    Attributes
    ----------
    seq : int
        Number of the last message sent.
    messages : list
        The messages since the last restart point, in order.
    """

    def __init__(self):
        self.seq = 0
        self.messages: list = []

    def record(self, message: Any, restart: bool) -> None:
        if restart:
            self.messages = []
        self.messages.append(message)


class _Replica:
    """A part's state on its worker, with the number of the last message it applied and the reply it gave."""

    def __init__(self, state: Any, seq: int):
        self.state, self.seq, self.reply = state, seq, None


def _build(make_state: Callable[..., Any], journal: Journal, *part: Any) -> _Replica:
    """Run on the worker: the part's state from its data, brought up to the journal."""
    state = make_state(*part)
    for message in journal.messages:
        state.handle(message, True)
    return _Replica(state, journal.seq)


def _step(replica: _Replica, seq: int, message: Any) -> Any:
    """Run on the worker: apply message ``seq`` once (a repeated ``seq`` gets the kept reply)."""
    if seq == replica.seq:
        return replica.reply
    if seq != replica.seq + 1:
        raise RuntimeError(f"a part at message {replica.seq} was sent message {seq}: out of step")
    reply = replica.state.handle(message, False)
    replica.seq, replica.reply = seq, reply
    return reply


def _ask(replica: _Replica, fn: Callable[..., Any], *args: Any) -> Any:
    return fn(replica.state, *args)


class Replicas:
    """Stateful parts kept on Dask workers (:class:`~dtlab.distributed.dask_executor.DaskExecutor`), driven
    by numbered messages and rebuilt from a journal when their worker is lost.

    Parameters
    ----------
    client : distributed.Client, scheduler address or None
    parts : sequence of tuples
        ``make_state``'s arguments for each part (host data, or futures of data on the cluster).
    make_state : callable
        ``make_state(*part) -> state`` with ``state.handle(message, replay) -> reply``; importable by workers.

    Attributes
    ----------
    executor : DaskExecutor
    sent_bytes, received_bytes : int
        Bytes of array payloads sent to the parts (each part counted) and received from them, over the run.
    seconds : dict
        ``"round"`` wall seconds of the rounds and ``"work"`` the slowest part's seconds, summed over the run.
    round_trips : int
        Rounds (messages and queries) sent through the scheduler.
    """

    def __init__(self, client: Any, parts: Sequence[tuple], make_state: Callable[..., Any]):
        from .dask_executor import DaskExecutor

        self.journal = Journal()
        self.executor = DaskExecutor(client, [(make_state, self.journal, *part) for part in parts], _build)
        self.sent_bytes = 0
        self.received_bytes = 0
        self.seconds = {"round": 0.0, "work": 0.0}
        self.round_trips = 0

    @property
    def n_parts(self) -> int:
        return len(self.executor.workers)

    def _account(self, payload: Any, replies: list) -> None:
        self.sent_bytes += payload_bytes(payload) * self.n_parts
        self.received_bytes += sum(payload_bytes(r) for r in replies)
        last = self.executor.last_seconds
        self.seconds["round"] += last["round"]
        self.seconds["work"] += last["work"]
        self.round_trips += 1

    def send(self, message: Any, restart: bool = False) -> list:
        """Apply ``message`` on every part (once each, whatever is run again); the replies in part order.

        ``restart``: the message rebuilds the state that matters from scratch, so the journal starts again
        from it (a part sent again replays only from here).
        """
        seq = self.journal.seq + 1
        replies = self.executor.map(_step, seq, message)
        self.journal.seq = seq
        self.journal.record(message, restart)
        self._account(message, replies)
        return replies

    def ask(self, fn: Callable[..., Any], *args: Any) -> list:
        """``[fn(state_i, *args)]`` in part order: a query that changes no state (not numbered, not journaled)."""
        replies = self.executor.map(_ask, fn, *args)
        self._account(args, replies)
        return replies

    def close(self) -> None:
        self.executor.close()


def payload_bytes(obj: Any) -> int:
    """Bytes of the arrays in a message or reply (numpy arrays, nested in tuples, lists and dicts)."""
    if hasattr(obj, "nbytes") and hasattr(obj, "dtype"):
        return int(obj.nbytes)
    if isinstance(obj, dict):
        return sum(payload_bytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(payload_bytes(v) for v in obj)
    return 8 if isinstance(obj, (int, float)) else 0

