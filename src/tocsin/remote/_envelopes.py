# SPDX-License-Identifier: Apache-2.0
"""The wire envelopes: one tagged union of msgspec Structs, decoded by one typed decoder.

Every frame after the handshake is one of these, msgpack-encoded as an array (``array_like``:
no field names on the wire). A message travels inside as ``(name, payload)``, already encoded by
:class:`~tocsin.remote._messages.WireCodec` (``msgspec.Raw``: embedded without a copy).
PIDs travel as their string form; ``""`` means "no sender".

A schedule's tick travels as :class:`Scheduled`, not :class:`Tell`: the same fields plus
the :class:`~tocsin.triggers.Tick` (its ``to_wire()`` list) and, for a
schedule whose overlap policy counts ticks in flight, a correlation id the hosting node
answers with one :class:`Completed` frame once the target's ``receive`` for that tick
returned (or the tick was dead-lettered there). Plain tells and asks are unchanged by it.

Prior art: msgspec ``examples/asyncio-kv`` (tagged Struct union over length-prefixed
frames); Proto.Actor's ``MessageEnvelope`` and Akka Artery's envelope (recipient, sender,
serialised message).
"""

from __future__ import annotations

from typing import Final

import msgspec

__all__ = [
    "PROTOCOL_VERSION",
    "Ask",
    "Completed",
    "Envelope",
    "Fail",
    "Found",
    "Heartbeat",
    "Hello",
    "Lookup",
    "Reply",
    "Scheduled",
    "Tell",
    "WireTick",
    "decoder",
    "encoder",
]

#: Bumped when an envelope changes shape; a peer of another version is refused at Hello.
#: 2: :class:`Scheduled` and :class:`Completed` (issue 22).
PROTOCOL_VERSION: Final = 2

#: A tick on the wire (``Tick.to_wire()``): reference, instant in epoch microseconds,
#: attempt, manual, backfill, fence. The shape is checked by the frame decoder; the
#: receiving node checks the rest with ``Tick.from_wire``.
WireTick = tuple[str, int, int, bool, bool, int | None]


class Hello(msgspec.Struct, tag=0, array_like=True, frozen=True):
    """First frame each way after authentication: who is at the other end."""

    version: int
    system: str
    address: str  # the system address the peer dials back, "tocsin://name@host:port"


class Tell(msgspec.Struct, tag=1, array_like=True, frozen=True):
    """A one-way message to the actor at ``path`` (incarnation ``incarnation``)."""

    path: str
    incarnation: str
    sender: str
    name: str  # the registered message's wire name, "" for a codec value
    payload: msgspec.Raw


class Ask(msgspec.Struct, tag=2, array_like=True, frozen=True):
    """A request whose answer comes back as :class:`Reply` or :class:`Fail` with ``corr``."""

    corr: int
    path: str
    incarnation: str
    sender: str
    name: str
    payload: msgspec.Raw


class Reply(msgspec.Struct, tag=3, array_like=True, frozen=True):
    """The value given to ``ctx.respond`` for the :class:`Ask` or :class:`Lookup` ``corr``."""

    corr: int
    name: str
    payload: msgspec.Raw


class Fail(msgspec.Struct, tag=4, array_like=True, frozen=True):
    """The request ``corr`` failed: ``kind`` is ``"error"`` (the handler raised),
    ``"stopped"``, ``"suspended"``, ``"not_found"`` or ``"codec"``; ``type_name`` and
    ``text`` describe the exception."""

    corr: int
    kind: str
    type_name: str
    text: str


class Lookup(msgspec.Struct, tag=5, array_like=True, frozen=True):
    """Does the receiving node host an actor at ``path``? Answered by :class:`Found`."""

    corr: int
    path: str


class Found(msgspec.Struct, tag=6, array_like=True, frozen=True):
    """The PID string of the actor asked for by :class:`Lookup` ``corr``, or ``""``."""

    corr: int
    pid: str


class Heartbeat(msgspec.Struct, tag=7, array_like=True, frozen=True):
    """Sent on a connection that has been quiet for one heartbeat interval."""


class Scheduled(msgspec.Struct, tag=8, array_like=True, frozen=True):
    """A tick of a schedule for the actor at ``path``: a :class:`Tell` that carries the
    :class:`~tocsin.triggers.Tick` (``ctx.tick`` on the hosting node), and,
    when ``corr`` is not 0, asks for one :class:`Completed` frame with ``corr``."""

    path: str
    incarnation: str
    sender: str
    name: str
    payload: msgspec.Raw
    tick: WireTick | None
    corr: int


class Completed(msgspec.Struct, tag=9, array_like=True, frozen=True):
    """The :class:`Scheduled` frame ``corr`` is over on the hosting node: ``ran`` when
    its target's ``receive`` returned (or raised, or was cancelled); not ``ran`` when the
    tick was dead-lettered there (no such actor, stopped, suspended, mailbox full, or a
    message that node cannot decode)."""

    corr: int
    ran: bool


Envelope = Hello | Tell | Ask | Reply | Fail | Lookup | Found | Heartbeat | Scheduled | Completed


def encoder() -> msgspec.msgpack.Encoder:
    return msgspec.msgpack.Encoder()


def decoder() -> msgspec.msgpack.Decoder[Envelope]:
    return msgspec.msgpack.Decoder(Envelope)
