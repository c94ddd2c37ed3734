# SPDX-License-Identifier: Apache-2.0
"""Operating durable tasks (issue 23, the durable part): ``self.trigger(id)`` and
``self.backfill(id, start, end, dry_run=)``, on every store, driven by ManualClock."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorSystem,
    Calendar,
    ManualClock,
    Misfire,
    Outcome,
    Tick,
    TickNotDelivered,
    TickOutcome,
)
from tocsin.durable import Call, DurableActor, TaskRecord

RUNS: list[tuple[Tick, float]] = []
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Ops(DurableActor):
    kind = "PoliciesOps"

    async def tick(self, payload: Any) -> None:
        task = self.current_task
        assert task is not None
        RUNS.append((task, self.now().timestamp()))

    async def hourly(self, options: dict[str, Any]) -> str:
        return await self.cron("0 0 * * * ?", "tick", id="hourly", **options)

    async def minutely(self, options: dict[str, Any]) -> str:
        return await self.every(60, "tick", id="m", **options)

    async def trigger_(self, task_id: str) -> str:
        try:
            await self.trigger(task_id)
        except Exception as exc:
            return type(exc).__name__
        return "ok"

    async def backfill_(self, args: dict[str, Any]) -> list[datetime] | str:
        try:
            return await self.backfill(
                args["id"], args["start"], args["end"], dry_run=args.get("dry_run", False)
            )
        except Exception as exc:
            return type(exc).__name__

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=START)
    async with ActorSystem("ops", clock=clock, store=backend.make(), timezone="UTC") as s:
        yield s, clock


async def test_trigger_runs_once_now_and_keeps_the_due_time(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Ops, "t")
        await pid.ask(Call("hourly", {}))
        await clock.advance(600)
        assert await pid.ask(Call("trigger_", "hourly")) == "ok"
        await clock.advance(1)
        [task] = await pid.ask(Call("tasks"))
        assert task.due == START + timedelta(hours=1)  # unchanged
        await clock.advance(3600)
    manual, regular = (tick for tick, _ in RUNS)
    at = START + timedelta(minutes=10)
    assert manual == Tick("hourly", at, manual=True)
    assert RUNS[0][1] == at.timestamp()
    assert regular == Tick("hourly", START + timedelta(hours=1))


async def test_trigger_of_an_unknown_task_raises(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Ops, "u")
        assert await pid.ask(Call("trigger_", "nope")) == "TaskNotFoundError"


async def test_backfill_runs_each_instant_oldest_first_and_dry_run_runs_none(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Ops, "b")
        await pid.ask(Call("hourly", {"exclude": Calendar.daily("03:00", "04:00")}))
        window = {"id": "hourly", "start": START - timedelta(hours=10), "end": START}
        listed = await pid.ask(Call("backfill_", {**window, "dry_run": True}))
        expected = [START - timedelta(hours=h) for h in range(10, 0, -1) if h != 9]
        assert listed == expected  # 03:00 is excluded
        await clock.advance(1)
        assert RUNS == []
        assert await pid.ask(Call("backfill_", window)) == expected
        await clock.advance(1)
        assert [tick for tick, _ in RUNS] == [Tick("hourly", i, backfill=True) for i in expected]
        [task] = await pid.ask(Call("tasks"))  # the backfilled rows are gone, the task stays
        assert task.due == START + timedelta(hours=1)


async def test_backfill_is_paced_at_the_misfire_rate(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Ops, "p")
        await pid.ask(Call("minutely", {"misfire": Misfire.all(max=10, rate=2)}))
        window = {"id": "m", "start": START - timedelta(minutes=10), "end": START}
        instants = await pid.ask(Call("backfill_", window))
        assert len(instants) == 10
        await clock.advance(10)
    times = [wall for _, wall in RUNS]
    assert len(times) == 10
    assert all(b - a >= 0.5 for a, b in itertools.pairwise(times))
    assert [tick.instant for tick, _ in RUNS] == instants


async def test_backfill_errors(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Ops, "e")
        await pid.ask(Call("hourly", {}))
        reversed_window = {"id": "hourly", "start": START, "end": START - timedelta(hours=1)}
        assert await pid.ask(Call("backfill_", reversed_window)) == "ValueError"
        naive = {"id": "hourly", "start": datetime(2026, 1, 1), "end": START}
        assert await pid.ask(Call("backfill_", naive)) == "TypeError"
        missing = {"id": "nope", "start": START - timedelta(hours=1), "end": START}
        assert await pid.ask(Call("backfill_", missing)) == "TaskNotFoundError"
        # Twenty years of an hourly task: 175,200 instants, past the one backfill limit.
        huge = {"id": "hourly", "start": START - timedelta(days=7300), "end": START}
        assert await pid.ask(Call("backfill_", huge)) == "ValueError"


# -- history (the store's ring per task) --------------------------------------------------


class Histories(DurableActor):
    kind = "PoliciesHistories"

    async def tick(self, payload: Any) -> None:
        RUNS.append((self.current_task, self.now().timestamp()))  # type: ignore[arg-type]

    async def hourly(self, options: dict[str, Any]) -> str:
        return await self.cron("0 0 * * * ?", "tick", id="hourly", **options)

    async def history(self, task_id: str) -> list[TickOutcome]:
        return await self.task_history(task_id)

    async def trigger_(self, task_id: str) -> None:
        await self.trigger(task_id)

    async def cancel(self, task_id: str) -> bool:
        return await self.cancel_schedule(task_id)


async def test_history_says_what_became_of_each_instant(backend: Backend) -> None:
    events: list[TickNotDelivered] = []
    async with running(backend) as (system, clock):
        system.events.subscribe(events.append, TickNotDelivered)
        pid = await system.durable(Histories, "h")
        options = {"exclude": Calendar.daily("13:30", "14:30"), "misfire": Misfire.once()}
        await pid.ask(Call("hourly", options))
        await clock.advance(3600)  # 13:00 delivered
        await pid.ask(Call("trigger_", "hourly"))
        await clock.advance(1)  # the manual run, under the task's id
        await clock.advance(3600)  # 14:00 excluded
        await clock.jump(3 * 3600)  # a stall past 15:00, 16:00, 17:00: coalesced
        await clock.advance(1)
        history = await pid.ask(Call("history", "hourly"))
        assert [(e.outcome, e.instant.hour, e.detail) for e in history] == [
            (Outcome.DELIVERED, 13, None),
            # Recorded when the next instant was chosen, right after 13:00's run.
            (Outcome.EXCLUDED, 14, None),
            (Outcome.DELIVERED, 13, None),  # the manual one (its instant: 13:00)
            (Outcome.COALESCED, 15, 3),
            (Outcome.DELIVERED, 15, None),
        ]
        assert {e.node for e in history} == {"ops"}
        assert [(e.reference, e.outcome) for e in events] == [
            ("/durable/PoliciesHistories/h/hourly", Outcome.EXCLUDED),
            ("/durable/PoliciesHistories/h/hourly", Outcome.COALESCED),
        ]
        assert await pid.ask(Call("cancel", "hourly"))
        assert await pid.ask(Call("history", "hourly")) == []
