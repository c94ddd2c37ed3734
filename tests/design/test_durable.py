# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Durable actors and tasks (`tocsin.durable`)" as executable statements: one
small test per sentence that names a public name, a signature, a default, an error type or
a behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any, ClassVar

import pytest
from tests.design.design_support import (
    EMPTY,
    KW,
    PK,
    T0,
    manual,
    shape,
)

from tocsin import (
    PID,
    ActorPassivated,
    ActorSystem,
    Call,
    CodecError,
    DurableActor,
    InvalidCronExpressionError,
    InvalidIntervalError,
    ManualClock,
    ReceiveContext,
    RetryPolicy,
    TaskNotFoundError,
    TaskRecord,
)

RUNS: list[tuple[str, Any, float]] = []


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    RUNS.clear()


class Job(DurableActor):
    kind = "ContractJob"
    retry_policy = RetryPolicy(rng=__import__("random").Random(0))
    fail: ClassVar[dict[str, int]] = {}

    def _log(self, name: str, payload: Any) -> None:
        RUNS.append((name, payload, self.now().timestamp() - T0.timestamp()))
        left = Job.fail.get(name, 0)
        if left:
            Job.fail[name] = left - 1
            raise RuntimeError(f"{name} failed")

    async def work(self, payload: Any) -> None:
        self._log("work", payload)

    async def _private(self, payload: Any) -> None:
        self._log("_private", payload)

    async def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> None:
        RUNS.append(("on_task:" + name, payload, self.now().timestamp() - T0.timestamp()))

    async def do(self, spec: dict[str, Any]) -> Any:
        call = spec.pop("call")
        args = spec.pop("args", [])
        return await getattr(self, call)(*args, **spec)

    async def whoami(self, payload: Any) -> tuple[str, str]:
        return self.kind, self.identity


def runs(name: str = "work") -> list[float]:
    return [t for n, _, t in RUNS if n == name]


@asynccontextmanager
async def durable() -> AsyncIterator[tuple[ActorSystem, ManualClock, PID]]:
    Job.fail = {}
    async with manual(store="memory://") as (system, clock):
        pid = await system.durable(Job, "job-1")
        yield system, clock, pid


async def call(pid: PID, name: str, *args: Any, **kw: Any) -> Any:
    return await pid.ask(Call("do", {"call": name, "args": list(args), **kw}), timeout=5)


def test_durable_actor_api_signatures() -> None:
    assert shape(DurableActor.queue)[:4] == [
        ("method", PK, EMPTY),
        ("payload", PK, None),
        ("id", KW, None),
        ("max_retries", KW, 5),
    ]
    assert [n for n, _, _ in shape(DurableActor.schedule)][:3] == ["delay", "method", "payload"]
    assert [n for n, _, _ in shape(DurableActor.every)][:3] == ["interval", "method", "payload"]
    cron = shape(DurableActor.cron)
    assert cron[:5] == [
        ("expression", PK, EMPTY),
        ("method", PK, EMPTY),
        ("payload", PK, None),
        ("id", KW, None),
        ("timezone", KW, None),
    ]
    # "Precisions for stored schedules and jobs": cancel_schedule(id, *, missing_ok=None).
    assert shape(DurableActor.cancel_schedule) == [("id", PK, EMPTY), ("missing_ok", KW, None)]
    # "One vocabulary on every surface": the verbs carry the noun.
    assert shape(DurableActor.pause_schedule) == [("id", PK, EMPTY), ("note", KW, None)]
    assert shape(DurableActor.resume_schedule) == [("id", PK, EMPTY)]
    assert shape(DurableActor.trigger_schedule) == [("id", PK, EMPTY)]
    assert shape(DurableActor.schedule_history) == [("id", PK, EMPTY)]
    assert [n for n, _, _ in shape(DurableActor.backfill_schedule)] == [
        "id",
        "start",
        "end",
        "dry_run",
    ]
    assert shape(DurableActor.list_schedules) == []
    assert shape(DurableActor.list_parked) == []
    assert shape(DurableActor.retry_parked) == [("id", PK, EMPTY)]
    assert shape(DurableActor.discard_parked) == [("id", PK, EMPTY)]
    for name in [
        "queue",
        "schedule",
        "every",
        "cron",
        "cancel_schedule",
        "list_schedules",
        "list_parked",
        "retry_parked",
        "discard_parked",
    ]:
        assert inspect.iscoroutinefunction(getattr(DurableActor, name)), name
    assert shape(DurableActor.on_task) == [
        ("name", PK, EMPTY),
        ("payload", PK, EMPTY),
        ("ctx", PK, EMPTY),
    ]


def test_task_record_fields() -> None:
    names = [f.name for f in dataclasses.fields(TaskRecord)]
    assert names[:8] == [
        "id",
        "name",
        "payload",
        "due",
        "every",
        "attempts",
        "max_retries",
        "created_at",
    ]
    assert "state" in names


async def test_durable_returns_a_pid_and_names_itself() -> None:
    async with durable() as (system, _, pid):
        assert isinstance(pid, PID)
        assert await pid.ask(Call("whoami")) == ["ContractJob", "job-1"] or await pid.ask(
            Call("whoami")
        ) == ("ContractJob", "job-1")
        assert await system.durable(Job, "job-1") == pid


async def test_queue_runs_the_method_as_soon_as_possible_and_returns_an_id() -> None:
    async with durable() as (_, clock, pid):
        tid = await call(pid, "queue", "work", {"n": 1})
        assert isinstance(tid, str)
        assert tid
        await clock.advance(0)
        assert [(n, p) for n, p, _ in RUNS] == [("work", {"n": 1})]


async def test_schedule_every_and_cron_fire_at_their_times() -> None:
    async with durable() as (_, clock, pid):
        await call(pid, "schedule", 10, "work", "once")
        await call(pid, "every", timedelta(seconds=30), "work", "every", id="e")
        await call(pid, "cron", "0 0 * * * ?", "work", "cron", id="c", timezone="UTC")
        await clock.advance(3600)
        got = [(p, t) for n, p, t in RUNS if n == "work"]
        assert ("once", 10.0) in got
        assert [t for p, t in got if p == "every"][:3] == [30.0, 60.0, 90.0]
        assert [t for p, t in got if p == "cron"] == [3600.0]


async def test_missing_method_calls_on_task_and_private_names_are_schedulable() -> None:
    async with durable() as (_, clock, pid):
        await call(pid, "queue", "no_such_method", 7)
        await call(pid, "queue", "_private", 8)
        await clock.advance(0)
        assert sorted((n, p) for n, p, _ in RUNS) == [
            ("_private", 8),
            ("on_task:no_such_method", 7),
        ]
        with pytest.raises(PermissionError):
            await pid.ask(Call("_private", 1))


async def test_cancel_schedule_returns_whether_the_task_existed() -> None:
    async with durable() as (_, clock, pid):
        await call(pid, "schedule", 10, "work", id="t")
        assert await call(pid, "cancel_schedule", "t") is True
        # An unknown id: False for one release, said with missing_ok (else a warning).
        assert await call(pid, "cancel_schedule", "t", missing_ok=True) is False
        await clock.advance(20)
        assert RUNS == []


async def test_stable_id_makes_scheduling_an_upsert() -> None:
    async with durable() as (_, clock, pid):
        await call(pid, "schedule", 10, "work", "a", id="t")
        await call(pid, "schedule", 20, "work", "b", id="t")
        (record,) = await call(pid, "list_schedules")
        assert (record.id, record.payload) == ("t", "b")
        await clock.advance(30)
        assert [(p, t) for _, p, t in RUNS] == [("b", 20.0)]


async def test_task_record_values() -> None:
    async with durable() as (_, _, pid):
        await call(pid, "every", 5, "work", [1, 2], id="r", max_retries=3)
        (r,) = await call(pid, "list_schedules")
        assert isinstance(r, TaskRecord)
        assert (r.id, r.name, r.payload, r.every, r.attempts, r.max_retries) == (
            "r",
            "work",
            [1, 2],
            5.0,
            0,
            3,
        )
        assert r.due == T0 + timedelta(seconds=5)
        assert r.due.utcoffset() == timedelta(0)
        assert r.created_at == T0


async def test_failed_task_retries_with_backoff_then_is_parked_and_manageable() -> None:
    async with durable() as (_, clock, pid):
        Job.fail["work"] = 100
        await call(pid, "queue", "work", None, id="p", max_retries=2)
        await clock.advance(1000)
        times = runs()
        assert len(times) == 3
        gaps = [b - a for a, b in itertools.pairwise(times)]
        for k, gap in enumerate(gaps, start=1):
            assert 0.5 * 2 ** (k - 1) <= gap <= 2 ** (k - 1)
        (parked,) = await call(pid, "list_parked")
        assert (parked.id, parked.state) == ("p", "parked")
        assert [r.state for r in await call(pid, "list_schedules")] == ["parked"]
        await clock.advance(10_000)
        assert len(runs()) == 3  # never fires again
        Job.fail["work"] = 0
        await call(pid, "retry_parked", "p")
        await clock.advance(0)
        assert len(runs()) == 4
        assert await call(pid, "list_parked") == []
        with pytest.raises(TaskNotFoundError):
            await call(pid, "discard_parked", "p")
        with pytest.raises(TaskNotFoundError):
            await call(pid, "retry_parked", "p")


async def test_discard_parked_deletes_it() -> None:
    async with durable() as (_, clock, pid):
        Job.fail["work"] = 100
        await call(pid, "queue", "work", None, id="p", max_retries=0)
        await clock.advance(10)
        await call(pid, "discard_parked", "p")
        assert await call(pid, "list_schedules") == []


async def test_every_resets_attempts_after_a_success() -> None:
    async with durable() as (_, clock, pid):
        Job.fail["work"] = 1
        await call(pid, "every", 60, "work", id="e", max_retries=1)
        await clock.advance(200)
        (r,) = await call(pid, "list_schedules")
        assert r.attempts == 0
        assert r.state != "parked"


def test_backoff_formula() -> None:
    policy = RetryPolicy()
    for k in range(1, 15):
        base = min(300, 2 ** (k - 1))
        for _ in range(20):
            assert 0.5 * base <= policy.backoff(k) <= base


@pytest.mark.parametrize(
    "payload",
    [
        None,
        True,
        7,
        10**40,
        1.5,
        "s",
        [1, "a"],
        (1, 2),
        {"k": [1]},
        {1, 2},
        frozenset({3}),
        b"\x00bytes",
        datetime(2030, 1, 1, tzinfo=UTC),
        date(2030, 1, 2),
    ],
)
async def test_codec_safe_payloads_round_trip(payload: Any) -> None:
    async with durable() as (_, clock, pid):
        await call(pid, "queue", "work", payload)
        await clock.advance(0)
        assert RUNS[0][1] == payload


@pytest.mark.parametrize("what", ["function", "instance", "circular", "pattern"])
async def test_unsafe_payloads_raise_codec_error_at_scheduling_time(what: str) -> None:
    circular: list[Any] = []
    circular.append(circular)
    payload = {
        "function": lambda: None,
        "instance": object(),
        "circular": circular,
        "pattern": re.compile("a+b"),
    }[what]

    class Local(DurableActor):
        kind = f"ContractLocal{what}"

        async def go(self, _: Any) -> None:
            await self.queue("work", payload)

        async def work(self, _: Any) -> None:
            pass

    async with manual(store="memory://") as (system, _):
        pid = await system.durable(Local, "x")
        with pytest.raises(CodecError):
            await pid.ask(Call("go"))
        assert issubclass(CodecError, TypeError)


async def test_bad_delay_and_bad_max_retries() -> None:
    async with durable() as (_, _, pid):
        for bad in [0, -1, math.nan, "1"]:
            with pytest.raises(InvalidIntervalError):
                await call(pid, "schedule", bad, "work")
            with pytest.raises(InvalidIntervalError):
                await call(pid, "every", bad, "work")
        for bad in [-1, 1.5, "3"]:
            with pytest.raises(ValueError):
                await call(pid, "queue", "work", max_retries=bad)


async def test_durable_cron_bad_expression() -> None:
    async with durable() as (_, _, pid):
        with pytest.raises(InvalidCronExpressionError):
            await call(pid, "cron", "not a cron", "work")


async def test_now_override_is_the_time_source_of_scheduling() -> None:
    class Shifted(DurableActor):
        kind = "ContractShifted"

        def now(self) -> datetime:
            return super().now() + timedelta(days=1)

        async def plan(self, payload: Any) -> list[TaskRecord]:
            await self.schedule(10, "work")
            return await self.list_schedules()

        async def work(self, payload: Any) -> None:
            pass

    async with manual(store="memory://") as (system, _):
        pid = await system.durable(Shifted, "s")
        (record,) = await pid.ask(Call("plan"))
        assert record.due == T0 + timedelta(days=1, seconds=10)


async def test_durable_storage_get_put_delete_list() -> None:
    class Stored(DurableActor):
        kind = "ContractStored"

        async def go(self, _: Any) -> list[Any]:
            await self.storage.put("a:1", {"x": 1})
            await self.storage.put("b:1", [1])
            got = [await self.storage.get("a:1"), await self.storage.get("nope", "dflt")]
            got.append(await self.storage.list("a:"))
            got.append(await self.storage.delete("a:1"))
            got.append(await self.storage.delete("a:1"))
            return got

    async with manual(store="memory://") as (system, _):
        pid = await system.durable(Stored, "s")
        assert await pid.ask(Call("go")) == [{"x": 1}, "dflt", {"a:1": {"x": 1}}, True, False]


async def test_passivated_durable_actor_is_reactivated_by_its_alarm() -> None:
    class Sleepy(DurableActor):
        kind = "ContractSleepy"
        passivate_after = 5.0

        async def plan(self, payload: Any) -> None:
            await self.schedule(60, "work")

        async def work(self, payload: Any) -> None:
            RUNS.append(("sleepy", payload, self.now().timestamp() - T0.timestamp()))

    async with manual(store="memory://") as (system, clock):
        passivated: list[Any] = []
        system.events.subscribe(passivated.append, ActorPassivated)
        pid = await system.durable(Sleepy, "s")
        await pid.ask(Call("plan"))
        await clock.advance(30)
        assert len(passivated) == 1
        await clock.advance(30)
        assert [t for n, _, t in RUNS if n == "sleepy"] == [60.0]


async def test_durable_delays_have_the_one_millisecond_minimum() -> None:
    async with durable() as (_, _, pid):
        for call_name in ["schedule", "every"]:
            with pytest.raises(InvalidIntervalError):
                await call(pid, call_name, 0.0009, "work")
            await call(pid, call_name, 0.001, "work")
        with pytest.raises(ValueError, match="max_retries"):
            await call(pid, "queue", "work", max_retries=True)


async def test_durable_schedule_accepts_an_absolute_aware_datetime() -> None:
    async with durable() as (_, clock, pid):
        await call(pid, "schedule", T0 + timedelta(seconds=42), "work", "at")
        await call(pid, "schedule", T0 - timedelta(days=1), "work", "past")  # due now
        await clock.advance(0)
        assert [(p, t) for _, p, t in RUNS] == [("past", 0.0)]
        await clock.advance(42)
        assert [(p, t) for _, p, t in RUNS] == [("past", 0.0), ("at", 42.0)]
