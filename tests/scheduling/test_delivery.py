# SPDX-License-Identifier: Apache-2.0
"""Delivery through the normal send path: sender, dead letters, suspension, passivation,
stale ticks, and the cost of many schedules."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.scheduling.scheduling_support import (
    Log,
    blocker,
    capture_dead_letters,
    recorder,
    running_system,
)

from tocsin import (
    Actor,
    ActorPassivated,
    DeadLetterReason,
    Directive,
    NoSender,
    ReceiveContext,
)


class Scheduler(Actor):
    """Schedules through its context: ("every"|"once", message, pid, seconds, kwargs)."""

    async def receive(self, ctx: ReceiveContext) -> None:
        kind, message, pid, seconds, kwargs = ctx.message
        call = ctx.schedule if kind == "every" else ctx.schedule_once
        await call(message, pid, seconds, **kwargs)


# -- sender ------------------------------------------------------------------------------


async def test_sender_defaults_to_the_scheduling_actor_through_a_context() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(Scheduler)
        owner.tell(("once", "x", target, 1, {}))
        await clock.advance(1)
        assert [r.sender for r in log.received] == [owner]


async def test_sender_defaults_to_no_sender_through_the_system() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        await system.schedule("x", target, 1)
        await clock.advance(1)
        assert log.received[0].sender is NoSender


async def test_explicit_sender_is_seen_by_the_receiver_as_ctx_sender() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        other = await system.spawn(recorder(Log()))
        owner = await system.spawn(Scheduler)
        await system.schedule_once("from-system", target, 1, sender=other)
        owner.tell(("once", "from-actor", target, 2, {"sender": other}))
        owner.tell(("once", "anonymous", target, 3, {"sender": NoSender}))
        await clock.advance(3)
        assert [(r.message, r.sender) for r in log.received] == [
            ("from-system", other),
            ("from-actor", other),
            ("anonymous", NoSender),
        ]


async def test_receiver_can_reply_to_the_tick_sender() -> None:
    class Echo(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            ctx.respond(("pong", ctx.message))

    async with running_system() as (system, clock):
        log = Log()
        echo = await system.spawn(Echo)
        asker = await system.spawn(recorder(log))
        await system.schedule_once("ping", echo, 1, sender=asker)
        await clock.advance(1)
        assert log.messages == [("pong", "ping")]


# -- stopped and suspended targets -------------------------------------------------------


async def test_tick_to_a_target_stopped_by_fire_time_is_a_dead_letter() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        target = await system.spawn(recorder(Log()))
        await system.schedule_once("late", target, 5, reference="r")
        await system.stop_actor(target)
        await clock.advance(5)
        assert [(d.message, d.target, d.reason) for d in letters] == [
            ("late", target, DeadLetterReason.STOPPED)
        ]
        assert system.list_schedules() == []


async def test_repeating_schedule_to_a_fully_stopped_target_is_dropped_after_that_tick() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        log = Log()
        target = await system.spawn(recorder(log))
        await system.schedule("tick", target, 1, reference="r")
        await clock.advance(1)
        await system.stop_actor(target)
        assert [i.reference for i in system.list_schedules()] == ["r"]
        await clock.advance(1)
        assert [d.message for d in letters] == ["tick"]
        assert system.list_schedules() == []
        await clock.advance(10)
        assert len(letters) == 1  # it does not dead-letter forever
        assert log.messages == ["tick"]


async def test_tick_to_a_respawned_name_goes_to_the_old_incarnation_and_is_dead_lettered() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        new_log = Log()
        old = await system.spawn(recorder(Log()), "worker")
        await system.schedule("tick", old, 1)
        await system.stop_actor(old)
        await system.spawn(recorder(new_log), "worker")
        await clock.advance(3)
        assert new_log.messages == []
        assert len(letters) == 1


async def test_suspended_target_keeps_its_schedule_and_gets_it_again_once_reinstated() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        log = Log()
        target = await system.spawn(recorder(log), supervisor=Directive.SUSPEND)
        await system.schedule("tick", target, 1, reference="r")
        await clock.advance(1.5)
        target.tell(("fail", RuntimeError("boom")))
        await clock.advance(2)  # ticks at 2 and 3 find it suspended
        assert [(d.message, d.reason) for d in letters] == [
            ("tick", DeadLetterReason.SUSPENDED),
            ("tick", DeadLetterReason.SUSPENDED),
        ]
        assert [i.reference for i in system.list_schedules()] == ["r"]
        await system.reinstate(target)
        await clock.advance(2)
        assert log.times == [1.0, 4.0, 5.0]


async def test_one_shot_to_a_suspended_target_is_a_dead_letter_and_is_removed() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        target = await system.spawn(recorder(Log()), supervisor=Directive.SUSPEND)
        target.tell(("fail", RuntimeError("boom")))
        await clock.advance(0)
        await system.schedule_once("once", target, 1)
        await clock.advance(1)
        assert [(d.message, d.reason) for d in letters] == [("once", DeadLetterReason.SUSPENDED)]
        assert system.list_schedules() == []


async def test_ticks_queued_when_the_target_stops_become_dead_letters() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        log = Log()
        target = await system.spawn(recorder(log))
        block, release = blocker()
        target.tell(block)
        await system.schedule("tick", target, 1)
        await clock.advance(2)
        stopping = asyncio.create_task(system.stop_actor(target))
        await asyncio.sleep(0)  # the stop waits for the blocked message to finish
        release.set()
        await stopping
        assert log.messages == []
        assert [d.message for d in letters] == ["tick", "tick"]


# -- passivation -------------------------------------------------------------------------


async def test_repeating_schedule_keeps_a_passivating_actor_alive() -> None:
    async with running_system() as (system, clock):
        passivated: list[ActorPassivated] = []
        system.events.subscribe(passivated.append, ActorPassivated)
        log = Log()
        target = await system.spawn(recorder(log), passivate_after=5)
        await system.schedule("tick", target, 2, reference="keepalive")
        await clock.advance(100)
        assert passivated == []
        assert len(log.messages) == 50
        await system.cancel_schedule("keepalive")
        await clock.advance(10)
        assert [p.pid for p in passivated] == [target]


async def test_one_shot_tick_resets_the_idle_timer() -> None:
    async with running_system() as (system, clock):
        passivated: list[ActorPassivated] = []
        system.events.subscribe(passivated.append, ActorPassivated)
        target = await system.spawn(recorder(Log()), passivate_after=5)
        await system.schedule_once("poke", target, 4)
        await clock.advance(8.5)  # idle since the tick at 4
        assert passivated == []
        await clock.advance(1)
        assert len(passivated) == 1


# -- stale ticks -------------------------------------------------------------------------


async def test_tick_already_queued_is_discarded_after_cancel() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        block, release = blocker()
        target.tell(block)
        await system.schedule("tick", target, 1, reference="r")
        await clock.advance(3)  # three ticks wait in the mailbox
        await system.cancel_schedule("r")
        target.tell("after")
        release.set()
        await clock.advance(0)
        assert log.messages == ["after"]
        metrics = system.scheduler_metrics()
        assert metrics.ticks_discarded == 3
        assert metrics.ticks_dead_lettered == 0


async def test_one_shot_tick_already_queued_is_discarded_after_cancel() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        log = Log()
        target = await system.spawn(recorder(log))
        block, release = blocker()
        target.tell(block)
        await system.schedule_once("once", target, 1, reference="r")
        await clock.advance(1)
        assert [i.reference for i in system.list_schedules()] == ["r"]  # tick in flight
        await system.cancel_schedule("r")
        release.set()
        await clock.advance(0)
        assert log.messages == []
        assert letters == []  # cancelled, not lost


async def test_cancel_from_inside_the_target_discards_its_own_queued_ticks() -> None:
    class SelfCancel(Actor):
        def __init__(self) -> None:
            self.seen: list[Any] = []

        async def receive(self, ctx: ReceiveContext) -> None:
            message = ctx.message
            if isinstance(message, tuple):
                await message[1].wait()
                await ctx.cancel_schedule("self")
                return
            seen.append(message)

    seen: list[Any] = []
    async with running_system() as (system, clock):
        pid = await system.spawn(SelfCancel)
        block, release = blocker()
        pid.tell(block)
        await system.schedule("tick", pid, 1, reference="self")
        await clock.advance(2)
        release.set()
        await clock.advance(5)
        assert seen == []


# -- cost --------------------------------------------------------------------------------


async def test_the_message_path_never_reads_the_clock() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        sink = await system.spawn(lambda: _Sink())
        for i in range(100):
            await system.schedule("tick", target, 1 + i)
        reads = {"monotonic": 0, "wall": 0}
        real_monotonic, real_wall = clock.monotonic, clock.wall

        def monotonic() -> float:
            reads["monotonic"] += 1
            return real_monotonic()

        def wall() -> float:
            reads["wall"] += 1
            return real_wall()

        clock.monotonic = monotonic  # type: ignore[method-assign]
        clock.wall = wall  # type: ignore[method-assign]
        try:
            for i in range(1000):
                sink.tell(i)
            await clock.advance(0)
        finally:
            clock.monotonic = real_monotonic  # type: ignore[method-assign]
            clock.wall = real_wall  # type: ignore[method-assign]
        assert reads["wall"] == 0
        # advance(0) reads the clock a bounded number of times, never once per message.
        assert reads["monotonic"] < 10


class _Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


async def test_many_schedules_share_one_armed_timer() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        armed = 0
        real_call_at = clock.call_at

        def call_at(deadline: float, callback: Any) -> Any:
            nonlocal armed
            armed += 1
            return real_call_at(deadline, callback)

        clock.call_at = call_at  # type: ignore[method-assign]
        refs = [await system.schedule("tick", target, 10 + i * 1e-3) for i in range(10_000)]
        assert armed == 1  # later deadlines never re-arm the one timer
        assert len(system.list_schedules()) == 10_000
        for ref in refs[1:]:
            await system.cancel_schedule(ref)
        assert system._runtime is not None
        heap = system._runtime.deadlines.heap
        assert len(heap) == 1
        assert heap.size < 1_000  # dead entries were compacted away, not kept
        await clock.advance(10)
        assert log.messages == ["tick"]


async def test_ten_thousand_simultaneous_ticks_are_all_delivered_once() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        for _ in range(10_000):
            await system.schedule_once("tick", target, 1)
        await clock.advance(1)
        assert len(log.messages) == 10_000
        assert system.list_schedules() == []
