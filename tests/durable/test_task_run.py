# SPDX-License-Identifier: Apache-2.0
"""How one task run is awaited: a body that never suspends costs no budget deadline; one
that suspends is resumed exactly as ``await`` would (values sent in, errors and
cancellations thrown in) and is timed from the start of its run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor, TaskParked, TaskTimeoutError, _run
from tocsin.durable._runtime import COMPLETION_BATCH

T0 = 1_700_000_000.0
SEEN: list[Any] = []
GATE: dict[str, asyncio.Future[Any]] = {}


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()
    GATE.clear()


class Runner(DurableActor):
    kind = "TaskRunRunner"
    task_timeout = 10.0

    async def quick(self, payload: Any) -> None:
        SEEN.append(("quick", payload))

    async def waits(self, payload: Any) -> None:
        # Suspends three times; each resumption must carry the value it was woken with.
        for step in range(3):
            fut = asyncio.get_running_loop().create_future()
            GATE["next"] = fut
            SEEN.append(("got", step, await fut))
        SEEN.append(("waits done", payload))

    async def fails_late(self, payload: Any) -> None:
        await asyncio.sleep(0)
        raise ValueError(f"late {payload}")

    async def catches(self, payload: Any) -> None:
        # An error thrown into the suspended body is seen by its own except clause.
        fut = asyncio.get_running_loop().create_future()
        GATE["next"] = fut
        try:
            await fut
        except KeyError as exc:
            SEEN.append(("caught", exc.args[0]))

    async def hang(self, payload: Any) -> None:
        SEEN.append(("hang", payload))
        await asyncio.Event().wait()

    async def add(self, payload: dict[str, Any]) -> str:
        return await self.queue(payload.pop("method"), payload.pop("arg", None), **payload)

    async def tasks(self, payload: Any) -> list[Any]:
        return await self.list_schedules()


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem("task-run", clock=clock, store=backend.make()) as system:
        yield system, clock


async def _until(predicate: Any) -> None:
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


async def test_a_body_that_never_suspends_pushes_no_budget_deadline(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    budgets: list[object] = []

    class Counted(_run.Budget):  # type: ignore[misc]
        def __init__(self, task: asyncio.Task[Any]) -> None:
            budgets.append(task)
            super().__init__(task)

    monkeypatch.setattr(_run, "Budget", Counted)
    async with running(backend) as (system, clock):
        pid = await system.durable(Runner, "r")
        for i in range(3):
            await pid.ask(Call("add", {"method": "quick", "arg": i}))
        await clock.advance(0)
        assert SEEN == [("quick", 0), ("quick", 1), ("quick", 2)]
        assert budgets == []
        await pid.ask(Call("add", {"method": "fails_late", "arg": 1, "max_retries": 0}))
        await clock.advance(0)
        assert len(budgets) == 1  # a body that suspends is timed


async def test_a_suspended_body_is_resumed_with_the_values_it_awaited(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Runner, "r")
        await pid.ask(Call("add", {"method": "waits", "arg": "p"}))
        await clock.advance(0)
        for value in ("a", "b", "c"):
            await _until(lambda: "next" in GATE and not GATE["next"].done())
            GATE.pop("next").set_result(value)
        await _until(lambda: ("waits done", "p") in SEEN)
        assert SEEN == [("got", 0, "a"), ("got", 1, "b"), ("got", 2, "c"), ("waits done", "p")]
        await clock.advance(0)
        assert await pid.ask(Call("tasks")) == []  # completed and deleted


async def test_an_error_after_a_suspension_is_a_failed_run(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        events: list[TaskParked] = []
        system.events.subscribe(events.append, TaskParked)
        pid = await system.durable(Runner, "r")
        await pid.ask(Call("add", {"method": "fails_late", "arg": 7, "max_retries": 0}))
        await clock.advance(0)
        assert [type(e.error) for e in events] == [ValueError]
        assert "late 7" in (events[0].task.last_error or "")


async def test_an_error_thrown_into_a_suspended_body_reaches_its_handler(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Runner, "r")
        await pid.ask(Call("add", {"method": "catches"}))
        await clock.advance(0)
        await _until(lambda: "next" in GATE)
        GATE.pop("next").set_exception(KeyError("k"))
        await _until(lambda: SEEN == [("caught", "k")])
        await clock.advance(0)
        assert await pid.ask(Call("tasks")) == []


async def test_a_suspended_body_over_its_budget_is_cancelled_and_fails(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        events: list[TaskParked] = []
        system.events.subscribe(events.append, TaskParked)
        pid = await system.durable(Runner, "r")
        await pid.ask(Call("add", {"method": "hang", "arg": 1, "max_retries": 0}))
        await clock.advance(9.9)
        assert events == []
        await clock.advance(0.2)
        assert [type(e.error) for e in events] == [TaskTimeoutError]


async def test_stopping_the_system_cancels_a_suspended_run_without_failing_it(
    persistent_backend: Backend,
) -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem("task-run", clock=clock, store=persistent_backend.make()) as system:
        pid = await system.durable(Runner, "r")
        await pid.ask(Call("add", {"method": "hang", "arg": 1}))
        await clock.advance(0)
        await _until(lambda: ("hang", 1) in SEEN)
    # The cancelled run is not a failure: the task is still pending with no attempt
    # recorded, and runs again on the next start (at least once).
    store = persistent_backend.make()
    await store.open()
    try:
        [(row)] = await store.list_tasks()
        assert (row.name, row.state, row.attempts, row.last_error) == ("hang", "pending", 0, None)
    finally:
        await store.close()
    SEEN.clear()
    async with ActorSystem("task-run", clock=clock, store=persistent_backend.make()) as again:
        await clock.advance(0)
        await _until(lambda: ("hang", 1) in SEEN)
        assert again.running


class Racer(DurableActor):
    """Asks the system to stop from its last task of a completion batch: the stop then
    begins while the drain is between two tasks (at its per-batch yield)."""

    kind = "TaskRunRacer"
    task_timeout = 10.0

    async def quick(self, i: int) -> None:
        if i == COMPLETION_BATCH - 1:
            STOPS.append(asyncio.get_running_loop().create_task(self._handle.runtime.facade.stop()))

    async def hang(self, payload: Any) -> None:
        SEEN.append(("hang", payload))
        await asyncio.Event().wait()

    async def add(self, n: int) -> None:
        for i in range(n):
            await self.queue("quick", i)
        await self.queue("hang", 1)


STOPS: list[asyncio.Task[None]] = []


async def test_a_stop_between_two_tasks_of_a_drain_starts_no_further_task(
    persistent_backend: Backend,
) -> None:
    STOPS.clear()
    clock = ManualClock(wall=T0)
    system = ActorSystem("task-run", clock=clock, store=persistent_backend.make())
    await system.start()
    pid = await system.durable(Racer, "r")
    await pid.ask(Call("add", COMPLETION_BATCH))
    await clock.advance(0)
    await _until(lambda: bool(STOPS))
    await STOPS[0]  # returns without the clock moving: no budget is waited out
    assert ("hang", 1) not in SEEN
    store = persistent_backend.make()
    await store.open()
    try:
        [row] = await store.list_tasks()
        assert (row.name, row.state, row.attempts, row.last_error) == ("hang", "pending", 0, None)
    finally:
        await store.close()
