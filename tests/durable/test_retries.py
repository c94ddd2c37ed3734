# SPDX-License-Identifier: Apache-2.0
"""Failed durable tasks: retries with exponential backoff, time budgets, parking."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import ActorSystem, ManualClock, TaskNotFoundError
from tocsin.durable import (
    Call,
    DurableActor,
    RetryDecision,
    RetryPolicy,
    TaskParked,
    TaskRecord,
    TaskTimeoutError,
)

T0 = 1_700_000_000.0
RUNS: list[tuple[str, float]] = []  # (method, seconds since T0)
FAIL_UNTIL: dict[str, int] = {}  # method -> runs that fail before it succeeds


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    FAIL_UNTIL.clear()


class Flaky(DurableActor):
    retry_policy = RetryPolicy(rng=random.Random(0))

    def _record(self, name: str) -> None:
        RUNS.append((name, self.now().timestamp() - T0))
        if sum(1 for n, _ in RUNS if n == name) <= FAIL_UNTIL.get(name, 10**9):
            raise RuntimeError(f"{name} failed")

    async def boom(self, payload: Any) -> None:
        self._record("boom")

    def sync_boom(self, payload: Any) -> None:
        self._record("sync_boom")

    async def hang(self, payload: Any) -> None:
        RUNS.append(("hang", self.now().timestamp() - T0))
        await asyncio.Event().wait()

    async def add(self, payload: dict[str, Any]) -> str:
        call = payload.pop("call", "queue")
        method = payload.pop("method", "boom")
        if call == "every":
            return await self.every(payload.pop("interval"), method, **payload)
        return await self.queue(method, **payload)

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()

    async def parked(self, payload: Any) -> list[TaskRecord]:
        return await self.list_parked()

    async def retry(self, task_id: str) -> None:
        await self.retry_parked(task_id)

    async def discard(self, task_id: str) -> None:
        await self.discard_parked(task_id)


class ShortBudget(Flaky):
    kind = "RetriesShortBudget"
    task_timeout = 2.0


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem("retries", clock=clock, store=backend.make()) as system:
        yield system, clock


def runs(name: str = "boom") -> list[float]:
    return [t for n, t in RUNS if n == name]


def gaps(values: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(values)]


async def test_failed_task_is_retried_with_jittered_exponential_backoff(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"max_retries": 5}))
        await clock.advance(200)
        assert len(runs()) == 6
        for k, gap in enumerate(gaps(runs()), start=1):
            assert 0.5 * 2 ** (k - 1) <= gap <= 2 ** (k - 1), (k, gap)


async def test_task_is_parked_after_max_retries_plus_one_failures_and_never_fires_again(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        events: list[TaskParked] = []
        system.events.subscribe(events.append, TaskParked)
        pid = await system.durable(Flaky, "f")
        tid = await pid.ask(Call("add", {"max_retries": 2, "id": "p"}))
        await clock.advance(100)
        assert len(runs()) == 3
        (record,) = await pid.ask(Call("parked"))
        assert (record.id, record.state, record.attempts) == (tid, "parked", 3)
        # Type and text first, then where it failed (issue 10, item 13).
        assert record.last_error is not None
        assert record.last_error.startswith("RuntimeError: boom failed\nTraceback")
        assert ", in _record\n" in record.last_error
        assert await pid.ask(Call("tasks")) == [record]  # list_schedules includes parked
        assert [(e.pid, e.task.id, e.task.state) for e in events] == [(pid, "p", "parked")]
        assert isinstance(events[0].error, RuntimeError)
        await clock.advance(100_000)
        assert len(runs()) == 3


async def test_zero_max_retries_parks_after_the_first_failure(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"max_retries": 0}))
        await clock.advance(1000)
        assert runs() == [0.0]
        assert [r.attempts for r in await pid.ask(Call("parked"))] == [1]


async def test_attempts_and_next_attempt_time_are_recorded_after_a_failure(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"id": "r"}))
        await clock.advance(0)
        (record,) = await pid.ask(Call("tasks"))
        assert (record.attempts, record.state) == (1, "pending")
        assert record.last_error is not None
        assert "boom failed" in record.last_error
        delay = record.due.timestamp() - T0
        assert 0.5 <= delay <= 1.0


async def test_task_that_recovers_is_deleted_after_its_successful_retry(backend: Backend) -> None:
    FAIL_UNTIL["boom"] = 2
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {}))
        await clock.advance(10)
        assert len(runs()) == 3
        assert await pid.ask(Call("tasks")) == []


async def test_backoff_is_capped_at_300_seconds(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"max_retries": 11}))
        await clock.advance(3000)
        assert len(runs()) == 12
        later = gaps(runs())[9:]  # retries 10 and 11: 2**9 and 2**10 capped at 300
        assert all(150 <= gap <= 300 for gap in later), later


async def test_every_resets_its_attempt_count_after_a_success(backend: Backend) -> None:
    FAIL_UNTIL["boom"] = 2
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"call": "every", "interval": 60, "id": "e", "max_retries": 2}))
        await clock.advance(60)  # first run fails
        (record,) = await pid.ask(Call("tasks"))
        assert record.attempts == 1
        await clock.advance(10)  # second fails, third succeeds
        (record,) = await pid.ask(Call("tasks"))
        assert (record.attempts, record.last_error, record.state) == (0, None, "pending")
        assert runs()[-1] > 60  # the retry succeeded late: the next run stays on the grid
        assert record.due.timestamp() - T0 == 120
        FAIL_UNTIL["boom"] = 4  # two more failures: still within max_retries after the reset
        await clock.advance(200)
        assert [r.state for r in await pid.ask(Call("tasks"))] == ["pending"]


async def test_sync_method_that_raises_is_retried_like_an_async_one(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"method": "sync_boom", "max_retries": 1}))
        await clock.advance(10)
        assert len(runs("sync_boom")) == 2
        assert [r.state for r in await pid.ask(Call("tasks"))] == ["parked"]


async def test_task_exceeding_its_time_budget_counts_as_a_failure(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        events: list[TaskParked] = []
        system.events.subscribe(events.append, TaskParked)
        pid = await system.durable(ShortBudget, "slow")
        await pid.ask(Call("add", {"method": "hang", "max_retries": 0}))
        await clock.advance(1.9)
        assert events == []  # still running (the actor is busy: no ask here)
        await clock.advance(0.2)
        (record,) = await pid.ask(Call("parked"))
        assert "TaskTimeoutError" in (record.last_error or "")
        assert isinstance(events[0].error, TaskTimeoutError)


async def test_per_task_timeout_overrides_the_class_budget(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"method": "hang", "max_retries": 0, "timeout": 5}))
        await clock.advance(4.9)
        await clock.advance(0.2)
        (record,) = await pid.ask(Call("parked"))
        assert "TaskTimeoutError" in (record.last_error or "")


async def test_default_time_budget_is_fifteen_minutes() -> None:
    assert DurableActor.task_timeout == 900.0
    clock = ManualClock(wall=T0)
    async with ActorSystem("budget", clock=clock) as system:
        events: list[TaskParked] = []
        system.events.subscribe(events.append, TaskParked)
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"method": "hang", "max_retries": 0}))
        await clock.advance(899)
        assert events == []
        await clock.advance(2)
        assert [e.task.id for e in events] == [r.id for r in await pid.ask(Call("parked"))]
        assert len(events) == 1


async def test_retry_parked_runs_the_task_again_with_its_attempts_reset(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"max_retries": 0, "id": "p"}))
        await clock.advance(1)
        FAIL_UNTIL["boom"] = 1
        await pid.ask(Call("retry", "p"))
        assert [(r.state, r.attempts) for r in await pid.ask(Call("tasks"))] == [("pending", 0)]
        await clock.advance(0)
        assert runs() == [0.0, 1.0]
        assert await pid.ask(Call("tasks")) == []


async def test_discard_parked_deletes_the_task_and_unknown_ids_raise(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Flaky, "f")
        await pid.ask(Call("add", {"max_retries": 0, "id": "p"}))
        await pid.ask(Call("add", {"call": "every", "interval": 1000, "id": "pend"}))
        await clock.advance(0.5)
        await pid.ask(Call("discard", "p"))
        assert [r.id for r in await pid.ask(Call("tasks"))] == ["pend"]
        with pytest.raises(TaskNotFoundError):
            await pid.ask(Call("discard", "p"))
        with pytest.raises(TaskNotFoundError):
            await pid.ask(Call("discard", "pend"))  # pending, not parked
        with pytest.raises(TaskNotFoundError):
            await pid.ask(Call("retry", "nope"))


# -- the policy itself ----------------------------------------------------------------------


def test_backoff_before_retry_k_is_two_to_the_k_minus_one_scaled_into_half_to_one() -> None:
    policy = RetryPolicy(rng=random.Random(42))
    for k in range(1, 15):
        raw = min(300.0, 2.0 ** (k - 1))
        for _ in range(50):
            assert 0.5 * raw <= policy.backoff(k) <= raw


def test_policy_parks_once_failures_exceed_max_retries() -> None:
    policy = RetryPolicy(jitter_min=1.0)
    error = RuntimeError()
    assert policy.decide(error, 1, 2) == RetryDecision(1.0)
    assert policy.decide(error, 2, 2) == RetryDecision(2.0)
    assert policy.decide(error, 3, 2) is None
    assert policy.decide(error, 1, 0) is None


def test_seeded_policies_give_the_same_delays() -> None:
    a = RetryPolicy(rng=random.Random(7))
    b = RetryPolicy(rng=random.Random(7))
    assert [a.backoff(k) for k in range(1, 9)] == [b.backoff(k) for k in range(1, 9)]


def test_parked_record_due_is_an_aware_utc_time() -> None:
    record = TaskRecord(
        "i", "n", None, datetime.fromtimestamp(0, UTC), None, 0, 0, datetime.now(UTC)
    )
    assert record.state == "pending"
