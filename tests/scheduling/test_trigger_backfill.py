# SPDX-License-Identifier: Apache-2.0
"""`trigger_schedule` and `backfill_schedule` (issue 23), on a ManualClock."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest
from tests.scheduling.scheduling_support import EPOCH, Log, recorder, running_system

from tocsin import (
    Actor,
    Calendar,
    Misfire,
    Outcome,
    ReceiveContext,
    ScheduleNotFoundError,
    Tick,
)


def _at(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


class TickLog(Actor):
    """Records ``ctx.tick`` of every message."""

    def __init__(self, ticks: list[Tick | None]) -> None:
        self.ticks = ticks

    async def receive(self, ctx: ReceiveContext) -> None:
        self.ticks.append(ctx.tick)


async def test_trigger_delivers_one_tick_now_and_leaves_the_next_fire_time() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 10, reference="r")
        [before] = system.list_schedules()
        await clock.advance(3)
        await system.trigger_schedule("r")
        await clock.advance(0)
        assert log.times == [3.0]
        [after] = system.list_schedules()
        assert after.next_fire_at == before.next_fire_at == _at(10)
        assert after.ticks == 1
        await clock.advance(7)
        assert log.times == [3.0, 10.0]
        history = system.schedule_history("r")
        assert [(h.instant, h.outcome, h.detail) for h in history] == [
            (_at(3), Outcome.DELIVERED, "manual"),
            (_at(10), Outcome.DELIVERED, None),
        ]


async def test_trigger_works_for_cron_and_one_shot_schedules_too() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("c", pid, "0 0 12 * * ?", reference="c")
        await system.schedule_once("o", pid, 100, reference="o")
        await system.trigger_schedule("c")
        await system.trigger_schedule("o")
        await clock.advance(0)
        assert log.messages == ["c", "o"]
        assert {i.reference for i in system.list_schedules()} == {"c", "o"}


async def test_trigger_and_backfill_of_an_unknown_reference_raise_not_found() -> None:
    async with running_system() as (system, _):
        with pytest.raises(ScheduleNotFoundError):
            await system.trigger_schedule("nope")
        with pytest.raises(ScheduleNotFoundError):
            await system.backfill_schedule("nope", EPOCH, _at(10))


async def test_backfill_of_an_interval_schedule_lists_and_delivers_its_grid() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await clock.advance(100)
        await system.schedule("tick", pid, 10, reference="r")  # its grid: 110, 120, ...
        listed = await system.backfill_schedule("r", _at(55), _at(95), dry_run=True)
        assert listed == [_at(t) for t in (60, 70, 80, 90)]
        await clock.advance(0)
        assert log.messages == []  # a dry run delivers nothing
        delivered = await system.backfill_schedule("r", _at(55), _at(95))
        assert delivered == listed
        await clock.advance(0)
        assert log.count("tick") == 4
        history = system.schedule_history("r")
        assert [(h.instant, h.detail) for h in history] == [(t, "backfill") for t in listed]
        assert {h.at for h in history} == {_at(100)}


async def test_backfill_is_half_open_and_never_takes_the_future() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 10, reference="r")  # 10, 20, 30, ...
        await clock.advance(35)
        assert await system.backfill_schedule("r", _at(10), _at(30), dry_run=True) == [
            _at(10),
            _at(20),
        ]
        # Up to now only: 40 and later are the schedule's own to deliver.
        assert await system.backfill_schedule("r", _at(25), _at(1000), dry_run=True) == [_at(30)]
        assert await system.backfill_schedule("r", _at(20), _at(20), dry_run=True) == []


async def test_backfill_of_a_cron_schedule_takes_its_fire_times_and_calendar() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await clock.advance(3 * 86_400)  # 2030-01-04 00:00 UTC, a Friday
        await system.schedule_cron(
            "daily",
            pid,
            "0 0 9 * * ?",
            reference="d",
            exclude=Calendar.dates("2030-01-02"),
        )
        listed = await system.backfill_schedule("d", EPOCH, _at(3 * 86_400), dry_run=True)
        assert listed == [
            datetime(2030, 1, 1, 9, tzinfo=EPOCH.tzinfo),
            datetime(2030, 1, 3, 9, tzinfo=EPOCH.tzinfo),
        ]


async def test_backfill_is_paced_by_the_misfire_rate() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await clock.advance(100)
        await system.schedule("tick", pid, 10, reference="r", misfire=Misfire.all(rate=2))
        backfill = asyncio.create_task(system.backfill_schedule("r", _at(60), _at(100)))
        await clock.advance(0)
        assert log.times == [100.0]
        await clock.advance(1)
        assert log.times == [100.0, 100.5, 101.0]
        await clock.advance(1)
        assert log.times == [100.0, 100.5, 101.0, 101.5]
        assert await backfill == [_at(t) for t in (60, 70, 80, 90)]


async def test_bad_backfill_ranges_are_refused_at_the_call() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("tick", pid, 0.001, reference="fast")
        await clock.advance(0.5)
        with pytest.raises(ValueError, match="naive"):
            await system.backfill_schedule("fast", datetime(2030, 1, 1), _at(1))
        with pytest.raises(TypeError, match="start"):
            await system.backfill_schedule("fast", 0, _at(1))  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="after"):
            await system.backfill_schedule("fast", _at(1), EPOCH)
        # The grid extends before the schedule was made: 200 s of it is 200,000 instants.
        with pytest.raises(ValueError, match="split the range"):
            await system.backfill_schedule("fast", _at(-200), _at(1), dry_run=True)


async def test_a_one_shot_has_nothing_to_backfill() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_once("o", pid, 100, reference="o")
        await clock.advance(50)
        assert await system.backfill_schedule("o", EPOCH, _at(50)) == []


async def test_trigger_and_backfill_through_a_context() -> None:
    done: list[list[datetime]] = []

    class Operator(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "go":
                await ctx.trigger_schedule("r")
                done.append(await ctx.backfill_schedule("r", _at(5), _at(25)))

    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 10, reference="r")
        await clock.advance(25)
        operator = await system.spawn(Operator)
        operator.tell("go")
        await clock.advance(0)
        assert done == [[_at(10), _at(20)]]
        assert log.count("tick") == 5  # 10, 20, the manual one, two backfilled
