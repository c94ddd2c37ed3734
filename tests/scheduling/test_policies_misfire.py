# SPDX-License-Identifier: Apache-2.0
"""Misfire policies on in-memory schedules: a stall (``ManualClock.jump``, a forward
wall jump) past many instants, and ``grace``. ManualClock only."""

from __future__ import annotations

from typing import Any

import pytest
from tests.scheduling.scheduling_support import (
    TickRecorder,
    capture_dead_letters,
    record_outcomes,
    running_system,
)

from tocsin import Directive, Misfire, Outcome, Supervisor, Tick

Log = list[tuple[Any, Tick | None, float]]


def _instants(log: Log, start: float) -> list[float]:
    return [round(tick.instant.timestamp() - start, 6) for _, tick, _ in log if tick is not None]


async def test_once_coalesces_a_stall_into_one_tick_on_the_first_overdue_instant() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 60, reference="m")
        await clock.jump(6 * 3600)  # 360 instants came due
        assert _instants(log, start) == [60]
        assert outcomes == [("m", start + 60, Outcome.COALESCED, 359)]
        await clock.advance(60)
        assert _instants(log, start) == [60, 6 * 3600 + 60]


async def test_once_cron_coalesces_too() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron("t", pid, "0 * * * * ?", reference="c", timezone="UTC")
        await clock.jump(600.5)
        assert _instants(log, start) == [60]
        assert outcomes == [("c", start + 60, Outcome.COALESCED, 9)]


@pytest.mark.parametrize("kind", ["interval", "cron"])
async def test_skip_delivers_none_of_the_overdue_and_goes_on_on_time(kind: str) -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        if kind == "interval":
            await system.schedule("t", pid, 60, reference="s", misfire=Misfire.skip())
        else:
            await system.schedule_cron(
                "t", pid, "0 * * * * ?", reference="s", timezone="UTC", misfire=Misfire.skip()
            )
        await clock.advance(60)
        assert _instants(log, start) == [60]
        await clock.jump(6 * 3600)
        assert _instants(log, start) == [60]
        assert [(o, d) for _, _, o, d in outcomes] == [(Outcome.MISSED, 360)]
        await clock.advance(60)
        assert _instants(log, start) == [60, 6 * 3600 + 120]


@pytest.mark.parametrize("kind", ["interval", "cron"])
async def test_all_replays_the_most_recent_max_at_most_rate_per_second(kind: str) -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        misfire = Misfire.all(max=100, rate=10)
        if kind == "interval":
            await system.schedule("t", pid, 60, reference="a", misfire=misfire)
        else:
            await system.schedule_cron(
                "t", pid, "0 * * * * ?", reference="a", timezone="UTC", misfire=misfire
            )
        await clock.jump(6 * 3600)  # 360 instants due; the most recent 100 replay
        stalled_at = clock.monotonic()
        await clock.advance(60)  # the replay takes 10 s; the next regular tick is at +60
        instants = _instants(log, start)
        assert instants[:100] == [float(60 * i) for i in range(261, 361)]  # oldest first
        assert instants[100:] == [6 * 3600 + 60.0]  # the new regular tick, on time
        times = [at - stalled_at for _, _, at in log]
        assert times[-1] == 60.0
        replay_times = times[:100]
        for t in replay_times:  # never more than 10 in any second
            assert sum(1 for u in replay_times if t <= u < t + 1) <= 10
        assert replay_times[-1] == pytest.approx(9.9)
        assert [(o, d) for _, _, o, d in outcomes] == [(Outcome.MISSED, 260)]


async def test_all_without_rate_replays_at_once_in_order() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 10, reference="a", misfire=Misfire.all(max=5))
        await clock.jump(100)
        assert _instants(log, start) == [60, 70, 80, 90, 100]


async def test_a_replay_is_dropped_when_the_schedule_is_paused_or_cancelled() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 10, reference="a", misfire=Misfire.all(max=50, rate=1))
        await clock.jump(500)
        assert len(log) == 1
        await clock.advance(2.5)
        assert len(log) == 3
        await system.pause_schedule("a")
        await clock.advance(5)
        assert len(log) == 3
        await system.resume_schedule("a")  # not a misfire: it goes on from now
        await clock.advance(10)
        assert len(log) == 4
        await system.cancel_schedule("a")


async def test_grace_misses_a_tick_delivered_too_late() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 60, reference="g", misfire=Misfire.once(grace=5))
        await clock.advance(60)
        await clock.jump(64)  # the tick of 120 fires 4 s late: within grace
        assert _instants(log, start) == [60, 120]
        await clock.advance(60 - 4)  # 180 on time
        await clock.jump(66)  # 240 fires 6 s late: missed
        assert _instants(log, start) == [60, 120, 180]
        assert [(round(w - start), o) for _, w, o, _ in outcomes] == [(240, Outcome.MISSED)]
        await clock.advance(60 - 6)
        assert _instants(log, start) == [60, 120, 180, 300]


async def test_grace_applies_to_each_replayed_tick() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule(
            "t", pid, 10, reference="g", misfire=Misfire.all(max=10, rate=1, grace=25)
        )
        await clock.jump(100)
        await clock.advance(10)
        # The 10 instants 10..100 replay at 100, 101, ..., 109: instant 10*i goes at
        # 99 + i, 99 - 9*i late; within 25 s only 90 (at 108) and 100 (at 109); then the
        # regular 110 on time.
        assert _instants(log, start) == [90, 100, 110]


async def test_grace_on_a_one_shot() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_once("t", pid, 10, reference="o1", misfire=Misfire.once(grace=1))
        await system.schedule_once("t", pid, 10, reference="o2", misfire=Misfire.skip(grace=5))
        await clock.jump(13)
        assert [tick.reference for _, tick, _ in log if tick is not None] == ["o2"]
        assert system.list_schedules() == []


async def test_a_forward_wall_jump_is_a_misfire_for_cron() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron(
            "t", pid, "0 * * * * ?", reference="w", timezone="UTC", misfire=Misfire.skip()
        )
        clock.jump_wall(3600)
        await clock.advance(0)
        assert log == []
        assert [(o, d) for _, _, o, d in outcomes] == [(Outcome.MISSED, 60)]


async def test_suspended_target_ticks_stay_dead_letters() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        outcomes = record_outcomes(system)

        from tocsin import Actor, ReceiveContext

        class Fragile(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                log.append((ctx.message, ctx.tick, 0.0))
                raise RuntimeError("suspend me")

        pid = await system.spawn(Fragile, supervisor=Supervisor(Directive.SUSPEND))
        await system.schedule("t", pid, 1, reference="x", misfire=Misfire.all(max=3))
        await clock.advance(3)
        assert len(log) == 1
        assert [str(d.reason) for d in letters] == ["suspended", "suspended"]
        assert [o for _, _, o, _ in outcomes] == [Outcome.DEAD_LETTER, Outcome.DEAD_LETTER]


async def test_once_with_grace_after_a_stall_is_judged_by_the_most_recent_instant() -> None:
    log: Log = []
    async with running_system() as (system, clock):
        start = clock.wall()
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 60, reference="og", misfire=Misfire.once(grace=30))
        await clock.jump(6 * 3600 + 10)  # the most recent overdue instant is 10 s old
        assert _instants(log, start) == [60]
        await clock.jump(6 * 3600 + 45)  # now even the most recent one is 55 s old
        assert _instants(log, start) == [60]
