# SPDX-License-Identifier: Apache-2.0
"""Ownership: the system owns every schedule; a context's actor owns what it schedules."""

from __future__ import annotations

from tests.scheduling.scheduling_support import EPOCH, Log, blocker, recorder, running_system

from tocsin import (
    Actor,
    ActorRestarted,
    ActorSystem,
    ActorSystemNotStartedError,
    Directive,
    ManualClock,
    ReceiveContext,
    Supervisor,
)


class Scheduler(Actor):
    """Schedules what it is told to, through its context; fails on ("fail", exc)."""

    async def receive(self, ctx: ReceiveContext) -> None:
        message = ctx.message
        if message[0] == "every":
            _, msg, pid, interval, reference = message
            await ctx.schedule(msg, pid, interval, reference=reference)
        elif message[0] == "once":
            _, msg, pid, delay, reference = message
            await ctx.schedule_once(msg, pid, delay, reference=reference)
        elif message[0] == "fail":
            raise message[1]


async def test_system_stop_cancels_every_schedule() -> None:
    clock = ManualClock(wall=EPOCH)
    system = ActorSystem("t", clock=clock, timezone="UTC")
    await system.start()
    log = Log()
    target = await system.spawn(recorder(log))
    owner = await system.spawn(Scheduler)
    await system.schedule("a", target, 1, reference="from-system")
    await system.schedule_once("b", target, 5)
    owner.tell(("every", "c", target, 2, "from-actor"))
    await clock.advance(0)
    assert len(system.list_schedules()) == 3
    await system.stop()
    assert clock.next_deadline() is None  # no timer left armed
    await clock.advance(100)
    assert log.messages == []
    await system.start()
    try:
        assert system.list_schedules() == []
    finally:
        await system.stop()


async def test_schedule_made_in_an_actor_is_cancelled_when_that_actor_fully_stops() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(Scheduler)
        owner.tell(("every", "tick", target, 1, "owned"))
        await clock.advance(2.5)
        assert log.times == [1.0, 2.0]
        [info] = system.list_schedules()
        assert info.owner == owner.path
        await system.stop_actor(owner)
        assert system.list_schedules() == []
        await clock.advance(10)
        assert log.times == [1.0, 2.0]


async def test_schedule_without_reference_is_listed_and_cancelled_with_its_owner() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(Scheduler)
        owner.tell(("every", "tick", target, 1, None))
        owner.tell(("once", "later", target, 50, None))
        await clock.advance(1)
        infos = system.list_schedules()
        assert len(infos) == 2
        assert all(info.reference and info.owner == owner.path for info in infos)
        await system.stop_actor(owner)
        assert system.list_schedules() == []
        await clock.advance(100)
        assert log.messages == ["tick"]


async def test_schedule_made_through_the_system_is_not_owned_by_any_actor() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        bystander = await system.spawn(Scheduler)
        await system.schedule("tick", target, 1, reference="sys")
        [info] = system.list_schedules()
        assert info.owner is None
        await system.stop_actor(bystander)
        await clock.advance(2)
        assert log.times == [1.0, 2.0]


async def test_supervised_restart_keeps_owned_schedule_running() -> None:
    async with running_system() as (system, clock):
        log = Log()
        restarts: list[ActorRestarted] = []
        system.events.subscribe(restarts.append, ActorRestarted)
        target = await system.spawn(recorder(log))
        owner = await system.spawn(Scheduler, supervisor=Supervisor(Directive.RESTART))
        owner.tell(("every", "tick", target, 1, "owned"))
        await clock.advance(1.5)
        owner.tell(("fail", RuntimeError("boom")))
        await clock.advance(0)
        assert len(restarts) == 1
        await clock.advance(2.5)
        assert log.times == [1.0, 2.0, 3.0, 4.0]
        assert [info.reference for info in system.list_schedules()] == ["owned"]


async def test_restart_of_the_target_keeps_a_schedule_to_it_running() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log), supervisor=Directive.RESTART)
        await system.schedule("tick", target, 1)
        await clock.advance(1.5)
        target.tell(("fail", RuntimeError("boom")))
        await clock.advance(1.5)
        assert log.times == [1.0, 2.0, 3.0]


async def test_ticks_already_queued_are_discarded_once_their_owner_has_fully_stopped() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(Scheduler)
        block, release = blocker()
        target.tell(block)
        owner.tell(("every", "tick", target, 1, "owned"))
        await clock.advance(3)  # three ticks wait behind the blocked message
        await system.stop_actor(owner)
        release.set()
        await clock.advance(0)
        assert log.messages == []
        assert system.scheduler_metrics().ticks_discarded == 3


async def test_child_schedule_is_cancelled_when_its_parent_stops_the_child() -> None:
    class Parent(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            self.child = await ctx.spawn(Scheduler, "child")

        async def receive(self, ctx: ReceiveContext) -> None:
            self.child.tell(ctx.message)

    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        parent = await system.spawn(Parent)
        parent.tell(("every", "tick", target, 1, "child-owned"))
        await clock.advance(1)
        [info] = system.list_schedules()
        assert info.owner == f"{parent.path}/child"
        await system.stop_actor(parent)  # children first
        assert system.list_schedules() == []
        await clock.advance(5)
        assert log.times == [1.0]


async def test_passivation_is_a_stop_and_cancels_the_actor_s_own_schedules() -> None:
    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log))
        owner = await system.spawn(Scheduler, passivate_after=10)
        owner.tell(("every", "tick", target, 1, "owned"))
        await clock.advance(5)
        assert len(log.messages) == 5
        await clock.advance(20)  # owner idle for 10 s: passivated
        assert system.list_schedules() == []
        count = len(log.messages)
        await clock.advance(10)
        assert len(log.messages) == count


async def test_scheduling_calls_raise_not_started_after_stop() -> None:
    clock = ManualClock(wall=EPOCH)
    system = ActorSystem("t", clock=clock, timezone="UTC")
    await system.start()
    target = await system.spawn(recorder(Log()))
    await system.stop()
    try:
        await system.schedule("x", target, 1)
    except ActorSystemNotStartedError:
        pass
    else:  # pragma: no cover
        raise AssertionError("expected ActorSystemNotStartedError")


async def test_scheduling_from_post_stop_during_a_restart_raises_dead_actor_error() -> None:
    from tocsin import ActorRestarted, ActorSystem, DeadActorError, ManualClock
    from tocsin.actor import Actor

    errors: list[BaseException] = []

    class Crashy(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("boom")

        async def post_stop(self, ctx: ReceiveContext) -> None:
            try:
                await ctx.schedule_once("late", ctx.self, 1.0)
            except DeadActorError as exc:
                errors.append(exc)

    clock = ManualClock()
    async with ActorSystem(clock=clock) as system:
        restarted: list[object] = []
        system.events.subscribe(restarted.append, ActorRestarted)
        pid = await system.spawn(Crashy)
        pid.tell("go")
        await clock.advance(0)
        assert len(restarted) == 1
        assert len(errors) == 1
        assert system.list_schedules() == []
