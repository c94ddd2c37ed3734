# SPDX-License-Identifier: Apache-2.0
"""PID: the address of one actor incarnation, its string form, and ``NoSender``.

Identity. A PID is ``(address, path, incarnation)``:

* ``address`` names the node: ``tocsin://<system name>`` for a system without remoting,
  ``tocsin://<system name>@<host>:<port>`` once remoting gives it a reachable address.
* ``path`` names the actor within the node: ``/user/a/b``, ``/durable/<kind>/<id>``.
* ``incarnation`` tells two actors spawned under one path apart. It is unique across
  processes and restarts, not a per-process counter: a random 48-bit process token
  (drawn again in a forked child) followed by a 32-bit counter, so a PID that crossed the
  wire, or was stored before a restart, never aliases a later actor.

``str(pid)`` is ``address + path`` (stable, what ``actor_of`` accepts on any node). The
wire form adds the incarnation after ``#``: ``tocsin://shop/user/a#1a2b...``.
:func:`parse_pid` reads both.

Sending. A PID sends through its :class:`~tocsin.actor._target.SendTarget` (a local
cell, a durable identity, a remote node): the PID itself knows nothing of where the
actor lives.

Prior art: pykka's ``ActorRef`` ("You should never need to create ActorRef instances
yourself"), Proto.Actor's PID (address + id), Akka's ``ActorPath`` with ``#uid``.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
from typing import TYPE_CHECKING, Any, NamedTuple, final

from .._deadlines import Deadline, Seconds, to_seconds
from ..errors import AskTimeoutError

if TYPE_CHECKING:
    from ._target import SendTarget

__all__ = [
    "DEFAULT_ASK_TIMEOUT",
    "PID",
    "SCHEME",
    "NoSender",
    "PIDParts",
    "local_address",
    "new_incarnation",
    "parse_pid",
    "target_of",
]

#: Seconds an ``ask`` waits when no ``timeout`` is given.
DEFAULT_ASK_TIMEOUT = 5.0

_INF = float("inf")

#: The scheme of every node address.
SCHEME = "tocsin://"


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

# -- incarnations ------------------------------------------------------------------------

_COUNTER_BITS = 32


def _process_token() -> int:
    return int.from_bytes(os.urandom(6), "big") << _COUNTER_BITS


_TOKEN = _process_token()
_COUNT = itertools.count(1)


def _reseed() -> None:
    global _TOKEN, _COUNT
    _TOKEN = _process_token()
    _COUNT = itertools.count(1)


# A forked child would otherwise hand out its parent's incarnations.
os.register_at_fork(after_in_child=_reseed)


def new_incarnation() -> int:
    """A fresh incarnation id: unique across processes, restarts and forks."""
    # The counter wraps into the token's bits only after 2**32 spawns in one process.
    return _TOKEN + next(_COUNT)


def local_address(system_name: str) -> str:
    """The address of a node without remoting: ``tocsin://<system name>``."""
    return f"{SCHEME}{system_name}"


# -- parsing -----------------------------------------------------------------------------


class PIDParts(NamedTuple):
    """A parsed PID string: node address, actor path, incarnation (``None`` if absent)."""

    address: str
    path: str
    incarnation: int | None


_PID_RE = re.compile(
    r"(?P<address>tocsin://[^/@#\s]+(?:@[^/#\s]+)?)(?P<path>(?:/[^/#\s]+)+)(?:#(?P<inc>[0-9a-f]+))?"
)


def parse_pid(text: str) -> PIDParts:
    """Read ``str(pid)`` (``tocsin://name/user/a``) or the wire form (``...#<hex>``).

    Raises:
        ValueError: ``text`` is not a PID string; the message shows the accepted forms.
    """
    if not isinstance(text, str):
        raise TypeError(f"a PID string must be a str, got {text!r}")
    match = _PID_RE.fullmatch(text)
    if match is None:
        raise ValueError(
            f"not a PID string: {text!r}; expected 'tocsin://<name>[@<host>:<port>]/<path>' "
            f"optionally followed by '#<incarnation hex>'"
        )
    inc = match.group("inc")
    return PIDParts(
        match.group("address"), match.group("path"), None if inc is None else int(inc, 16)
    )


@final
class PID:
    """The address of one actor incarnation. Do not construct it: ``spawn``,
    ``actor_of`` and ``durable`` return one.

    Hashable and ordered by ``(address, path, incarnation)``. Two incarnations spawned
    under the same path are different PIDs: a message to the old one is a dead letter.
    ``str(pid)`` is ``address + path``; :attr:`wire` adds the incarnation.
    """

    __slots__ = ("_target", "address", "incarnation", "path")

    def __init__(self, address: str, path: str, incarnation: int, target: SendTarget) -> None:
        self.address = address
        self.path = path
        self.incarnation = incarnation
        self._target = target

    @property
    def name(self) -> str:
        """The last segment of :attr:`path`."""
        return self.path.rpartition("/")[2]

    @property
    def uid(self) -> int:
        """Alias of :attr:`incarnation` (kept for code written against 0.1)."""
        return self.incarnation

    @property
    def wire(self) -> str:
        """The form that crosses the wire and the codec: ``str(pid)#<incarnation hex>``."""
        return f"{self.address}{self.path}#{self.incarnation:x}"

    def tell(self, message: Any, sender: Any = None) -> None:
        """Send ``message`` without waiting. Never raises for a dead target: the message
        becomes a :class:`~tocsin.DeadLetter` instead.

        Call it from the system's event loop (any actor, any task of that loop). From
        another thread use :meth:`tell_threadsafe`.

        Args:
            message: any object (local sends do not copy or serialise it).
            sender: the PID seen as ``ctx.sender``; ``None`` means ``NoSender``.

        Raises:
            WrongEventLoopError: called on another event loop than the system's, when
                the send has to wake the actor.
        """
        self._target.deliver(message, NoSender if sender is None else sender, None)

    async def send(self, message: Any, sender: Any = None) -> None:
        """Send ``message``, waiting for room first: :meth:`tell` with backpressure.

        Returns once the message is queued. To an actor whose mailbox is bounded
        (``mailbox_bound``) and full, it waits until the mailbox is down to half its
        bound, in order with the other waiting sends (which hold their place: a
        :meth:`tell` meanwhile is an ``overflow`` dead letter, it does not overtake
        them). To an unbounded actor it is :meth:`tell`. To a durable actor it is
        the send to its activation (activated first when passivated). To an actor on
        another node it waits for room in the connection's send buffer
        (``Remoting(max_buffer=)``); the remote node then reads the frame only once
        the mailbox there has room (its connection stops reading meanwhile).

        Cancelling the waiting call withdraws the message (it was not sent). To bound
        the wait, wrap it: ``async with asyncio.timeout(5): await pid.send(msg)``.

        Raises:
            DeadActorError: the target is stopped, at once, or stops while the send
                waits (the message is then a dead letter with reason ``stopped``).
            ActorSuspendedError: the target is suspended (dead letter ``suspended``).
            NodeUnreachableError: the target's node cannot be reached, or the
                connection is lost while the send waits (dead letter ``unreachable``).
            CodecError: to another node, ``message`` cannot cross the wire.
            ActorSystemNotStartedError: the system is not running.
            WrongEventLoopError: called on another event loop than the system's.
        """
        target = self._target
        runtime = target.runtime
        if not runtime.running or not runtime.on_loop_thread():
            runtime.check(f"send to {self}")  # raises the right error
        waiter = target.offer(message, NoSender if sender is None else sender, None)
        if waiter is not None:
            await waiter

    def tell_threadsafe(self, message: Any, sender: Any = None) -> None:
        """:meth:`tell` from any thread: the send is handed to the system's loop
        (``loop.call_soon_threadsafe``), so it happens on that loop, in call order."""
        self._target.runtime.loop.call_soon_threadsafe(self.tell, message, sender)

    async def ask(self, message: Any, *, timeout: Seconds | None = DEFAULT_ASK_TIMEOUT) -> Any:
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
            WrongEventLoopError: called on another event loop than the system's.
            InvalidIntervalError: ``timeout`` is not a positive finite number of seconds,
                a timedelta or None (also a ``ValueError``).
        """
        runtime = self._target.runtime
        # The measured loop check (Runtime.loop_thread): ~40 ns against ~180 ns.
        if not runtime.running or not runtime.on_loop_thread():
            runtime.check(f"ask {self}")  # raises the right error
        if timeout is not None and not (type(timeout) is float and 0.0 < timeout < _INF):
            timeout = to_seconds(timeout, "timeout")
        future: asyncio.Future[Any] = runtime.loop.create_future()
        self._target.deliver(message, NoSender, future)
        if future.done() or timeout is None:
            return await future
        timer = _AskTimeout(future, self, timeout)
        deadlines = runtime.deadlines
        deadlines.add(runtime.clock.monotonic() + timeout, timer)
        try:
            return await future
        finally:
            deadlines.remove(timer)

    def _key(self) -> tuple[str, str, int]:
        return (self.address, self.path, self.incarnation)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PID) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.address, self.path, self.incarnation))

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
        return f"PID({self.address!r}, {self.path!r}, incarnation={self.incarnation:#x})"


def target_of(pid: PID) -> SendTarget:
    """What ``pid`` sends to (a local cell, a durable identity, a remote node), for the
    layers above the kernel: stop, reinstate, or deliver with a reply.

    For cold paths (a call per stop, per schedule made, per remote frame): a hot path
    that sends many times keeps the target it got once (``ScheduleRecord`` does).

    Raises:
        TypeError: ``pid`` is not a PID (says what was given).
    """
    if type(pid) is not PID:
        raise TypeError(f"expected a PID (from spawn, actor_of or durable), got {pid!r}")
    # The slot's one reader outside PID's own methods, in PID's own module.
    return pid._target  # noqa: SLF001 (the PID's own module: the one public read of it)


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
                AskTimeoutError(f"ask to {self._pid} got no reply within {self._timeout:g} s")
            )
