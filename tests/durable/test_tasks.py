# SPDX-License-Identifier: Apache-2.0
"""Durable tasks: queue / schedule / every / cancel / list, dispatch, validation, upserts."""

from __future__ import annotations

import asyncio
import math
import os
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorSystem,
    CodecError,
    InvalidIntervalError,
    ManualClock,
    ReceiveContext,
    ScheduleNotFoundError,
    TaskNotFoundError,
)
from tocsin.durable import Call, DurableActor, TaskRecord

T0 = 1_700_000_000.0
RUNS: list[tuple[str, str, Any, float]] = []  # (identity, method, payload, wall time)


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    RUNS.clear()


class Tasker(DurableActor):
    async def ship(self, payload: Any) -> None:
        RUNS.append((self.identity, "ship", payload, self.now().timestamp()))

    async def _secret(self, payload: Any) -> None:
        RUNS.append((self.identity, "_secret", payload, self.now().timestamp()))

    def sync_ship(self, payload: Any) -> None:
        RUNS.append((self.identity, "sync_ship", payload, self.now().timestamp()))

    async def public(self, payload: Any) -> str:
        return f"public:{payload}"

    async def now_iso(self, payload: Any) -> str:
        return self.now().isoformat()

    async def add(self, payload: dict[str, Any]) -> str:
        kind = payload.pop("call")
        delay = payload.pop("delay", None)
        method = payload.pop("method", "ship")
        arg = payload.pop("payload", None)
        if kind == "queue":
            return await self.queue(method, arg, **payload)
        if kind == "schedule":
            return await self.schedule(delay, method, arg, **payload)
        return await self.every(delay, method, arg, **payload)

    async def cancel(self, task_id: str) -> bool:
        return await self.cancel_schedule(task_id, missing_ok=True)

    async def cancel_strict(self, task_id: str) -> bool | str:
        try:
            return await self.cancel_schedule(task_id, missing_ok=False)
        except Exception as exc:
            return type(exc).__name__

    async def cancel_old(self, task_id: str) -> tuple[bool, list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            existed = await self.cancel_schedule(task_id)
        return existed, [f"{w.category.__name__}: {w.message}" for w in caught]

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


class Fallback(DurableActor):
    async def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> None:
        RUNS.append((self.identity, f"on_task:{name}", payload, self.now().timestamp()))

    async def add(self, payload: tuple[str, Any]) -> str:
        return await self.queue(payload[0], payload[1])


class Silent(DurableActor):
    async def add(self, name: str) -> str:
        return await self.queue(name)

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


class Heartbeat(DurableActor):
    """Registers its recurring task in pre_start, as real code does."""

    async def pre_start(self, ctx: ReceiveContext) -> None:
        await self.every(10, "beat", id="heartbeat")

    async def beat(self, payload: Any) -> None:
        RUNS.append((self.identity, "beat", payload, self.now().timestamp()))

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=T0)
    system = ActorSystem("durable-tasks", clock=clock, store=backend.make())
    async with system:
        yield system, clock


def times(method: str) -> list[float]:
    return [t - T0 for _, m, _, t in RUNS if m == method]


# -- running tasks ------------------------------------------------------------------------


async def test_queued_task_runs_its_method_with_the_payload_as_soon_as_possible(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "order-42")
        await pid.ask(Call("add", {"call": "queue", "payload": {"sku": "A", "n": 2}}))
        await clock.advance(0)
        assert RUNS == [("order-42", "ship", {"sku": "A", "n": 2}, T0)]
        assert await pid.ask(Call("tasks")) == []


async def test_scheduled_task_runs_after_its_delay_and_not_before(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "schedule", "delay": 30, "payload": 1}))
        await clock.advance(29.9)
        assert RUNS == []
        await clock.advance(0.1)
        assert times("ship") == [30.0]
        await clock.advance(600)
        assert times("ship") == [30.0]


async def test_schedule_accepts_a_timedelta_and_an_aware_datetime(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "schedule", "delay": 5.0, "payload": "float"}))
        actor_cls: Any = Tasker

        class Direct(actor_cls):  # type: ignore[misc]  # Tasker, subclassed in the test
            kind = "TasksDirect"

            async def go(self, payload: Any) -> None:
                await self.schedule(timedelta(seconds=7), "ship", "timedelta")
                when = datetime.fromtimestamp(T0 + 9, tz=UTC)
                await self.schedule(when, "ship", "datetime")

        direct = await system.durable(Direct, "o")
        await direct.ask(Call("go"))
        await clock.advance(10)
        assert [(p, t - T0) for _, _, p, t in RUNS] == [
            ("float", 5.0),
            ("timedelta", 7.0),
            ("datetime", 9.0),
        ]


async def test_tasks_due_together_run_in_due_order(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        for delay in (3, 1, 2):
            await pid.ask(Call("add", {"call": "schedule", "delay": delay, "payload": delay}))
        await clock.jump(10)
        assert [p for _, _, p, _ in RUNS] == [1, 2, 3]


async def test_every_runs_at_each_interval_the_first_one_interval_from_now(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "every", "delay": 10, "id": "tick"}))
        await clock.advance(9.99)
        assert RUNS == []
        await clock.advance(40.01)
        assert times("ship") == [10.0, 20.0, 30.0, 40.0, 50.0]
        (record,) = await pid.ask(Call("tasks"))
        assert record.every == 10.0
        assert record.due == datetime.fromtimestamp(T0 + 60, tz=UTC)


async def test_overdue_every_runs_once_then_goes_on_at_its_grid_not_one_interval_later(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "every", "delay": 10, "id": "tick"}))
        await clock.jump(95)  # a stall: nine intervals missed
        assert times("ship") == [95.0]
        await clock.advance(4.99)
        assert times("ship") == [95.0]
        await clock.advance(20.01)  # the grid: 100, 110, 120 (not 105, 115)
        assert times("ship") == [95.0, 100.0, 110.0, 120.0]


async def test_sync_task_method_is_called_too(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "queue", "method": "sync_ship", "payload": 7}))
        await clock.advance(0)
        assert RUNS == [("o", "sync_ship", 7, T0)]


async def test_task_for_a_missing_method_calls_on_task(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Fallback, "f")
        await pid.ask(Call("add", ("no_such_method", [1, 2])))
        await clock.advance(0)
        assert RUNS == [("f", "on_task:no_such_method", [1, 2], T0)]


async def test_a_task_naming_no_method_raises_attribute_error_at_the_call(
    backend: Backend,
) -> None:
    # Issue 10 item 8: queue("send_invoce") used to be silently lost.
    async with running(backend) as (system, clock):
        pid = await system.durable(Silent, "s")
        with pytest.raises(AttributeError, match="Silent has no method 'nothing_here'"):
            await pid.ask(Call("add", "nothing_here"))
        with pytest.raises(AttributeError, match=r"did you mean 'tasks'\?"):
            await pid.ask(Call("add", "taskz"))
        await clock.advance(0)
        assert await pid.ask(Call("tasks")) == []


async def test_a_stored_task_whose_method_vanished_is_dropped_with_a_warning(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    # A deploy renamed the method: the stored row names a method the class lacks.
    from tocsin._codec import encode
    from tocsin.stores import TaskRow, UpsertTask

    async with running(backend) as (system, clock):
        pid = await system.durable(Silent, "s")
        store = system._durable.store  # type: ignore[union-attr]
        row = TaskRow(
            kind=Silent.kind,
            identity="s",
            id="old-1",
            name="send_invoce",
            payload=encode(None),
            due=T0,
            every=60.0,
            attempts=0,
            max_retries=5,
            created_at=T0,
        )
        await store.apply([UpsertTask(row)])
        with caplog.at_level("WARNING", logger="tocsin.durable"):
            await pid.ask(Call("add", "tasks"))  # any task: the drain picks up the old one
            await clock.advance(1)
        assert await pid.ask(Call("tasks")) == []  # dropped, even though recurring
        [warning] = [r for r in caplog.records if "send_invoce" in r.getMessage()]
        assert warning.levelname == "WARNING"
        assert "Silent" in warning.getMessage()
        assert "dropped" in warning.getMessage()


async def test_underscore_method_is_schedulable_but_not_callable_by_messages(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        with pytest.raises(PermissionError):
            await pid.ask(Call("_secret", 1))
        await pid.ask(Call("add", {"call": "queue", "method": "_secret", "payload": 2}))
        await clock.advance(0)
        assert RUNS == [("o", "_secret", 2, T0)]


async def test_call_message_runs_a_public_method_and_answers_with_its_result(
    backend: Backend,
) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Tasker, "o")
        assert await pid.ask(Call("public", "x")) == "public:x"
        with pytest.raises(AttributeError):
            await pid.ask(Call("missing"))
        # The actor's own API is not exposed, and the error says why (issue 10 item 12).
        with pytest.raises(PermissionError, match="'cancel_schedule' is reserved"):
            await pid.ask(Call("cancel_schedule", "x"))
        with pytest.raises(PermissionError, match="'retry_parked' is reserved"):
            await pid.ask(Call("retry_parked", "x"))


async def test_now_is_the_system_clock_as_an_aware_utc_datetime(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await clock.advance(12.5)
        expected = datetime.fromtimestamp(T0 + 12.5, tz=UTC)
        assert await pid.ask(Call("now_iso")) == expected.isoformat()


# -- cancel, list, upsert -----------------------------------------------------------------


async def test_cancelled_task_never_runs_and_cancel_reports_whether_it_existed(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        tid = await pid.ask(Call("add", {"call": "schedule", "delay": 5}))
        assert await pid.ask(Call("cancel", tid)) is True
        assert await pid.ask(Call("cancel", tid)) is False
        assert await pid.ask(Call("cancel", "never-existed")) is False
        await clock.advance(100)
        assert RUNS == []


async def test_cancel_schedule_of_an_unknown_id_warns_unless_missing_ok_says_what_to_do(
    backend: Backend,
) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Tasker, "o")
        tid = await pid.ask(Call("add", {"call": "schedule", "delay": 5}))
        assert await pid.ask(Call("cancel_old", tid)) == (True, [])
        existed, caught = await pid.ask(Call("cancel_old", "nope"))
        assert existed is False
        [warning] = caught
        assert warning.startswith("DeprecationWarning: cancel_schedule('nope'): no such task")
        assert "missing_ok=True" in warning
        assert await pid.ask(Call("cancel_strict", "nope")) == "TaskNotFoundError"
        assert issubclass(TaskNotFoundError, ScheduleNotFoundError)


async def test_list_schedules_returns_snapshots_with_every_field(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await clock.advance(1)
        await pid.ask(
            Call("add", {"call": "schedule", "delay": 60, "payload": {"a": 1}, "id": "one"})
        )
        await pid.ask(Call("add", {"call": "every", "delay": 30, "id": "rec", "max_retries": 2}))
        rec, one = await pid.ask(Call("tasks"))  # ordered by due
        assert one == TaskRecord(
            id="one",
            name="ship",
            payload={"a": 1},
            due=datetime.fromtimestamp(T0 + 61, tz=UTC),
            every=None,
            attempts=0,
            max_retries=5,
            created_at=datetime.fromtimestamp(T0 + 1, tz=UTC),
            state="pending",
            last_error=None,
            kind="Tasker",
            identity="o",
        )
        assert (rec.id, rec.every, rec.max_retries, rec.state) == ("rec", 30.0, 2, "pending")
        assert rec.due.tzinfo is not None
        assert rec.due.utcoffset() == timedelta(0)
        with pytest.raises(AttributeError):
            one.attempts = 3


async def test_generated_task_ids_are_unique(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Tasker, "o")
        ids = [await pid.ask(Call("add", {"call": "schedule", "delay": 5})) for _ in range(20)]
        assert len(set(ids)) == 20
        assert {r.id for r in await pid.ask(Call("tasks"))} == set(ids)


def test_a_forked_child_makes_other_task_ids_than_its_parent() -> None:
    # The id's random part comes from a PRNG: a child inheriting its state would repeat
    # the parent's ids (and an upsert would overwrite one task with the other).
    from tocsin.durable._tasks import _check_id

    now = 1_700_000_000.0
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child process
        os.close(read)
        os.write(write, " ".join(_check_id(None, now) for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    parent_ids = [_check_id(None, now) for _ in range(3)]
    with os.fdopen(read, "rb") as pipe:
        child_ids = pipe.read().decode().split()
    os.waitpid(child, 0)
    assert len(child_ids) == 3
    # Same millisecond and counter positions; only the random part can tell them apart.
    assert [i[:20] for i in child_ids] == [i[:20] for i in parent_ids]
    assert set(child_ids).isdisjoint(parent_ids)


async def test_scheduling_with_an_existing_id_replaces_the_task(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "schedule", "delay": 5, "id": "x", "payload": "old"}))
        await pid.ask(Call("add", {"call": "schedule", "delay": 8, "id": "x", "payload": "new"}))
        (record,) = await pid.ask(Call("tasks"))
        assert record.payload == "new"
        await clock.advance(20)
        assert [(p, t - T0) for _, _, p, t in RUNS] == [("new", 8.0)]


async def test_reregistering_every_in_pre_start_never_piles_up_or_shifts_the_cadence(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Heartbeat, "h", passivate_after=3)
        await clock.advance(4)  # passivated
        assert await pid.ask(Call("tasks")) != []  # reactivated: pre_start ran again
        await clock.advance(3.5)  # passivated again
        (record,) = await pid.ask(Call("tasks"))
        assert record.id == "heartbeat"
        await clock.advance(30)
        assert times("beat") == [10.0, 20.0, 30.0]


async def test_identities_have_separate_tasks(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        a = await system.durable(Tasker, "a")
        b = await system.durable(Tasker, "b")
        await a.ask(Call("add", {"call": "schedule", "delay": 1, "id": "same", "payload": "A"}))
        await b.ask(Call("add", {"call": "schedule", "delay": 2, "id": "same", "payload": "B"}))
        assert [r.payload for r in await a.ask(Call("tasks"))] == ["A"]
        await clock.advance(5)
        assert [(i, p) for i, _, p, _ in RUNS] == [("a", "A"), ("b", "B")]


# -- validation at scheduling time ----------------------------------------------------------


class Validating(DurableActor):
    async def ship(self, payload: Any) -> None:
        pass

    async def try_call(self, payload: tuple[str, tuple[Any, ...], dict[str, Any]]) -> str:
        name, args, kwargs = payload
        try:
            await getattr(self, name)(*args, **kwargs)
        except Exception as exc:
            return type(exc).__name__
        return "ok"

    async def bad_payload(self, which: str) -> str:
        values: dict[str, Any] = {"lambda": lambda: 1, "object": object()}
        cyclic: list[Any] = []
        cyclic.append(cyclic)
        values["cycle"] = cyclic
        try:
            await self.queue("ship", values[which])
        except CodecError:
            return "CodecError"
        return "ok"

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


@pytest.mark.parametrize("which", ["lambda", "object", "cycle"])
async def test_unsafe_payload_raises_codec_error_at_scheduling_time(
    backend: Backend, which: str
) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Validating, "v")
        assert await pid.ask(Call("bad_payload", which)) == "CodecError"
        assert await pid.ask(Call("tasks")) == []


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "5", None, True, timedelta(0)])
async def test_bad_delay_or_interval_raises_invalid_interval_error(bad: Any) -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem("v", clock=clock) as system:
        pid = await system.durable(Validating, "v")
        assert await pid.ask(Call("try_call", ("schedule", (bad, "ship"), {}))) == (
            "InvalidIntervalError"
        )
        assert await pid.ask(Call("try_call", ("every", (bad, "ship"), {}))) == (
            "InvalidIntervalError"
        )
        assert await pid.ask(Call("tasks")) == []
    assert issubclass(InvalidIntervalError, ValueError)


async def test_naive_datetime_delay_raises_invalid_interval_error() -> None:
    async with ActorSystem("v", clock=ManualClock(wall=T0)) as system:
        pid = await system.durable(Validating, "v")
        naive = datetime(2030, 1, 1)
        assert await pid.ask(Call("try_call", ("schedule", (naive, "ship"), {}))) == (
            "InvalidIntervalError"
        )


@pytest.mark.parametrize("bad", [-1, 1.5, "3", None, True])
async def test_bad_max_retries_raises_value_error(bad: Any) -> None:
    async with ActorSystem("v", clock=ManualClock(wall=T0)) as system:
        pid = await system.durable(Validating, "v")
        for name, args in (("queue", ("ship",)), ("schedule", (5, "ship")), ("every", (5, "ship"))):
            result = await pid.ask(Call("try_call", (name, args, {"max_retries": bad})))
            assert result == "ValueError", name
        assert await pid.ask(Call("tasks")) == []


# -- one turn at a time ---------------------------------------------------------------------

ORDER: list[str] = []


class Turns(DurableActor):
    async def slow(self, payload: Any) -> None:
        ORDER.append("task-start")
        self._handle.pid.tell("ping")  # arrives while the task is still running
        for _ in range(20):
            await asyncio.sleep(0)
        ORDER.append("task-end")

    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "ping":
            ORDER.append("receive")
            return
        await super().receive(ctx)

    async def go(self, payload: Any) -> None:
        await self.queue("slow")
        await self.queue("slow")


async def test_task_runs_never_overlap_receive_or_each_other() -> None:
    ORDER.clear()
    clock = ManualClock(wall=T0)
    async with ActorSystem("turns", clock=clock) as system:
        pid = await system.durable(Turns, "t")
        await pid.ask(Call("go"))
        await clock.advance(0)
        assert ORDER == ["task-start", "task-end", "task-start", "task-end", "receive", "receive"]


async def test_wall_clock_jump_forward_runs_tasks_that_became_due(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Tasker, "o")
        await pid.ask(Call("add", {"call": "schedule", "delay": 3600, "payload": "later"}))
        clock.jump_wall(3600)  # an NTP step: the task's wall time is now
        await clock.advance(0.001)
        assert [p for _, _, p, _ in RUNS] == ["later"]
