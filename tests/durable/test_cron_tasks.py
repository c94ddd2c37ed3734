# SPDX-License-Identifier: Apache-2.0
"""Durable cron tasks (issue 15 part 2): ``DurableActor.cron``, on every store, driven by
``ManualClock`` across DST changes in Europe/Paris and America/New_York and across
downtime."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorSystem,
    InvalidCronExpressionError,
    InvalidTimezoneError,
    ManualClock,
)
from tocsin.cron import CronExpression
from tocsin.durable import Call, DurableActor, TaskRecord

RUNS: list[tuple[str, float]] = []  # (identity, wall time of the run)
FAILS: dict[str, int] = {}  # identity -> runs that fail before it succeeds
PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    FAILS.clear()


class Report(DurableActor):
    kind = "CronTasksReport"

    async def send(self, payload: Any) -> None:
        RUNS.append((self.identity, self.now().timestamp()))
        if FAILS.get(self.identity, 0) > 0:
            FAILS[self.identity] -= 1
            raise RuntimeError("mail server down")

    async def register(self, payload: dict[str, Any]) -> str:
        payload = dict(payload)
        expression = payload.pop("expression")
        return await self.cron(expression, "send", **payload)

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()

    async def cancel_task(self, task_id: str) -> bool:
        return await self.cancel_schedule(task_id)

    async def try_cron(self, payload: dict[str, Any]) -> str:
        payload = dict(payload)
        expression = payload.pop("expression")
        try:
            await self.cron(expression, payload.pop("method", "send"), **payload)
        except Exception as exc:
            return type(exc).__name__
        return "ok"


class Nightly(DurableActor):
    """Registers its cron task in pre_start, on every activation, as real code does."""

    kind = "CronTasksNightly"

    async def pre_start(self, ctx: Any) -> None:
        await self.cron("0 0 3 * * ?", "send", id="nightly", timezone="Europe/Paris")

    async def send(self, payload: Any) -> None:
        RUNS.append((self.identity, self.now().timestamp()))

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


@asynccontextmanager
async def running(
    backend: Backend, start: datetime, *, timezone: str = "UTC"
) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=start)
    async with ActorSystem("cron-tasks", clock=clock, store=backend.make(), timezone=timezone) as s:
        yield s, clock


def local(zone: ZoneInfo) -> list[str]:
    return [datetime.fromtimestamp(t, zone).isoformat() for _, t in RUNS]


# -- DST ----------------------------------------------------------------------------------


async def test_paris_spring_forward_skips_the_missing_half_hour(backend: Backend) -> None:
    # 2024-03-31 02:00 CET -> 03:00 CEST: 02:30 does not exist that day (Quartz skips it).
    async with running(backend, datetime(2024, 3, 29, 12, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 30 2 * * ?", "timezone": "Europe/Paris"}))
        await clock.advance(4 * 86400)
    assert local(PARIS) == [
        "2024-03-30T02:30:00+01:00",
        "2024-04-01T02:30:00+02:00",
        "2024-04-02T02:30:00+02:00",
    ]


async def test_paris_fall_back_runs_the_repeated_half_hour_once(backend: Backend) -> None:
    # 2024-10-27 03:00 CEST -> 02:00 CET: 02:30 happens twice; it runs once, at the
    # later (standard time) instant, as Quartz fires it.
    async with running(backend, datetime(2024, 10, 25, 12, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 30 2 * * ?", "timezone": "Europe/Paris"}))
        await clock.advance(3 * 86400)
    assert local(PARIS) == [
        "2024-10-26T02:30:00+02:00",
        "2024-10-27T02:30:00+01:00",
        "2024-10-28T02:30:00+01:00",
    ]


async def test_new_york_both_changes_in_the_system_zone(backend: Backend) -> None:
    # No `timezone`: the system's zone applies, and the record names it.
    start = datetime(2024, 3, 9, 12, tzinfo=UTC)
    async with running(backend, start, timezone="America/New_York") as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 30 2 * * ?", "id": "spring"}))
        [record] = await pid.ask(Call("tasks"))
        assert (record.cron, record.timezone, record.every) == (
            "0 30 2 * * ?",
            "America/New_York",
            None,
        )
        await clock.advance(2 * 86400)
        # 2024-03-10 02:00 EST -> 03:00 EDT: no 02:30 that day.
        assert local(NEW_YORK) == ["2024-03-11T02:30:00-04:00"]
        RUNS.clear()
        assert await pid.ask(Call("cancel_task", "spring")) is True
        clock.set_wall(datetime(2024, 11, 2, 12, tzinfo=UTC))
        await pid.ask(Call("register", {"expression": "0 30 1 * * ?", "id": "fall"}))
        await clock.advance(2 * 86400)
    # 2024-11-03 02:00 EDT -> 01:00 EST: 01:30 twice, run once (the EST one).
    assert local(NEW_YORK) == ["2024-11-03T01:30:00-05:00", "2024-11-04T01:30:00-05:00"]


# -- downtime, upserts, retries --------------------------------------------------------------


async def test_after_downtime_an_overdue_cron_task_runs_once_then_keeps_its_times(
    persistent_backend: Backend,
) -> None:
    start = datetime(2024, 6, 1, 10, 30, tzinfo=UTC)
    clock = ManualClock(wall=start)
    async with ActorSystem("cron-a", clock=clock, store=persistent_backend.make()) as system:
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 0 * * * ?", "id": "hourly"}))
        await clock.advance(3600)  # runs at 11:00
    assert local(ZoneInfo("UTC")) == ["2024-06-01T11:00:00+00:00"]
    # Down for ten hours (ten fires missed), then a new process starts on the same store.
    later = ManualClock(wall=datetime(2024, 6, 1, 21, 15, tzinfo=UTC))
    async with ActorSystem("cron-b", clock=later, store=persistent_backend.make()) as system:
        await later.advance(1)  # recovery finds the overdue task and runs it once
        assert local(ZoneInfo("UTC"))[1:] == ["2024-06-01T21:15:00+00:00"]
        await later.advance(2 * 3600)
    assert local(ZoneInfo("UTC")) == [
        "2024-06-01T11:00:00+00:00",
        "2024-06-01T21:15:00+00:00",  # once for the ten missed fires
        "2024-06-01T22:00:00+00:00",  # then the next future fire time
        "2024-06-01T23:00:00+00:00",
    ]


async def test_identical_registration_in_pre_start_keeps_the_due_time(
    persistent_backend: Backend,
) -> None:
    start = datetime(2024, 6, 1, 12, tzinfo=UTC)
    clock = ManualClock(wall=start)
    async with ActorSystem("cron-a", clock=clock, store=persistent_backend.make()) as system:
        pid = await system.durable(Nightly, "n")
        [before] = await pid.ask(Call("tasks"))
        await clock.advance(3600)
    # Restarted a few hours later (before 03:00 Paris): pre_start registers again.
    later = ManualClock(wall=datetime(2024, 6, 1, 20, tzinfo=UTC))
    async with ActorSystem("cron-b", clock=later, store=persistent_backend.make()) as system:
        pid = await system.durable(Nightly, "n")
        [after] = await pid.ask(Call("tasks"))
        assert after.due == before.due
        assert after.created_at == before.created_at
        assert after.due == datetime(2024, 6, 2, 3, tzinfo=PARIS)
        await later.advance(12 * 3600)
    assert local(PARIS) == ["2024-06-02T03:00:00+02:00"]


async def test_a_stable_id_upserts_a_changed_expression(backend: Backend) -> None:
    async with running(backend, datetime(2024, 6, 1, 12, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        first = await pid.ask(Call("register", {"expression": "0 0 18 * * ?", "id": "x"}))
        again = await pid.ask(Call("register", {"expression": "0 0 13 * * ?", "id": "x"}))
        assert first == again == "x"
        [record] = await pid.ask(Call("tasks"))
        assert (record.cron, record.due) == ("0 0 13 * * ?", datetime(2024, 6, 1, 13, tzinfo=UTC))
        await clock.advance(86400)
    assert local(ZoneInfo("UTC")) == ["2024-06-01T13:00:00+00:00"]


async def test_a_failing_cron_task_is_retried_then_returns_to_its_fire_times(
    backend: Backend,
) -> None:
    FAILS["r"] = 2
    async with running(backend, datetime(2024, 6, 1, 11, 30, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 0 12 * * ?", "max_retries": 5}))
        await clock.advance(3600)  # 12:00 fails, then two retries a few seconds later
        await clock.advance(86400)
    times = local(ZoneInfo("UTC"))
    assert times[0] == "2024-06-01T12:00:00+00:00"
    assert len(times) == 4
    assert all(t.startswith("2024-06-01T12:00:0") for t in times[1:3])  # backoff: seconds
    assert times[3] == "2024-06-02T12:00:00+00:00"


async def test_a_cron_task_failing_every_time_is_parked(backend: Backend) -> None:
    FAILS["r"] = 10**6
    async with running(backend, datetime(2024, 6, 1, 11, 30, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 0 12 * * ?", "max_retries": 1}))
        await clock.advance(3 * 86400)
        [record] = await pid.ask(Call("tasks"))
        assert (record.state, record.attempts, record.cron) == ("parked", 2, "0 0 12 * * ?")
        assert (record.last_error or "").startswith("RuntimeError: mail server down")
    assert len(RUNS) == 2


async def test_a_cron_task_with_no_further_fire_time_is_done_after_its_last_run(
    backend: Backend,
) -> None:
    async with running(backend, datetime(2024, 6, 1, 11, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "0 0 12 1 6 ? 2024"}))
        await clock.advance(86400)
        assert await pid.ask(Call("tasks")) == []
    assert len(RUNS) == 1


# -- errors at the call ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"expression": "0 0 25 * * ?"}, "InvalidCronExpressionError"),
        ({"expression": 5}, "InvalidCronExpressionError"),
        ({"expression": "0 0 0 1 1 ? 2020"}, "InvalidCronExpressionError"),  # no future fire
        ({"expression": "0 0 * * * ?", "timezone": "Mars/Olympus"}, "InvalidTimezoneError"),
        ({"expression": "0 0 * * * ?", "method": "sned"}, "AttributeError"),
        ({"expression": "0 0 * * * ?", "max_retries": 10**30}, "ValueError"),
    ],
)
async def test_bad_cron_registration_raises_at_the_call(
    backend: Backend, payload: dict[str, Any], error: str
) -> None:
    async with running(backend, datetime(2024, 6, 1, tzinfo=UTC)) as (system, _clock):
        pid = await system.durable(Report, "r")
        assert await pid.ask(Call("try_cron", payload)) == error
        assert await pid.ask(Call("tasks")) == []
    assert issubclass(InvalidCronExpressionError, ValueError)
    assert issubclass(InvalidTimezoneError, ValueError)


def _five_fields() -> bool:
    try:
        CronExpression.parse("30 2 * * *")
    except InvalidCronExpressionError:
        return False
    return True


@pytest.mark.skipif(
    not _five_fields(), reason="five-field (Unix) cron arrives with issue 15 part 1"
)
async def test_a_five_field_unix_expression_works_too(backend: Backend) -> None:
    async with running(backend, datetime(2024, 6, 1, tzinfo=UTC)) as (system, clock):
        pid = await system.durable(Report, "r")
        await pid.ask(Call("register", {"expression": "30 2 * * *", "timezone": "Europe/Paris"}))
        await clock.advance(2 * 86400)
    assert local(PARIS) == ["2024-06-01T02:30:00+02:00", "2024-06-02T02:30:00+02:00"]
