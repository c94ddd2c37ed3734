# SPDX-License-Identifier: Apache-2.0
"""ReceiveContext: what an actor sees while it handles a message."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..scheduling._api import SchedulingCalls
from ._events import DeadLetter, DeadLetterReason
from ._pid import PID, NoSender
from ._supervision import Supervisor

if TYPE_CHECKING:
    from ..scheduling._scheduler import Scheduler
    from ._actor import Actor
    from ._cell import Cell
    from ._supervision import Directive
    from ._system import ActorSystem

__all__ = ["ReceiveContext"]

from .._deadlines import Seconds


@final
class ReceiveContext(SchedulingCalls):
    """The actor's view of the current message and of its system.

    One context object lives as long as the actor; ``message`` and ``sender`` change with
    each message. Do not keep it past the handler for the message fields.
    """

    __slots__ = ("_cell", "_reply", "message", "sender")

    def __init__(self, cell: Cell) -> None:
        self._cell = cell
        self.message: Any = None
        self.sender: Any = NoSender
        self._reply: asyncio.Future[Any] | None = None

    @property
    def self(self) -> PID:
        """This actor's PID."""
        return self._cell.pid

    @property
    def system(self) -> ActorSystem:
        return self._cell.system

    @property
    def parent(self) -> PID | None:
        """The parent's PID, or ``None`` for a top-level actor."""
        parent = self._cell.parent
        return parent.pid if parent is not None else None

    @property
    def children(self) -> list[PID]:
        """PIDs of the live children, in spawn order."""
        return [child.pid for child in self._cell.children.values()]

    def respond(self, value: Any) -> None:
        """Answer the current message: completes an ``ask``, or tells the sender.

        With no one to answer (``NoSender``), the reply is a dead letter.
        """
        reply = self._reply
        if reply is not None:
            if not reply.done():
                reply.set_result(value)
            return
        sender = self.sender
        if isinstance(sender, PID):
            sender.tell(value, self._cell.pid)
        else:
            self._cell.system._dead_letter(
                DeadLetter(value, self._cell.pid, None, DeadLetterReason.NOT_FOUND)
            )

    def tell(self, pid: PID, message: Any) -> None:
        """Send ``message`` to ``pid`` with this actor as the sender."""
        pid.tell(message, self._cell.pid)

    async def spawn(
        self,
        factory: Callable[[], Actor],
        name: str | None = None,
        *,
        supervisor: Supervisor | Directive | None = None,
        passivate_after: Seconds | None = None,
    ) -> PID:
        """Spawn a child of this actor (stopped before this actor stops)."""
        return await self._cell.system._spawn(
            factory, name, parent=self._cell, supervisor=supervisor, passivate_after=passivate_after
        )

    def stop(self, pid: PID) -> None:
        """Ask ``pid`` to stop (this actor included) without waiting for it.

        The stop happens after the current message; remaining mailbox messages become
        dead letters.
        """
        self._cell.system._request_stop(pid)

    # -- scheduling: the calls of SchedulingCalls, owned by this actor -----------------

    def _live_scheduler(self) -> Scheduler:
        system = self._cell.system
        if not system._running:
            system._check_running()
        return system._scheduler

    def _schedule_owner(self) -> Cell:
        return self._cell
