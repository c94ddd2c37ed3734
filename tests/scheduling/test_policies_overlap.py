# SPDX-License-Identifier: Apache-2.0
"""Overlap policies on in-memory schedules (DESIGN.md "Schedule policies"): a tick is in
flight from its send until the target's ``receive`` for it returns; ``SKIP``,
``BUFFER_ONE`` and ``limit(n)`` decide what a tick beyond that does. ManualClock only."""

from __future__ import annotations

from typing import Any

import pytest
from tests.scheduling.scheduling_support import (
    TickRecorder,
    blocker,
    capture_dead_letters,
    record_outcomes,
    running_system,
)

from tocsin import Outcome, Overlap, Tick


def _instants(log: list[tuple[Any, Tick | None, float]]) -> list[float]:
    return [tick.instant.timestamp() for _, tick, _ in log if tick is not None]


async def test_skip_with_a_slow_handler_skips_exactly_the_ticks_that_overlap() -> None:
    log: list[tuple[Any, Tick | None, float]] = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log, hold=2.5))
        await system.schedule("t", pid, 1, reference="s", overlap=Overlap.SKIP)
        await clock.advance(10)
        # Ticks at 1..10; each run takes 2.5 s: 1 runs to 3.5 (2, 3 skipped), 4 runs to
        # 6.5 (5, 6 skipped), 7 to 9.5 (8, 9 skipped), 10 runs.
        assert [t - start for t in _instants(log)] == [1, 4, 7, 10]
        assert [log_time for _, _, log_time in log] == [1, 4, 7, 10]
        skipped = [round(w - start) for ref, w, o, _ in outcomes if o is Outcome.SKIPPED_OVERLAP]
        assert skipped == [2, 3, 5, 6, 8, 9]
        await system.cancel_schedule("s")
        await clock.advance(3)  # let the last run finish before the system stops


async def test_allow_queued_ticks_each_carry_their_own_instant() -> None:
    # A handler blocked on an event: three ticks of one record queue up behind it.
    async with running_system() as (system, clock):
        start = clock.wall()
        seen: list[float] = []
        block, release = blocker()

        from tocsin import Actor, ReceiveContext

        class Slow(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                if isinstance(ctx.message, tuple):
                    await ctx.message[1].wait()
                    return
                assert ctx.tick is not None
                seen.append(ctx.tick.instant.timestamp() - start)

        pid = await system.spawn(Slow)
        pid.tell(block)
        await system.schedule("t", pid, 1, reference="q")
        await clock.advance(4)
        release.set()
        await clock.advance(0)
        assert seen == [1, 2, 3, 4]


async def test_buffer_one_never_holds_two_and_delivers_the_first_waiting() -> None:
    log: list[tuple[Any, Tick | None, float]] = []
    async with running_system() as (system, clock):
        start = clock.wall()
        outcomes = record_outcomes(system)
        pid = await system.spawn(lambda: TickRecorder(log, hold=3.5))
        await system.schedule("t", pid, 1, reference="b", overlap=Overlap.BUFFER_ONE)
        await clock.advance(12)
        # 1 runs 1 to 4.5: 2 waits (3, 4 skipped); 2 runs 4.5 to 8: 5 waits (6, 7 and 8,
        # due as 2 ends, skipped); 5 runs 8 to 11.5: 9 waits (10, 11 skipped); 9 runs
        # from 11.5 and 12 waits.
        assert [t - start for t in _instants(log)] == [1, 2, 5, 9]
        assert [at for _, _, at in log] == [1, 4.5, 8, 11.5]
        skipped = [round(w - start) for _, w, o, _ in outcomes if o is Outcome.SKIPPED_OVERLAP]
        assert skipped == [3, 4, 6, 7, 8, 10, 11]
        await system.cancel_schedule("b")
        await clock.advance(4)  # let the last run finish before the system stops


async def test_limit_three_keeps_at_most_three_in_flight() -> None:
    async with running_system() as (system, clock):
        start = clock.wall()
        seen: list[float] = []
        outcomes = record_outcomes(system)
        block, release = blocker()

        from tocsin import Actor, ReceiveContext

        class Slow(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                if isinstance(ctx.message, tuple):
                    await ctx.message[1].wait()
                    return
                assert ctx.tick is not None
                seen.append(ctx.tick.instant.timestamp() - start)

        pid = await system.spawn(Slow)
        pid.tell(block)
        await system.schedule("t", pid, 1, reference="l", overlap=Overlap.limit(3))
        await clock.advance(6)  # 1, 2, 3 queued (in flight); 4, 5, 6 skipped
        release.set()
        await clock.advance(0)
        assert seen == [1, 2, 3]
        await clock.advance(2)
        assert seen == [1, 2, 3, 7, 8]
        skipped = [round(w - start) for _, w, o, _ in outcomes if o is Outcome.SKIPPED_OVERLAP]
        assert skipped == [4, 5, 6]


@pytest.mark.parametrize("overlap", [Overlap.SKIP, Overlap.BUFFER_ONE, Overlap.limit(2)])
async def test_a_tick_dead_lettered_is_no_longer_in_flight(overlap: Overlap) -> None:
    log: list[tuple[Any, Tick | None, float]] = []
    async with running_system() as (system, clock):
        letters = capture_dead_letters(system)
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 1, reference="d", overlap=overlap)
        await clock.advance(3)
        assert len(log) == 3  # each finished before the next: never an overlap
        assert letters == []


async def test_a_failing_handler_finishes_its_tick() -> None:
    async with running_system() as (system, clock):
        seen: list[int] = []

        from tocsin import Actor, ReceiveContext

        class Failing(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                seen.append(1)
                raise RuntimeError("boom")

        pid = await system.spawn(Failing)
        await system.schedule("t", pid, 1, reference="f", overlap=Overlap.SKIP)
        await clock.advance(3)
        assert seen == [1, 1, 1]  # the restart did not leave a tick in flight for ever


async def test_other_messages_do_not_count_toward_overlap() -> None:
    log: list[tuple[Any, Tick | None, float]] = []
    async with running_system() as (system, clock):
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule("t", pid, 1, reference="o", overlap=Overlap.SKIP)
        for _ in range(5):
            pid.tell("plain")
        await clock.advance(2)
        assert [m for m, tick, _ in log if tick is not None] == ["t", "t"]
        assert [m for m, tick, _ in log if tick is None] == ["plain"] * 5
