# SPDX-License-Identifier: Apache-2.0
"""Activations by the alarm in batches (issue 32), on a ManualClock: identities that come
due together start in tasks shared by up to ``ACTIVATION_CONCURRENCY`` of them (not one
task each), rung at once rather than through a deadline each; a class with its own
``pre_start`` keeps a start of its own; still one activation per identity, its drain
before a message that came after the alarm rang."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from tocsin import ActorSystem, ManualClock
from tocsin.actor import ActorStarted
from tocsin.durable import Call, DurableActor
from tocsin.durable._handle import DurableHandle
from tocsin.durable._runtime import ACTIVATION_CONCURRENCY
from tocsin.stores import MemoryStore

T0 = 1_700_000_000.0
RUNS: list[tuple[str, str]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Remind(DurableActor):
    kind = "batched-activation.Remind"

    async def later(self, arg: list[Any]) -> str:
        delay, method = arg
        return await self.schedule(delay, method)

    def ping(self, _: object) -> None:
        RUNS.append((self.identity, "ping"))

    async def receive(self, ctx: Any) -> None:
        if ctx.message == "hello":
            RUNS.append((self.identity, "hello"))
            ctx.respond("hi")
            return
        await super().receive(ctx)


class Prepared(DurableActor):
    """Overrides ``pre_start`` (it suspends): its start is its own, as before."""

    kind = "batched-activation.Prepared"

    async def pre_start(self, ctx: Any) -> None:
        await asyncio.sleep(0)
        RUNS.append((self.identity, "pre_start"))

    async def later(self, arg: list[Any]) -> str:
        delay, method = arg
        return await self.schedule(delay, method)

    def ping(self, _: object) -> None:
        RUNS.append((self.identity, "ping"))


async def _passivated(cls: type[DurableActor], count: int) -> MemoryStore:
    """A store holding one reminder (due at T0 + 60) for each of ``count`` identities."""
    inner = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner) as system:
        for i in range(count):
            pid = await system.durable(cls, f"r{i}", passivate_after=0.5)
            await pid.ask(Call("later", [60, "ping"]))
        await clock.advance(1)
    RUNS.clear()
    return inner


def _record_start_tasks(monkeypatch: pytest.MonkeyPatch) -> list[asyncio.Task[Any] | None]:
    tasks: list[asyncio.Task[Any] | None] = []
    run_start = DurableHandle.run_start

    async def recorded(self: DurableHandle, cell: Any) -> None:
        tasks.append(asyncio.current_task())
        await run_start(self, cell)

    monkeypatch.setattr(DurableHandle, "run_start", recorded)
    return tasks


async def test_identities_coming_due_together_start_in_shared_tasks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    count = 300
    inner = await _passivated(Remind, count)
    tasks = _record_start_tasks(monkeypatch)
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner) as system:
        started: list[Any] = []
        system.events.subscribe(started.append, ActorStarted)
        durable = system._durable
        assert durable is not None
        await clock.advance(60)
        assert sorted(RUNS) == sorted((f"r{i}", "ping") for i in range(count))
        assert len(tasks) == count
        # Shared: at most ACTIVATION_CONCURRENCY starts a task (300 -> 5 tasks, not 300).
        assert len({id(t) for t in tasks}) == math.ceil(count / ACTIVATION_CONCURRENCY)
        assert len(started) == count  # one activation per identity
        assert all(h.starting is None for h in durable.handles.values())
        assert await inner.list_tasks() == []


async def test_a_class_with_its_own_pre_start_keeps_a_start_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inner = await _passivated(Prepared, 3)
    tasks = _record_start_tasks(monkeypatch)
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner):
        await clock.advance(60)
        assert len({id(t) for t in tasks}) == 3
        for name in ("r0", "r1", "r2"):  # pre_start before the drain, per identity
            assert RUNS.index((name, "pre_start")) < RUNS.index((name, "ping"))
        assert len(RUNS) == 6
        assert await inner.list_tasks() == []


async def test_a_message_during_a_batched_start_comes_after_the_drain_in_one_activation() -> None:
    inner = await _passivated(Remind, 2)
    clock = ManualClock(wall=T0)
    async with ActorSystem("batched", clock=clock, store=inner) as system:
        started: list[Any] = []
        system.events.subscribe(started.append, ActorStarted)
        durable = system._durable
        assert durable is not None
        clock.set_wall(T0 + 60)  # due now; the waiting identities ring at the next step
        durable.soon.fire(clock.monotonic(), clock.monotonic())
        handle = durable.handles[(Remind.kind, "r1")]
        assert handle.starting is not None  # its start is pending (a shared task)
        assert handle.starting is durable.handles[(Remind.kind, "r0")].starting
        handle.pid.tell("hello")  # queued behind the drain the alarm queued
        pid = await system.durable(Remind, "r1")  # waits for that start
        assert pid == handle.pid
        assert await pid.ask("hello") == "hi"
        assert RUNS.index(("r1", "ping")) < RUNS.index(("r1", "hello"))
        assert sorted(RUNS) == [("r0", "ping"), ("r1", "hello"), ("r1", "hello"), ("r1", "ping")]
        assert len(started) == 2
