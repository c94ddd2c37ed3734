# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Time: one clock, one heap, one timer" as executable statements: one small test
per sentence that names a public name, a signature, a default, an error type or a
behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

import pytest
from tests.design.design_support import (
    T0,
    manual,
    messages,
    params,
    recorder,
)

from tocsin import (
    Actor,
    Clock,
    ManualClock,
    ReceiveContext,
)


def test_clock_abc_has_monotonic_wall_and_call_at() -> None:
    assert {"monotonic", "wall", "call_at"} <= Clock.__abstractmethods__
    assert list(params(Clock.call_at))[1:] == ["deadline", "callback"] or list(
        params(Clock.call_at)
    )[1:3] == ["when", "callback"]


def test_manual_clock_signature_wall_defaults_to_none() -> None:
    p = params(ManualClock)
    assert next(iter(p)) == "wall"
    assert p["wall"].default is None


def test_manual_clock_wall_accepts_epoch_and_aware_datetime() -> None:
    assert ManualClock(wall=0).wall() == 0.0
    assert ManualClock(wall=T0).wall() == T0.timestamp()
    assert ManualClock(wall=T0).monotonic() == 0.0


async def test_advance_fires_each_deadline_at_its_own_time_in_order() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_once("b", pid, 2.0)
        await system.schedule_once("a", pid, 1.0)
        await system.schedule_once("c", pid, 3.0)
        await clock.advance(10)
        assert [(m, t) for m, _, t in actor.got] == [("a", 1.0), ("b", 2.0), ("c", 3.0)]


async def test_advance_fires_deadlines_equal_to_now_plus_s() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_once("edge", pid, 1.0)
        await clock.advance(1.0)
        assert messages(actor) == ["edge"]


async def test_advance_lets_the_resulting_messages_be_processed_before_returning() -> None:
    class Chain(Actor):
        def __init__(self) -> None:
            self.seen: list[str] = []

        async def receive(self, ctx: ReceiveContext) -> None:
            self.seen.append(ctx.message)
            if ctx.message == "tick":
                ctx.self.tell("follow-up")

    actor = Chain()
    async with manual() as (system, clock):
        pid = await system.spawn(lambda: actor)
        await system.schedule_once("tick", pid, 1)
        await clock.advance(1)
        assert actor.seen == ["tick", "follow-up"]


async def test_advance_with_interval_delivers_each_tick_at_its_time() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule("t", pid, 1.0)
        await clock.advance(3.5)
        assert [t for _, _, t in actor.got] == [1.0, 2.0, 3.0]


async def test_jump_is_a_stall_what_came_due_fires_late_once() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule("t", pid, 1.0)
        await clock.jump(5.5)
        assert [t for _, _, t in actor.got] == [5.5]  # coalesced, late, once
        await clock.advance(0.5)
        assert [t for _, _, t in actor.got] == [5.5, 6.0]  # fixed rate: no drift


async def test_advance_rejects_negative_time() -> None:
    clock = ManualClock(wall=0)
    with pytest.raises(ValueError, match="backwards"):
        await clock.advance(-1)


def test_set_wall_moves_wall_time_only() -> None:
    clock = ManualClock(wall=0)
    clock.set_wall(T0)
    assert clock.wall() == T0.timestamp()
    assert clock.monotonic() == 0.0
