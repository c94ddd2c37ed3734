# SPDX-License-Identifier: Apache-2.0
"""Recovery: a new system on the same SQLite/PostgreSQL store picks up where the last left.

Restart tests need a store that outlives its system, so they run on SQLite and PostgreSQL
only (``persistent_backend``).
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import ActorSystem, ManualClock, ReceiveContext
from tocsin.durable import Call, DurableActor, RetryPolicy, TaskRecord, _runtime
from tocsin.stores import TaskRow, UpsertTask

T0 = 1_700_000_000.0
RUNS: list[tuple[str, str, float]] = []  # (identity, method, seconds since T0)
STARTS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    STARTS.clear()


class Invoice(DurableActor):
    retry_policy = RetryPolicy(rng=random.Random(0))

    async def pre_start(self, ctx: ReceiveContext) -> None:
        STARTS[self.identity] += 1

    async def send(self, payload: Any) -> None:
        RUNS.append((self.identity, "send", self.now().timestamp() - T0))

    async def boom(self, payload: Any) -> None:
        RUNS.append((self.identity, "boom", self.now().timestamp() - T0))
        raise RuntimeError("boom")

    async def add(self, spec: dict[str, Any]) -> str:
        call = spec.pop("call")
        if call == "every":
            return await self.every(spec.pop("delay"), spec.pop("method", "send"), **spec)
        return await self.schedule(spec.pop("delay"), spec.pop("method", "send"), **spec)

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


def system_at(backend: Backend, wall: float) -> tuple[ActorSystem, ManualClock]:
    clock = ManualClock(wall=wall)
    return ActorSystem("recovery", clock=clock, store=backend.make()), clock


def runs(method: str = "send") -> list[float]:
    return [t for _, m, t in RUNS if m == method]


async def test_new_system_on_the_same_store_runs_overdue_tasks_without_any_message(
    persistent_backend: Backend,
) -> None:
    system, _clock = system_at(persistent_backend, T0)
    async with system:
        for identity in ("a", "b", "c"):
            pid = await system.durable(Invoice, identity)
            await pid.ask(Call("add", {"call": "schedule", "delay": 30}))
    STARTS.clear()
    system, clock = system_at(persistent_backend, T0 + 100)  # down for 100 s
    async with system:
        await clock.advance(0)
        assert sorted(i for i, _, _ in RUNS) == ["a", "b", "c"]
        assert runs() == [100.0] * 3
        assert STARTS == {"a": 1, "b": 1, "c": 1}


async def test_task_due_during_the_next_run_fires_at_its_stored_time(
    persistent_backend: Backend,
) -> None:
    system, _clock = system_at(persistent_backend, T0)
    async with system:
        pid = await system.durable(Invoice, "a")
        await pid.ask(Call("add", {"call": "schedule", "delay": 50}))
    system, clock = system_at(persistent_backend, T0 + 20)
    async with system:
        await clock.advance(29.9)
        assert RUNS == []
        await clock.advance(0.1)
        assert runs() == [50.0]


async def test_backoff_state_survives_a_restart(persistent_backend: Backend) -> None:
    system, clock = system_at(persistent_backend, T0)
    async with system:
        pid = await system.durable(Invoice, "a")
        spec = {"call": "schedule", "delay": 10, "method": "boom", "id": "b"}
        await pid.ask(Call("add", spec))
        await clock.advance(10)  # first failure
        await clock.advance(1)  # second failure (retry 1 after 0.5..1 s; retry 2 >= 1 s later)
        (before,) = await pid.ask(Call("tasks"))
        assert before.attempts == 2
    assert len(runs("boom")) == 2
    # Restart "now": the persisted next attempt (2..4 s after the second failure) holds.
    system, clock = system_at(persistent_backend, T0 + 11)
    async with system:
        pid = await system.durable(Invoice, "a")
        (after,) = await pid.ask(Call("tasks"))
        assert (after.attempts, after.due, after.last_error) == (
            before.attempts,
            before.due,
            before.last_error,
        )
        wait = after.due.timestamp() - (T0 + 11)
        assert wait > 0
        await clock.advance(max(0.0, wait - 0.01))
        assert len(runs("boom")) == 2
        await clock.advance(1000)
        assert len(runs("boom")) == 6  # max_retries 5 after the first run, across restarts
        (parked,) = await pid.ask(Call("tasks"))
        assert (parked.state, parked.attempts) == ("parked", 6)


async def test_parked_task_stays_parked_after_a_restart(persistent_backend: Backend) -> None:
    system, clock = system_at(persistent_backend, T0)
    async with system:
        pid = await system.durable(Invoice, "a")
        spec = {"call": "schedule", "delay": 1, "method": "boom", "max_retries": 0}
        await pid.ask(Call("add", spec))
        await clock.advance(2)
    system, clock = system_at(persistent_backend, T0 + 3)
    async with system:
        await clock.advance(1000)
        assert len(runs("boom")) == 1
        pid = await system.durable(Invoice, "a")
        assert [r.state for r in await pid.ask(Call("tasks"))] == ["parked"]


async def test_overdue_every_runs_once_after_a_restart_then_keeps_its_interval(
    persistent_backend: Backend,
) -> None:
    system, clock = system_at(persistent_backend, T0)
    async with system:
        pid = await system.durable(Invoice, "a")
        await pid.ask(Call("add", {"call": "every", "delay": 10, "id": "e"}))
        await clock.advance(25)
    assert runs() == [10.0, 20.0]
    system, clock = system_at(persistent_backend, T0 + 1000)  # ~98 intervals missed
    async with system:
        await clock.advance(0)
        assert runs() == [10.0, 20.0, 1000.0]
        await clock.advance(25)
        assert runs() == [10.0, 20.0, 1000.0, 1010.0, 1020.0]


async def test_a_catch_up_run_of_every_keeps_its_grid_after_a_restart(
    persistent_backend: Backend,
) -> None:
    # Issue 30: after downtime the runs went 5550, 5850, 6150 (re-anchored on the late
    # run) instead of the task's 300 s grid.
    system, clock = system_at(persistent_backend, T0)
    async with system:
        pid = await system.durable(Invoice, "g")
        await pid.ask(Call("add", {"call": "every", "delay": 300, "id": "g"}))
        await clock.advance(300)
    assert runs() == [300.0]
    system, clock = system_at(persistent_backend, T0 + 5550)
    async with system:
        await clock.advance(0)
        assert runs() == [300.0, 5550.0]  # the missed instants, coalesced into one run
        await clock.advance(800)
        assert runs() == [300.0, 5550.0, 5700.0, 6000.0, 6300.0]


async def test_identities_whose_tasks_are_far_ahead_are_not_activated_at_start(
    persistent_backend: Backend,
) -> None:
    lookahead = _runtime.LOOKAHEAD
    system, _clock = system_at(persistent_backend, T0)
    async with system:
        near = await system.durable(Invoice, "near")
        await near.ask(Call("add", {"call": "schedule", "delay": 60}))
        far = await system.durable(Invoice, "far")
        await far.ask(Call("add", {"call": "schedule", "delay": lookahead * 4}))
    STARTS.clear()
    system, clock = system_at(persistent_backend, T0)
    async with system:
        durable = system._durable
        assert durable is not None
        # Only the near future is held in memory: no handle, no alarm for "far".
        assert durable.held() == {("Invoice", "near")}
        await clock.advance(60)
        assert [i for i, _, _ in RUNS] == ["near"]
        assert STARTS == {"near": 1}
        await clock.advance(lookahead * 4 - 60)
        assert [(i, t) for i, _, t in RUNS] == [("near", 60.0), ("far", lookahead * 4)]


async def test_recovery_activates_overdue_identities_with_bounded_concurrency(
    persistent_backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_runtime, "ACTIVATION_CONCURRENCY", 3)
    active = 0
    peak = 0

    class Slow(Invoice):
        kind = "RecoverySlow"

        async def pre_start(self, ctx: ReceiveContext) -> None:
            nonlocal active, peak
            active += 1
            peak = max(peak, active)
            for _ in range(10):
                await asyncio.sleep(0)
            active -= 1

    system, _clock = system_at(persistent_backend, T0)
    async with system:
        for n in range(12):
            pid = await system.durable(Slow, f"s{n}")
            await pid.ask(Call("add", {"call": "schedule", "delay": 5}))
    peak = 0
    system, clock = system_at(persistent_backend, T0 + 60)
    async with system:
        await clock.advance(0)
        assert len(RUNS) == 12
        assert 1 <= peak <= 3


async def test_tasks_of_an_unknown_kind_wait_in_the_store(
    persistent_backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    store = persistent_backend.make()
    await store.open()
    row = TaskRow("NoSuchKind", "x", "t", "send", b"\xc0", T0, None, 0, 5, T0)
    await store.apply([UpsertTask(row)])
    await store.close()
    system, clock = system_at(persistent_backend, T0 + 10)
    with caplog.at_level(logging.WARNING, "tocsin.durable"):
        async with system:
            await clock.advance(1)
    assert "NoSuchKind" in caplog.text
    store = persistent_backend.make()
    await store.open()
    try:
        assert await store.list_tasks("NoSuchKind") == [row]
    finally:
        await store.close()
