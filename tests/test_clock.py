# SPDX-License-Identifier: Apache-2.0
"""ManualClock and SystemClock: advance, jump, wall time, autojump."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from typing import Any

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    AskTimeoutError,
    ManualClock,
    ReceiveContext,
    SystemClock,
)


class Recorder(Actor):
    def __init__(self, log: list[Any], clock: ManualClock) -> None:
        self.log = log
        self.clock = clock

    async def receive(self, ctx: ReceiveContext) -> None:
        await asyncio.sleep(0)
        self.log.append((ctx.message, self.clock.monotonic()))


class Silent(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (-1, "time can't go backwards"),
        (-1e-9, "time can't go backwards"),
        (float("nan"), "got NaN"),
        (float("inf"), "must be finite, got inf"),
    ],
)
async def test_advance_with_negative_or_non_finite_seconds_raises_value_error(
    bad: float, message: str
) -> None:
    clock = ManualClock(wall=0)
    with pytest.raises(ValueError, match=message):
        await clock.advance(bad)
    with pytest.raises(ValueError, match=message):
        await clock.jump(bad)
    assert clock.monotonic() == 0


async def test_advance_nan_names_nan_not_going_backwards() -> None:
    # Issue 10 item 12: NaN is not a negative number; the message must not say so.
    clock = ManualClock(wall=0)
    with pytest.raises(ValueError) as info:
        await clock.advance(float("nan"))
    assert "NaN" in str(info.value)
    assert "backwards" not in str(info.value)
    with pytest.raises(TypeError, match="must be a number of seconds"):
        await clock.advance("1")  # type: ignore[arg-type]


async def test_monotonic_starts_at_zero_and_wall_at_the_given_time() -> None:
    clock = ManualClock(wall=datetime(2024, 3, 1, tzinfo=UTC))
    assert clock.monotonic() == 0
    assert clock.wall_datetime() == datetime(2024, 3, 1, tzinfo=UTC)
    await clock.advance(90)
    assert clock.monotonic() == 90
    assert clock.wall_datetime() == datetime(2024, 3, 1, 0, 1, 30, tzinfo=UTC)


def test_initial_wall_defaults_to_the_injectable_real_wall_source() -> None:
    original = ManualClock.real_wall
    try:
        ManualClock.real_wall = staticmethod(lambda: 1234.5)
        assert ManualClock().wall() == 1234.5
    finally:
        ManualClock.real_wall = original


def test_initial_wall_rejects_naive_datetimes_and_non_numbers() -> None:
    with pytest.raises(ValueError, match="aware"):
        ManualClock(wall=datetime(2024, 1, 1))
    with pytest.raises(TypeError, match="epoch seconds"):
        ManualClock(wall=True)
    with pytest.raises(TypeError, match="epoch seconds"):
        ManualClock(wall="2024")  # type: ignore[arg-type]


async def test_advance_fires_every_due_deadline_in_order_at_its_own_time() -> None:
    clock = ManualClock(wall=0)
    fired: list[tuple[str, float]] = []

    def fire(name: str) -> None:
        fired.append((name, clock.monotonic()))

    for name, when in [("c", 3.0), ("a", 1.0), ("b", 2.0), ("late", 5.0), ("b2", 2.0)]:
        clock.call_at(when, partial(fire, name))
    await clock.advance(3)
    assert fired == [("a", 1.0), ("b", 2.0), ("b2", 2.0), ("c", 3.0)]
    assert clock.monotonic() == 3
    assert clock.next_deadline() == 5.0


async def test_advance_fires_a_deadline_armed_by_a_callback_within_the_window() -> None:
    clock = ManualClock(wall=0)
    fired: list[float] = []

    def first() -> None:
        fired.append(clock.monotonic())
        clock.call_at(clock.monotonic() + 1, lambda: fired.append(clock.monotonic()))

    clock.call_at(1, first)
    await clock.advance(2)
    assert fired == [1.0, 2.0]


async def test_cancelled_timer_never_fires() -> None:
    clock = ManualClock(wall=0)
    fired: list[int] = []
    handle = clock.call_at(1, lambda: fired.append(1))
    clock.call_at(2, lambda: fired.append(2))
    handle.cancel()
    assert clock.next_deadline() == 2
    await clock.advance(5)
    assert fired == [2]
    assert clock.next_deadline() is None


async def test_advance_lets_resulting_messages_be_processed_before_the_next_deadline() -> None:
    clock = ManualClock(wall=0)
    log: list[Any] = []
    async with ActorSystem("t", clock=clock) as system:
        pid = await system.spawn(lambda: Recorder(log, clock))
        clock.call_at(1, lambda: pid.tell("one"))
        clock.call_at(2, lambda: pid.tell("two"))
        await clock.advance(10)
        assert log == [("one", 1.0), ("two", 2.0)]


async def test_jump_moves_time_at_once_and_fires_what_came_due_late_once() -> None:
    clock = ManualClock(wall=0)
    fired: list[tuple[str, float]] = []
    clock.call_at(1, lambda: fired.append(("a", clock.monotonic())))
    clock.call_at(4, lambda: fired.append(("b", clock.monotonic())))
    clock.call_at(20, lambda: fired.append(("c", clock.monotonic())))
    await clock.jump(10)
    assert fired == [("a", 10.0), ("b", 10.0)]
    assert clock.monotonic() == 10
    assert clock.wall() == 10


def test_set_wall_and_jump_wall_move_wall_time_without_monotonic_time() -> None:
    clock = ManualClock(wall=1000)
    deltas: list[float] = []
    unsubscribe = clock.on_wall_jump(deltas.append)
    clock.jump_wall(-3600)
    assert clock.wall() == 1000 - 3600
    assert clock.monotonic() == 0
    clock.set_wall(datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    assert clock.wall_datetime() == datetime(2024, 1, 1, tzinfo=UTC)
    assert clock.monotonic() == 0
    assert deltas[0] == -3600
    assert deltas[1] == datetime(2024, 1, 1, tzinfo=UTC).timestamp() - (1000 - 3600)
    unsubscribe()
    unsubscribe()  # idempotent
    clock.jump_wall(5)
    assert len(deltas) == 2


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_jump_wall_rejects_non_finite_seconds(bad: float) -> None:
    clock = ManualClock(wall=0)
    with pytest.raises(ValueError, match="finite"):
        clock.jump_wall(bad)
    assert clock.wall() == 0


async def test_autojump_moves_to_the_next_deadline_when_everything_is_idle() -> None:
    clock = ManualClock(wall=0, autojump=True)
    async with ActorSystem("t", clock=clock) as system:
        pid = await system.spawn(Silent)
        with pytest.raises(AskTimeoutError):
            await pid.ask("never answered", timeout=3600)
        assert clock.monotonic() == 3600


async def test_autojump_can_be_enabled_later_and_disabled() -> None:
    clock = ManualClock(wall=0)
    async with ActorSystem("t", clock=clock) as system:
        pid = await system.spawn(Silent)
        asking = asyncio.create_task(pid.ask("x", timeout=60))
        await clock.settle()
        assert not asking.done()
        clock.autojump = True
        with pytest.raises(AskTimeoutError):
            await asking
        assert clock.monotonic() == 60
        clock.autojump = False
        asking = asyncio.create_task(pid.ask("x", timeout=60))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not asking.done()
        asking.cancel()


async def test_autojump_without_a_system_waits_for_a_deadline_then_jumps_to_it() -> None:
    clock = ManualClock(wall=0, autojump=True)
    fired = asyncio.Event()
    await asyncio.sleep(0)
    clock.call_at(500, fired.set)
    await fired.wait()
    assert clock.monotonic() == 500
    clock.autojump = False


async def test_system_clock_offsets_monotonic_and_call_at_consistently() -> None:
    clock = SystemClock(offset=1e6)
    loop = asyncio.get_running_loop()
    assert abs(clock.monotonic() - (loop.time() + 1e6)) < 1.0
    fired = asyncio.Event()
    clock.call_at(clock.monotonic(), fired.set)  # due now: runs on the next loop turn
    await fired.wait()
    assert abs(clock.wall() - datetime.now(UTC).timestamp()) < 5


# -- OffsetClock (cluster time, issue 20 item 5) ---------------------------------------


def test_offset_clock_adds_its_offset_to_wall_time_only() -> None:
    from tocsin.clock import OffsetClock

    inner = ManualClock(wall=1_000.0)
    clock = OffsetClock(inner, 30.0)
    assert clock.inner is inner
    assert (clock.wall(), clock.monotonic()) == (1_030.0, 0.0)
    assert clock.wall_datetime() == datetime.fromtimestamp(1_030.0, UTC)
    assert clock.reports_wall_jumps is True  # the inner ManualClock's
    clock.set_offset(-2.5)
    assert (clock.offset, clock.wall()) == (-2.5, 997.5)


async def test_offset_clock_timers_and_trackers_are_the_inner_clocks() -> None:
    from tocsin.clock import OffsetClock

    inner = ManualClock(wall=1_000.0)
    clock = OffsetClock(inner, 30.0)
    fired: list[float] = []
    clock.call_at(5.0, lambda: fired.append(inner.monotonic()))
    await inner.advance(10)
    assert fired == [5.0]
    async with ActorSystem(clock=clock) as system:  # attach/detach reach the inner
        assert system.clock is clock
        log: list[Any] = []
        pid = await system.spawn(lambda: Recorder(log, inner))
        await system.schedule_once("x", pid, 1.0)
        await inner.advance(1.0)  # returns after the delivery: the system is attached
        assert log == [("x", 11.0)]


def test_offset_moves_beyond_the_tolerance_are_reported_as_wall_jumps() -> None:
    from tocsin.clock import OffsetClock

    clock = OffsetClock(ManualClock(wall=1_000.0), jump_tolerance=0.05)
    seen: list[float] = []
    clock.on_wall_jump(seen.append)
    clock.set_offset(0.03)
    clock.set_offset(0.04)  # noise: 0.04 from the last report, not reported
    assert seen == []
    clock.set_offset(0.07)  # 0.07 since the last report (none): reported whole
    assert seen == [pytest.approx(0.07)]
    clock.set_offset(0.1)
    clock.set_offset(-30.0)
    assert seen == [pytest.approx(0.07), pytest.approx(-30.07)]


def test_offset_clock_passes_on_the_inner_clocks_jumps_while_it_has_listeners() -> None:
    from tocsin.clock import OffsetClock

    inner = ManualClock(wall=1_000.0)
    clock = OffsetClock(inner, 5.0)
    seen: list[float] = []
    unsubscribe = clock.on_wall_jump(seen.append)
    inner.jump_wall(60)
    assert seen == [60]
    assert clock.wall() == 1_065.0
    unsubscribe()
    inner.jump_wall(-60)
    assert seen == [60]
    assert inner._wall_listeners == []  # no listener left on a shared inner clock


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_offset_clock_rejects_a_non_finite_offset(bad: float) -> None:
    from tocsin.clock import OffsetClock

    with pytest.raises(ValueError, match="`offset` must be a finite number of seconds"):
        OffsetClock(SystemClock(), bad)
    clock = OffsetClock(SystemClock())
    with pytest.raises(ValueError, match="`offset` must be a finite"):
        clock.set_offset(bad)
    with pytest.raises(TypeError, match=r"`inner` must be a tocsin\.Clock"):
        OffsetClock(object())  # type: ignore[arg-type]
