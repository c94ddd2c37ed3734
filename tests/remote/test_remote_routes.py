# SPDX-License-Identifier: Apache-2.0
"""Where a frame from another node goes: the receiving node remembers the last frame's
destination and sender (a flood repeats them), and what it remembers never outlives the
actor it names.

* a frame for an incarnation that stopped is a dead letter ``not_found``, also once
  another actor took its path;
* a frame for a path alone (no incarnation) goes to whichever actor lives there now;
* a frame whose sender is an actor of the receiving node that stopped and was
  respawned carries the new actor as ``ctx.sender``.

Real sockets and real time, every wait bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
from tests.eventually import eventually

from tocsin import PID, Actor, ActorSystem, DeadLetter, DeadLetterReason, ReceiveContext, Remoting

SECRET = b"0123456789abcdef-routes"


class Ping(msgspec.Struct):
    n: int


@asynccontextmanager
async def two_nodes() -> AsyncIterator[tuple[ActorSystem, ActorSystem]]:
    def config() -> Remoting:
        return Remoting(
            listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Ping], connect_timeout=5.0
        )

    async with (
        ActorSystem("a", remoting=config()) as a,
        ActorSystem("b", remoting=config()) as b,
    ):
        yield a, b


def sink(got: asyncio.Queue[tuple[PID, Any, Any]]) -> type[Actor]:
    class Sink(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            got.put_nowait((ctx.self, ctx.message, ctx.sender))

    return Sink


async def test_a_frame_for_a_stopped_incarnation_is_not_found_after_a_respawn() -> None:
    got: asyncio.Queue[tuple[PID, Any, Any]] = asyncio.Queue()
    async with asyncio.timeout(60), two_nodes() as (a, b):
        letters: list[DeadLetter] = []
        b.events.subscribe(letters.append, DeadLetter)
        first = await b.spawn(sink(got), "sink")
        remote_first = await a.actor_of(str(first))
        for n in range(3):  # the route is remembered from the first frame on
            remote_first.tell(Ping(n))
        assert [(await got.get())[:2] for _ in range(3)] == [(first, Ping(n)) for n in range(3)]
        await b.stop_actor(first)
        second = await b.spawn(sink(got), "sink")
        assert second.incarnation != first.incarnation
        remote_first.tell(Ping(10))
        await eventually(
            lambda: any(d.message == Ping(10) for d in letters),
            "a tell to the stopped incarnation is a dead letter on the hosting node",
        )
        [letter] = [d for d in letters if d.message == Ping(10)]
        assert letter.reason == DeadLetterReason.NOT_FOUND
        remote_second = await a.actor_of(str(second))
        remote_second.tell(Ping(11))
        assert (await got.get())[:2] == (second, Ping(11))
        assert got.empty()


async def test_a_frame_for_a_path_goes_to_the_actor_living_there_now() -> None:
    got: asyncio.Queue[tuple[PID, Any, Any]] = asyncio.Queue()
    async with asyncio.timeout(60), two_nodes() as (a, b):
        assert a._remote is not None
        # A PID without an incarnation: whichever actor holds the path.
        by_path = a._remote.pid_from_wire(b.address + "/user/sink")
        assert by_path.incarnation == 0
        first = await b.spawn(sink(got), "sink")
        by_path.tell(Ping(1))
        by_path.tell(Ping(2))
        assert [(await got.get())[:2] for _ in range(2)] == [(first, Ping(1)), (first, Ping(2))]
        await b.stop_actor(first)
        second = await b.spawn(sink(got), "sink")
        by_path.tell(Ping(3))
        assert (await got.get())[:2] == (second, Ping(3))


async def test_a_sender_of_the_receiving_node_that_stopped_is_never_its_successor() -> None:
    answers: asyncio.Queue[tuple[PID, Any, Any]] = asyncio.Queue()

    class Echo(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.sender.tell(Ping(ctx.message.n + 100))

    async with asyncio.timeout(60), two_nodes() as (a, b):
        assert b._remote is not None
        letters: list[DeadLetter] = []
        a.events.subscribe(letters.append, DeadLetter)
        echo = await a.spawn(Echo, "echo")
        remote_echo = await b.actor_of(str(echo))
        # Frames from b to a whose sender is an actor of a itself.
        first = await a.spawn(sink(answers), "named")
        sender = b._remote.pid_from_wire(first.wire)
        remote_echo.tell(Ping(1), sender)
        remote_echo.tell(Ping(2), sender)
        assert [(await answers.get())[:2] for _ in range(2)] == [
            (first, Ping(101)),
            (first, Ping(102)),
        ]
        await a.stop_actor(first)
        second = await a.spawn(sink(answers), "named")
        remote_echo.tell(Ping(3), sender)
        await eventually(
            lambda: any(d.message == Ping(103) for d in letters),
            "the answer to the stopped sender is a dead letter",
        )
        remote_echo.tell(Ping(4), second)
        assert (await answers.get())[:2] == (second, Ping(104))
        assert answers.empty()


class Pong(msgspec.Struct):
    text: str


async def test_one_remote_pid_told_by_several_senders_and_kinds_keeps_each_pairing() -> None:
    # The sending side keeps the last tell's envelope head (sender, message name): each
    # frame still carries its own sender and message.
    got: asyncio.Queue[tuple[PID, Any, Any]] = asyncio.Queue()

    def config() -> Remoting:
        return Remoting(listen="tcp://127.0.0.1:0", secret=SECRET, messages=[Ping, Pong])

    async with (
        asyncio.timeout(60),
        ActorSystem("a", remoting=config()) as a,
        ActorSystem("b", remoting=config()) as b,
    ):
        target = await b.spawn(sink(got), "sink")
        one = await a.spawn(sink(asyncio.Queue()), "one")
        two = await a.spawn(sink(asyncio.Queue()), "two")
        remote = await a.actor_of(str(target))
        sent: list[tuple[Any, Any]] = [
            (Ping(1), one),
            (Ping(2), one),
            (Pong("x"), one),
            (Ping(3), two),
            (Ping(4), None),
            (Ping(5), one),
            ("codec", one),
        ]
        for message, sender in sent:
            remote.tell(message, sender)
        seen = [(await got.get())[1:] for _ in sent]
        assert [m for m, _ in seen] == [m for m, _ in sent]
        assert [s.wire if isinstance(s, PID) else None for _, s in seen] == [
            None if s is None else s.wire for _, s in sent
        ]


@pytest.mark.parametrize("name", ["Ping", "", "a-much-longer-name" * 4])
def test_a_tell_head_and_its_payload_are_the_envelope_msgspec_writes(name: str) -> None:
    from tests.remote.remote_support import config, make_node

    from tocsin.remote._envelopes import Tell, decoder, encoder

    node = make_node(config(), "n")
    payload = msgspec.msgpack.encode({"k": [1, 2.5, "x" * 300]})
    head = node.tell_head("/user/x" * 20, "ab12", "tocsin://a@h:1/user/y#ff", name)
    body = head + payload
    envelope = Tell("/user/x" * 20, "ab12", "tocsin://a@h:1/user/y#ff", name, msgspec.Raw(payload))
    assert body == encoder().encode(envelope)
    assert decoder().decode(body) == envelope
