# SPDX-License-Identifier: Apache-2.0
"""`schedule_cron`: wall-clock fire times armed on the monotonic heap.

Wall time is driven with ``ManualClock(wall=...)``, ``jump_wall`` (an NTP step or a manual
clock change) and ``jump`` (a stall). DST changes never move epoch time, so crossing one
is just letting time pass in a zone that has them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from tests.scheduling.scheduling_support import (
    EPOCH,
    Log,
    blocker,
    capture_dead_letters,
    recorder,
    running_system,
)

from tocsin import (
    Actor,
    DeadActorError,
    InvalidCronExpressionError,
    InvalidTimezoneError,
    NoSender,
    ReceiveContext,
    ScheduleAlreadyExistsError,
    ScheduleKind,
)
from tocsin.cron import CronExpression

EVERY_MINUTE = "0 * * * * ?"
EVERY_10_SECONDS = "0/10 * * * * ?"
NOON = "0 0 12 * * ?"


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def local(epochs: list[float], zone: str) -> list[datetime]:
    return [datetime.fromtimestamp(e, ZoneInfo(zone)) for e in epochs]


class CronOwner(Actor):
    """Makes a cron schedule through its context on ("cron", target, expression, reference)."""

    async def receive(self, ctx: ReceiveContext) -> None:
        _, target, expression, reference = ctx.message
        await ctx.schedule_cron("tick", target, expression, reference=reference)


# -- firing ------------------------------------------------------------------------------


async def test_cron_delivers_at_each_fire_time() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        ref = await system.schedule_cron("tick", pid, EVERY_10_SECONDS)
        assert isinstance(ref, str)
        assert ref
        await clock.advance(35)
        assert log.times == [10.0, 20.0, 30.0]
        assert [datetime.fromtimestamp(w, UTC) for w in log.walls] == [
            EPOCH + timedelta(seconds=s) for s in (10, 20, 30)
        ]


async def test_first_fire_is_strictly_after_now_even_on_a_fire_time() -> None:
    async with running_system(wall=utc(2030, 1, 1, 0, 0, 0)) as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
        await clock.advance(59)
        assert log.messages == []
        await clock.advance(1)
        assert log.times == [60.0]


async def test_cron_is_evaluated_in_the_system_zone_by_default() -> None:
    async with running_system(timezone="Europe/Paris") as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("noon", pid, NOON)
        await clock.advance(24 * 3600)
        assert local(log.walls, "Europe/Paris") == [
            datetime(2030, 1, 1, 12, tzinfo=ZoneInfo("Europe/Paris"))
        ]
        assert log.times == [11 * 3600.0]  # 12:00 CET is 11:00 UTC


async def test_timezone_argument_overrides_the_system_zone() -> None:
    async with running_system(timezone="Europe/Paris") as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("noon", pid, NOON, timezone="America/New_York")
        await clock.advance(24 * 3600)
        assert log.times == [17 * 3600.0]  # 12:00 EST is 17:00 UTC
        [info] = system.list_schedules()
        assert info.timezone == "America/New_York"


async def test_monotonic_stall_coalesces_overdue_fire_times_into_one_delivery() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_10_SECONDS)
        await clock.jump(35)
        assert log.times == [35.0]
        await clock.advance(5)
        assert log.times == [35.0, 40.0]


async def test_ticks_of_cron_schedule_carry_the_default_senders() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(CronOwner)
        await system.schedule_cron("from-system", target, EVERY_MINUTE)
        owner.tell(("cron", target, EVERY_MINUTE, None))
        await clock.advance(60)
        senders = {r.message: r.sender for r in log.received}
        assert senders == {"from-system": NoSender, "tick": owner}


# -- listing, references, ownership -------------------------------------------------------


async def test_cron_schedule_is_listed_with_expression_zone_and_next_fire_time() -> None:
    async with running_system(timezone="America/New_York") as (system, _clock):
        pid = await system.spawn(recorder(Log()), "target")
        await system.schedule_cron("x", pid, NOON, reference="lunch")
        [info] = system.list_schedules()
        assert info.reference == "lunch"
        assert info.kind is ScheduleKind.CRON
        assert info.cron == NOON
        assert info.timezone == "America/New_York"
        assert info.interval is None
        assert info.next_fire_at == utc(2030, 1, 1, 17)
        assert info.next_fire_at is not None
        assert info.next_fire_at.tzinfo is UTC
        assert info.target == "/user/target"
        await system.pause_schedule("lunch")
        [info] = system.list_schedules()
        assert info.paused
        assert info.next_fire_at is None


async def test_cron_reference_is_in_the_shared_namespace_and_replace_upserts() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("interval", pid, 1000, reference="job")
        with pytest.raises(ScheduleAlreadyExistsError):
            await system.schedule_cron("cron", pid, EVERY_MINUTE, reference="job")
        await system.schedule_cron("cron", pid, EVERY_MINUTE, reference="job", replace=True)
        [info] = system.list_schedules()
        assert info.kind is ScheduleKind.CRON
        await clock.advance(120)
        assert log.messages == ["cron", "cron"]


async def test_cron_schedule_made_in_an_actor_is_cancelled_when_it_fully_stops() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(CronOwner)
        owner.tell(("cron", target, EVERY_MINUTE, "owned"))
        await clock.advance(60)
        [info] = system.list_schedules()
        assert info.owner == owner.path
        await system.stop_actor(owner)
        assert system.list_schedules() == []
        await clock.advance(600)
        assert log.times == [60.0]


async def test_cron_schedule_survives_a_restart_of_its_owner() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(CronOwner)
        owner.tell(("cron", target, EVERY_MINUTE, "owned"))
        await clock.advance(30)
        owner.tell("not a tuple of four")  # fails to unpack: restart
        await clock.advance(90)
        assert log.times == [60.0, 120.0]


async def test_cancelled_cron_schedule_never_fires_again() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE, reference="c")
        await clock.advance(60)
        await system.cancel_schedule("c")
        await clock.advance(600)
        assert log.times == [60.0]


async def test_cron_tick_already_queued_is_discarded_after_cancel() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        block, release = blocker()
        pid.tell(block)
        await system.schedule_cron("tick", pid, EVERY_10_SECONDS, reference="c")
        await clock.advance(30)
        await system.cancel_schedule("c")
        release.set()
        await clock.advance(0)
        assert log.messages == []


async def test_system_stop_cancels_cron_schedules() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
    assert clock.next_deadline() is None


async def test_cron_to_a_stopped_target_is_dead_lettered_once_then_dropped() -> None:
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        pid = await system.spawn(recorder(Log()))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
        await system.stop_actor(pid)
        await clock.advance(600)
        assert [d.message for d in letters] == ["tick"]
        assert system.list_schedules() == []


# -- pause / resume ----------------------------------------------------------------------


async def test_resumed_cron_fires_at_its_next_time_after_now_without_replaying() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE, reference="c")
        await clock.advance(90)  # fired at 60
        await system.pause_schedule("c")
        await system.pause_schedule("c")  # no-op
        await clock.advance(160)  # t = 250: 120, 180 and 240 were missed while paused
        await system.resume_schedule("c")
        await clock.advance(49)
        assert log.times == [60.0]
        await clock.advance(1)
        assert log.times == [60.0, 300.0]


async def test_cron_resumed_after_a_wall_jump_fires_at_the_next_time_after_the_new_now() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE, reference="c")
        await system.pause_schedule("c")
        clock.jump_wall(3600 + 30)  # wall 01:00:30
        await system.resume_schedule("c")
        await clock.advance(29)
        assert log.messages == []
        await clock.advance(1)
        assert [datetime.fromtimestamp(w, UTC) for w in log.walls] == [utc(2030, 1, 1, 1, 1)]


# -- wall-clock jumps --------------------------------------------------------------------


async def test_backward_wall_jump_never_fires_the_same_tick_twice() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
        await clock.advance(60)  # fired at wall 00:01:00
        clock.jump_wall(-45)  # wall 00:00:15: 00:01:00 comes round again
        await clock.advance(60)  # wall 00:01:15
        assert len(log.messages) == 1
        await clock.advance(45)  # wall 00:02:00
        assert [datetime.fromtimestamp(w, UTC) for w in log.walls] == [
            utc(2030, 1, 1, 0, 1),
            utc(2030, 1, 1, 0, 2),
        ]
        assert log.times == [60.0, 165.0]


async def test_large_backward_wall_jump_waits_for_wall_time_to_catch_up() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
        await clock.advance(60)
        clock.jump_wall(-3600)
        await clock.advance(3600 + 59)
        assert len(log.messages) == 1
        await clock.advance(1)
        assert len(log.messages) == 2


async def test_forward_wall_jump_fires_the_skipped_tick_once_not_a_burst() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
        await clock.advance(30)
        clock.jump_wall(3600)  # wall 01:00:30: sixty fire times were skipped
        await clock.advance(0)
        assert log.times == [30.0]  # coalesced into one
        await clock.advance(29)
        assert len(log.messages) == 1
        await clock.advance(1)  # wall 01:01:00
        assert log.times == [30.0, 60.0]
        assert datetime.fromtimestamp(log.walls[-1], UTC) == utc(2030, 1, 1, 1, 1)


async def test_forward_wall_jump_short_of_the_next_fire_time_just_brings_it_closer() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE)
        clock.jump_wall(40)  # wall 00:00:40
        await clock.advance(19)
        assert log.messages == []
        await clock.advance(1)
        assert log.times == [20.0]


async def test_wall_jump_does_not_touch_a_paused_cron_schedule() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, EVERY_MINUTE, reference="c")
        await system.pause_schedule("c")
        clock.jump_wall(3600)
        await clock.advance(600)
        assert log.messages == []


# -- DST ---------------------------------------------------------------------------------

#: (zone, a local midnight two days before a DST change, the change's direction)
DST_CASES = [
    ("Europe/Paris", datetime(2030, 3, 29), "spring"),  # 31 Mar 2030 02:00 -> 03:00
    ("Europe/Paris", datetime(2030, 10, 25), "fall"),  # 27 Oct 2030 03:00 -> 02:00
    ("America/New_York", datetime(2030, 3, 8), "spring"),  # 10 Mar 2030 02:00 -> 03:00
    ("America/New_York", datetime(2030, 11, 1), "fall"),  # 3 Nov 2030 02:00 -> 01:00
]


@pytest.mark.parametrize(("zone", "start", "direction"), DST_CASES, ids=lambda c: str(c))
async def test_daily_cron_fires_at_the_same_local_time_across_a_dst_change(
    zone: str, start: datetime, direction: str
) -> None:
    tz = ZoneInfo(zone)
    async with running_system(wall=start.replace(tzinfo=tz), timezone=zone) as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("noon", pid, NOON)
        await clock.advance(4 * 24 * 3600)
        fired = local(log.walls, zone)
        assert [(d.day, d.hour, d.minute) for d in fired] == [
            ((start + timedelta(days=n)).day, 12, 0) for n in range(4)
        ]
        gaps = [b - a for a, b in zip(log.times, log.times[1:], strict=False)]
        change = 23 * 3600.0 if direction == "spring" else 25 * 3600.0
        assert sorted(gaps) == sorted([24 * 3600.0, 24 * 3600.0, change])


@pytest.mark.parametrize(("zone", "start", "direction"), DST_CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("expression", ["0 0 * * * ?", "0 30 2 * * ?", "0 30 1 * * ?"])
async def test_cron_across_a_dst_change_fires_each_fire_time_of_its_expression_once(
    zone: str, start: datetime, direction: str, expression: str
) -> None:
    tz = ZoneInfo(zone)
    begin = start.replace(tzinfo=tz)
    async with running_system(wall=begin, timezone=zone) as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("tick", pid, expression)
        horizon = 4 * 24 * 3600
        await clock.advance(horizon)
        expected = []
        for fire in CronExpression.parse(expression).iter_after(begin):
            if fire.timestamp() > begin.timestamp() + horizon:
                break
            expected.append(fire.timestamp())
        assert log.walls == expected
        assert len(set(log.walls)) == len(log.walls)  # never twice
        assert log.times == [w - begin.timestamp() for w in expected]  # armed on time


# -- errors and the end of an expression -------------------------------------------------


async def test_expression_with_no_fire_time_after_now_raises_invalid_cron_expression() -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(InvalidCronExpressionError, match="no fire time after now"):
            await system.schedule_cron("x", pid, "0 0 0 1 1 ? 2029")
        assert system.list_schedules() == []


@pytest.mark.parametrize("expression", ["", "* * *", "61 * * * * ?", "0 0 25 * * ?", 42])
async def test_malformed_expression_raises_invalid_cron_expression(expression: object) -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(InvalidCronExpressionError):
            await system.schedule_cron("x", pid, expression)  # type: ignore[arg-type]
        assert system.list_schedules() == []


@pytest.mark.parametrize("zone", ["Mars/Olympus", "", "not a zone"])
async def test_unknown_timezone_raises_invalid_timezone(zone: str) -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(InvalidTimezoneError):
            await system.schedule_cron("x", pid, EVERY_MINUTE, timezone=zone)


async def test_cron_to_a_stopped_target_raises_dead_actor() -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        await system.stop_actor(pid)
        with pytest.raises(DeadActorError):
            await system.schedule_cron("x", pid, EVERY_MINUTE)


async def test_cron_whose_last_fire_time_has_passed_is_removed_after_delivering_it() -> None:
    async with running_system(wall=utc(2030, 12, 31, 23, 59)) as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_cron("new year", pid, "0 0 0 1 1 ? 2031", reference="ny")
        [info] = system.list_schedules()
        assert info.next_fire_at == utc(2031, 1, 1)
        await clock.advance(60)
        assert log.messages == ["new year"]
        assert system.list_schedules() == []
        await clock.advance(3600)
        assert log.messages == ["new year"]


async def test_last_cron_tick_waiting_in_a_busy_mailbox_is_still_delivered() -> None:
    async with running_system(wall=utc(2030, 12, 31, 23, 59)) as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        block, release = blocker()
        pid.tell(block)
        await system.schedule_cron("new year", pid, "0 0 0 1 1 ? 2031", reference="ny")
        await clock.advance(60)
        [info] = system.list_schedules()  # listed until its last tick is handled
        assert info.next_fire_at is None
        await system.resume_schedule("ny")  # not paused: a no-op
        release.set()
        await clock.advance(0)
        assert log.messages == ["new year"]
        assert system.list_schedules() == []
