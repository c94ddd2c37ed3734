# SPDX-License-Identifier: Apache-2.0
"""References: one flat namespace per system, and `replace=True` (upsert)."""

from __future__ import annotations

import pytest
from tests.scheduling.scheduling_support import Log, blocker, recorder, running_system

from tocsin import (
    Actor,
    ActorRestarted,
    InvalidIntervalError,
    ReceiveContext,
    ScheduleAlreadyExistsError,
)


class Owner(Actor):
    """Schedules ("tick" every 1 s to its target) under a reference given at spawn."""

    def __init__(self, target: object, reference: str | None) -> None:
        self.target = target
        self.reference = reference

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "schedule":
            await ctx.schedule("tick", self.target, 1, reference=self.reference)  # type: ignore[arg-type]
        elif ctx.message == "replace":
            await ctx.schedule(
                "replaced",
                self.target,  # type: ignore[arg-type]
                1,
                reference=self.reference,
                replace=True,
            )


async def test_schedule_made_in_an_actor_is_cancelled_from_the_system_by_reference() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(lambda: Owner(target, "hb"))
        owner.tell("schedule")
        await clock.advance(1)
        await system.cancel_schedule("hb")
        await clock.advance(5)
        assert log.times == [1.0]
        assert system.list_schedules() == []


async def test_schedule_made_through_the_system_is_cancelled_from_an_actor() -> None:
    class Canceller(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await ctx.cancel_schedule(ctx.message)

    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        canceller = await system.spawn(Canceller)
        await system.schedule("tick", target, 1, reference="sys-made")
        await clock.advance(1)
        canceller.tell("sys-made")
        await clock.advance(5)
        assert log.times == [1.0]


async def test_references_form_one_namespace_across_actors_and_the_system() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        owner = await system.spawn(lambda: Owner(target, "shared"))
        owner.tell("schedule")
        await clock.advance(0)
        with pytest.raises(ScheduleAlreadyExistsError, match="'shared'"):
            await system.schedule_once("x", target, 1, reference="shared")
        with pytest.raises(ScheduleAlreadyExistsError):
            await system.schedule("x", target, 1, reference="shared")


async def test_generated_references_are_unique_and_listed() -> None:
    async with running_system() as (system, _clock):
        target = await system.spawn(recorder(Log()))
        refs = [await system.schedule("x", target, 1) for _ in range(50)]
        assert len(set(refs)) == 50
        assert {info.reference for info in system.list_schedules()} == set(refs)


async def test_generated_reference_never_collides_with_a_given_one() -> None:
    async with running_system() as (system, _clock):
        target = await system.spawn(recorder(Log()))
        taken = await system.schedule("x", target, 1)
        # A user takes the next name the generator would have picked.
        prefix, _, number = taken.rpartition("-")
        await system.schedule("y", target, 1, reference=f"{prefix}-{int(number) + 1}")
        generated = await system.schedule("z", target, 1)
        assert len({info.reference for info in system.list_schedules()}) == 3
        assert generated not in (taken, f"{prefix}-{int(number) + 1}")


async def test_cancelled_reference_can_be_reused() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        await system.schedule("old", target, 1, reference="r")
        await system.cancel_schedule("r")
        await system.schedule("new", target, 1, reference="r")
        await clock.advance(1)
        assert log.messages == ["new"]


async def test_replace_true_atomically_replaces_the_old_schedule() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        await system.schedule("old", target, 1, reference="r")
        await clock.advance(1.5)
        ref = await system.schedule_once("new", target, 2, reference="r", replace=True)
        assert ref == "r"
        [info] = system.list_schedules()
        assert info.kind == "once"
        await clock.advance(10)
        assert log.messages == ["old", "new"]
        assert log.times == [1.0, 3.5]


async def test_replace_true_with_an_unused_reference_just_creates_it() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        await system.schedule("x", target, 1, reference="fresh", replace=True)
        await clock.advance(1)
        assert log.messages == ["x"]


async def test_replace_true_discards_ticks_of_the_old_schedule_already_queued() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        block, release = blocker()
        target.tell(block)
        await system.schedule("old", target, 1, reference="r")
        await clock.advance(2)
        await system.schedule("new", target, 1, reference="r", replace=True)
        release.set()
        await clock.advance(1)
        assert log.messages == ["new"]


async def test_failed_replace_leaves_the_old_schedule_in_place() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        await system.schedule("old", target, 1, reference="r")
        with pytest.raises(InvalidIntervalError):
            await system.schedule("new", target, -1, reference="r", replace=True)
        await clock.advance(2)
        assert log.messages == ["old", "old"]


async def test_replace_by_another_actor_transfers_ownership() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        first = await system.spawn(lambda: Owner(target, "r"))
        second = await system.spawn(lambda: Owner(target, "r"))
        first.tell("schedule")
        await clock.advance(0)
        second.tell("replace")
        await clock.advance(0)
        [info] = system.list_schedules()
        assert info.owner == second.path
        await system.stop_actor(first)  # no longer the owner: nothing is cancelled
        await clock.advance(1)
        assert log.messages == ["replaced"]
        await system.stop_actor(second)
        assert system.list_schedules() == []


class Heartbeat(Actor):
    """Registers its timer in pre_start, the way the docs recommend."""

    def __init__(self, target: object, replace: bool, reference: str | None) -> None:
        self.target = target
        self.replace = replace
        self.reference = reference

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await ctx.schedule(
            "beat",
            self.target,  # type: ignore[arg-type]
            1,
            reference=self.reference,
            replace=self.replace,
        )

    async def receive(self, ctx: ReceiveContext) -> None:
        raise RuntimeError("crash")


async def test_replace_true_in_pre_start_never_doubles_the_rate_after_restarts() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        heart = await system.spawn(lambda: Heartbeat(target, True, "heartbeat"))
        for _ in range(3):
            await clock.advance(0.5)
            heart.tell("crash")  # restart: pre_start runs again
            await clock.advance(0.5)
        await clock.advance(10)
        [info] = system.list_schedules()
        assert info.reference == "heartbeat"
        # Each restart re-registers the timer one interval out; never two timers at once.
        assert log.times == [1.5, 2.5] + [3.5 + n for n in range(10)]


async def test_pre_start_with_a_fixed_reference_and_no_replace_fails_on_restart() -> None:
    async with running_system() as (system, clock):
        target = await system.spawn(recorder(Log()))
        restarts: list[ActorRestarted] = []
        system.events.subscribe(restarts.append, ActorRestarted)
        heart = await system.spawn(lambda: Heartbeat(target, False, "heartbeat"))
        heart.tell("crash")
        await clock.advance(0)
        # The restarted pre_start could not register the timer again.
        assert any(isinstance(r.error, ScheduleAlreadyExistsError) for r in restarts)


async def test_pre_start_without_a_reference_doubles_the_rate_after_a_restart() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        heart = await system.spawn(lambda: Heartbeat(target, False, None))
        await clock.advance(0.5)
        heart.tell("crash")
        await clock.advance(0.5)
        await clock.advance(2)
        assert len(system.list_schedules()) == 2  # the pitfall replace=True avoids
        assert log.times == [1.0, 1.5, 2.0, 2.5, 3.0]
