# SPDX-License-Identifier: Apache-2.0
"""What a node's transport needs from the actor system that owns it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import asyncio

    from ._address import NodeAddress
    from ._replies import RemoteReply

__all__ = ["Host"]


class Host(Protocol):
    """What a :class:`RemoteNode` needs from the actor system that owns it."""

    def deliver_tell(
        self, path: str, incarnation: str, sender: str, message: object
    ) -> asyncio.Future[None] | None:
        """A tell arrived for the local actor ``path`` (dead-letter it if absent). A
        future when that actor's bounded mailbox is full: done once the message is in it
        (the connection reads nothing more meanwhile: backpressure).

        A schedule's tick arrives as an ``InboundTick`` (a ``RuntimeItem``): deliver it
        as it is, so the target's mailbox opens it; one dead-lettered here must go
        through its ``rejected()`` (it tells the sender the tick is over)."""

    def deliver_ask(
        self, path: str, incarnation: str, sender: str, message: object, reply: RemoteReply
    ) -> asyncio.Future[None] | None:
        """An ask arrived; answer through ``reply`` (exactly once, or not at all). A
        future as for :meth:`deliver_tell`."""

    def resolve(self, path: str) -> str:
        """``str(pid)`` of the local actor at ``path``, or ``""`` when there is none."""

    def undelivered(self, info: object, why: str) -> None:
        """A tell for a peer never reached it (the dial or the handshake failed, the node
        there is another system, or the connection was lost before the peer confirmed
        it: ``why`` says so in words): ``info`` is what the sender passed; make it a
        dead letter with reason ``unreachable``."""

    def undelivered_frame(self, address: NodeAddress, system: str, frame: bytes, why: str) -> None:
        """A plain tell (``RemoteNode.tell``) sent to the node at ``address`` (the system
        ``system``) was not confirmed when its connection was lost: ``frame`` is its
        ``Tell`` envelope's bytes; make it a dead letter with reason ``unreachable``."""
