# SPDX-License-Identifier: Apache-2.0
"""Ticks across the wire: the hosting node's mailbox item, and the sender's wait for it.

A schedule lives on the node that made it; its tick to a remote PID is a
:class:`~tocsin.remote._envelopes.Scheduled` frame (DESIGN.md "Remoting", "Schedule
policies"). Two halves:

* **Hosting node**: :class:`InboundTick` is the :class:`~tocsin.actor._mailbox.RuntimeItem`
  the frame becomes in the target's mailbox, so ``ctx.tick`` there is the sender's
  :class:`~tocsin.triggers.Tick`. When the frame asked for completion, the
  item's ``finished()`` (``receive`` returned, raised, or was cancelled) or ``rejected()``
  (the tick is a dead letter there: no such actor, stopped, suspended, mailbox full)
  sends one :class:`~tocsin.remote._envelopes.Completed` frame back, once.
* **Sending node**: a tick of a schedule whose overlap policy counts ticks in flight
  (``RuntimeItem.tracked``) waits in :class:`Completions` under its correlation id.
  :class:`PendingCompletion` ends the original item exactly once: ``finished()`` when
  the ``Completed`` frame says its ``receive`` ran; :func:`not_run` (the item's
  ``lost()`` if it has one, else ``finished()``) when it says the tick was dead-lettered
  there, when the connection the frame went on is lost (the tick may or may not have
  run), when the frame never left this node (also a dead letter ``unreachable``), or
  when the table is full and it is the oldest entry. So a schedule is never wedged "in
  flight" by the network.

Nothing here reads the clock; the plain tell and ask paths never reach this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Protocol, final

from ..actor._spi import RuntimeItem, Tick
from ._endpoint import Unsent
from ._envelopes import Completed, Envelope, WireTick

if TYPE_CHECKING:
    from ._connection import Connection
    from ._endpoint import Endpoint

__all__ = [
    "MAX_PENDING_COMPLETIONS",
    "Completions",
    "InboundTick",
    "PendingCompletion",
    "not_run",
]

#: Tracked ticks one node waits on at most (all peers together). Past it the oldest is
#: resolved early (``finished()`` called, a warning logged): a peer that never answers
#: cannot grow the table. Each entry is a few hundred bytes.
MAX_PENDING_COMPLETIONS: Final = 65_536


class CompletionWire(Protocol):
    """What an :class:`InboundTick` needs from the node it came through (the
    ``RemoteNode``): the envelope encoder, and where a bad tick is reported."""

    def encode(self, envelope: Envelope) -> bytes: ...

    def bad_tick(self, peer: str, wire: object, error: Exception) -> None:
        """A tick from ``peer`` (a log key) that ``Tick.from_wire`` refused."""


_UNREAD: Final[Any] = object()


@final
class InboundTick(RuntimeItem):
    """A tick from another node, queued in a local mailbox (made by the node when a
    ``Scheduled`` frame arrives). ``tracked`` when the sender asked for completion, so a
    further hop (a PID that resolves to yet another node) asks for it in turn.

    The :class:`~tocsin.triggers.Tick` is rebuilt from its wire list
    (``Tick.from_wire``) when first asked for (``ctx.tick`` reads it lazily): a handler
    that never reads it pays nothing for it. One the frame decoder let through (the shape
    is checked there) but ``from_wire`` refuses (an instant ``datetime`` cannot hold) is
    reported to the node and read as ``None``: the delivery goes on without it.
    """

    __slots__ = ("_conn", "_corr", "_node", "_peer", "_tick", "_wire", "message", "tracked")

    def __init__(
        self,
        message: object,
        wire: WireTick | None,
        conn: Connection | None,
        corr: int,
        node: CompletionWire,
        peer: str = "",
    ) -> None:
        self.message = message
        self._wire = wire
        self._tick: Tick | None = _UNREAD if wire is not None else None
        self._corr = corr
        # None once the completion is sent (or when none was asked): exactly once.
        self._conn = conn if corr else None
        self._node = node
        self._peer = peer
        self.tracked = bool(corr)

    def open(self) -> Any:
        return self.message

    def tick(self) -> Tick | None:
        tick = self._tick
        if tick is _UNREAD:
            try:
                tick = Tick.from_wire(self._wire)
            except (ValueError, OverflowError, OSError) as exc:
                # fromtimestamp's own errors too: an instant outside datetime's years.
                self._node.bad_tick(self._peer, self._wire, exc)
                tick = None
            self._tick = tick
        return tick

    def finished(self) -> None:
        self._complete(True)

    def rejected(self) -> Any:
        # A dead letter here is the end of the tick too: the sender must not wait on it.
        self._complete(False)
        return self.message

    def _complete(self, ran: bool) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            # Forced past ``max_buffer``: a refused completion would leave the sender's
            # schedule in flight until the connection drops. A few bytes per tick
            # that arrived, so what it adds is bounded by what the peer sent.
            conn.send(self._node.encode(Completed(self._corr, ran)), force=True)

    def __repr__(self) -> str:
        return f"InboundTick({self.message!r}, {self._wire!r})"


class Undelivered(Protocol):
    """What a tick that never left this node is reported to (``RemoteTarget``)."""

    def undelivered(self, message: Any, sender: Any, why: str) -> None: ...


@final
class PendingCompletion:
    """The sender's wait for one tracked tick (a connection's pending-request callback).
    Calls ``item.finished()`` once, whatever resolves it first; later calls do nothing."""

    __slots__ = ("corr", "info", "item", "table")

    def __init__(
        self,
        table: Completions,
        corr: int,
        item: RuntimeItem,
        info: tuple[Undelivered, Any, Any],
    ) -> None:
        self.table = table
        self.corr = corr
        self.item: RuntimeItem | None = item
        self.info = info  # (target, message, sender): the dead letter if never sent

    def __call__(self, result: Envelope | BaseException) -> None:
        item = self.item
        if item is None:
            return
        self.item = None
        self.table.forget(self.corr)
        if type(result) is Completed and result.ran:
            item.finished()
            return
        if type(result) is Unsent:
            # Queued while connecting and dropped: like a plain tell, a dead letter.
            target, message, sender = self.info
            target.undelivered(message, sender, result.why)
        not_run(item)

    def resolve(self) -> None:
        """Resolve now, without an answer (the table is full and this is the oldest)."""
        item, self.item = self.item, None
        if item is not None:
            not_run(item)


def not_run(item: RuntimeItem) -> None:
    """End an opened tick whose ``receive`` did not return, or may not have: it was
    dead-lettered on either node, never left this one, or its connection was lost (or
    the table evicted it). :meth:`RuntimeItem.lost` (whose default is ``finished()``):
    cluster cron's ``at_least_once`` lets such a claim lapse, so another node delivers
    the tick; for any other item it is not in flight any more either way."""
    item.lost()


@final
class Completions:
    """The tracked ticks this node sent and waits on, oldest first, at most ``limit``."""

    __slots__ = ("_pending", "evicted", "limit")

    def __init__(self, limit: int = MAX_PENDING_COMPLETIONS) -> None:
        self.limit = limit
        self._pending: dict[int, tuple[Endpoint, PendingCompletion]] = {}
        #: Entries resolved early because the table was full.
        self.evicted = 0

    def __len__(self) -> int:
        return len(self._pending)

    def pending(
        self, corr: int, item: RuntimeItem, info: tuple[Undelivered, Any, Any]
    ) -> PendingCompletion:
        return PendingCompletion(self, corr, item, info)

    def add(self, endpoint: Endpoint, waiting: PendingCompletion) -> bool:
        """Remember ``waiting`` (its frame was handed to ``endpoint``). ``True`` when the
        oldest entry had to be resolved early to make room."""
        pending = self._pending
        full = len(pending) >= self.limit
        if full:
            corr = next(iter(pending))
            old_endpoint, old = pending.pop(corr)
            old_endpoint.unwait(corr)
            self.evicted += 1
            old.resolve()
        pending[waiting.corr] = (endpoint, waiting)
        return full

    def forget(self, corr: int) -> None:
        self._pending.pop(corr, None)
