# SPDX-License-Identifier: Apache-2.0
"""Lifecycle events, dead letters, and the :class:`EventStream` that publishes them.

Prior art: Proto.Actor's ``eventstream`` (typed subscriptions, publish is synchronous and
cheap when nobody listens) and Akka's ``DeadLetter``.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, final

if TYPE_CHECKING:
    from datetime import datetime

    from ..triggers import Outcome
    from ._pid import PID

__all__ = [
    "ActorPassivated",
    "ActorReinstated",
    "ActorRestarted",
    "ActorStarted",
    "ActorStopped",
    "ActorSuspended",
    "DeadLetter",
    "DeadLetterReason",
    "Event",
    "EventStream",
    "Subscription",
    "TickNotDelivered",
]

_log = logging.getLogger("tocsin.events")


class DeadLetterReason(enum.StrEnum):
    """Why a message could not be delivered."""

    STOPPED = "stopped"
    """The target has stopped (or is stopping)."""
    SUSPENDED = "suspended"
    """The target is suspended by its supervisor."""
    NOT_FOUND = "not_found"
    """There is no target: an unknown path (a reply to ``NoSender`` is dropped silently)."""
    UNREACHABLE = "unreachable"
    """The target lives on another node that cannot be reached (remoting): down, refused
    the handshake, or is another system than the PID names; or (cluster mode) a durable
    identity this node could not claim or locate (the ask says why)."""
    OVERFLOW = "overflow"
    """A bounded buffer on the way is full (remoting: the connection's send buffer past
    ``max_buffer``); the target may well be up."""


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message that could not be delivered. Every undeliverable send publishes one."""

    message: Any
    sender: Any
    target: PID | None
    reason: DeadLetterReason


@dataclass(frozen=True, slots=True)
class ActorStarted:
    """An actor finished its first ``pre_start`` and takes messages."""

    pid: PID


@dataclass(frozen=True, slots=True)
class ActorStopped:
    """An actor is fully stopped: children stopped and ``post_stop`` finished."""

    pid: PID


@dataclass(frozen=True, slots=True)
class ActorRestarted:
    """An actor was restarted by its supervisor after ``error`` (a fresh instance runs)."""

    pid: PID
    error: BaseException


@dataclass(frozen=True, slots=True)
class ActorSuspended:
    """An actor was suspended by its supervisor after ``error``."""

    pid: PID
    error: BaseException


@dataclass(frozen=True, slots=True)
class ActorReinstated:
    """A suspended actor takes messages again (``system.reinstate``)."""

    pid: PID


@dataclass(frozen=True, slots=True)
class ActorPassivated:
    """An idle actor is being stopped by passivation (``ActorStopped`` follows)."""

    pid: PID


@dataclass(frozen=True, slots=True)
class TickNotDelivered:
    """An instant of a schedule was not delivered (every outcome but ``delivered`` of
    DESIGN.md "Operating schedules"): it is also in ``system.schedule_history``."""

    reference: str
    instant: datetime
    outcome: Outcome
    detail: int | str | None
    node: str


Event = (
    DeadLetter
    | ActorStarted
    | ActorStopped
    | ActorRestarted
    | ActorSuspended
    | ActorReinstated
    | ActorPassivated
    | TickNotDelivered
)
E = TypeVar("E")
Handler = Callable[[Any], Awaitable[None] | None]


@final
class Subscription:
    """A live subscription; :meth:`cancel` ends it (idempotent)."""

    __slots__ = ("_remove", "active")

    def __init__(self, remove: Callable[[], None]) -> None:
        self._remove = remove  # takes it out of its stream (made by EventStream.subscribe)
        self.active = True

    def cancel(self) -> None:
        """Stop receiving events."""
        if self.active:
            self.active = False
            self._remove()


@final
class EventStream:
    """Publishes events to subscribers and counts every event by type.

    Handlers run synchronously inside :meth:`publish`; a handler returning an awaitable
    has it scheduled as a task. A failing handler is logged, never propagated to the
    publisher. Use :meth:`stream` for an async iterator instead of a callback.
    """

    __slots__ = ("_counts", "_subs", "_tasks", "_track")

    def __init__(self) -> None:
        #: (subscription, handler, event types) in subscription order.
        self._subs: list[tuple[Subscription, Handler, tuple[type, ...]]] = []
        self._counts: dict[type, int] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._track: Callable[[asyncio.Task[Any]], None] | None = None

    def subscribe(self, handler: Handler, *event_types: type) -> Subscription:
        """Call ``handler(event)`` for each event of ``event_types`` (all when none given)."""
        if not callable(handler):
            raise TypeError(f"`handler` must be callable, got {handler!r}")

        def remove() -> None:
            self._subs.remove(entry)

        entry = (Subscription(remove), handler, event_types)
        self._subs.append(entry)
        return entry[0]

    def add_task_tracker(self, track: Callable[[asyncio.Task[Any]], None]) -> Callable[[], None]:
        """Hand every task an async handler starts to ``track(task)`` (the system counts
        it as activity, so ``ManualClock.advance`` waits for it); returns the remover.
        One tracker at a time: a new one replaces the last."""
        self._track = track

        def remove() -> None:
            if self._track is track:
                self._track = None

        return remove

    def count(self, event_type: type) -> int:
        """How many events of exactly this type were published."""
        return self._counts.get(event_type, 0)

    @property
    def subscribed(self) -> bool:
        """Whether anyone subscribes (else a frequent publisher may :meth:`tally` instead
        of building an event no one reads)."""
        return bool(self._subs)

    def tally(self, event_type: type) -> None:
        """Count one event of ``event_type`` as published, with no subscriber to call:
        what :meth:`publish` does when :attr:`subscribed` is false."""
        self._counts[event_type] = self._counts.get(event_type, 0) + 1

    def publish(self, event: object) -> None:
        """Deliver ``event`` to matching subscribers."""
        cls = type(event)
        self._counts[cls] = self._counts.get(cls, 0) + 1
        if not self._subs:
            return
        for sub, handler, types in list(self._subs):
            if not sub.active:  # cancelled by an earlier handler of this same event
                continue
            if types and not isinstance(event, types):
                continue
            try:
                result = handler(event)
            except Exception:
                _log.exception("event handler %r failed on %r", handler, event)
                continue
            if inspect.isawaitable(result):
                task = asyncio.ensure_future(result)
                self._tasks.add(task)
                task.add_done_callback(self._task_done)
                if self._track is not None:
                    self._track(task)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("async event handler failed", exc_info=task.exception())

    def stream(self, *event_types: type) -> _EventIterator:
        """Iterate events of ``event_types`` (all when none given) as they are published.

        The subscription starts when ``stream()`` is called, so events published between
        the call and the first ``__anext__`` are not lost. It ends on ``aclose()`` (or
        leaving ``async with``/``contextlib.aclosing``), or, once the iterator is dropped
        (leaving an ``async for`` that holds the only reference), at the next event.
        """
        return _EventIterator(self, event_types)


_END: Any = object()


@final
class _EventIterator:
    """The async iterator returned by :meth:`EventStream.stream` (internal).

    An async generator would subscribe only at its first ``__anext__`` and lose what was
    published before; this object subscribes at once. It holds its subscription, but the
    subscription holds it only weakly, so a dropped iterator does not leak a queue.
    """

    __slots__ = ("__weakref__", "_queue", "_sub")

    def __init__(self, stream: EventStream, event_types: tuple[type, ...]) -> None:
        queue: asyncio.Queue[Any] = asyncio.Queue()
        self._queue = queue
        ref = weakref.ref(self)

        def put(event: object) -> None:
            if ref() is None:  # the iterator is gone: nobody will read the queue
                sub.cancel()
            else:
                queue.put_nowait(event)

        sub = stream.subscribe(put, *event_types)
        self._sub = sub

    def __aiter__(self) -> _EventIterator:
        return self

    async def __anext__(self) -> Any:
        if not self._sub.active and self._queue.empty():
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is _END:
            raise StopAsyncIteration
        return event

    async def aclose(self) -> None:
        """End the subscription; a pending ``__anext__`` ends the iteration."""
        if self._sub.active:
            self._sub.cancel()
            self._queue.put_nowait(_END)

    async def __aenter__(self) -> _EventIterator:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
