# SPDX-License-Identifier: Apache-2.0
"""Cron and interval schedules with ``dst=``, ``jitter=`` and ``exclude=``, and ``ctx.tick``
on every scheduled delivery. ManualClock only."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from tests.scheduling.scheduling_support import TickRecorder, record_outcomes, running_system

from tocsin import Calendar, DSTPolicy, Misfire, Outcome, Overlap, Tick
from tocsin.triggers import jitter_offset

Log = list[tuple[Any, Tick | None, float]]


@pytest.mark.parametrize("zone", ["Europe/Paris", "America/New_York"])
async def test_never_skip_daily_0230_runs_exactly_once_every_day_for_three_years(
    zone: str,
) -> None:
    log: Log = []
    tz = ZoneInfo(zone)
    begin = datetime(2025, 1, 1, tzinfo=tz)
    async with running_system(wall=begin, timezone=zone) as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron(
            "t", pid, "0 30 2 * * ?", reference="d", dst=DSTPolicy.never_skip()
        )
        await clock.advance((datetime(2028, 1, 1, tzinfo=tz) - begin).total_seconds())
    days = Counter(tick.instant.astimezone(tz).date() for _, tick, _ in log if tick is not None)
    expected = {
        date(2025, 1, 1) + timedelta(days=i) for i in range(365 * 3)
    }  # 2025-2027: no leap year
    assert set(days) == expected
    assert set(days.values()) == {1}
    # The spring-forward day fires at the first instant after the gap (03:00), the
    # fall-back day at the first 02:30 (daylight time).
    walls = {
        tick.instant.astimezone(tz).date(): tick.instant.astimezone(tz)
        for _, tick, _ in log
        if tick is not None
    }
    spring = date(2025, 3, 30) if zone == "Europe/Paris" else date(2025, 3, 9)
    assert (walls[spring].hour, walls[spring].minute) == (3, 0)
    if zone == "Europe/Paris":  # 03:00 -> 02:00: 02:30 occurs twice (New York repeats 01:xx)
        autumn = date(2025, 10, 26)
        assert walls[autumn].utcoffset() == walls[autumn - timedelta(days=1)].utcoffset()


async def test_default_dst_skips_the_gap_day_as_quartz_does() -> None:
    log: Log = []
    tz = ZoneInfo("Europe/Paris")
    begin = datetime(2025, 3, 28, tzinfo=tz)
    async with running_system(wall=begin, timezone="Europe/Paris") as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron("t", pid, "0 30 2 * * ?", reference="d")
        await clock.advance(4 * 86400)
    days = [tick.instant.astimezone(tz).day for _, tick, _ in log if tick is not None]
    assert days == [28, 29, 31]


async def test_a_christmas_calendar_skips_exactly_that_day() -> None:
    log: Log = []
    begin = datetime(2030, 12, 20, tzinfo=UTC)
    async with running_system(wall=begin) as (system, clock):
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        christmas = Calendar.dates("2030-12-25")
        await system.schedule_cron("t", pid, "0 0 9 * * ?", reference="c", exclude=christmas)
        await system.schedule("t", pid, 86400, reference="i", exclude=christmas)
        await clock.advance(10 * 86400)
    cron_days = [tick.instant.day for _, tick, _ in log if tick and tick.reference == "c"]
    assert cron_days == [20, 21, 22, 23, 24, 26, 27, 28, 29]
    interval_days = [tick.instant.day for _, tick, _ in log if tick and tick.reference == "i"]
    assert interval_days == [21, 22, 23, 24, 26, 27, 28, 29, 30]
    excluded = [(ref, o) for ref, _, o, _ in outcomes]
    assert sorted(excluded) == [("c", Outcome.EXCLUDED), ("i", Outcome.EXCLUDED)]


async def test_jitter_delays_delivery_keeps_the_nominal_instant_and_shows_in_next_fire_at() -> None:
    log: Log = []
    begin = datetime(2030, 1, 1, tzinfo=UTC)
    async with running_system(wall=begin) as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron("t", pid, "0 * * * * ?", reference="j", jitter=30)
        nominal = begin + timedelta(minutes=1)
        offset = jitter_offset("j", nominal, 30, 60)
        assert 0 <= offset < 30
        info = system.list_schedules()[0]
        assert info.next_fire_at == datetime.fromtimestamp(nominal.timestamp() + offset, UTC)
        await clock.advance(60 + offset - 0.001)
        assert log == []
        await clock.advance(0.002)
        assert len(log) == 1
        _, tick, at = log[0]
        assert tick is not None
        assert tick.instant == nominal
        assert at == pytest.approx(60 + offset)


async def test_interval_jitter_stays_within_the_window_and_keeps_fixed_rate() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 10, reference="ij", jitter=5)
        await clock.advance(100)
        instants = [tick.instant.timestamp() - start for _, tick, _ in log if tick is not None]
        assert [round(i, 6) for i in instants] == [10.0 * k for k in range(1, 10)] or [
            round(i, 6) for i in instants
        ] == [10.0 * k for k in range(1, 11)]
        for (_, tick, at), nominal in zip(log, instants, strict=True):
            assert tick is not None
            assert nominal <= at < nominal + 5


def test_jitter_of_100000_schedules_on_one_minute_is_uniform_within_5_percent() -> None:
    # The offset path the scheduler uses (Scheduler._jitter_cron): one hash of
    # (reference, nominal instant), capped at the gap to the next instant.
    instant = datetime(2030, 1, 1, 0, 0, tzinfo=UTC)
    buckets = Counter(int(jitter_offset(f"job-{i}", instant, 60, 60) // 6) for i in range(100_000))
    assert set(buckets) == set(range(10))
    for count in buckets.values():
        assert abs(count - 10_000) <= 500


async def test_cron_jitter_is_capped_at_the_gap_to_the_next_instant() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron("t", pid, "* * * * * ?", reference="cap", jitter=3600)
        await clock.advance(10.5)
        got = [tick.instant.timestamp() - start for _, tick, _ in log if tick is not None]
        assert got == [float(s) for s in range(1, len(got) + 1)]
        assert len(got) >= 9
        for (_, _, at), nominal in zip(log, got, strict=True):
            assert nominal <= at < nominal + 1


async def test_ctx_tick_for_every_scheduled_delivery_and_none_otherwise() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_once("once", pid, 5, reference="o")
        await system.schedule("interval", pid, 7, reference="i")
        await system.schedule_cron("cron", pid, "*/10 * * * * ?", reference="c", timezone="UTC")
        await system.schedule("skip", pid, 9, reference="s", overlap=Overlap.SKIP)
        pid.tell("plain")
        assert await pid.ask("ask") == "ok"
        await clock.advance(10)
    got = {
        (m, None if t is None else (t.reference, t.instant.timestamp() - start)) for m, t, _ in log
    }
    assert got == {
        ("plain", None),
        ("ask", None),
        ("once", ("o", 5.0)),
        ("interval", ("i", 7.0)),
        ("skip", ("s", 9.0)),
        ("cron", ("c", 10.0)),
    }
    for _, tick, _ in log:
        if tick is not None:
            assert tick.instant.tzinfo is UTC
            assert (tick.attempt, tick.manual, tick.backfill, tick.fence) == (1, False, False, None)


async def test_misfire_and_jitter_together_on_cron() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron(
            "t", pid, "0 * * * * ?", reference="mj", jitter=10, misfire=Misfire.skip()
        )
        await clock.jump(3600)
        assert log == []
        await clock.advance(70)
        assert len(log) == 1


@pytest.mark.parametrize("kind", ["interval", "cron"])
async def test_grace_counts_from_the_jittered_delivery_time(kind: str) -> None:
    log: Log = []
    async with running_system() as (system, clock):
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        misfire = Misfire.once(grace=1)
        if kind == "interval":
            await system.schedule("t", pid, 60, reference="g", jitter=50, misfire=misfire)
        else:
            await system.schedule_cron(
                "t", pid, "0 * * * * ?", reference="g", jitter=50, misfire=misfire
            )
        await clock.advance(600)
        assert len(log) >= 9
        assert outcomes == []


async def test_skip_on_cron_with_a_blocked_handler() -> None:
    async with running_system() as (system, clock):
        from tests.scheduling.scheduling_support import blocker

        from tocsin import Actor, ReceiveContext

        seen: list[int] = []
        block, release = blocker()

        class Slow(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                if isinstance(ctx.message, tuple):
                    await ctx.message[1].wait()
                    return
                assert ctx.tick is not None
                seen.append(ctx.tick.instant.second)

        pid = await system.spawn(Slow)
        pid.tell(block)
        await system.schedule_cron(
            "t", pid, "* * * * * ?", reference="cs", timezone="UTC", overlap=Overlap.SKIP
        )
        await clock.advance(3)
        release.set()
        await clock.advance(0)
        assert seen == [1]
        await clock.advance(1)
        assert seen == [1, 4]
