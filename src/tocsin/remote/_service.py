# SPDX-License-Identifier: Apache-2.0
"""The remoting of one actor system: the node, the resolver of remote PIDs, the host side.

Made by ``ActorSystem.start()`` when the system has ``remoting=``. It

* starts the :class:`~tocsin.remote._node.RemoteNode` (listening) *before* the kernel's
  runtime exists, since the node's address is part of every PID;
* registers a :class:`~tocsin.actor._target.TargetResolver`: a PID string of another node
  becomes a PID whose target is a :class:`~tocsin.remote._target.RemoteTarget`;
* is the node's :class:`~tocsin.remote._host.Host`: a tell or ask that arrives goes to the
  local actor at that path (a dead letter ``not_found`` when there is none, or when the
  incarnation named is gone), and ``ctx.sender`` is a usable remote PID; a tick arrives as
  a mailbox item (:class:`~tocsin.remote._ticks.InboundTick`: ``ctx.tick`` is the
  sender's);
* answers ``actor_of(str(pid))`` for another node by asking that node.

PIDs read from the wire (senders, PIDs inside messages) go through the kernel's
``Runtime.pid_from_wire`` and are cached per wire string (bounded), so a sender seen on
every message is parsed once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, final

import msgspec

from ..actor._spi import (
    PID,
    PID_EXTENSION_CODE,
    DeadLetter,
    DeadLetterReason,
    NoSender,
    SendTarget,
    parse_pid,
    target_of,
)
from ..clock import Clock
from ..errors import ActorNotFoundError, CodecError, NodeUnreachableError
from ._address import NodeAddress, parse_system_address
from ._config import Remoting
from ._envelopes import Tell
from ._messages import WireCodec
from ._metrics import RemoteMetrics
from ._node import RemoteNode
from ._replies import RemoteReply
from ._target import RemoteTarget
from ._ticks import InboundTick

if TYPE_CHECKING:
    import asyncio

    from ..actor._spi import Cell, Runtime

__all__ = ["LOOKUP_TIMEOUT", "RemoteService"]

#: Remote PIDs kept per wire string (senders, PIDs inside messages); oldest dropped first.
PID_CACHE_SIZE: Final = 4096
#: Seconds ``actor_of`` waits for the hosting node to answer.
LOOKUP_TIMEOUT: Final = 5.0

_NOT_FOUND = DeadLetterReason.NOT_FOUND
_UNREACHABLE = DeadLetterReason.UNREACHABLE
#: Decodes a lost plain tell's frame (``undelivered_frame``).
_TELL: Final = msgspec.msgpack.Decoder(Tell)


@final
class RemoteService:
    """One system's remoting (internal; see the module docstring)."""

    def __init__(self, config: Remoting, system_name: str, clock: Clock) -> None:
        self.config = config
        self.runtime: Runtime | None = None
        codec = WireCodec(config.registry, PID, self.pid_from_wire, pid_code=PID_EXTENSION_CODE)
        self.node = RemoteNode(config, system_name, self, codec, clock)
        self._pids: dict[str, PID] = {}
        self._hex: dict[Cell, str] = {}  # a cell's incarnation as the wire writes it
        # The last frame's destination and sender, as resolved: a flood comes from one
        # sender to one actor, and each frame would otherwise pay the registry, the
        # incarnation check and the PID cache again (``_route``, ``_sender``).
        self._route_path = ""
        self._route_incarnation = ""
        self._route_target: SendTarget | None = None
        self._sender_text = ""
        self._sender_pid: Any = NoSender
        self._sender_target: SendTarget | None = None
        self._remove_resolver: Any = None

    async def start(self) -> str:
        """Listen; the system address (``tocsin://name@host:port``, the real port)."""
        return await self.node.start()

    def attach(self, runtime: Runtime) -> None:
        """Serve ``runtime``: resolve its remote PIDs and deliver to its actors."""
        self.runtime = runtime
        self._remove_resolver = runtime.add_resolver(self.resolve_target)

    async def stop(self) -> None:
        if self._remove_resolver is not None:
            self._remove_resolver()
            self._remove_resolver = None
        await self.node.stop()
        self._pids.clear()
        self._hex.clear()
        self._forget_last()
        self.runtime = None

    def metrics(self) -> RemoteMetrics:
        return self.node.metrics()

    # -- PIDs of other nodes ------------------------------------------------------------

    def resolve_target(self, address: str, path: str, incarnation: int | None) -> PID | None:
        """The kernel's TargetResolver: a PID for an actor on another node."""
        runtime = self.runtime
        if runtime is None or "@" not in address:
            return None
        try:
            system, node_address = parse_system_address(address)
        except ValueError:
            return None
        endpoint = self.node.endpoint(node_address)
        target = RemoteTarget(
            runtime, self.node, endpoint, path, incarnation, system, address=address
        )
        return target.pid

    def pid_from_wire(self, text: str) -> PID:
        """A PID read from the wire (this node's actors included). Cached.

        Raises:
            ValueError: not a PID string, or no system is attached.
        """
        pid = self._pids.get(text)
        if pid is not None and target_of(pid).alive():
            return pid
        runtime = self.runtime
        if runtime is None:
            raise ValueError("remoting is not attached to a running system")
        pid = runtime.pid_from_wire(text)
        pids = self._pids
        if len(pids) >= PID_CACHE_SIZE:
            del pids[next(iter(pids))]
        pids[text] = pid
        return pid

    async def actor_of(self, text: str) -> PID:
        """``actor_of`` for a PID string of another node: ask the node that hosts it.

        Raises:
            ActorNotFoundError: that node has no live actor there (of that incarnation,
                when the string names one).
            NodeUnreachableError: the node cannot be reached, is another system than the
                string names (``tocsin://other@host:port/...`` answered by ``srv``), or did
                not answer within :data:`LOOKUP_TIMEOUT` seconds.
            BackpressureError: the send buffer to that node is full.
            ValueError: not a PID string.
        """
        address, path, incarnation = parse_pid(text)
        system, node_address = parse_system_address(address)
        try:
            found = await self.node.lookup(
                node_address, path, timeout=LOOKUP_TIMEOUT, expect=system
            )
        except TimeoutError as exc:
            raise NodeUnreachableError(
                f"node {address} did not answer a lookup of {path!r} within {LOOKUP_TIMEOUT} s"
            ) from exc
        if not found:
            raise ActorNotFoundError(f"node {address} has no live actor at {path!r}")
        pid = self.pid_from_wire(found)
        if incarnation is not None and pid.incarnation != incarnation:
            raise ActorNotFoundError(
                f"no live actor {text!r} on node {address} (that incarnation stopped)"
            )
        return pid

    # -- Host: what arrives from other nodes ----------------------------------------------

    def _local(self, path: str, incarnation: str) -> PID | None:
        """The local PID a frame for ``path`` goes to, or None (a dead letter there).

        A live actor's cell (of the incarnation named, when one is); else whatever the
        runtime's path resolvers give: a durable identity's stable PID, which activates a
        passivated identity on delivery (its incarnation is not checked: an identity
        outlives activations and processes).
        """
        runtime = self.runtime
        if runtime is None:
            return None
        cell = runtime.registry.get(path)
        if cell is not None and cell.alive():
            if incarnation and incarnation != self._hex.get(cell):
                try:
                    if cell.pid.incarnation != int(incarnation, 16):
                        return None
                except ValueError:
                    return None
                hexes = self._hex
                if len(hexes) >= PID_CACHE_SIZE:
                    del hexes[next(iter(hexes))]
                hexes[cell] = incarnation  # parsed once per cell, not per message
            return cell.pid
        for resolver in runtime.path_resolvers:
            found = resolver(path)
            if found is not None:
                return found
        return None

    def _route(self, path: str, incarnation: str) -> SendTarget | None:
        """The target of a frame for ``path`` (incarnation ``incarnation``): what
        :meth:`_local` gives, remembered for the next frame while the actor it names
        lives (a live cell is the one the registry holds at its path: another cannot be
        spawned there before it stopped). A durable identity's PID is not remembered:
        its resolver decides per frame."""
        target = self._route_target
        if (
            target is not None
            and path == self._route_path
            and incarnation == self._route_incarnation
            and target.alive()
        ):
            return target
        pid = self._local(path, incarnation)
        if pid is None:
            return None
        target = target_of(pid)
        runtime = self.runtime
        if runtime is not None and runtime.registry.get(path) is target:
            self._route_path, self._route_incarnation = path, incarnation
            self._route_target = target
        return target

    def _sender(self, text: str) -> Any:
        if not text:
            return NoSender
        if text == self._sender_text:
            # As ``pid_from_wire``'s cache: kept while its target lives.
            target = self._sender_target
            if target is not None and target.alive():
                return self._sender_pid
        try:
            pid = self.pid_from_wire(text)
        except ValueError:
            return NoSender
        self._sender_text, self._sender_pid, self._sender_target = text, pid, target_of(pid)
        return pid

    def _forget_last(self) -> None:
        self._route_path = self._route_incarnation = ""
        self._route_target = None
        self._sender_text, self._sender_pid, self._sender_target = "", NoSender, None

    # A frame for an actor goes through ``offer``, not ``deliver``: to a bounded mailbox
    # that is full it waits (the connection stops reading: backpressure reaches the
    # sender through TCP) instead of becoming an ``overflow`` dead letter here.

    def deliver_tell(
        self, path: str, incarnation: str, sender: str, message: object
    ) -> asyncio.Future[None] | None:
        # The common case (the last frame's actor and sender again) inline: a flood's
        # every frame comes here.
        target = self._route_target
        if (
            target is None
            or path != self._route_path
            or incarnation != self._route_incarnation
            or not target.alive()
        ):
            target = self._route(path, incarnation)
            if target is None:
                self._dead_letter(message, self._sender(sender), _NOT_FOUND)
                return None
        from_ = self._sender_target
        if from_ is not None and sender == self._sender_text and from_.alive():
            return target.offer(message, self._sender_pid, None)
        return target.offer(message, self._sender(sender), None)

    def deliver_ask(
        self, path: str, incarnation: str, sender: str, message: object, reply: RemoteReply
    ) -> asyncio.Future[None] | None:
        target = self._route(path, incarnation)
        if target is None:
            address = self.node.address
            reply.fail(ActorNotFoundError(f"no live actor at {path!r} on {address}"))
            self._dead_letter(message, self._sender(sender), _NOT_FOUND)
            return None
        return target.offer(message, self._sender(sender), reply)

    def resolve(self, path: str) -> str:
        pid = self._local(path, "")
        return "" if pid is None else pid.wire

    def undelivered(self, info: object, why: str) -> None:
        # ``info`` is what RemoteTarget.deliver gave with a frame queued while connecting.
        assert isinstance(info, tuple)
        target: RemoteTarget = info[0]
        target.undelivered(info[1], info[2], why)

    def undelivered_frame(self, address: NodeAddress, system: str, frame: bytes, why: str) -> None:
        # A plain tell's frame a lost connection never had confirmed: this node encoded
        # it, so it decodes back into the message it carried, for its dead letter.
        node = self.node
        try:
            envelope = _TELL.decode(frame)
            message = node.codec.decode(envelope.name, envelope.payload)
        except (msgspec.DecodeError, msgspec.ValidationError, CodecError) as exc:
            node.counters.unreachable += 1
            node.warn(
                f"unreachable:{address}",
                f"remoting: a tell to {address} was lost ({why}); its message could not be "
                f"decoded for its dead letter: {exc}",
            )
            return
        runtime = self.runtime
        if runtime is None:
            node.counters.unreachable += 1
            return
        incarnation = int(envelope.incarnation, 16) if envelope.incarnation else None
        target = RemoteTarget(
            runtime,
            node,
            node.endpoint(address),
            envelope.path,
            incarnation,
            system,
            address=address.system_address(system),
        )
        target.undelivered(message, self._sender(envelope.sender), why)

    def _dead_letter(self, message: object, sender: Any, reason: DeadLetterReason) -> None:
        if type(message) is InboundTick:
            message = message.rejected()  # the sender stops waiting for this tick
        runtime = self.runtime
        if reason is _NOT_FOUND:
            self.node.counters.not_found += 1
        if runtime is not None:
            runtime.dead_letter(DeadLetter(message, sender, None, reason))
