# SPDX-License-Identifier: Apache-2.0
"""``system.durable_tasks(Kind, id)``: an operator's verbs on one identity's tasks,
answered from the store while the identity's task is blocked in its handler (an ask
would wait behind it), on every store, driven by ManualClock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorSystem,
    ActorSystemNotStartedError,
    ManualClock,
    Outcome,
    ScheduleNotFoundError,
    Tick,
)
from tocsin.durable import Call, DurableActor, DurableTasks

RUNS: list[Tick] = []
GATE: dict[str, asyncio.Event] = {}
STARTED: dict[str, asyncio.Event] = {}
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)
#: Real seconds any one wait may take (a bound, not a speed: the answers need no time).
BOUND = 10.0


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    GATE.clear()
    STARTED.clear()


class Sync(DurableActor):
    kind = "OperatorSync"

    async def pre_start(self, ctx: Any) -> None:
        await self.every(60, "sync", id="sync")
        await self.every(3600, "fail", id="flaky", max_retries=0)

    async def sync(self, payload: Any) -> None:
        assert self.current_task is not None
        RUNS.append(self.current_task)
        gate = GATE.get(self.identity)
        if gate is not None:
            STARTED[self.identity].set()
            await gate.wait()  # blocked in its handler until the test opens the gate

    async def fail(self, payload: Any) -> None:
        raise RuntimeError("always")

    async def ping(self, payload: Any) -> str:
        return "pong"


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=START)
    async with ActorSystem("operator", clock=clock, store=backend.make(), timezone="UTC") as s:
        yield s, clock


async def test_operator_calls_answer_while_the_identity_is_blocked_in_a_task(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Sync, "s")
        GATE["s"], STARTED["s"] = gate, started = asyncio.Event(), asyncio.Event()
        advancing = asyncio.ensure_future(clock.advance(60))  # 12:01: the run blocks
        async with asyncio.timeout(BOUND):
            await started.wait()
        tasks = system.durable_tasks(Sync, "s")
        assert repr(tasks) == "<DurableTasks OperatorSync/s>"
        ask = asyncio.ensure_future(pid.ask(Call("ping")))  # waits behind the run
        async with asyncio.timeout(BOUND):  # each answered from the store, at once
            listed = {r.id: r for r in await tasks.list_schedules()}
            assert listed["sync"].state == "running"
            history = await tasks.schedule_history("flaky")
            await tasks.pause_schedule("sync", note="incident 7")
            await tasks.trigger_schedule("sync")
            backfilled = await tasks.backfill_schedule("sync", START - 2 * MINUTE, START)
        assert history == []
        assert backfilled == [START - 2 * MINUTE, START - MINUTE]
        assert not ask.done()
        del GATE["s"]
        gate.set()
        async with asyncio.timeout(BOUND):
            await advancing
            assert await ask == "pong"
            await clock.advance(120)  # the manual and backfilled runs; 12:02, 12:03 paused
        # Due together, run in (due, id) order: the backfilled ones, then the manual one.
        assert [(t.manual, t.backfill) for t in RUNS[1:]] == [
            (False, True),
            (False, True),
            (True, False),
        ]
        listed = {r.id: r for r in await tasks.list_schedules()}
        assert (listed["sync"].paused, listed["sync"].note) == (True, "incident 7")
        outcomes = [(h.outcome, h.detail) for h in await tasks.schedule_history("sync")]
        assert outcomes[0] == (Outcome.DELIVERED, None)  # the 12:01 run finished
        assert outcomes.count((Outcome.PAUSED, "incident 7")) == 2
        await tasks.resume_schedule("sync")
        await clock.advance(60)
        assert RUNS[-1].instant == START + 4 * MINUTE


async def test_operator_cancel_during_a_run_is_not_undone_by_its_completion(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        await system.durable(Sync, "c")
        GATE["c"], STARTED["c"] = gate, started = asyncio.Event(), asyncio.Event()
        advancing = asyncio.ensure_future(clock.advance(60))
        async with asyncio.timeout(BOUND):
            await started.wait()
            tasks = system.durable_tasks(Sync, "c")
            assert await tasks.cancel_schedule("sync") is True
        gate.set()
        async with asyncio.timeout(BOUND):
            await advancing
            await clock.advance(600)
        assert len(RUNS) == 1
        assert [r.id for r in await tasks.list_schedules()] == ["flaky"]
        with pytest.raises(ScheduleNotFoundError):
            await tasks.cancel_schedule("sync")
        assert await tasks.cancel_schedule("sync", missing_ok=True) is False


async def test_operator_retries_and_discards_parked_tasks(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        await system.durable(Sync, "p")
        await clock.advance(3600)  # `flaky` fails once: parked (max_retries=0)
        tasks = system.durable_tasks(Sync, "p")
        [parked] = await tasks.list_parked()
        assert parked.id == "flaky"
        await tasks.retry_parked("flaky")
        [pending] = [r for r in await tasks.list_schedules() if r.id == "flaky"]
        assert (pending.state, pending.attempts) == ("pending", 0)
        await clock.advance(1)  # it runs (and fails) again at once: parked again
        [parked] = await tasks.list_parked()
        await tasks.discard_parked("flaky")
        assert await tasks.list_parked() == []
        with pytest.raises(ScheduleNotFoundError):
            await tasks.discard_parked("flaky")


async def test_durable_tasks_errors_at_the_call(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        with pytest.raises(TypeError, match="`kind` must be a DurableActor subclass"):
            system.durable_tasks(object, "x")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="`identity` must be a non-empty str"):
            system.durable_tasks(Sync, "")
        tasks = system.durable_tasks(Sync, "never-activated")
        assert isinstance(tasks, DurableTasks)
        assert await tasks.list_schedules() == []
        for verb in ("pause_schedule", "resume_schedule", "trigger_schedule", "schedule_history"):
            with pytest.raises(ScheduleNotFoundError, match="no task 'nope'"):
                await getattr(tasks, verb)("nope")
    with pytest.raises(ActorSystemNotStartedError):
        system.durable_tasks(Sync, "x")
