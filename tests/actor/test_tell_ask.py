# SPDX-License-Identifier: Apache-2.0
"""tell and ask: replies, timeouts on ManualClock, dead targets, ordering and fairness."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from tests.actor.actor_support import Echo, new_system

from tocsin import (
    Actor,
    AskTimeoutError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    Directive,
    ReceiveContext,
    TocsinError,
)
from tocsin.actor._cell import THROUGHPUT


class Silent(Actor):
    """Handles every message and never answers."""

    async def receive(self, ctx: ReceiveContext) -> None:
        pass


class Gated(Actor):
    """Blocks on ``"block"`` until the shared gate opens; echoes everything else."""

    gate: asyncio.Event

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "block":
            await self.gate.wait()
        ctx.respond(ctx.message)


def gated(gate: asyncio.Event) -> Gated:
    actor = Gated()
    actor.gate = gate
    return actor


async def test_tell_returns_before_the_message_is_handled() -> None:
    log: list[Any] = []

    class Spy(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            log.append(ctx.message)

    system, clock = new_system()
    async with system:
        pid = await system.spawn(Spy)
        pid.tell("hello")
        assert log == []
        await clock.advance(0)
        assert log == ["hello"]


async def test_ask_returns_the_value_given_to_respond() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo)
        assert await pid.ask({"k": 1}) == {"k": 1}


async def test_ask_without_reply_times_out_with_an_error_that_is_also_a_timeout_error() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Silent)
        asking = asyncio.create_task(pid.ask("q", timeout=2))
        await clock.advance(1.999)
        assert not asking.done()
        await clock.advance(0.001)
        assert asking.done()
        with pytest.raises(AskTimeoutError, match="within 2 s") as info:
            asking.result()
        assert isinstance(info.value, TimeoutError)
        assert isinstance(info.value, TocsinError)


async def test_ask_timeout_deadline_leaves_the_heap_once_answered() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo)
        for i in range(5):
            assert await pid.ask(i, timeout=10) == i
        assert system._runtime is not None
        assert len(system._runtime.deadlines) == 0


async def test_ask_with_timeout_none_waits_until_answered() -> None:
    system, clock = new_system()
    gate = asyncio.Event()
    async with system:
        pid = await system.spawn(lambda: gated(gate))
        asking = asyncio.create_task(pid.ask("block", timeout=None))
        await clock.advance(3600)
        assert not asking.done()
        gate.set()
        assert await asking == "block"


async def test_ask_accepts_a_timedelta_timeout() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Silent)
        asking = asyncio.create_task(pid.ask("q", timeout=timedelta(seconds=3)))
        await clock.advance(3)
        with pytest.raises(AskTimeoutError):
            await asking


@pytest.mark.parametrize("timeout", [0, -1, float("nan"), float("inf"), True, "1"])
async def test_ask_rejects_a_bad_timeout(timeout: Any) -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo)
        with pytest.raises(ValueError, match="`timeout`"):
            await pid.ask("q", timeout=timeout)
        assert system.dead_letters == 0  # rejected before sending


async def test_ask_to_stopped_actor_fails_at_once_without_waiting_for_timeout() -> None:
    system, _ = new_system()
    async with system:
        pid = await system.spawn(Echo, "echo")
        await system.stop_actor(pid)
        # No clock advance: the ask must fail on its own.
        with pytest.raises(DeadActorError, match="test/user/echo"):
            await pid.ask("q", timeout=60)
        assert system.dead_letters == 1


async def test_ask_whose_handler_raises_fails_the_asker_with_that_exception() -> None:
    class Boom(Exception):
        pass

    class Fails(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "fail":
                raise Boom("from the handler")
            ctx.respond("fine")

    system, _ = new_system()
    async with system:
        pid = await system.spawn(Fails, supervisor=Directive.RESUME)
        with pytest.raises(Boom, match="from the handler"):
            await pid.ask("fail")
        assert await pid.ask("other") == "fine"


async def test_pending_asks_in_the_mailbox_fail_with_dead_actor_when_the_target_stops() -> None:
    system, _ = new_system()
    gate = asyncio.Event()
    async with system:
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid = await system.spawn(lambda: gated(gate), "g")
        first = asyncio.create_task(pid.ask("block", timeout=None))
        queued = [asyncio.create_task(pid.ask(i, timeout=None)) for i in range(3)]
        await asyncio.sleep(0)
        stopping = asyncio.create_task(system.stop_actor(pid))
        await asyncio.sleep(0)
        gate.set()
        await stopping
        assert await first == "block"
        for task in queued:
            with pytest.raises(DeadActorError):
                await task
        assert [(d.message, d.reason) for d in letters] == [
            (i, DeadLetterReason.STOPPED) for i in range(3)
        ]


async def test_ask_handled_without_reply_fails_when_the_target_stops() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Silent, "silent")
        asking = asyncio.create_task(pid.ask("ignored", timeout=None))
        await clock.advance(0)
        assert not asking.done()
        await system.stop_actor(pid)
        for _ in range(3):
            await asyncio.sleep(0)
        try:
            assert asking.done(), "an unanswered ask must be answered when its target stops"
            with pytest.raises(DeadActorError):
                asking.result()
        finally:
            asking.cancel()


async def test_system_stop_answers_pending_asks_with_dead_actor_error() -> None:
    system, clock = new_system()
    await system.start()
    silent = await system.spawn(Silent, "silent")
    gate = asyncio.Event()
    blocked = await system.spawn(lambda: gated(gate), "blocked")
    unanswered = asyncio.create_task(silent.ask("x", timeout=None))
    in_progress = asyncio.create_task(blocked.ask("block", timeout=None))
    queued = asyncio.create_task(blocked.ask("queued", timeout=None))
    await clock.advance(0)
    stopping = asyncio.create_task(system.stop())
    await asyncio.sleep(0)
    gate.set()
    await stopping
    for _ in range(3):
        await asyncio.sleep(0)
    assert await in_progress == "block"
    with pytest.raises(DeadActorError):
        await queued
    try:
        assert unanswered.done()
        with pytest.raises(DeadActorError):
            unanswered.result()
    finally:
        unanswered.cancel()


async def test_asks_racing_a_stop_are_answered_or_fail_never_hang() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, "echo")
        asks = [asyncio.create_task(pid.ask(i, timeout=None)) for i in range(10)]
        stopping = asyncio.create_task(system.stop_actor(pid))
        late = [asyncio.create_task(pid.ask(i, timeout=None)) for i in range(10, 20)]
        await stopping
        await clock.advance(0)
        results = await asyncio.gather(*asks, *late, return_exceptions=True)
        for i, result in enumerate(results):
            assert result == i or isinstance(result, DeadActorError)
        # After the stop returned, every new ask fails at once.
        with pytest.raises(DeadActorError):
            await pid.ask("after")


async def test_respond_to_a_tell_from_an_actor_tells_the_sender() -> None:
    got: list[Any] = []

    class Client(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "go":
                echo = await ctx.system.actor_of("echo")
                ctx.tell(echo, "ping")
            else:
                got.append((ctx.message, ctx.sender.name))

    system, clock = new_system()
    async with system:
        await system.spawn(Echo, "echo")
        client = await system.spawn(Client, "client")
        client.tell("go")
        await clock.advance(0)
    assert got == [("ping", "echo")]


async def test_respond_to_a_tell_without_sender_is_dropped_silently() -> None:
    # DESIGN "Precisions" (issue 20): a reply to NoSender is not a lost message.
    system, clock = new_system()
    async with system:
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid = await system.spawn(Echo)
        pid.tell("lost reply")
        await clock.advance(0)
        assert letters == []


async def test_messages_from_one_sender_arrive_in_send_order() -> None:
    log: list[tuple[str, int]] = []

    class Receiver(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            log.append(ctx.message)

    class Sender(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            target = await ctx.system.actor_of("receiver")
            for i in range(1000):
                ctx.tell(target, (ctx.self.name, i))
                if i % 100 == 0:
                    await asyncio.sleep(0)  # let the other sender interleave

    system, clock = new_system()
    async with system:
        await system.spawn(Receiver, "receiver")
        a = await system.spawn(Sender, "a")
        b = await system.spawn(Sender, "b")
        a.tell("go")
        b.tell("go")
        await clock.advance(0)
    assert len(log) == 2000
    for name in ("a", "b"):
        assert [i for n, i in log if n == name] == list(range(1000))
    # Both senders did interleave (otherwise the ordering check proves little).
    assert log[:1000] != [("a", i) for i in range(1000)]


async def test_busy_actor_yields_after_a_batch_so_another_actor_is_not_starved() -> None:
    log: list[str] = []

    class Worker(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            log.append(ctx.self.name)

    system, clock = new_system()
    async with system:
        flooded = await system.spawn(Worker, "flooded")
        other = await system.spawn(Worker, "other")
        for _ in range(10_000):
            flooded.tell("work")
        other.tell("work")
        await clock.advance(0)
    assert len(log) == 10_001
    assert log.index("other") <= THROUGHPUT


async def test_two_busy_actors_interleave_batch_by_batch() -> None:
    log: list[str] = []

    class Worker(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            log.append(ctx.self.name)

    system, clock = new_system()
    async with system:
        a = await system.spawn(Worker, "a")
        b = await system.spawn(Worker, "b")
        for _ in range(4 * THROUGHPUT):
            a.tell(1)
            b.tell(1)
        await clock.advance(0)
    runs = [log[0]]
    lengths = [0]
    for name in log:
        if name != runs[-1]:
            runs.append(name)
            lengths.append(0)
        lengths[-1] += 1
    assert max(lengths) <= THROUGHPUT
    assert len(runs) >= 8
