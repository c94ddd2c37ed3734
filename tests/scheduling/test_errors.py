# SPDX-License-Identifier: Apache-2.0
"""Typed errors raised at the scheduling call that is wrong."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from tests.scheduling.scheduling_support import EPOCH, Log, recorder, running_system

from tocsin import (
    Actor,
    ActorSystem,
    ActorSystemNotStartedError,
    DeadActorError,
    InvalidIntervalError,
    ManualClock,
    ReceiveContext,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    TocsinError,
)

INVALID = [
    0,
    0.0,
    -1,
    -0.5,
    math.nan,
    math.inf,
    -math.inf,
    True,
    False,
    "1",
    "",
    None,
    b"1",
    [1],
    timedelta(0),
    timedelta(seconds=-1),
    10**400,
]


@pytest.mark.parametrize("value", INVALID, ids=repr)
@pytest.mark.parametrize("call", ["schedule", "schedule_once"])
async def test_invalid_interval_or_delay_raises_invalid_interval_error(
    call: str, value: Any
) -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(InvalidIntervalError) as info:
            await getattr(system, call)("x", pid, value)
        assert isinstance(info.value, ValueError)
        name = "interval" if call == "schedule" else "delay"
        assert f"`{name}`" in str(info.value)
        assert system.list_schedules() == []


@pytest.mark.parametrize("value", [0, -1, math.nan, True, "1", None], ids=repr)
async def test_invalid_interval_through_a_context_raises_invalid_interval_error(
    value: Any,
) -> None:
    errors: list[BaseException] = []

    class Bad(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            try:
                await ctx.schedule("x", ctx.self, value)
            except InvalidIntervalError as exc:
                errors.append(exc)

    async with running_system() as (system, clock):
        pid = await system.spawn(Bad)
        pid.tell("go")
        await clock.advance(0)
        assert len(errors) == 1


@pytest.mark.parametrize(
    "value", [1, 0.001, 2.5, 1e12, timedelta(milliseconds=1), timedelta(days=3650)]
)
async def test_positive_finite_numbers_and_timedeltas_are_accepted(value: Any) -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("x", pid, value)
        await system.schedule_once("x", pid, value)
        assert len(system.list_schedules()) == 2


@pytest.mark.parametrize(
    "value", [5e-324, 1e-9, 1e-7, 0.000999, timedelta(microseconds=999)], ids=repr
)
@pytest.mark.parametrize("call", ["schedule", "schedule_once"])
async def test_durations_below_one_millisecond_are_refused_naming_the_minimum(
    call: str, value: Any
) -> None:
    # Issue 10 item 7: schedule(..., 5e-324) used to kill the timer with OverflowError
    # (ManualClock: advance never returned).
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(InvalidIntervalError, match=r"at least 0\.001 seconds \(1 ms\)"):
            await getattr(system, call)("x", pid, value)
        assert system.list_schedules() == []


async def test_a_one_millisecond_interval_fires_and_advance_returns() -> None:
    log = Log()
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(log))
        await system.schedule("x", pid, 0.001)
        await clock.advance(0.1005)  # 0.1 itself is a hair short of 100 float steps
        assert log.count("x") == 100


async def test_advance_returns_even_where_a_millisecond_no_longer_moves_the_clock() -> None:
    # At ~1e13 s of monotonic time one float step is ~2 ms: next = deadline + 0.001 is
    # the deadline itself. The scheduler must still move forward (no input spins advance).
    log = Log()
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(log))
        await system.schedule("x", pid, 0.001)
        await clock.jump(1e13)
        await clock.advance(0.05)
        assert 1 <= log.count("x") <= 60


async def test_every_scheduling_call_raises_not_started_before_start() -> None:
    system = ActorSystem("t", clock=ManualClock(wall=EPOCH), timezone="UTC")
    calls: list[Callable[[], Awaitable[object]]] = [
        lambda: system.schedule("x", None, 1),  # type: ignore[arg-type]
        lambda: system.schedule_once("x", None, 1),  # type: ignore[arg-type]
        lambda: system.schedule_cron("x", None, "0 * * * * ?"),  # type: ignore[arg-type]
        lambda: system.cancel_schedule("r"),
        lambda: system.pause_schedule("r"),
        lambda: system.resume_schedule("r"),
    ]
    for call in calls:
        with pytest.raises(ActorSystemNotStartedError):
            await call()
    with pytest.raises(ActorSystemNotStartedError):
        system.list_schedules()
    with pytest.raises(ActorSystemNotStartedError):
        system.scheduler_metrics()


async def test_every_scheduling_call_raises_not_started_after_stop() -> None:
    clock = ManualClock(wall=EPOCH)
    system = ActorSystem("t", clock=clock, timezone="UTC")
    await system.start()
    pid = await system.spawn(recorder(Log()))
    await system.schedule("x", pid, 1, reference="r")
    await system.stop()
    with pytest.raises(ActorSystemNotStartedError):
        await system.schedule("x", pid, 1)
    with pytest.raises(ActorSystemNotStartedError):
        await system.schedule_once("x", pid, 1)
    with pytest.raises(ActorSystemNotStartedError):
        await system.schedule_cron("x", pid, "0 * * * * ?")
    for manage in (system.cancel_schedule, system.pause_schedule, system.resume_schedule):
        with pytest.raises(ActorSystemNotStartedError):
            await manage("r")
    with pytest.raises(ActorSystemNotStartedError):
        system.list_schedules()


async def test_a_reference_already_held_raises_already_exists() -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("x", pid, 1, reference="r")
        with pytest.raises(ScheduleAlreadyExistsError, match="replace=True"):
            await system.schedule_once("y", pid, 1, reference="r")
        [info] = system.list_schedules()
        assert info.kind == "interval"


@pytest.mark.parametrize("call", ["cancel_schedule", "pause_schedule", "resume_schedule"])
async def test_unknown_reference_raises_not_found(call: str) -> None:
    async with running_system() as (system, _clock):
        with pytest.raises(ScheduleNotFoundError, match="'nope'") as info:
            await getattr(system, call)("nope")
        assert isinstance(info.value, LookupError)


async def test_cancelling_twice_raises_not_found() -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        await system.schedule("x", pid, 1, reference="r")
        await system.cancel_schedule("r")
        with pytest.raises(ScheduleNotFoundError):
            await system.cancel_schedule("r")


async def test_unknown_reference_raises_not_found_through_a_context() -> None:
    errors: list[BaseException] = []

    class Manager(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            for call in (ctx.cancel_schedule, ctx.pause_schedule, ctx.resume_schedule):
                try:
                    await call("nope")
                except ScheduleNotFoundError as exc:
                    errors.append(exc)

    async with running_system() as (system, clock):
        pid = await system.spawn(Manager)
        pid.tell("go")
        await clock.advance(0)
        assert len(errors) == 3


@pytest.mark.parametrize("call", ["schedule", "schedule_once"])
async def test_target_already_stopped_raises_dead_actor(call: str) -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        await system.stop_actor(pid)
        with pytest.raises(DeadActorError, match="stopped"):
            await getattr(system, call)("x", pid, 1)
        assert system.list_schedules() == []


async def test_scheduling_through_the_context_of_a_stopped_actor_raises_dead_actor() -> None:
    kept: list[ReceiveContext] = []

    class Keeper(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            kept.append(ctx)

    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        keeper = await system.spawn(Keeper)
        keeper.tell("go")
        await clock.advance(0)
        await system.stop_actor(keeper)
        ctx = kept[0]
        with pytest.raises(DeadActorError):
            await ctx.schedule("x", target, 1)
        with pytest.raises(DeadActorError):
            await ctx.schedule_once("x", target, 1)
        assert system.list_schedules() == []


async def test_scheduling_from_post_stop_raises_dead_actor() -> None:
    errors: list[BaseException] = []

    class Leaky(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

        async def post_stop(self, ctx: ReceiveContext) -> None:
            for call in (ctx.schedule, ctx.schedule_once):
                try:
                    await call("x", target, 1)
                except DeadActorError as exc:
                    errors.append(exc)

    async with running_system() as (system, _clock):
        target = await system.spawn(recorder(Log()))
        leaky = await system.spawn(Leaky)
        await system.stop_actor(leaky)
        assert len(errors) == 2
        assert system.list_schedules() == []


async def test_scheduling_to_something_that_is_not_a_pid_raises_type_error() -> None:
    async with running_system() as (system, _clock):
        with pytest.raises(TypeError, match="`pid`"):
            await system.schedule("x", "/user/nobody", 1)  # type: ignore[arg-type]


@pytest.mark.parametrize("reference", ["", 42, b"r"])
async def test_reference_that_is_not_a_non_empty_str_raises_type_error(reference: Any) -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(TypeError, match="`reference`"):
            await system.schedule("x", pid, 1, reference=reference)


def test_scheduling_errors_derive_from_tocsin_error() -> None:
    for error in (
        ActorSystemNotStartedError,
        InvalidIntervalError,
        ScheduleAlreadyExistsError,
        ScheduleNotFoundError,
        DeadActorError,
    ):
        assert issubclass(error, TocsinError)


async def test_errors_leave_no_timer_armed() -> None:
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(Log()))
        for bad in (0, -1, math.nan):
            with pytest.raises(InvalidIntervalError):
                await system.schedule("x", pid, bad)
        assert clock.next_deadline() is None
        await asyncio.sleep(0)


# -- issue 10 item 12: consistent errors ------------------------------------------------


@pytest.mark.parametrize("call", ["cancel_schedule", "pause_schedule", "resume_schedule"])
@pytest.mark.parametrize("bad", [None, 5, b"r"], ids=repr)
async def test_a_reference_that_is_not_a_str_is_a_type_error(call: str, bad: Any) -> None:
    async with running_system() as (system, _clock):
        with pytest.raises(TypeError, match="`reference` must be a str"):
            await getattr(system, call)(bad)


async def test_cancel_with_missing_ok_ignores_an_unknown_reference() -> None:
    log = Log()
    async with running_system() as (system, clock):
        pid = await system.spawn(recorder(log))
        await system.cancel_schedule("nope", missing_ok=True)  # no error
        await system.schedule("x", pid, 1, reference="r")
        await system.cancel_schedule("r", missing_ok=True)  # cancels as usual
        await system.cancel_schedule("r", missing_ok=True)  # already gone: no-op
        await clock.advance(5)
        assert log.messages == []
        with pytest.raises(ScheduleNotFoundError):
            await system.cancel_schedule("r")
        with pytest.raises(TypeError):
            await system.cancel_schedule(None, missing_ok=True)  # type: ignore[arg-type]


async def test_cancel_with_missing_ok_through_a_context() -> None:
    done: list[str] = []

    class Canceller(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await ctx.cancel_schedule("nope", missing_ok=True)
            done.append("ok")

    async with running_system() as (system, clock):
        pid = await system.spawn(Canceller)
        pid.tell("go")
        await clock.advance(0)
        assert done == ["ok"]


async def test_nan_ask_timeout_and_nan_passivate_after_raise_the_same_error() -> None:
    async with running_system() as (system, _clock):
        pid = await system.spawn(recorder(Log()))
        with pytest.raises(InvalidIntervalError, match=r"`timeout`.*NaN"):
            await pid.ask("x", timeout=math.nan)
        with pytest.raises(InvalidIntervalError, match=r"`passivate_after`.*NaN"):
            await system.spawn(recorder(Log()), passivate_after=math.nan)
