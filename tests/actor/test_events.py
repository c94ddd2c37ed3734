# SPDX-License-Identifier: Apache-2.0
"""The event stream: subscriptions, async handlers, the async iterator, counters."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import pytest
from tests.actor.actor_support import Echo, new_system

from tocsin import (
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    ActorSystem,
    DeadLetter,
    DeadLetterReason,
    ManualClock,
    Subscription,
)


async def test_subscribe_without_types_receives_every_event() -> None:
    system, _ = new_system()
    seen: list[Any] = []
    async with system:
        system.events.subscribe(seen.append)
        pid = await system.spawn(Echo, "e")
        await system.stop_actor(pid)
        pid.tell("late")
    assert [type(e) for e in seen] == [ActorStarted, ActorStopped, DeadLetter]


async def test_subscribe_with_types_filters_events() -> None:
    system, _ = new_system()
    seen: list[Any] = []
    async with system:
        system.events.subscribe(seen.append, ActorStopped)
        pid = await system.spawn(Echo, "e")
        await system.stop_actor(pid)
    assert seen == [ActorStopped(pid)]


async def test_dead_letter_carries_message_sender_target_and_reason() -> None:
    system, _ = new_system()
    letters: list[DeadLetter] = []
    async with system:
        system.events.subscribe(letters.append, DeadLetter)
        target = await system.spawn(Echo, "target")
        sender = await system.spawn(Echo, "sender")
        await system.stop_actor(target)
        target.tell("hello", sender=sender)
    assert letters == [DeadLetter("hello", sender, target, DeadLetterReason.STOPPED)]
    assert letters[0].reason == "stopped"


async def test_counters_count_every_event_by_type_even_without_subscribers() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo)
        pid.tell("fail")
        await clock.advance(0)
        await system.stop_actor(pid)
        for i in range(3):
            pid.tell(i)
        assert system.events.count(ActorStarted) == 1
        assert system.events.count(ActorRestarted) == 1
        assert system.events.count(ActorStopped) == 1
        assert system.events.count(DeadLetter) == 3
        assert system.dead_letters == 3


async def test_cancelled_subscription_receives_nothing_more() -> None:
    system, _ = new_system()
    seen: list[Any] = []
    async with system:
        sub = system.events.subscribe(seen.append, ActorStarted)
        assert isinstance(sub, Subscription)
        assert sub.active
        await system.spawn(Echo)
        sub.cancel()
        sub.cancel()  # idempotent
        assert not sub.active
        await system.spawn(Echo)
    assert len(seen) == 1


async def test_a_subscription_cancelled_by_an_earlier_handler_misses_the_same_event() -> None:
    system, _ = new_system()
    seen: list[str] = []
    async with system:
        second: Subscription | None = None

        def first(event: Any) -> None:
            seen.append("first")
            assert second is not None
            second.cancel()

        system.events.subscribe(first, ActorStarted)
        second = system.events.subscribe(lambda e: seen.append("second"), ActorStarted)
        await system.spawn(Echo)
    assert seen == ["first"]


async def test_async_event_handler_runs_and_clock_advance_waits_for_it() -> None:
    system, clock = new_system()
    seen: list[Any] = []

    async def handler(event: Any) -> None:
        await asyncio.sleep(0)
        seen.append(event)

    async with system:
        system.events.subscribe(handler, DeadLetter)
        pid = await system.spawn(Echo)
        await system.stop_actor(pid)
        pid.tell("late")
        await clock.advance(0)
        assert [e.message for e in seen] == ["late"]


async def test_a_failing_handler_is_logged_and_does_not_stop_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="tocsin.events")
    system, clock = new_system()
    seen: list[Any] = []

    def bad(event: Any) -> None:
        raise RuntimeError("handler bug")

    async def bad_async(event: Any) -> None:
        raise RuntimeError("async handler bug")

    async with system:
        system.events.subscribe(bad)
        system.events.subscribe(bad_async)
        system.events.subscribe(seen.append)
        await system.spawn(Echo)
        await clock.advance(0)
    assert len(seen) == 2
    assert "handler bug" in caplog.text
    assert "async event handler failed" in caplog.text


def test_subscribe_rejects_a_non_callable_handler() -> None:
    system = ActorSystem("test", clock=ManualClock(wall=0))
    with pytest.raises(TypeError, match="`handler`"):
        system.events.subscribe("not callable")  # type: ignore[arg-type]


async def test_event_stream_yields_events_published_after_it_was_created() -> None:
    system, _ = new_system()
    async with system:
        stream = system.events.stream(ActorStarted, ActorStopped)
        pid = await system.spawn(Echo, "e")  # published before the first __anext__
        await system.stop_actor(pid)
        async with contextlib.aclosing(stream):
            assert await anext(stream) == ActorStarted(pid)
            assert await anext(stream) == ActorStopped(pid)


async def test_event_stream_async_for_filters_and_ends_its_subscription_on_close() -> None:
    system, _ = new_system()
    async with system:
        stream = system.events.stream(DeadLetter)
        pid = await system.spawn(Echo, "e")
        await system.stop_actor(pid)
        for i in range(3):
            pid.tell(i)
        got: list[Any] = []
        async with contextlib.aclosing(stream):
            async for letter in stream:
                got.append(letter.message)
                if len(got) == 3:
                    break
        assert got == [0, 1, 2]
        assert system.events._subs == []


async def test_event_stream_aclose_ends_a_pending_iteration() -> None:
    system, _ = new_system()
    async with system:
        got: list[Any] = []
        async with system.events.stream(ActorStarted) as stream:

            async def consume() -> None:
                async for event in stream:
                    got.append(event)

            consumer = asyncio.create_task(consume())
            pid = await system.spawn(Echo)
            await asyncio.sleep(0)
            await stream.aclose()
            await consumer
        assert got == [ActorStarted(pid)]
        assert system.events._subs == []


async def test_event_stream_ends_its_subscription_when_the_iterator_is_dropped() -> None:
    system, _ = new_system()
    async with system:
        stream = system.events.stream()
        pid = await system.spawn(Echo)
        async for _ in stream:
            break
        del stream
        await system.stop_actor(pid)  # the first event after the drop ends the subscription
        for _ in range(5):
            await asyncio.sleep(0)
        assert system.events._subs == []
