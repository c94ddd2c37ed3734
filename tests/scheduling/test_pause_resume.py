# SPDX-License-Identifier: Apache-2.0
"""`pause_schedule` / `resume_schedule`."""

from __future__ import annotations

from tests.scheduling.scheduling_support import Log, recorder, running_system

from tocsin import Actor, ReceiveContext


async def test_paused_repeating_schedule_stops_firing() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 1, reference="hb")
        await clock.advance(2)
        await system.pause_schedule("hb")
        await clock.advance(10)
        assert log.times == [1.0, 2.0]


async def test_pausing_a_paused_schedule_is_a_no_op() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("once", pid, 10, reference="r")
        await clock.advance(4)
        await system.pause_schedule("r")
        await clock.advance(3)
        await system.pause_schedule("r")  # must not recompute the delay left
        await clock.advance(3)
        await system.resume_schedule("r")
        await clock.advance(5.5)
        assert log.messages == []
        await clock.advance(0.5)
        assert log.times == [16.0]


async def test_resuming_a_running_schedule_is_a_no_op() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 2, reference="r")
        await clock.advance(1)
        await system.resume_schedule("r")
        await clock.advance(3)
        assert log.times == [2.0, 4.0]


async def test_resumed_one_shot_keeps_the_delay_it_had_left() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("once", pid, 10, reference="r")
        await clock.advance(4)
        await system.pause_schedule("r")
        await clock.advance(100)
        assert log.messages == []
        await system.resume_schedule("r")
        await clock.advance(5.75)
        assert log.messages == []
        await clock.advance(0.25)
        assert log.times == [110.0]


async def test_resumed_repeating_schedule_fires_one_full_interval_after_the_resume() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule("tick", pid, 3, reference="r")
        await clock.advance(4)  # tick at 3
        await system.pause_schedule("r")
        await clock.advance(10)  # t = 14; the old grid had 6, 9, 12
        await system.resume_schedule("r")
        await clock.advance(2.5)  # t = 16.5; the old grid's 15 must not fire
        assert log.times == [3.0]
        await clock.advance(0.5)
        assert log.times == [3.0, 17.0]
        await clock.advance(3)
        assert log.times == [3.0, 17.0, 20.0]


async def test_one_shot_paused_past_its_due_time_fires_only_after_resume() -> None:
    async with running_system() as (system, clock):
        log = Log()
        pid = await system.spawn(recorder(log))
        await system.schedule_once("once", pid, 2, reference="r")
        await clock.advance(1)
        await system.pause_schedule("r")
        await clock.jump(50)
        assert log.messages == []
        await system.resume_schedule("r")
        await clock.advance(1)
        assert log.times == [52.0]


async def test_schedule_made_in_an_actor_is_paused_and_resumed_by_another_actor() -> None:
    class Owner(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await ctx.schedule("tick", target, 1, reference="shared")

        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    class Controller(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            if ctx.message == "pause":
                await ctx.pause_schedule("shared")
            elif ctx.message == "resume":
                await ctx.resume_schedule("shared")

    async with running_system() as (system, clock):
        log = Log()
        target = await system.spawn(recorder(log), "target")
        await system.spawn(Owner, "owner")
        controller = await system.spawn(Controller, "controller")
        await clock.advance(2)
        controller.tell("pause")
        await clock.advance(5)
        assert log.times == [1.0, 2.0]
        controller.tell("resume")
        await clock.advance(1)
        assert log.times == [1.0, 2.0, 8.0]
