# SPDX-License-Identifier: Apache-2.0
"""SendTarget: what a PID sends to, and TargetResolver: how a PID string finds one.

Three kinds of target sit behind PIDs, each in its own layer:

* a local actor :class:`~tocsin.actor._cell.Cell` (this package);
* a durable identity's handle, which activates the actor on demand (``durable/``);
* a remote node's endpoint, which encodes the message and writes a frame (``remote/``).

A PID calls only :meth:`SendTarget.deliver` (``tell``/``ask``), :meth:`SendTarget.offer`
(``send``: wait for room in a bounded mailbox or a connection's buffer) and, through the system,
``stop``/``request_stop``/``reinstate``. An ask's reply travels as a
:class:`~tocsin.actor._reply.Reply`, never as a bare future, so a remote target can send
a correlation id instead and answer it when the reply frame comes back.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import DeadActorError

if TYPE_CHECKING:
    import asyncio

    from ._pid import PID
    from ._reply import Reply
    from ._runtime import Runtime

__all__ = ["SendTarget", "TargetResolver"]


class SendTarget(ABC):
    """The receiving end of a PID (internal protocol; see the module docstring)."""

    __slots__ = ()

    #: The runtime of the system this target was made by (ask timeouts, loop checks).
    runtime: Runtime

    @abstractmethod
    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        """Queue ``message`` from ``sender`` (a PID or NoSender); ``reply`` is set for an
        ask. Never raises for a dead target: return False after dead-lettering it (and
        failing ``reply``)."""

    def offer(self, message: Any, sender: Any, reply: Reply | None) -> asyncio.Future[None] | None:
        """Queue ``message`` when there is room (``None``), else hold it in line and
        return a future done once it is queued: what ``await pid.send`` waits for, and
        what a remote connection waits for before it reads its next frame.

        A refusal (the target is gone) is a done future failed with why, after the dead
        letter. Default: :meth:`deliver` (an unbounded target always has room).
        """
        if self.deliver(message, sender, reply):
            return None
        future: asyncio.Future[None] = self.runtime.loop.create_future()
        future.set_exception(DeadActorError("the target is stopped"))
        return future

    def check(self, message: Any) -> None:
        """Raise if ``message`` can never be sent to this target (a remote target: it
        cannot cross the wire). The scheduling calls call it, so a bad message fails at
        the call that schedules it, not at its first tick. Default: nothing to check."""

    @abstractmethod
    def alive(self) -> bool:
        """Whether the target can still take messages (maybe after a reinstate)."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop the actor and return once it is fully stopped."""

    @abstractmethod
    def request_stop(self) -> None:
        """Begin stopping after the current message; never waits."""

    @abstractmethod
    def reinstate(self) -> None:
        """Reopen a suspended actor's mailbox (no-op otherwise)."""


class TargetResolver(Protocol):
    """Finds the target of a PID whose address is not this node's (the remote layer).

    Registered with ``Runtime.add_resolver``; consulted in order by
    ``Runtime.pid_of(text)``. Returns a PID, or ``None`` when the address is not one it
    serves.
    """

    def __call__(self, address: str, path: str, incarnation: int | None) -> PID | None: ...
