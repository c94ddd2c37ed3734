# SPDX-License-Identifier: Apache-2.0
"""Helpers for transport tests: a recording Host and a stand-in PID (no actor system)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from tocsin.clock import Clock
from tocsin.remote import Remoting
from tocsin.remote import _handshake as hs
from tocsin.remote import _records as records
from tocsin.remote._address import NodeAddress
from tocsin.remote._envelopes import PROTOCOL_VERSION, Hello, Tell
from tocsin.remote._messages import MessageRegistry, WireCodec
from tocsin.remote._node import RemoteNode
from tocsin.remote._replies import RemoteReply

SECRET = b"0123456789abcdef-test-secret"


class Ping(msgspec.Struct, tag=True):
    n: int


@dataclass(frozen=True)
class Note:
    text: str
    items: tuple[int, ...] = ()


class FakePID:
    """Stands in for the kernel's PID (a plain class): crosses the wire as its string."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FakePID) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"FakePID({self.text!r})"


@dataclass
class RecordingHost:
    """Records tells, answers asks with ``answer(message)`` (raise to fail)."""

    tells: list[tuple[str, str, str, object]] = field(default_factory=list)
    undelivered_infos: list[object] = field(default_factory=list)
    undelivered_why: list[str] = field(default_factory=list)
    actors: dict[str, str] = field(default_factory=dict)
    answer: Callable[[object], object] = lambda message: message
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def deliver_tell(self, path: str, incarnation: str, sender: str, message: object) -> None:
        self.tells.append((path, incarnation, sender, message))
        self.arrived.set()

    def deliver_ask(
        self, path: str, incarnation: str, sender: str, message: object, reply: RemoteReply
    ) -> None:
        try:
            value = self.answer(message)
        except Exception as exc:
            reply.fail(exc)
            return
        reply.respond(value)

    def resolve(self, path: str) -> str:
        return self.actors.get(path, "")

    def undelivered(self, info: object, why: str) -> None:
        self.undelivered_infos.append(info)
        self.undelivered_why.append(why)

    def undelivered_frame(self, address: NodeAddress, system: str, frame: bytes, why: str) -> None:
        """A lost plain tell, decoded: its message stands for its ``info`` (tests send
        ``node.tell(..., encode_message(x), x)``)."""
        tell = msgspec.msgpack.decode(frame, type=Tell)
        codec = WireCodec(MessageRegistry([Ping, Note]), FakePID, FakePID)
        self.undelivered(codec.decode(tell.name, tell.payload), why)

    async def wait_tells(self, count: int, timeout: float = 10.0) -> None:
        async with asyncio.timeout(timeout):
            while len(self.tells) < count:
                self.arrived.clear()
                await self.arrived.wait()


def config(listen: str = "tcp://127.0.0.1:0", /, **changes: Any) -> Remoting:
    changes.setdefault("secret", SECRET)
    changes.setdefault("messages", [Ping, Note])
    return Remoting(listen=listen, **changes)


def make_node(
    cfg: Remoting, name: str = "n", host: RecordingHost | None = None, clock: Clock | None = None
) -> RemoteNode:
    host = host if host is not None else RecordingHost()
    codec = WireCodec(MessageRegistry(cfg.messages), FakePID, FakePID)
    if clock is None:
        return RemoteNode(cfg, name, host, codec)
    return RemoteNode(cfg, name, host, codec, clock)


def host_of(node: RemoteNode) -> RecordingHost:
    """The node's host as the :class:`RecordingHost` that :func:`make_node` gave it."""
    host = node.host
    assert isinstance(host, RecordingHost), host
    return host


@contextlib.asynccontextmanager
async def running(
    cfg: Remoting, name: str = "n", clock: Clock | None = None
) -> AsyncIterator[RemoteNode]:
    node = make_node(cfg, name, clock=clock)
    await node.start()
    try:
        yield node
    finally:
        await node.stop()


def frame(body: bytes) -> bytes:
    """One frame: its 4-byte length, then the envelope."""
    return len(body).to_bytes(4, "big") + body


class RawDialer:
    """A dialer played by hand, for attacks and fuzzing: its opening, the listener's
    reply checked, its proof, then records sealed under the session key."""

    def __init__(self, secret: bytes, dialer_id: str, dialled: str) -> None:
        self.secret = secret
        self.dialer_id = dialer_id
        self.dialled = dialled
        self.nonce = hs.new_nonce()
        self.key_out = b""
        self.key_in = b""
        self.seq_out = 0
        self.listener_id = ""

    def opening(self) -> bytes:
        return hs.dialer_hello(self.nonce, self.dialer_id, self.dialled)

    @staticmethod
    def reply_size(head: bytes) -> int:
        """Bytes of the listener's reply after its head (the ids and the proof)."""
        parsed = hs.parse_head(head)
        assert parsed is not None, head
        return parsed.body + hs.MAC_SIZE

    def proof(self, reply: bytes) -> bytes | None:
        """The dialer's proof for the listener's whole ``reply``, or ``None`` when the
        listener's own proof is wrong."""
        head = hs.parse_head(reply[: hs.HEAD_SIZE])
        if head is None:
            return None
        body = reply[hs.HEAD_SIZE :]
        listener_id = hs.parse_listener_id(body[: -hs.MAC_SIZE])
        assert listener_id is not None
        keys = hs.session_keys(
            self.secret, self.nonce, head.nonce, self.dialer_id, listener_id, self.dialled
        )
        if not hs.proof_ok(body[-hs.MAC_SIZE :], keys.mac_l()):
            return None
        self.listener_id = listener_id
        self.key_out, self.key_in = keys.dialer_to_listener, keys.listener_to_dialer
        return keys.mac_d()

    def hello(self, system: str = "f") -> bytes:
        """The record carrying this dialer's Hello (naming what it proved)."""
        return self.record(
            frame(msgspec.msgpack.encode(Hello(PROTOCOL_VERSION, system, self.dialer_id)))
        )

    def record(self, frames: bytes, *, seq: int | None = None, key: bytes | None = None) -> bytes:
        """``frames`` sealed as the next record (or as ``seq``, under ``key``)."""
        if seq is None:
            self.seq_out += 1
            seq = self.seq_out
        return records.seal(records.keyed(self.key_out if key is None else key), seq, frames)


async def authenticate(
    peer: RawDialer, address: NodeAddress, system: str
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Play ``peer`` (it holds the secret) through the handshake and its Hello."""
    reader, writer = await asyncio.open_connection(address.host, address.port)
    writer.write(peer.opening())
    async with asyncio.timeout(10):
        head = await reader.readexactly(hs.HEAD_SIZE)
        rest = await reader.readexactly(peer.reply_size(head))
    proof = peer.proof(head + rest)
    assert proof is not None
    writer.write(proof + peer.hello(system))
    return reader, writer
