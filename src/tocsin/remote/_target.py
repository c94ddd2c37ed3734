# SPDX-License-Identifier: Apache-2.0
"""The send target behind a remote PID.

:class:`RemoteTarget` is what a PID of another node sends through (the kernel's
:class:`~tocsin.actor._target.SendTarget`): ``deliver`` encodes the message at once (so a
value that cannot cross raises :class:`~tocsin.CodecError` at the sending call), then hands
a frame to the peer's endpoint, for the system its PID names. A tell the endpoint refuses
is a dead letter with reason ``overflow`` (the send buffer is full: the node is up) or
``unreachable`` (the node is down, refused the handshake, or is another system), the why
logged at most once a minute per peer; an ask becomes a correlation id whose answer
resolves the asker's :class:`~tocsin.actor._reply.Reply`, or fails it at once with
:class:`~tocsin.BackpressureError` / :class:`~tocsin.NodeUnreachableError`, or with the
latter as soon as the connection is known lost.

A schedule's tick (a :class:`~tocsin.actor._mailbox.RuntimeItem`) is opened here, on the
scheduling node, at the moment it fires: a tick of a cancelled schedule is dropped before
it is sent. Hence the cross-node stale-tick rule: once ``cancel_schedule`` returns no
further tick is *sent*; one already on the wire may still arrive once. What is sent is a
``Scheduled`` frame carrying the item's :class:`~tocsin.triggers.Tick`
(``ctx.tick`` on the hosting node is the same). An item that is ``tracked`` (its schedule's
overlap policy counts ticks in flight) also asks for a completion frame, and its
``finished()`` is called once that frame says the remote ``receive`` ran; when the tick
did not run or may not have (a dead letter on either side, the connection lost) it ends
in ``lost()`` if the item has one, else ``finished()`` (:mod:`._ticks`), never in
``rejected()``: the item was opened here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..actor._spi import (
    ITEM_TYPES,
    PID,
    STALE,
    DeadLetter,
    DeadLetterReason,
    Reply,
    RuntimeItem,
    SendTarget,
    running_loop,
)
from ..errors import CodecError, TocsinError
from ._endpoint import Endpoint
from ._node import refusal
from ._ticks import not_run

if TYPE_CHECKING:
    from ..actor._spi import Runtime
    from ._node import RemoteNode

__all__ = ["RemoteTarget"]

#: No sender yet (``RemoteTarget._head_sender``): never the sender of a send.
_UNSET: Any = object()

_UNREACHABLE = DeadLetterReason.UNREACHABLE
_OVERFLOW = DeadLetterReason.OVERFLOW


@final
class RemoteTarget(SendTarget):
    """Sends to one actor path on another node. Made by the remote resolver, which hands
    out the target's :attr:`pid` (made here: the PID and its target point at each other)."""

    __slots__ = (
        "_head",
        "_head_name",
        "_head_sender",
        "_last_sender",
        "_last_wire",
        "endpoint",
        "incarnation",
        "node",
        "path",
        "pid",
        "runtime",
        "system",
    )

    def __init__(
        self,
        runtime: Runtime,
        node: RemoteNode,
        endpoint: Endpoint,
        path: str,
        incarnation: int | None,
        system: str = "",
        *,
        address: str,
    ) -> None:
        self.runtime = runtime
        self.node = node
        self.endpoint = endpoint
        self.path = path
        #: The system name the PID's address gives: a node answering under another name
        #: is not this target's (a stale PID, a typo): its frames never go there.
        self.system = system
        #: Hex incarnation sent with every frame ("": whichever actor holds the path).
        self.incarnation = "" if not incarnation else format(incarnation, "x")
        #: The PID this target sends for (``address`` is its system address).
        self.pid = PID(address, path, incarnation or 0, self)
        # The last sender's wire string: an actor usually sends to one peer many times.
        self._last_sender: Any = None
        self._last_wire = ""
        # The last plain tell's envelope up to its payload (``RemoteNode.tell_head``),
        # for that sender and message name: a flood from one sender builds it once.
        self._head_sender: Any = _UNSET
        self._head_name = ""
        self._head = b""

    def check(self, message: Any) -> None:
        """Raise :class:`~tocsin.CodecError` if ``message`` cannot cross the wire (the
        scheduling calls check a message here, at the call, not at its first tick)."""
        self.node.encode_message(message)

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        runtime = self.runtime
        # The measured loop check (Runtime.loop_thread): ~40 ns, against ~180 ns for
        # asking asyncio for the running loop, on every remote send.
        if not runtime.on_loop_thread():
            # The transport's buffers and timers belong to the system's loop.
            raise runtime.wrong_loop(f"send to {self.pid}", running_loop())
        node = self.node
        if type(message) in ITEM_TYPES:
            return self._deliver_item(message, sender)
        encoded = node.encode_message(message)  # CodecError: at the sending call
        if reply is None:
            name = encoded[0]
            if sender is self._head_sender and name == self._head_name:
                head = self._head
            else:
                head = node.tell_head(self.path, self.incarnation, self._wire(sender), name)
                self._head_sender, self._head_name, self._head = sender, name, head
            info = (self, message, sender)  # for a dead letter if a queued frame never leaves
            endpoint = self.endpoint
            if node.tell_frame(endpoint, head + encoded[1], info, self.system):
                return True
            self.undelivered(message, sender, endpoint.why(self.system), endpoint.refused)
            return False
        sender_text = self._wire(sender)
        endpoint = self.endpoint
        corr = node.ask_then(
            endpoint,
            self.path,
            self.incarnation,
            sender_text,
            encoded,
            _answer(reply),
            reply.done,
            self.system,
        )
        if not corr:
            self._count(endpoint.refused, endpoint.why(self.system))
            self.runtime.dead_letter(DeadLetter(message, sender, self.pid, endpoint.refused))
            if not reply.done():
                reply.set_exception(refusal(endpoint, self.system, f"cannot ask {self.pid}"))
            return False
        return True

    def _wire(self, sender: Any) -> str:
        """``sender``'s wire string (``""`` for no PID), kept for the next send: an actor
        usually sends to one peer many times."""
        if sender is self._last_sender:
            return self._last_wire
        text = sender.wire if type(sender) is PID else ""
        self._last_sender, self._last_wire = sender, text
        return text

    def _deliver_item(self, item: RuntimeItem, sender: Any) -> bool:
        """A tick (a ``RuntimeItem``): opened here, at fire time (module docstring), and
        sent as a ``Scheduled`` frame with its Tick; a tracked one waits for completion."""
        message = item.open()
        if message is STALE:
            return True
        tick = item.tick()  # read right after open(): the tick being delivered
        tracked = item if item.tracked else None
        node = self.node
        try:
            encoded = node.encode_message(message)
        except CodecError as error:
            # Checked at the scheduling call; only a message mutated since then gets
            # here. A timer callback must not raise: the tick is a dead letter (the
            # why is logged, rate-limited, by undelivered).
            self.undelivered(message, sender, f"a tick cannot cross the wire any more: {error}")
            if tracked is not None:
                not_run(tracked)
            return False
        sender_text = self._wire(sender)
        endpoint = self.endpoint
        info = (self, message, sender)  # for a dead letter if a queued frame never leaves
        if tick is None and tracked is None:  # not a schedule's: a plain tell
            if node.tell(
                endpoint, self.path, self.incarnation, sender_text, encoded, info, self.system
            ):
                return True
            self.undelivered(message, sender, endpoint.why(self.system), endpoint.refused)
            return False
        try:
            sent = node.send_tick(
                endpoint,
                self.path,
                self.incarnation,
                sender_text,
                encoded,
                tick,
                tracked,
                info,
                self.system,
            )
        except CodecError as error:  # the whole frame over max_frame: not at fire time
            self.undelivered(message, sender, f"a tick cannot cross the wire: {error}")
            sent = False
        else:
            if not sent:
                self.undelivered(message, sender, endpoint.why(self.system), endpoint.refused)
        if not sent and tracked is not None:
            not_run(tracked)  # refused at once: not in flight, never ran
        return sent

    def offer(self, message: Any, sender: Any, reply: Reply | None) -> asyncio.Future[None] | None:
        """``await pid.send``: the frame waits for room in the connection's send buffer
        instead of becoming an ``overflow`` dead letter (``Endpoint.offer``). A node that
        cannot be reached is the dead letter ``unreachable`` and a failed future
        (:class:`~tocsin.NodeUnreachableError`). Whether the actor there lives is the
        other node's knowledge, as for a tell."""
        runtime = self.runtime
        if reply is not None or type(message) in ITEM_TYPES:
            return super().offer(message, sender, reply)  # not what pid.send gives
        if not runtime.on_loop_thread():
            raise runtime.wrong_loop(f"send to {self.pid}", running_loop())
        node = self.node
        encoded = node.encode_message(message)  # CodecError: at the sending call
        sender_text = sender.wire if type(sender) is PID else ""
        endpoint = self.endpoint
        info = (self, message, sender)
        sent = node.offer(
            endpoint, self.path, self.incarnation, sender_text, encoded, info, self.system
        )
        if sent is True:
            return None
        if sent is False:
            self.undelivered(message, sender, endpoint.why(self.system), endpoint.refused)
            future: asyncio.Future[None] = runtime.loop.create_future()
            future.set_exception(refusal(endpoint, self.system, f"cannot send to {self.pid}"))
            return future
        return sent

    def undelivered(
        self, message: Any, sender: Any, why: str, reason: DeadLetterReason = _UNREACHABLE
    ) -> None:
        """A tell that cannot reach the node: a dead letter with ``reason``
        (``unreachable``, or ``overflow`` for a full send buffer); ``why`` is logged."""
        self._count(reason, why)
        self.runtime.dead_letter(DeadLetter(message, sender, self.pid, reason))

    def _count(self, reason: DeadLetterReason, why: str) -> None:
        node = self.node
        if reason is _OVERFLOW:
            node.counters.overflow += 1
        else:
            node.counters.unreachable += 1
        address = self.endpoint.address
        node.warn(
            f"{reason}:{self.system}@{address}",
            f"remoting: messages to {self.system or '?'}@{address} are dead letters "
            f"({reason}): {why}",
        )

    def alive(self) -> bool:
        # Whether a remote actor lives is the other node's knowledge: a send to one that
        # stopped is a dead letter *there*. Schedules to it keep firing.
        return True

    async def stop(self) -> None:
        raise TocsinError(
            f"cannot stop {self.pid}: it lives on another node; stop it there (or send it "
            "a message that makes it stop itself)"
        )

    def request_stop(self) -> None:
        raise TocsinError(f"cannot stop {self.pid}: it lives on another node")

    def reinstate(self) -> None:
        raise TocsinError(f"cannot reinstate {self.pid}: it lives on another node")


def _answer(reply: Reply) -> Callable[[object, BaseException | None], None]:
    """Resolve or fail ``reply`` when the answer frame is read (no extra loop turn)."""

    def answer(value: object, error: BaseException | None) -> None:
        if reply.done():
            return  # the asker gave up (timed out) before the answer came
        if error is not None:
            reply.set_exception(error)
        else:
            reply.set_result(value)

    return answer
