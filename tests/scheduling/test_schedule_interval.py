# SPDX-License-Identifier: Apache-2.0
"""`schedule`: fixed-rate repeating delivery, without drift, coalescing after a stall."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from tests.scheduling.scheduling_support import Log, blocker, recorder, running_system


async def test_first_tick_is_one_interval_from_now() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await clock.advance(7)
        await system.schedule("tick", pid, 2)
        await clock.advance(1.5)
        assert log.messages == []
        await clock.advance(0.5)
        assert log.times == [9.0]


async def test_ticks_are_delivered_every_interval_at_their_own_time() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 1.5)
        await clock.advance(7.5)
        assert log.times == [1.5, 3.0, 4.5, 6.0, 7.5]


async def test_interval_accepts_a_timedelta() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, timedelta(milliseconds=250))
        await clock.advance(1)
        assert log.times == [0.25, 0.5, 0.75, 1.0]


async def test_a_late_tick_does_not_shift_the_following_ones() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 1)
        await clock.jump(1.75)  # the first tick (due at 1) fires 0.75 s late
        await clock.advance(2.25)
        assert log.times == [1.75, 2.0, 3.0, 4.0]


async def test_nth_tick_is_due_at_start_plus_n_intervals_without_accumulated_error() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await clock.advance(0.3)
        await system.schedule("tick", pid, 0.1)
        for _ in range(20):
            await clock.jump(0.37)  # every tick late by a different amount
        stalled_until = clock.monotonic()
        await clock.advance(10)
        # After the stalls, every tick sits on the grid 0.3 + n * 0.1.
        on_grid = [t for t in log.times if t > stalled_until + 1e-6]
        assert on_grid
        for t in on_grid:
            n = round((t - 0.3) / 0.1)
            assert t == pytest.approx(0.3 + n * 0.1, abs=1e-9)
        gaps = [b - a for a, b in itertools.pairwise(on_grid)]
        assert all(g == pytest.approx(0.1, abs=1e-9) for g in gaps)


async def test_stall_longer_than_an_interval_coalesces_overdue_ticks_into_one_delivery() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 1)
        await clock.jump(10.5)
        assert log.times == [10.5]  # one delivery, not ten
        await clock.advance(0.4)
        assert log.times == [10.5]
        await clock.advance(0.1)
        assert log.times == [10.5, 11.0]  # back on the original grid


async def test_stall_ending_exactly_on_a_grid_point_delivers_once_and_keeps_the_grid() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 2)
        await clock.jump(8)
        await clock.advance(2)
        assert log.times == [8.0, 10.0]


async def test_repeated_stalls_never_produce_a_burst() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 1)
        for _ in range(5):
            await clock.jump(100)
        assert len(log.messages) == 5
        assert system.scheduler_metrics().ticks_delivered == 5


async def test_ticks_queue_up_behind_a_busy_actor_without_suppression() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        block, release = blocker()
        pid.tell(block)
        await system.schedule("tick", pid, 1)
        await clock.advance(3)
        assert log.messages == []
        release.set()
        await clock.advance(0)
        assert log.messages == ["tick", "tick", "tick"]
