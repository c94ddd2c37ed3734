# SPDX-License-Identifier: Apache-2.0
"""`list_schedules()` snapshots and `scheduler_metrics()` counters."""

from __future__ import annotations

import dataclasses
from datetime import UTC, timedelta

import pytest
from tests.scheduling.scheduling_support import (
    EPOCH,
    Log,
    blocker,
    capture_dead_letters,
    recorder,
    running_system,
)

from tocsin import Actor, Directive, ReceiveContext, ScheduleInfo, ScheduleKind


class Owner(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "list":
            ctx.respond(ctx.list_schedules())
            return
        target, sender = ctx.message
        kwargs = {} if sender is None else {"sender": sender}
        await ctx.schedule("tick", target, 2.5, reference="owned", **kwargs)


async def test_interval_schedule_made_in_an_actor_lists_every_field() -> None:
    async with running_system() as (system, clock):
        await clock.advance(10)
        target = await system.spawn(recorder(Log()), "target")
        owner = await system.spawn(Owner, "owner")
        owner.tell((target, None))
        await clock.advance(6)  # ticks at 12.5 and 15
        [info] = system.list_schedules()
        assert info == ScheduleInfo(
            reference="owned",
            target="/user/target",
            kind=ScheduleKind.INTERVAL,
            interval=2.5,
            cron=None,
            timezone=None,
            next_fire_at=EPOCH + timedelta(seconds=17.5),
            paused=False,
            owner="/user/owner",
            sender="/user/owner",
            ticks=2,
            created_at=EPOCH + timedelta(seconds=10),
        )
        assert info.next_fire_at is not None
        assert info.next_fire_at.tzinfo is UTC
        assert info.created_at.tzinfo is UTC
        assert info.kind == "interval"  # a str enum


async def test_one_shot_made_through_the_system_lists_its_delay_and_no_owner() -> None:
    async with running_system() as (system, _clock):
        target = await system.spawn(recorder(Log()), "target")
        await system.schedule_once("x", target, timedelta(minutes=1), reference="r")
        [info] = system.list_schedules()
        assert info.kind is ScheduleKind.ONCE
        assert info.interval == 60.0
        assert info.owner is None
        assert info.sender is None  # NoSender
        assert info.next_fire_at == EPOCH + timedelta(minutes=1)
        assert info.ticks == 0


async def test_explicit_sender_is_listed_by_path() -> None:
    async with running_system() as (system, _clock):
        target = await system.spawn(recorder(Log()), "target")
        other = await system.spawn(recorder(Log()), "other")
        await system.schedule("x", target, 1, sender=other)
        [info] = system.list_schedules()
        assert info.sender == "/user/other"


async def test_next_fire_time_is_none_while_paused_and_back_after_resume() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        await system.schedule("x", target, 4, reference="r")
        await clock.advance(1)
        await system.pause_schedule("r")
        [info] = system.list_schedules()
        assert info.paused is True
        assert info.next_fire_at is None
        await clock.advance(1)
        await system.resume_schedule("r")
        [info] = system.list_schedules()
        assert info.paused is False
        assert info.next_fire_at == EPOCH + timedelta(seconds=6)


async def test_listing_is_a_frozen_snapshot() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        await system.schedule("x", target, 1, reference="r")
        [before] = system.list_schedules()
        with pytest.raises(dataclasses.FrozenInstanceError):
            before.paused = True  # type: ignore[misc]
        await clock.advance(3)
        assert before.ticks == 0
        [after] = system.list_schedules()
        assert after.ticks == 3


async def test_context_lists_every_schedule_of_the_system() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        owner = await system.spawn(Owner)
        await system.schedule("x", target, 1, reference="from-system")
        owner.tell((target, None))
        await clock.advance(0)
        infos = await owner.ask("list")
        assert sorted(i.reference for i in infos) == ["from-system", "owned"]


async def test_cancelled_and_delivered_schedules_disappear_from_the_listing() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        await system.schedule("x", target, 1, reference="cancelled")
        await system.schedule_once("x", target, 1, reference="once")
        await system.schedule("x", target, 1, reference="kept")
        await system.cancel_schedule("cancelled")
        await clock.advance(1)
        assert [i.reference for i in system.list_schedules()] == ["kept"]


async def test_ticks_counts_deliveries_not_dead_letters() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()), supervisor=Directive.SUSPEND)
        await system.schedule("x", target, 1, reference="r")
        await clock.advance(2)
        target.tell(("fail", RuntimeError("boom")))
        await clock.advance(2)
        [info] = system.list_schedules()
        assert info.ticks == 2


async def test_metrics_count_delivered_dead_lettered_discarded_and_live() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        alive = await system.spawn(recorder(Log()))
        dead = await system.spawn(recorder(Log()))
        await system.schedule("x", alive, 1)
        await system.schedule_once("x", dead, 1)
        await system.schedule("y", dead, 1)
        await system.stop_actor(dead)
        await clock.advance(3)
        block, release = blocker()
        alive.tell(block)
        await system.schedule("z", alive, 1, reference="stale")
        await clock.advance(1)
        await system.cancel_schedule("stale")
        release.set()
        await clock.advance(0)
        metrics = system.scheduler_metrics()
        assert metrics.ticks_delivered == 5  # 4 of "x" + the stale "z", handed over
        assert metrics.ticks_dead_lettered == 2 == len(letters)  # each counted once
        assert metrics.ticks_discarded == 1
        assert metrics.live_schedules == 1


async def test_a_dead_lettered_tick_is_counted_once() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()), supervisor=Directive.SUSPEND)
        target.tell(("fail", RuntimeError("boom")))
        await clock.advance(0)
        await system.schedule("x", target, 1)
        await clock.advance(5)
        assert system.scheduler_metrics().ticks_dead_lettered == 5
        assert system.dead_letters == 5


async def test_metrics_lateness_is_zero_on_time_and_reflects_stalls() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        empty = system.scheduler_metrics()
        assert (empty.lateness_p50, empty.lateness_p99) == (0.0, 0.0)
        await system.schedule("x", target, 1)
        await clock.advance(98)
        await clock.jump(2.5)  # t = 100.5: the tick due at 99 fires 1.5 s late, 100 coalesced
        metrics = system.scheduler_metrics()
        assert metrics.ticks_delivered == 99
        assert metrics.lateness_p50 == 0.0
        assert metrics.lateness_p99 == pytest.approx(1.5)
        assert metrics.lateness_max == pytest.approx(1.5)
