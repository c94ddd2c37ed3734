# SPDX-License-Identifier: Apache-2.0
"""PID: the address of an actor, and ``NoSender``.

Prior art: pykka's ``ActorRef`` ("You should never need to create ActorRef instances
yourself"), Proto.Actor's PID (address + id), Akka's ``ActorRef`` with an incarnation uid.
"""

from __future__ import annotations

import asyncio
import math
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, final

from .._deadlines import Deadline
from ..errors import ActorSystemNotStartedError, AskTimeoutError

if TYPE_CHECKING:
    from ._system import ActorSystem

__all__ = ["DEFAULT_ASK_TIMEOUT", "PID", "NoSender"]

#: Seconds an ``ask`` waits when no ``timeout`` is given.
DEFAULT_ASK_TIMEOUT = 5.0


@final
class _NoSenderType:
    """The sender of messages sent from outside any actor. Falsy; a singleton."""

    __slots__ = ()
    _instance: _NoSenderType | None = None

    def __new__(cls) -> _NoSenderType:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "NoSender"

    def __reduce__(self) -> str:
        return "NoSender"


NoSender = _NoSenderType()


class _Target(Protocol):
    """What a PID sends to: a local actor cell, or a durable identity's activator."""

    @property
    def system(self) -> ActorSystem: ...

    def _deliver(self, message: Any, sender: Any, reply: asyncio.Future[Any] | None) -> bool: ...

    def _alive(self) -> bool: ...

    async def stop(self) -> None: ...

    def request_stop(self) -> None: ...

    def reinstate(self) -> None: ...


@final
class PID:
    """The address of one actor incarnation. Do not construct it: ``spawn`` returns one.

    Hashable and ordered by ``(address, path, uid)``. Two incarnations spawned under the
    same path are different PIDs: a message to the old one is a dead letter.
    ``str(pid)`` is ``"<address><path>"``.
    """

    __slots__ = ("_target", "address", "path", "uid")

    def __init__(self, address: str, path: str, uid: int, target: _Target) -> None:
        self.address = address
        self.path = path
        self.uid = uid
        self._target = target

    @property
    def name(self) -> str:
        """The last segment of :attr:`path`."""
        return self.path.rpartition("/")[2]

    def tell(self, message: Any, sender: Any = None) -> None:
        """Send ``message`` without waiting. Never raises for a dead target: the message
        becomes a :class:`~tocsin.DeadLetter` instead.

        Args:
            message: any object (local sends do not copy or serialise it).
            sender: the PID seen as ``ctx.sender``; ``None`` means ``NoSender``.
        """
        self._target._deliver(message, NoSender if sender is None else sender, None)

    async def ask(
        self, message: Any, *, timeout: float | timedelta | None = DEFAULT_ASK_TIMEOUT
    ) -> Any:
        """Send ``message`` and wait for the reply given with ``ctx.respond(value)``.

        Args:
            message: any object.
            timeout: seconds (or a ``timedelta``) to wait for the reply; ``None`` waits
                until the target answers or stops.

        Raises:
            AskTimeoutError: no reply within ``timeout`` seconds (also a ``TimeoutError``).
            DeadActorError: the target is stopped, at once, or stops before replying.
            ActorSuspendedError: the target is suspended.
            Exception: whatever the target's ``receive`` raised while handling it.
            ActorSystemNotStartedError: the system is not running.
            ValueError: ``timeout`` is not a positive finite number, a timedelta or None.
        """
        system = self._target.system
        if not system.running:
            raise ActorSystemNotStartedError(
                f"cannot ask {self}: actor system {system.name!r} is not running"
            )
        if isinstance(timeout, timedelta):
            timeout = timeout.total_seconds()
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not (timeout > 0 and math.isfinite(timeout))
        ):
            raise ValueError(
                f"`timeout` must be a positive finite number of seconds or None, got {timeout!r}"
            )
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._target._deliver(message, NoSender, future)
        if future.done() or timeout is None:
            return await future
        timer = _AskTimeout(future, self, timeout)
        deadlines = system._deadlines
        deadlines.add(system.clock.monotonic() + timeout, timer)
        try:
            return await future
        finally:
            deadlines.remove(timer)

    def _key(self) -> tuple[str, str, int]:
        return (self.address, self.path, self.uid)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PID) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.address, self.path, self.uid))

    def __lt__(self, other: PID) -> bool:
        return self._key() < other._key()

    def __le__(self, other: PID) -> bool:
        return self._key() <= other._key()

    def __gt__(self, other: PID) -> bool:
        return self._key() > other._key()

    def __ge__(self, other: PID) -> bool:
        return self._key() >= other._key()

    def __str__(self) -> str:
        return f"{self.address}{self.path}"

    def __repr__(self) -> str:
        return f"PID({self.address!r}, {self.path!r}, uid={self.uid})"


@final
class _AskTimeout(Deadline):
    """An ask's timeout, living in the system's deadline heap."""

    __slots__ = ("_future", "_pid", "_timeout")

    def __init__(self, future: asyncio.Future[Any], pid: PID, timeout: float) -> None:
        super().__init__()
        self._future = future
        self._pid = pid
        self._timeout = timeout

    def fire(self, now: float, deadline: float) -> None:
        if not self._future.done():
            self._future.set_exception(
                AskTimeoutError(f"ask to {self._pid} got no reply within {self._timeout} s")
            )
