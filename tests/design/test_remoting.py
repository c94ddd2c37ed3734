# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Remoting (`tocsin.remote`)" as executable statements: one small test per
sentence that names a public name, a signature, a default, an error type or a behaviour.

Timing uses a ManualClock and never sleeps; the remoting tests use real sockets (bounded
waits, outcomes only).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import msgspec
import pytest
from tests.design.design_support import (
    manual,
    params,
)
from tests.eventually import eventually

from tocsin import (
    PID,
    Actor,
    ActorNotFoundError,
    ActorSystem,
    AskTimeoutError,
    CodecError,
    DeadLetter,
    DeadLetterReason,
    NodeUnreachableError,
    ReceiveContext,
    RemoteActorError,
    Remoting,
    RemotingDisabledError,
    TocsinError,
)

SECRET = b"0123456789abcdef-contract"


class Ping(msgspec.Struct):
    n: int


@dataclasses.dataclass
class Pong:
    n: int


def test_remoting_signature() -> None:
    p = params(Remoting)
    assert list(p)[:4] == ["listen", "secret", "advertise", "messages"]
    assert p["advertise"].default is None


def test_remoting_config_validation() -> None:
    assert Remoting(listen="tcp://127.0.0.1:0", secret=SECRET).max_frame == 4 * 1024 * 1024
    with pytest.raises(TypeError):
        Remoting(listen="tcp://127.0.0.1:0")  # type: ignore[call-arg]  # secret is required
    Remoting(listen="tcp://127.0.0.1:0", secret="s" * 16)
    Remoting(listen="unix:///tmp/tocsin-contract.sock", secret=SECRET)
    with pytest.raises(ValueError):
        Remoting(listen="tcp://127.0.0.1:0", secret=b"short")
    with pytest.raises(TypeError):
        Remoting(listen="tcp://127.0.0.1:0", secret=1234567890123456789)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Remoting(listen="http://127.0.0.1:0", secret=SECRET)

    def other_ping() -> type:
        class Ping(msgspec.Struct):
            m: int

        return Ping

    with pytest.raises(ValueError):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Ping, other_ping()])
    assert "secret" not in repr(Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)).replace(
        "secret=<hidden>", ""
    ) or SECRET.decode() not in repr(Remoting(listen="tcp://127.0.0.1:0", secret=SECRET))


async def test_remoting_disabled_error_for_another_nodes_address() -> None:
    async with manual() as (system, _):
        with pytest.raises(RemotingDisabledError):
            await system.actor_of("tocsin://other@127.0.0.1:7100/user/x")


class Answer(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        message = ctx.message
        if isinstance(message, Ping):
            if message.n < 0:
                raise KeyError("negative")
            ctx.respond(Pong(message.n + 1))
        elif message == "who":
            ctx.respond(ctx.sender)


@asynccontextmanager
async def two_nodes() -> AsyncIterator[tuple[ActorSystem, ActorSystem]]:
    def config() -> Remoting:
        return Remoting(
            listen="tcp://127.0.0.1:0",
            secret=SECRET,
            messages=[Ping, Pong],
            connect_timeout=5.0,
            reconnect_max=0.2,
        )

    async with (
        ActorSystem("a", remoting=config()) as a,
        ActorSystem("b", remoting=config()) as b,
    ):
        yield a, b


async def test_remote_address_actor_of_tell_ask_and_errors() -> None:
    async with asyncio.timeout(60), two_nodes() as (a, b):
        assert re.fullmatch(r"tocsin://a@127\.0\.0\.1:\d+", a.address)
        assert not a.address.endswith(":0")
        local = await b.spawn(Answer, "answer")
        assert str(local) == b.address + "/user/answer"
        remote = await a.actor_of(str(local))
        assert await remote.ask(Ping(1), timeout=10) == Pong(2)
        with pytest.raises(RemoteActorError) as info:
            await remote.ask(Ping(-1), timeout=10)
        assert info.value.type_name == "KeyError"
        assert "negative" in info.value.text
        with pytest.raises(ActorNotFoundError):
            await a.actor_of(b.address + "/user/nobody")

        class Unregistered:
            pass

        with pytest.raises(CodecError):
            remote.tell(Unregistered())
        with pytest.raises(CodecError):
            await a.schedule_once(Unregistered(), remote, 1)
        await a.schedule_once(Ping(5), remote, 0.001)


async def test_unreachable_node_dead_letters_and_fails_ask() -> None:
    async with asyncio.timeout(60), two_nodes() as (a, b):
        local = await b.spawn(Answer, "answer")
        remote = await a.actor_of(str(local))
        assert await remote.ask(Ping(1), timeout=10) == Pong(2)
        letters: list[DeadLetter] = []
        a.events.subscribe(letters.append, DeadLetter)
        await b.stop()
        with pytest.raises((NodeUnreachableError, AskTimeoutError)):
            await remote.ask(Ping(2), timeout=20)

        def unreachable() -> bool:
            remote.tell(Ping(3))  # each try a new tell: the endpoint may still be closing
            return any(d.reason == DeadLetterReason.UNREACHABLE for d in letters)

        await eventually(unreachable, "a tell to the stopped node is an unreachable dead letter")
        assert any(d.reason == "unreachable" for d in letters)
        assert issubclass(NodeUnreachableError, TocsinError)


async def test_remote_sender_is_a_usable_pid_and_pids_cross_inside_messages() -> None:
    class Relay(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            message = ctx.message
            if isinstance(message, Pong):
                got.put_nowait(message)
            elif isinstance(message, PID):
                message.tell(Ping(41), ctx.self)  # a PID that arrived inside a message

    got: asyncio.Queue[Pong] = asyncio.Queue()
    async with asyncio.timeout(60), two_nodes() as (a, b):
        answer = await b.spawn(Answer, "answer")
        relay = await a.spawn(Relay, "relay")
        remote_relay = await b.actor_of(str(relay))
        remote_relay.tell(answer)  # b's PID travels to a, which tells it; b replies to a
        assert await got.get() == Pong(42)


def test_wire_names_follow_msgspec_tags_and_collide_as_value_error() -> None:
    class Tagged(msgspec.Struct, tag="same"):
        a: int

    class Other(msgspec.Struct, tag="same"):
        b: int

    class ByName(msgspec.Struct, tag=True):
        c: int

    config = Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Tagged, ByName])
    assert sorted(config.registry.names) == ["ByName", "same"]
    with pytest.raises(ValueError, match="same"):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Tagged, Other])
    with pytest.raises(TypeError):
        Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[object])
