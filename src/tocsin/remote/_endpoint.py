# SPDX-License-Identifier: Apache-2.0
"""One peer node as seen from here: its connection, dialling, reconnects, the send queue.

States::

    IDLE ──send──▶ CONNECTING ──ready──▶ UP ──lost──▶ DOWN ──retry ok──▶ UP
                        └──dial failed──▶ DOWN ◀──retry failed──┘
    DOWN ──no sends for a while──▶ IDLE

* **One connection per direction.** An endpoint sends only on the connection it dialled
  itself, at the address it was made for: the listener there proved the secret over that
  address (the handshake binds it), so what is sent for a node reaches the process that
  listens at its address. A peer's inbound connection carries what the peer sends and
  the answers to it (replies, completions), never this node's traffic for the address
  that peer names: a peer cannot claim another node's name and receive its traffic, and
  an address a peer merely announces is never dialled (as Akka Artery, which keeps
  inbound and outbound streams apart).
* **CONNECTING** queues frames (bounded by ``max_buffer``) until the handshake is done;
  if the dial fails they become dead letters (``unreachable``) and queued asks fail with
  :class:`~tocsin.NodeUnreachableError`.
* **DOWN** refuses at once (dead letter / ``NodeUnreachableError``), while a retry runs
  after a capped, jittered exponential backoff: ``min(reconnect_max, 0.05 * 2**k)`` scaled
  by a random factor in [0.5, 1.0]. After :data:`GIVE_UP_AFTER` seconds of failures with
  nobody sending, the endpoint rests (IDLE): the next send dials again.
* A frame handed to a connection that is then lost may be lost with it; asks waiting on
  that connection fail with ``NodeUnreachableError`` at once, and every tell the peer
  had not confirmed reading (``Received``), or that was still in the send buffer,
  becomes a dead letter ``unreachable`` (counted in ``held_lost``). A tell can so be
  reported undelivered though it arrived (its confirmation was under way); never the
  other way round.
* **Waiting for room** (``await pid.send``): a send that finds the send buffer full
  (``overflow`` for a tell) waits in line instead (:meth:`Endpoint.offer`) and leaves as
  frames leave the buffer; while sends wait a tell does not overtake them (it is an
  ``overflow`` dead letter). A lost connection (or a failed dial) fails the waiting
  sends with ``NodeUnreachableError``, after their ``unreachable`` dead letters.
* **Which system.** A send names the system it is for (``expect``, the name in the PID's
  address; ``""`` for "whoever listens there"). The peer's ``Hello`` says which system
  answered: a frame for another name is never sent there; it is refused (UP) or dropped
  when the connection comes up (queued), ``unreachable``, with "expected X, found Y".
* **Why refused.** :attr:`Endpoint.refused` says why the last ``send``/``request`` was
  refused: ``overflow`` (the send buffer is full: the peer is up but slower than us) or
  ``unreachable``; :meth:`Endpoint.why` says it in words (the last dial failure, e.g.
  "authentication failed: ...", or the name mismatch).

Prior art: Proto.Actor ``remote/endpoint_manager.go`` (one endpoint per address, a
writer that reconnects with backoff), Akka Artery's association states.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from ..actor._spi import DeadLetterReason
from ..errors import NodeUnreachableError
from ._address import NodeAddress
from ._connection import FROM_FRAME, Connection, LostFrame
from ._envelopes import Envelope

if TYPE_CHECKING:
    from ..clock import Clock
    from ._config import Remoting
    from ._host import Host
    from ._metrics import Counters

__all__ = ["GIVE_UP_AFTER", "Endpoint", "Switchboard", "Unsent"]

#: Seconds of failed reconnects with no send attempted before an endpoint stops retrying.
GIVE_UP_AFTER: Final = 30.0
_BACKOFF_BASE: Final = 0.05

IDLE: Final = "idle"
CONNECTING: Final = "connecting"
UP: Final = "up"
DOWN: Final = "down"

_OVERFLOW: Final = DeadLetterReason.OVERFLOW
_UNREACHABLE: Final = DeadLetterReason.UNREACHABLE

Callback = Callable[[Envelope | BaseException], None]


class Unsent(NodeUnreachableError):
    """What a request's callback gets when its frame never left this node (queued while
    connecting, then dropped): an ask fails with it as with any ``NodeUnreachableError``;
    a tracked tick also becomes a dead letter, as a plain tell would (``_ticks``)."""

    def __init__(self, text: str, why: str) -> None:
        super().__init__(text)
        self.why = why


class Switchboard(Protocol):
    """What an endpoint needs from the node that made it (the ``RemoteNode``)."""

    @property
    def config(self) -> Remoting: ...
    @property
    def counters(self) -> Counters: ...
    @property
    def clock(self) -> Clock: ...
    @property
    def host(self) -> Host: ...
    @property
    def stopping(self) -> bool: ...
    async def dial(self, address: NodeAddress) -> Connection:
        """Connect and authenticate to ``address`` (raises as ``RemoteNode.dial``)."""

    def warn(self, key: str, text: str) -> None:
        """Log a connection-level problem, rate-limited by ``key``."""


@final
class Endpoint:
    """The link to one peer node. Made by a :class:`Switchboard` (the node); not
    thread-safe."""

    def __init__(self, node: Switchboard, address: NodeAddress) -> None:
        self.node = node
        self.address = address
        self.state = IDLE
        self.conn: Connection | None = None
        self.peer_system = ""
        #: Why the last refused send was refused (read by the caller right after it).
        self.refused: DeadLetterReason = _UNREACHABLE
        #: Why the peer cannot be reached, in words: the last dial or handshake failure.
        self.reason = "not connected"
        # (body, corr or 0, info/callback, expected system name or "")
        self._queue: list[tuple[bytes, int, Any, str]] = []
        self._queued = 0
        self._attempts = 0
        self._rested = 0.0  # seconds of backoff slept since the last send attempt
        self._ever_up = False
        self._dial: asyncio.Task[None] | None = None
        self._retry: Any = None
        #: Sends waiting for room in the send buffer: (future, body, info, expect).
        self._waiting: deque[tuple[asyncio.Future[None], bytes, Any, str]] = deque()

    # -- sending ------------------------------------------------------------------------

    def send(self, body: bytes, info: object, expect: str = "", *, plain: bool = False) -> bool:
        """Send one frame for the system named ``expect`` (``""``: whichever system
        listens there). ``False`` when it cannot (:attr:`refused` says why): the caller
        makes the dead letter. ``info`` is handed to ``host.undelivered`` if the frame is
        dropped before the peer confirmed it; for a ``plain`` tell (a ``Tell`` frame whose
        dead letter its bytes can make) only while connecting: once on a connection, its
        frame is handed to ``host.undelivered_frame`` instead (nothing of the sender's is
        held while it is in flight)."""
        self._rested = 0.0
        state = self.state
        if state == UP:
            conn = self.conn
            assert conn is not None
            if expect and expect != self.peer_system:
                self.refused = _UNREACHABLE
                return False
            if not self._waiting and conn.send(body, info=FROM_FRAME if plain else info):
                return True
            # Full, or sends wait for room before it: a tell does not overtake them.
            self.refused = _UNREACHABLE if conn.closed else _OVERFLOW
            return False
        if state == DOWN:
            self.refused = _UNREACHABLE
            return False
        if self._waiting:
            self.refused = _OVERFLOW
            return False
        return self._enqueue(body, 0, info, expect)

    def offer(self, body: bytes, info: object, expect: str = "") -> bool | asyncio.Future[None]:
        """:meth:`send` for ``await pid.send``: ``True`` when sent (or queued while
        connecting), ``False`` when refused (:attr:`refused`: ``unreachable``), or, when
        the send buffer is full, a future done once the frame is in it (failed with
        :class:`~tocsin.NodeUnreachableError` if the connection is lost first, after the
        dead letter)."""
        if not self._waiting:
            if self.send(body, info, expect):
                return True
            if self.refused is not _OVERFLOW:
                return False
        elif self.state == DOWN or self.node.stopping:
            self.refused = _UNREACHABLE
            return False
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append((future, body, info, expect))
        if self.conn is not None:
            self.conn.want_room(True)
        return future

    def drained(self, conn: Connection) -> None:
        """Frames left ``conn``'s send buffer: admit waiting sends, in order."""
        if conn is self.conn:
            self._admit()

    def _admit(self) -> None:
        waiting = self._waiting
        conn = self.conn
        while waiting and self.state == UP and conn is not None:
            future, body, info, expect = waiting[0]
            if future.done():
                waiting.popleft()  # its sender gave up waiting (cancelled): never sent
                continue
            if expect and expect != self.peer_system:
                waiting.popleft()
                self._drop(0, info, self.mismatch(expect, self.peer_system))
                future.set_exception(self._unreachable(self.mismatch(expect, self.peer_system)))
                continue
            if not conn.send(body, info=info):
                if conn.closed:
                    break  # lost: ``lost`` fails what waits
                conn.want_room(True)
                return  # still full: the next drain goes on
            waiting.popleft()
            future.set_result(None)
        if conn is not None and not waiting:
            conn.want_room(False)

    def _fail_waiting(self, why: str) -> None:
        """The connection is gone (or never came): every waiting send is a dead letter
        ``unreachable`` and its ``await pid.send`` raises."""
        waiting, self._waiting = self._waiting, deque()
        for future, _, info, _ in waiting:
            if future.done():
                continue
            self._drop(0, info, why)
            future.set_exception(self._unreachable(why))

    def _unreachable(self, why: str) -> NodeUnreachableError:
        return NodeUnreachableError(f"node {self.address} is unreachable: {why}")

    def _held_lost(self, conn: Connection) -> None:
        """``conn`` was dropped: the tells it still held unsent, or sent and never
        confirmed by the peer, become dead letters (counted in ``held_lost``)."""
        held = conn.take_held()
        if not held:
            return
        why = (
            f"the connection to {self.address} was dropped before {self.address} "
            "confirmed receiving them"
        )
        host = self.node.host
        for info in held:
            if type(info) is LostFrame:
                host.undelivered_frame(self.address, self.peer_system, info.body, why)
            else:
                host.undelivered(info, why)

    def request(self, body: bytes, corr: int, callback: Callback, expect: str = "") -> bool:
        """Send a request frame whose answer (or the loss of the connection) is given to
        ``callback``. ``False`` when it cannot be sent (``callback`` is not called;
        :attr:`refused` says why)."""
        self._rested = 0.0
        if self.state == UP:
            conn = self.conn
            assert conn is not None
            if expect and expect != self.peer_system:
                self.refused = _UNREACHABLE
                return False
            if self._waiting or not conn.send(body):
                self.refused = _UNREACHABLE if conn.closed else _OVERFLOW
                return False
            conn.expect(corr, callback)
            return True
        if self.state == DOWN:
            self.refused = _UNREACHABLE
            return False
        return self._enqueue(body, corr, callback, expect)

    def why(self, expect: str = "") -> str:
        """Why a send to the system ``expect`` here was refused, in words."""
        if self.refused is _OVERFLOW:
            return (
                f"the send buffer to {self.address} is full (max_buffer="
                f"{self.node.config.max_buffer} bytes unsent): the node is up but reads "
                "slower than this node sends"
            )
        if expect and self.state == UP and expect != self.peer_system:
            return self.mismatch(expect, self.peer_system)
        return self.reason

    def mismatch(self, expect: str, found: str) -> str:
        return (
            f"expected system {expect!r} at {self.address}, found {found!r} (a PID of "
            "another system, or of one that listened there before)"
        )

    def forget(self, corr: int) -> None:
        """Stop waiting for the answer to ``corr`` (its asker timed out or was cancelled)."""
        if self.conn is not None:
            self.conn.forget(corr)
        for i, (_, c, _, _) in enumerate(self._queue):
            if c == corr:
                del self._queue[i]
                break

    def unwait(self, corr: int) -> None:
        """Stop waiting for an answer to ``corr`` on the connections, leaving a frame
        still queued here to be sent (a tracked tick resolved early)."""
        if self.conn is not None:
            self.conn.forget(corr)

    def _enqueue(self, body: bytes, corr: int, info: Any, expect: str) -> bool:
        if self.node.stopping:
            self.refused = _UNREACHABLE
            return False
        if self._queued + len(body) > self.node.config.max_buffer:
            self.refused = _OVERFLOW
            return False
        self._queue.append((body, corr, info, expect))
        self._queued += len(body)
        if self.state == IDLE:
            self._start_dial()
        return True

    # -- connections --------------------------------------------------------------------

    def _start_dial(self) -> None:
        self.state = CONNECTING
        self._dial = asyncio.get_running_loop().create_task(self._dial_once())

    async def _dial_once(self) -> None:
        try:
            conn = await self.node.dial(self.address)
        except (TimeoutError, OSError, ConnectionError) as exc:
            self._dial = None
            self.reason = _failure(exc)
            if self.state == CONNECTING:
                self._failed()
            return
        self._dial = None
        if not conn.closed:
            self.adopt(conn)
        elif self.state == CONNECTING:
            self.reason = f"the connection to {self.address} closed at once"
            self._failed()

    def adopt(self, conn: Connection) -> None:
        """Make ``conn``, which this endpoint dialled, its sending connection."""
        if conn.peer is not None:
            self.peer_system = conn.peer.system
        conn.adopted(self)
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._ever_up and self.state != UP:
            self.node.counters.reconnects += 1
        self._ever_up = True
        self.conn = conn
        self.state = UP
        self.reason = "not connected"
        self._attempts = 0
        found = self.peer_system
        queue, self._queue, self._queued = self._queue, [], 0
        for body, corr, info, expect in queue:
            if expect and expect != found:
                # The Hello named another system: what was queued for this one never
                # leaves (it would reach the wrong system's actors).
                self._drop(corr, info, self.mismatch(expect, found))
            elif not conn.send(body, force=True, info=None if corr else info):
                # (force: these were accepted within max_buffer while connecting)
                self._drop(corr, info, f"the connection to {self.address} closed")
            elif corr:
                conn.expect(corr, info)
        self._admit()

    def lost(self, conn: Connection) -> None:
        """``conn`` closed: fail what waits on it, dead-letter the tells it still held or
        the peer never confirmed; go DOWN and retry."""
        _fail_pending(conn, self.address)
        self._held_lost(conn)
        if conn is not self.conn:
            return
        self.conn = None
        self.state = DOWN
        self.reason = f"lost the connection to {self.address}"
        self._fail_waiting(self.reason)
        self._schedule_retry()

    def _failed(self) -> None:
        self.state = DOWN
        self.node.warn(
            f"dial:{self.address}", f"remoting: cannot reach {self.address}: {self.reason}"
        )
        queue, self._queue, self._queued = self._queue, [], 0
        for _, corr, info, _ in queue:
            self._drop(corr, info, self.reason)
        self._fail_waiting(self.reason)
        self._schedule_retry()

    def _drop(self, corr: int, info: Any, why: str) -> None:
        self.refused = _UNREACHABLE
        if corr:
            info(Unsent(f"node {self.address} is unreachable: {why}", why))
        else:
            self.node.host.undelivered(info, why)

    def _schedule_retry(self) -> None:
        if self.node.stopping or self._retry is not None:
            return
        if self._rested >= GIVE_UP_AFTER:
            self.state = IDLE  # nobody is sending: rest until the next send dials
            return
        delay = min(self.node.config.reconnect_max, _BACKOFF_BASE * 2**self._attempts)
        delay *= random.uniform(0.5, 1.0)
        self._attempts = min(self._attempts + 1, 30)
        self._rested += delay
        clock = self.node.clock
        self._retry = clock.call_at(clock.monotonic() + delay, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        if self.node.stopping or self.state != DOWN:
            return
        self._dial = asyncio.get_running_loop().create_task(self._redial())

    async def _redial(self) -> None:
        try:
            conn = await self.node.dial(self.address)
        except (TimeoutError, OSError, ConnectionError) as exc:
            self._dial = None
            self.reason = _failure(exc)
            if self.state == DOWN:
                self._schedule_retry()
            return
        self._dial = None
        if not conn.closed:
            self.adopt(conn)

    # -- closing ------------------------------------------------------------------------

    async def close(self) -> None:
        """Close every connection; queued frames become dead letters."""
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if self._dial is not None:
            self._dial.cancel()
            with contextlib.suppress(BaseException):
                await self._dial
            self._dial = None
        queue, self._queue, self._queued = self._queue, [], 0
        for _, corr, info, _ in queue:
            self._drop(corr, info, "this node is stopping")
        self._fail_waiting("this node is stopping")
        if self.conn is not None:
            _fail_pending(self.conn, self.address)
            self.conn.close()
        self.conn = None
        self.state = IDLE


def _failure(exc: BaseException) -> str:
    """A dial failure in words (the handshake's own text, else the OS error's)."""
    text = str(exc) or type(exc).__name__
    if isinstance(exc, TimeoutError) and not str(exc):
        return "no answer within the connect timeout"
    return text


def _fail_pending(conn: Connection, address: NodeAddress) -> None:
    for callback in conn.take_pending().values():
        callback(NodeUnreachableError(f"lost the connection to node {address}"))
