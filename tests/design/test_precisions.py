# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Precisions (where a reader could hesitate): lifecycle and ask" as executable
statements: one small test per sentence that names a public name, a signature, a default,
an error type or a behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.design.design_support import (
    manual,
    recorder,
)

from tocsin import (
    Actor,
    ActorRestarted,
    ReceiveContext,
)


async def test_pre_start_runs_on_every_start_and_its_failure_is_supervised() -> None:
    starts: list[int] = []

    class Flaky(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            starts.append(len(starts))
            if len(starts) == 2:
                raise RuntimeError("second start fails")

        async def receive(self, ctx: ReceiveContext) -> None:
            raise RuntimeError("boom")

    async with manual() as (system, clock):
        restarted: list[Any] = []
        system.events.subscribe(restarted.append, ActorRestarted)
        pid = await system.spawn(Flaky)
        pid.tell("x")
        await clock.advance(0)
        assert starts == [0, 1, 2]  # restart, failed pre_start restarted again
        assert len(restarted) == 2


async def test_messages_sent_during_pre_start_wait_in_the_mailbox() -> None:
    got: list[str] = []
    gate = asyncio.Event()

    class Waits(Actor):
        async def pre_start(self, ctx: ReceiveContext) -> None:
            await gate.wait()

        async def receive(self, ctx: ReceiveContext) -> None:
            got.append(ctx.message)

    async with manual() as (system, clock):
        spawning = asyncio.ensure_future(system.spawn(Waits, "w"))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        pid = await system.actor_of("w")
        pid.tell("early")
        gate.set()
        await spawning
        await clock.advance(0)
        assert got == ["early"]


async def test_ask_whose_handler_raises_fails_the_asker_with_that_exception() -> None:
    async with manual() as (system, clock):
        restarted: list[Any] = []
        system.events.subscribe(restarted.append, ActorRestarted)
        pid, _ = await recorder(system)
        with pytest.raises(RuntimeError, match="fail"):
            await pid.ask("fail", timeout=1)
        await clock.advance(0)
        assert len(restarted) == 1
