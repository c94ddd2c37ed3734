# SPDX-License-Identifier: Apache-2.0
"""Passivation: an actor idle for ``passivate_after`` stops; every delivery resets it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from tests.actor.actor_support import Echo, new_system

from tocsin import (
    Actor,
    ActorPassivated,
    ActorStopped,
    DeadActorError,
    Directive,
    InvalidIntervalError,
    ReceiveContext,
)


async def test_idle_actor_is_passivated_then_stopped() -> None:
    system, clock = new_system()
    async with system:
        events: list[tuple[str, str]] = []
        system.events.subscribe(
            lambda e: events.append((type(e).__name__, e.pid.name)), ActorPassivated, ActorStopped
        )
        pid = await system.spawn(Echo, "idle", passivate_after=10)
        await clock.advance(9.999)
        assert events == []
        await clock.advance(0.001)
        assert events == [("ActorPassivated", "idle"), ("ActorStopped", "idle")]
        with pytest.raises(DeadActorError):
            await pid.ask("x")


async def test_each_delivery_resets_the_idle_deadline() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, "busy", passivate_after=10)
        for _ in range(5):
            await clock.advance(8)
            pid.tell("keep alive")
            await clock.advance(0)
        assert system.events.count(ActorPassivated) == 0
        await clock.advance(9.5)
        assert system.events.count(ActorPassivated) == 0
        await clock.advance(0.5)
        assert system.events.count(ActorPassivated) == 1
        assert system.events.count(ActorStopped) == 1


async def test_an_ask_counts_as_activity() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, passivate_after=timedelta(seconds=5))
        await clock.advance(4)
        assert await pid.ask("x") == "x"
        await clock.advance(4)
        assert system.events.count(ActorPassivated) == 0
        await clock.advance(1)
        assert system.events.count(ActorPassivated) == 1


async def test_an_actor_busy_past_the_deadline_is_not_passivated_mid_message() -> None:
    gate = asyncio.Event()

    class Slow(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            await gate.wait()

    system, clock = new_system()
    async with system:
        pid = await system.spawn(Slow, passivate_after=10)
        pid.tell("work")
        await clock.advance(25)
        assert system.events.count(ActorPassivated) == 0
        gate.set()
        await clock.advance(0)
        await clock.advance(9)
        assert system.events.count(ActorPassivated) == 0
        await clock.advance(1)
        assert system.events.count(ActorPassivated) == 1


async def test_a_restart_does_not_passivate_and_the_actor_keeps_its_idle_deadline() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, passivate_after=10)
        await clock.advance(5)
        pid.tell("fail")
        await clock.advance(9)
        assert system.events.count(ActorPassivated) == 0
        assert await pid.ask("x") == "x"
        await clock.advance(10)
        assert system.events.count(ActorPassivated) == 1


async def test_a_stopped_actor_leaves_no_passivation_deadline_behind() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, passivate_after=10)
        await system.stop_actor(pid)
        assert system._runtime is not None
        assert len(system._runtime.deadlines) == 0
        await clock.advance(20)
        assert system.events.count(ActorPassivated) == 0


async def test_suspended_actor_is_not_passivated_while_suspended() -> None:
    system, clock = new_system()
    async with system:
        pid = await system.spawn(Echo, passivate_after=10, supervisor=Directive.SUSPEND)
        pid.tell("fail")
        await clock.advance(30)
        assert system.events.count(ActorPassivated) == 0
        await system.reinstate(pid)
        await clock.advance(10)
        assert system.events.count(ActorPassivated) == 1


async def test_many_passivating_actors_each_stop_at_their_own_time() -> None:
    stopped: list[tuple[str, float]] = []
    system, clock = new_system()
    async with system:
        system.events.subscribe(
            lambda e: stopped.append((e.pid.name, clock.monotonic())), ActorPassivated
        )
        for i in range(1, 6):
            await system.spawn(Echo, f"a{i}", passivate_after=i)
        await clock.advance(10)
    assert stopped == [(f"a{i}", float(i)) for i in range(1, 6)]


@pytest.mark.parametrize("bad", [0, -1, float("nan"), True, "10"])
async def test_passivate_after_rejects_non_positive_or_non_numbers(bad: Any) -> None:
    system, _ = new_system()
    async with system:
        with pytest.raises(InvalidIntervalError, match="`passivate_after`"):
            await system.spawn(Echo, passivate_after=bad)
