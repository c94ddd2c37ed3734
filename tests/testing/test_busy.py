# SPDX-License-Identifier: Apache-2.0
"""What the plugin's teardown and hang guard report: busy actors and where they wait.

In process (the pytester runs of the same, through the plugin, are in test_plugin.py and
marked slow): a system left with an actor sleeping on simulated time is stopped by
``_wind_down`` without waiting for ever, and the actor is named with its await.
"""

from __future__ import annotations

import asyncio

from tocsin import Actor, ActorSystem, DeadActorError, ManualClock, ReceiveContext
from tocsin.testing._busy import busy_actors, busy_on_loop, clock_state
from tocsin.testing._plugin import _wind_down


class Sleeper(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        await ctx.system.clock.sleep(3600)
        ctx.respond("slept")


async def test_an_idle_system_has_no_busy_actor_and_stops_plainly() -> None:
    clock = ManualClock()
    system = ActorSystem(clock=clock)
    await system.start()
    await system.spawn(Sleeper, "sleeper")
    assert busy_actors(system) == []
    assert await _wind_down(system, clock) == []
    assert not system.running


async def test_wind_down_names_a_sleeping_actor_and_stops_the_system_anyway() -> None:
    clock = ManualClock()
    system = ActorSystem(clock=clock)
    await system.start()
    pid = await system.spawn(Sleeper, "sleeper")
    asker = asyncio.ensure_future(pid.ask("go", timeout=None))
    await clock.settle()
    [line] = busy_actors(system)
    assert line.startswith("actor /user/sleeper (Sleeper): waits at clock.py:")
    assert "in ManualClock.sleep" in line
    assert "Sleeper.receive (await ctx.system.clock.sleep(3600))" in line
    on_loop = busy_on_loop(asyncio.get_running_loop())
    assert on_loop[0] == f"{system.name}: {line}"
    assert on_loop[-1] == "ManualClock at t=0 s, next deadline t=3600 s, autojump off"
    state = clock_state(clock)
    busy = await _wind_down(system, clock)  # returns: no hang
    assert busy == [line, state]
    assert not system.running
    assert asker.done()  # the ask was answered (failed) by the stop
    assert isinstance(asker.exception(), DeadActorError)


def test_clock_state_names_time_next_deadline_and_autojump() -> None:
    clock = ManualClock(autojump=True)
    assert clock_state(clock) == "ManualClock at t=0 s, none pending, autojump on"
