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
