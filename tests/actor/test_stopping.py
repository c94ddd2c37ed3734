# SPDX-License-Identifier: Apache-2.0
"""Stopping the system (issue 10, items 1 and 2): from inside an actor, and with a grace
period after which running handlers are cancelled."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    DeadActorError,
    Directive,
    InvalidIntervalError,
    ManualClock,
    ReceiveContext,
    Supervisor,
)

LOG: list[str] = []


class StopsTheSystem(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        await ctx.system.stop()  # begins the stop and returns: no deadlock
        LOG.append("after stop")
        ctx.respond("done")

    async def post_stop(self, ctx: ReceiveContext) -> None:
        LOG.append("post_stop")


class Stuck(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        LOG.append("stuck")
        await asyncio.Event().wait()  # never set: only the grace ends it

    async def post_stop(self, ctx: ReceiveContext) -> None:
        LOG.append("post_stop")


@pytest.fixture(autouse=True)
def _clear() -> None:
    LOG.clear()


async def test_stop_from_inside_an_actor_returns_and_completes_after_the_handler() -> None:
    clock = ManualClock(wall=0)
    system = ActorSystem("test", clock=clock)
    await system.start()
    pid = await system.spawn(StopsTheSystem, "stopper")
    assert await pid.ask("stop please") == "done"  # the handler went on after stop()
    await system.stop()  # an outside waiter sees the same stop complete
    assert not system.running
    assert LOG == ["after stop", "post_stop"]


async def test_outside_stop_waits_for_a_stop_begun_inside() -> None:
    clock = ManualClock(wall=0)
    system = ActorSystem("test", clock=clock)
    await system.start()
    pid = await system.spawn(StopsTheSystem, "stopper")
    pid.tell("stop please")
    await asyncio.sleep(0)
    await asyncio.wait_for(system.stop(), 10)
    assert LOG == ["after stop", "post_stop"]


async def test_stop_cancels_a_stuck_handler_after_the_grace_and_post_stop_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = ManualClock(wall=0)
    system = ActorSystem("test", clock=clock, stop_timeout=30)
    await system.start()
    pid = await system.spawn(Stuck, "stuck")
    asking = asyncio.ensure_future(pid.ask("x", timeout=None))
    await clock.advance(0)
    assert LOG == ["stuck"]
    stopping = asyncio.ensure_future(system.stop(timeout=5))
    await clock.advance(4.9)
    assert not stopping.done()
    with caplog.at_level(logging.WARNING, "tocsin.actor"):
        await clock.advance(0.1)
        await asyncio.wait_for(stopping, 10)
    assert LOG == ["stuck", "post_stop"]
    assert "tocsin://test/user/stuck" in caplog.text
    assert "grace" in caplog.text
    with pytest.raises(DeadActorError):
        await asking


async def test_the_default_grace_comes_from_stop_timeout_and_async_with_uses_it() -> None:
    clock = ManualClock(wall=0)
    system = ActorSystem("test", clock=clock, stop_timeout=2)
    leaving: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def run() -> None:
        async with system:
            pid = await system.spawn(Stuck, "stuck")
            pid.tell("x")
            await leaving

    body = asyncio.ensure_future(run())
    await clock.advance(0)
    leaving.set_result(None)
    await clock.advance(1.9)
    assert not body.done()
    await clock.advance(0.1)
    await asyncio.wait_for(body, 10)
    assert LOG == ["stuck", "post_stop"]


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "10", True])
def test_a_bad_stop_timeout_is_rejected_at_construction(bad: object) -> None:
    with pytest.raises(InvalidIntervalError, match="stop_timeout"):
        ActorSystem("test", stop_timeout=bad)  # type: ignore[arg-type]


async def test_a_stop_during_a_restart_backoff_does_not_wait_for_the_backoff() -> None:
    class Crashes(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("crash")

    clock = ManualClock(wall=0)
    system = ActorSystem("test", clock=clock)
    await system.start()
    pid = await system.spawn(
        Crashes, "c", supervisor=Supervisor(Directive.RESTART, backoff=(60, 600))
    )
    pid.tell("boom")
    await clock.advance(0)  # now waiting ~60 s before the restart
    stopping = asyncio.ensure_future(system.stop())
    await clock.advance(0)
    await asyncio.wait_for(stopping, 10)
    assert not system.running
