# SPDX-License-Identifier: Apache-2.0
"""`schedule_once`: one delivery after a delay."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.scheduling.scheduling_support import Log, recorder, running_system

from tocsin import ScheduleKind


async def test_once_delivers_after_its_delay_and_only_once() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("ping", pid, 5)
        await clock.advance(4.5)
        assert log.messages == []
        await clock.advance(0.5)
        assert log.messages == ["ping"]
        assert log.times == [5.0]
        await clock.advance(100)
        assert log.messages == ["ping"]


async def test_once_accepts_a_timedelta_delay() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("ping", pid, timedelta(minutes=2))
        await clock.advance(119)
        assert log.messages == []
        await clock.advance(1)
        assert log.times == [120.0]


async def test_once_fires_at_its_own_time_inside_a_longer_advance() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("b", pid, 2.25)
        await system.schedule_once("a", pid, 0.75)
        await clock.advance(10)
        assert log.messages == ["a", "b"]
        assert log.times == [0.75, 2.25]


async def test_once_without_reference_returns_a_generated_one() -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        first = await system.schedule_once("x", pid, 1)
        second = await system.schedule_once("x", pid, 1)
        assert isinstance(first, str)
        assert first
        assert first != second
        assert {info.reference for info in system.list_schedules()} == {first, second}


async def test_fired_one_shot_is_no_longer_listed() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        ref = await system.schedule_once("x", pid, 1, reference="once")
        [info] = system.list_schedules()
        assert info.reference == ref == "once"
        assert info.kind is ScheduleKind.ONCE
        await clock.advance(1)
        assert system.list_schedules() == []
        assert system.scheduler_metrics().live_schedules == 0


async def test_reference_of_a_fired_one_shot_can_be_reused() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("first", pid, 1, reference="r")
        await clock.advance(1)
        await system.schedule_once("second", pid, 1, reference="r")
        await clock.advance(1)
        assert log.messages == ["first", "second"]


async def test_actor_can_schedule_a_reminder_to_itself() -> None:
    from tocsin import Actor, ReceiveContext

    seen: list[tuple[str, float]] = []

    class Reminder(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "start":
                await ctx.schedule_once("remind", ctx.self, 30, reference="remind")
            else:
                seen.append((ctx.message, ctx.system.clock.monotonic()))

    async with running_system() as (system, clock):
        pid = await system.spawn(Reminder)
        pid.tell("start")
        await clock.advance(60)
        assert seen == [("remind", 30.0)]


async def test_a_delay_beyond_the_datetime_range_is_accepted_and_listed_clamped() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_once("x", pid, 1e300, reference="far")
        [info] = system.list_schedules()
        assert info.next_fire_at == datetime.max.replace(tzinfo=UTC)
        assert info.interval == 1e300
        await clock.advance(10**6)
        assert [i.reference for i in system.list_schedules()] == ["far"]
