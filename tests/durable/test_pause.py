# SPDX-License-Identifier: Apache-2.0
"""Pausing durable tasks (DESIGN "One vocabulary on every surface"): ``pause_schedule``
with a note, ``resume_schedule``, on every store, driven by ManualClock; the pause is
stored with the task and survives restarts and re-registration."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import ActorSystem, ManualClock, Outcome, Tick, TickNotDelivered, TickOutcome
from tocsin.durable import Call, DurableActor, TaskRecord

RUNS: list[Tick] = []
START = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
MINUTE = timedelta(minutes=1)


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


class Pausable(DurableActor):
    kind = "PauseTests"

    async def tick(self, payload: Any) -> None:
        assert self.current_task is not None
        RUNS.append(self.current_task)

    async def minutely(self, payload: Any = None) -> str:
        return await self.every(60, "tick", payload, id="m")

    async def once(self, delay: float) -> str:
        return await self.schedule(delay, "tick", id="o")

    async def do(self, args: dict[str, Any]) -> Any:
        verb = getattr(self, args["verb"])
        try:
            return await verb(*args.get("args", ()), **args.get("kwargs", {}))
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    async def old(self, args: dict[str, Any]) -> list[str]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            await getattr(self, args["verb"])(*args["args"])
        return [f"{w.category.__name__}: {w.message}" for w in caught]

    async def tasks(self, payload: Any) -> list[TaskRecord]:
        return await self.list_schedules()


@asynccontextmanager
async def running(
    backend: Backend, start: datetime = START
) -> AsyncIterator[tuple[ActorSystem, ManualClock]]:
    clock = ManualClock(wall=start)
    async with ActorSystem("pausing", clock=clock, store=backend.make(), timezone="UTC") as s:
        yield s, clock


def call(verb: str, *args: Any, **kwargs: Any) -> Call:
    return Call("do", {"verb": verb, "args": args, "kwargs": kwargs})


async def test_a_paused_task_records_paused_with_its_note_as_its_instants_pass(
    backend: Backend,
) -> None:
    events: list[TickNotDelivered] = []
    async with running(backend) as (system, clock):
        system.events.subscribe(events.append, TickNotDelivered)
        pid = await system.durable(Pausable, "p")
        await pid.ask(Call("minutely"))
        await clock.advance(60)  # 12:01 runs
        await clock.advance(10)
        assert await pid.ask(call("pause_schedule", "m", note="db migration OPS-42")) is None
        [task] = await pid.ask(Call("tasks"))
        assert (task.paused, task.note, task.paused_by) == (True, "db migration OPS-42", "pausing")
        assert task.paused_at == START + MINUTE + timedelta(seconds=10)
        await clock.advance(180)  # 12:02, 12:03, 12:04 pass
        assert [t.instant for t in RUNS] == [START + MINUTE]
        history: list[TickOutcome] = await pid.ask(call("schedule_history", "m"))
        assert [(h.outcome, h.instant, h.detail) for h in history] == [
            (Outcome.DELIVERED, START + MINUTE, None),
            *[(Outcome.PAUSED, START + m * MINUTE, "db migration OPS-42") for m in (2, 3, 4)],
        ]
        assert [(e.outcome, e.detail) for e in events] == [
            (Outcome.PAUSED, "db migration OPS-42")
        ] * 3
        # Pausing again keeps the first note.
        await pid.ask(call("pause_schedule", "m", note="another"))
        [task] = await pid.ask(Call("tasks"))
        assert task.note == "db migration OPS-42"


async def test_resume_goes_on_from_now_at_the_grid_without_a_catch_up_run(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Pausable, "r")
        await pid.ask(Call("minutely"))
        await pid.ask(call("pause_schedule", "m"))
        await clock.advance(150)  # 12:01, 12:02 pass paused; now 12:02:30
        assert RUNS == []
        await pid.ask(call("resume_schedule", "m"))
        [task] = await pid.ask(Call("tasks"))
        assert (task.paused, task.note, task.paused_at, task.paused_by) == (False, None, None, None)
        assert task.due == START + 3 * MINUTE
        await clock.advance(29)
        assert RUNS == []  # nothing ran at the resume
        await clock.advance(61)  # 12:03 and 12:04, on the grid
        assert [t.instant for t in RUNS] == [START + 3 * MINUTE, START + 4 * MINUTE]
        assert await pid.ask(call("resume_schedule", "m")) is None  # not paused: nothing


async def test_resume_before_a_drain_saw_the_passed_instants_does_not_run_them(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Pausable, "s")
        await pid.ask(Call("minutely"))
        await pid.ask(call("pause_schedule", "m", note="n"))
        await clock.jump(125)  # a stall: 12:01 and 12:02 due, no drain ran yet
        await pid.ask(call("resume_schedule", "m"))
        await clock.advance(0)
        assert RUNS == []
        history = await pid.ask(call("schedule_history", "m"))
        assert [(h.outcome, h.detail) for h in history] == [(Outcome.PAUSED, "n")] * 2
        [task] = await pid.ask(Call("tasks"))
        assert task.due == START + 3 * MINUTE


async def test_a_paused_one_shot_task_does_not_run_when_its_time_passes(
    backend: Backend,
) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Pausable, "o")
        await pid.ask(Call("once", 30))
        await pid.ask(call("pause_schedule", "o", note="hold"))
        await clock.advance(60)
        assert RUNS == []
        assert await pid.ask(Call("tasks")) == []


async def test_trigger_of_a_paused_task_runs_it(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Pausable, "t")
        await pid.ask(Call("minutely"))
        await pid.ask(call("pause_schedule", "m"))
        await pid.ask(call("trigger_schedule", "m"))
        await clock.advance(1)
        assert [(t.reference, t.manual) for t in RUNS] == [("m", True)]


async def test_the_pause_survives_a_restart_and_a_changed_registration(
    persistent_backend: Backend,
) -> None:
    async with running(persistent_backend) as (system, clock):
        pid = await system.durable(Pausable, "k")
        await pid.ask(Call("minutely"))
        await pid.ask(call("pause_schedule", "m", note="kept"))
    later = START + 10 * MINUTE
    async with running(persistent_backend, later) as (system, clock):
        pid = await system.durable(Pausable, "k")
        await pid.ask(Call("minutely", "a new payload"))  # an upsert: the pause stays
        await clock.advance(300)
        assert RUNS == []
        [task] = await pid.ask(Call("tasks"))
        assert (task.paused, task.note, task.payload) == (True, "kept", "a new payload")


async def test_pause_errors_at_the_call(backend: Backend) -> None:
    async with running(backend) as (system, _clock):
        pid = await system.durable(Pausable, "e")
        await pid.ask(Call("minutely"))
        assert (await pid.ask(call("pause_schedule", "nope"))).startswith("TaskNotFoundError")
        assert (await pid.ask(call("resume_schedule", "nope"))).startswith("TaskNotFoundError")
        assert (await pid.ask(call("schedule_history", "nope"))).startswith("TaskNotFoundError")
        too_long = await pid.ask(call("pause_schedule", "m", note="é" * 2049))
        assert too_long.startswith("ValueError: `note` must be at most 4,096 bytes (UTF-8), got")
        nul = await pid.ask(call("pause_schedule", "m", note="a\x00b"))
        assert nul.startswith("ValueError: `note`")
        assert (await pid.ask(call("pause_schedule", "m", note=7))).startswith("TypeError")
        [task] = await pid.ask(Call("tasks"))
        assert task.paused is False


async def test_the_old_names_keep_working_with_a_deprecation_warning(backend: Backend) -> None:
    async with running(backend) as (system, clock):
        pid = await system.durable(Pausable, "d")
        await pid.ask(Call("minutely"))
        [warning] = await pid.ask(Call("old", {"verb": "trigger", "args": ["m"]}))
        assert warning.startswith("DeprecationWarning: DurableActor.trigger is deprecated")
        window = ["m", START - 3 * MINUTE, START]
        [warning] = await pid.ask(Call("old", {"verb": "backfill", "args": window}))
        assert "call backfill_schedule" in warning
        [warning] = await pid.ask(Call("old", {"verb": "task_history", "args": ["m"]}))
        assert "call schedule_history" in warning
        await clock.advance(1)
        assert len([t for t in RUNS if t.manual]) == 1
        assert len([t for t in RUNS if t.backfill]) == 3  # 11:57, 11:58, 11:59
