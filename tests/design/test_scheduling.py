# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Scheduling (`tocsin.scheduling`)" as executable statements: one small test per
sentence that names a public name, a signature, a default, an error type or a behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
from datetime import timedelta
from typing import Any

import pytest
from tests.design.design_support import (
    EMPTY,
    KW,
    PK,
    T0,
    manual,
    messages,
    recorder,
    shape,
)

from tocsin import (
    Actor,
    ActorSystem,
    ActorSystemNotStartedError,
    DeadActorError,
    DeadLetter,
    DeadLetterReason,
    Directive,
    InvalidCronExpressionError,
    InvalidIntervalError,
    ManualClock,
    Misfire,
    NoSender,
    Overlap,
    ReceiveContext,
    ScheduleAlreadyExistsError,
    ScheduleInfo,
    ScheduleKind,
    ScheduleNotFoundError,
    ScheduleReferenceRequiredError,
    Supervisor,
    TocsinError,
)

SCHEDULE_SHAPES = {
    "schedule": [
        ("message", PK, EMPTY),
        ("pid", PK, EMPTY),
        ("interval", PK, EMPTY),
        ("reference", KW, None),
        ("sender", KW, None),
        ("replace", KW, False),
        # DESIGN.md "Schedule policies" (issue 22).
        ("overlap", KW, Overlap.ALLOW),
        ("misfire", KW, Misfire.once()),
        ("jitter", KW, None),
        ("exclude", KW, None),
    ],
    "schedule_once": [
        ("message", PK, EMPTY),
        ("pid", PK, EMPTY),
        ("delay", PK, EMPTY),
        ("reference", KW, None),
        ("sender", KW, None),
        ("replace", KW, False),
        ("overlap", KW, Overlap.ALLOW),
        ("misfire", KW, Misfire.once()),
    ],
    "schedule_cron": [
        ("message", PK, EMPTY),
        ("pid", PK, EMPTY),
        ("expression", PK, EMPTY),
        ("reference", KW, None),
        ("sender", KW, None),
        ("timezone", KW, None),
        ("replace", KW, False),
        ("overlap", KW, Overlap.ALLOW),
        ("misfire", KW, Misfire.once()),
        ("jitter", KW, None),
        ("exclude", KW, None),
        ("dst", KW, None),
        # DESIGN.md "Operating schedules", cluster cron delivery (issue 23).
        ("delivery", KW, "at_most_once"),
    ],
    "cancel_schedule": [("reference", PK, EMPTY), ("missing_ok", KW, False)],
    "pause_schedule": [("reference", PK, EMPTY), ("note", KW, None)],
    "resume_schedule": [("reference", PK, EMPTY)],
    "list_schedules": [],
}


@pytest.mark.parametrize("host", [ActorSystem, ReceiveContext])
@pytest.mark.parametrize("call", sorted(SCHEDULE_SHAPES))
def test_scheduling_call_signature(host: type, call: str) -> None:
    fn = getattr(host, call)
    assert shape(fn) == SCHEDULE_SHAPES[call]
    assert inspect.iscoroutinefunction(fn) == (call != "list_schedules")


async def test_schedule_first_tick_one_interval_from_now_and_returns_reference() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await clock.advance(0.25)
        ref = await system.schedule("t", pid, 1)
        assert isinstance(ref, str)
        assert ref
        await clock.advance(0.99)
        assert actor.got == []
        await clock.advance(0.01)
        assert [t for _, _, t in actor.got] == [1.25]


@pytest.mark.parametrize("value", [timedelta(seconds=2), 2, 2.0])
async def test_units_are_seconds_or_timedelta(value: Any) -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_once("x", pid, value)
        await clock.advance(1.999)
        assert actor.got == []
        await clock.advance(0.001)
        assert messages(actor) == ["x"]


@pytest.mark.parametrize(
    "bad", [0, -1, -0.5, math.nan, math.inf, True, False, "1", None, 0.0009, timedelta(0)]
)
@pytest.mark.parametrize("call", ["schedule", "schedule_once"])
async def test_invalid_intervals(call: str, bad: Any) -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system)
        with pytest.raises(InvalidIntervalError):
            await getattr(system, call)("x", pid, bad)
        assert issubclass(InvalidIntervalError, ValueError)


async def test_one_millisecond_is_the_minimum_and_there_is_no_upper_bound() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_once("ms", pid, 0.001)
        await system.schedule_once("far", pid, 1e12)
        await system.schedule_once("farther", pid, timedelta(days=10**6))
        await clock.advance(0.001)
        assert messages(actor) == ["ms"]


async def test_generated_references_are_unique() -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system)
        refs = {await system.schedule_once("x", pid, 1) for _ in range(50)}
        assert len(refs) == 50


async def test_reference_held_raises_unless_replace() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_once("old", pid, 1, reference="r")
        with pytest.raises(ScheduleAlreadyExistsError):
            await system.schedule_once("dup", pid, 1, reference="r")
        assert await system.schedule_once("new", pid, 2, reference="r", replace=True) == "r"
        await clock.advance(5)
        assert messages(actor) == ["new"]


async def test_references_are_one_flat_system_wide_namespace() -> None:
    class Owner(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await ctx.schedule("tick", ctx.self, 1, reference="shared")

    async with manual() as (system, clock):
        pid = await system.spawn(Owner)
        pid.tell("go")
        await clock.advance(0)
        with pytest.raises(ScheduleAlreadyExistsError):
            await system.schedule_once("x", pid, 1, reference="shared")
        await system.cancel_schedule("shared")  # addressable from anywhere
        assert system.list_schedules() == []


async def test_sender_defaults_to_the_actor_through_a_context_and_nosender_through_system() -> None:
    async with manual() as (system, clock):
        target, actor = await recorder(system)

        class Scheduler(Actor):
            async def receive(self, ctx: ReceiveContext) -> None:
                await ctx.schedule_once("from-ctx", target, 1)

        sched = await system.spawn(Scheduler)
        sched.tell("go")
        await system.schedule_once("from-system", target, 1)
        explicit, _ = await recorder(system)
        await system.schedule_once("explicit", target, 1, sender=explicit)
        await clock.advance(1)
        senders = {m: s for m, s, _ in actor.got}
        assert senders["from-ctx"] == sched
        assert senders["from-system"] is NoSender
        assert senders["explicit"] == explicit


async def test_cancel_schedule_unknown_raises_unless_missing_ok() -> None:
    async with manual() as (system, _):
        with pytest.raises(ScheduleNotFoundError):
            await system.cancel_schedule("nope")
        await system.cancel_schedule("nope", missing_ok=True)  # no error (returns None)


async def test_pause_is_idempotent_and_resume_of_one_shot_keeps_the_remaining_delay() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_once("x", pid, 10, reference="once")
        await clock.advance(4)
        await system.pause_schedule("once")
        await system.pause_schedule("once")
        (info,) = system.list_schedules()
        assert info.paused
        assert info.next_fire_at is None
        await clock.advance(100)
        assert actor.got == []
        await system.resume_schedule("once")
        await clock.advance(5.999)
        assert actor.got == []
        await clock.advance(0.001)
        assert [t for _, _, t in actor.got] == [110.0]


async def test_resume_of_repeating_fires_one_full_interval_later() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule("x", pid, 10, reference="rep")
        await clock.advance(3)
        await system.pause_schedule("rep")
        await clock.advance(4)
        await system.resume_schedule("rep")
        await clock.advance(30)
        assert [t for _, _, t in actor.got] == [17.0, 27.0, 37.0]


async def test_resume_of_cron_fires_at_its_next_time_after_now() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_cron("c", pid, "0 * * * * ?", reference="cr", timezone="UTC")
        await system.pause_schedule("cr")
        await clock.advance(90)
        await system.resume_schedule("cr")
        await clock.advance(40)
        assert [t for _, _, t in actor.got] == [120.0]


@pytest.mark.parametrize("call", ["pause_schedule", "resume_schedule"])
async def test_pause_and_resume_of_unknown_reference_raise_not_found(call: str) -> None:
    async with manual() as (system, _):
        with pytest.raises(ScheduleNotFoundError):
            await getattr(system, call)("nope")


async def test_schedule_info_fields_and_kind_enum() -> None:
    assert [f.name for f in dataclasses.fields(ScheduleInfo)] == [
        "reference",
        "target",
        "kind",
        "interval",
        "cron",
        "timezone",
        "next_fire_at",
        "paused",
        "owner",
        "sender",
        "ticks",
        "created_at",
        # Added by the cluster issue (#12): which cron schedules are cluster-claimed.
        "cluster_claimed",
        # Added by the schedule policies (#22) and pause notes (#23).
        "overlap",
        "misfire",
        "jitter",
        "dst",
        "exclude",
        "note",
        "paused_at",
        "paused_by",
    ]
    assert issubclass(ScheduleKind, str)
    assert [k.value for k in ScheduleKind] == ["once", "interval", "cron"]
    assert [k.name for k in ScheduleKind] == ["ONCE", "INTERVAL", "CRON"]
    async with manual() as (system, clock):
        pid, _ = await recorder(system, "t")
        await system.schedule("x", pid, 2, reference="i")
        await system.schedule_cron("x", pid, "0 0 12 * * ?", reference="c", timezone="UTC")
        await clock.advance(2)
        infos = {i.reference: i for i in system.list_schedules()}
        i = infos["i"]
        assert (i.target, i.kind, i.interval, i.cron, i.paused, i.owner, i.sender, i.ticks) == (
            "/user/t",
            ScheduleKind.INTERVAL,
            2.0,
            None,
            False,
            None,
            None,
            1,
        )
        assert i.next_fire_at == T0 + timedelta(seconds=4)
        assert i.next_fire_at.tzinfo is not None
        assert i.next_fire_at.utcoffset() == timedelta(0)
        assert i.created_at == T0
        c = infos["c"]
        assert (c.kind, c.cron, c.timezone) == (ScheduleKind.CRON, "0 0 12 * * ?", "UTC")
        assert c.next_fire_at == T0 + timedelta(hours=12)
        assert isinstance(system.list_schedules(), list)


async def test_schedule_info_owner_is_the_scheduling_actor() -> None:
    class Owner(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await ctx.schedule("t", ctx.self, 5, reference="own")
            ctx.respond(None)

    async with manual() as (system, _):
        pid = await system.spawn(Owner, "owner")
        await pid.ask("go")
        (info,) = system.list_schedules()
        assert (info.owner, info.sender, info.target) == ("/user/owner",) * 3


async def test_system_stop_cancels_every_schedule() -> None:
    clock = ManualClock(wall=T0)
    system = ActorSystem(clock=clock)
    await system.start()
    pid, _ = await recorder(system)
    await system.schedule("x", pid, 1)
    await system.stop()
    assert clock.next_deadline() is None


async def test_context_schedule_is_cancelled_when_its_owner_fully_stops_not_on_restart() -> None:
    class Owner(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "plan":
                await ctx.schedule("tick", target, 1, reference="owned")
            else:
                raise RuntimeError("restart me")

    async with manual() as (system, clock):
        target, actor = await recorder(system)
        owner = await system.spawn(Owner)
        owner.tell("plan")
        await clock.advance(0)
        owner.tell("crash")
        await clock.advance(1)
        assert [r.reference for r in system.list_schedules()] == ["owned"]
        await system.stop_actor(owner)
        assert system.list_schedules() == []
        await clock.advance(5)
        assert messages(actor) == ["tick"]


async def test_tick_to_stopped_target_dead_letters_and_repeating_schedule_is_dropped() -> None:
    async with manual() as (system, clock):
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid, _ = await recorder(system)
        await system.schedule("x", pid, 1, reference="r")
        await system.stop_actor(pid)
        await clock.advance(5)
        assert [(d.message, d.reason) for d in letters] == [("x", DeadLetterReason.STOPPED)]
        assert system.list_schedules() == []


async def test_suspended_target_keeps_its_schedule() -> None:
    async with manual() as (system, clock):
        letters: list[DeadLetter] = []
        system.events.subscribe(letters.append, DeadLetter)
        pid, actor = await recorder(system, supervisor=Supervisor(Directive.SUSPEND))
        await system.schedule("tick", pid, 1, reference="r")
        pid.tell("fail")
        await clock.advance(2)
        assert [r.reference for r in system.list_schedules()] == ["r"]
        # ticks meanwhile are dead letters (the suspended actor takes no messages)
        assert [(d.message, d.reason) for d in letters] == [("tick", "suspended")] * 2
        await system.reinstate(pid)
        await clock.advance(1)
        assert messages(actor) == ["fail", "tick"]


async def test_schedule_to_a_stopped_target_raises_dead_actor_error() -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system)
        await system.stop_actor(pid)
        with pytest.raises(DeadActorError):
            await system.schedule_once("x", pid, 1)


async def test_schedule_before_start_raises_not_started() -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system)
    with pytest.raises(ActorSystemNotStartedError):
        await system.schedule_once("x", pid, 1)


async def test_scheduling_from_post_stop_or_a_stopped_context_raises_dead_actor_error() -> None:
    errors: list[BaseException] = []
    kept: list[ReceiveContext] = []

    class Late(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            kept.append(ctx)

        async def post_stop(self, ctx: ReceiveContext) -> None:
            try:
                await ctx.schedule_once("x", ctx.self, 1)
            except BaseException as exc:
                errors.append(exc)

    async with manual() as (system, clock):
        pid = await system.spawn(Late)
        pid.tell("keep")
        await clock.advance(0)
        await system.stop_actor(pid)
        assert len(errors) == 1
        assert isinstance(errors[0], DeadActorError)
        target, _ = await recorder(system)
        with pytest.raises(DeadActorError):
            await kept[0].schedule_once("x", target, 1)


async def test_ticks_are_independent_sends_no_suppression() -> None:
    gate = asyncio.Event()

    class Busy(Actor):
        def __init__(self) -> None:
            self.n = 0

        async def receive(self, ctx: ReceiveContext) -> None:
            self.n += 1
            if self.n == 1:
                await gate.wait()

    actor = Busy()
    async with manual() as (system, clock):
        pid = await system.spawn(lambda: actor)
        await system.schedule("t", pid, 1)
        await clock.advance(3)
        gate.set()
        await clock.advance(0)
        assert actor.n == 3


async def test_stale_tick_already_in_the_mailbox_is_dropped_after_cancel() -> None:
    gate = asyncio.Event()
    got: list[str] = []

    class Busy(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            got.append(ctx.message)
            if ctx.message == "hold":
                await gate.wait()

    async with manual() as (system, clock):
        pid = await system.spawn(Busy)
        await system.schedule_once("tick", pid, 1, reference="s")
        await system.schedule_once("replaced", pid, 1, reference="s2")
        pid.tell("hold")
        await clock.advance(1)  # both ticks now wait in the mailbox
        await system.cancel_schedule("s")
        await system.schedule_once("new", pid, 5, reference="s2", replace=True)
        gate.set()
        await clock.advance(0)
        assert got == ["hold"]


async def test_tick_in_the_mailbox_is_dropped_once_its_owner_fully_stopped() -> None:
    gate = asyncio.Event()
    got: list[str] = []

    class Busy(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            got.append(ctx.message)
            if ctx.message == "hold":
                await gate.wait()

    class Owner(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await ctx.schedule_once("owned-tick", ctx.message, 1)
            ctx.respond(None)

    async with manual() as (system, clock):
        target = await system.spawn(Busy)
        owner = await system.spawn(Owner)
        await owner.ask(target)
        target.tell("hold")
        await clock.advance(1)  # the tick waits in the busy target's mailbox
        await system.stop_actor(owner)
        gate.set()
        await clock.advance(0)
        assert got == ["hold"]


async def test_schedule_cron_without_future_fire_time_raises() -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system)
        with pytest.raises(InvalidCronExpressionError):
            await system.schedule_cron("x", pid, "0 0 0 1 1 ? 2001")
        with pytest.raises(InvalidCronExpressionError):
            await system.schedule_cron("x", pid, "not cron")


async def test_cron_schedule_is_removed_after_its_last_fire_time() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_cron("x", pid, "0 0 0 2 1 ? 2030", timezone="UTC")
        await clock.advance(86_400)
        assert messages(actor) == ["x"]
        assert system.list_schedules() == []


async def test_schedule_cron_uses_the_given_timezone() -> None:
    async with manual() as (system, clock):
        pid, actor = await recorder(system)
        await system.schedule_cron("x", pid, "0 0 1 * * ?", timezone="Europe/Paris")
        await clock.advance(86_400)
        assert [t for _, _, t in actor.got] == [0.0 + 24 * 3600.0] or [
            t for _, _, t in actor.got
        ] == [0.0]


def test_schedule_reference_required_error_exists_for_cluster_mode() -> None:
    assert issubclass(ScheduleReferenceRequiredError, TocsinError)
