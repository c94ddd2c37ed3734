# SPDX-License-Identifier: Apache-2.0
"""``system.jobs.enqueue``: durable one-off runs, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from tests.durable.durable_support import Backend

from tocsin import (
    ActorSystem,
    ActorSystemNotStartedError,
    CodecError,
    InvalidIntervalError,
    JobContext,
    JobNotFoundError,
    ManualClock,
    Retry,
    TaskNotFoundError,
    job,
)

T0 = 1_700_000_000.0
#: (job, job id, attempt, args, kwargs, seconds since T0) of each run, in order.
RUNS: list[tuple[str, str, int, tuple[Any, ...], dict[str, Any], float]] = []
CONTEXTS: list[JobContext] = []
FAILURES: dict[str, int] = {}  # job -> runs that fail before it succeeds


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()
    CONTEXTS.clear()
    FAILURES.clear()


def _record(ctx: JobContext, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    RUNS.append((name, ctx.job_id, ctx.attempt, args, kwargs, ctx.system.clock.wall() - T0))
    CONTEXTS.append(ctx)
    if sum(1 for r in RUNS if r[0] == name) <= FAILURES.get(name, 0):
        raise ConnectionError(f"{name} failed")


@job
async def send(ctx: JobContext, *args: Any, **kwargs: Any) -> None:
    _record(ctx, "send", args, kwargs)


@job(retry=Retry(jitter=0.0, rng=random.Random(0)), max_retries=2)
async def flaky(ctx: JobContext) -> None:
    _record(ctx, "flaky", (), {})


@job(retry=Retry(jitter=0.0, on=(TimeoutError,)))
async def picky(ctx: JobContext) -> None:
    _record(ctx, "picky", (), {})


def _system(backend: Backend, clock: ManualClock, **options: Any) -> ActorSystem:
    return ActorSystem(clock=clock, store=backend.make(), timezone="UTC", **options)


async def test_enqueued_run_calls_the_job_with_its_arguments_and_context(
    backend: Backend,
) -> None:
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        run_id = await system.jobs.enqueue(send, 1, "two", [3], key={"k": b"v"})
        await clock.advance(0.001)
    assert [r[:5] for r in RUNS] == [("send", run_id, 1, (1, "two", [3]), {"key": {"k": b"v"}})]
    (ctx,) = CONTEXTS
    assert ctx.system is system
    assert (ctx.tick, ctx.fence, ctx.name) == (None, None, f"{__name__}.send")
    assert ctx.logger.name == f"tocsin.jobs.{__name__}.send"


async def test_a_job_enqueued_by_name_runs_like_one_enqueued_by_function(backend: Backend) -> None:
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        await system.jobs.enqueue(f"{__name__}.send", "x")
        await clock.advance(0.001)
    assert [r[3] for r in RUNS] == [("x",)]


async def test_delay_and_at_hold_the_run_until_its_time(backend: Backend) -> None:
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        await system.jobs.enqueue(send, "later", delay=30)
        await system.jobs.enqueue(send, "at", at=datetime.fromtimestamp(T0 + 60, UTC))
        await system.jobs.enqueue(send, "td", delay=timedelta(seconds=45))
        await clock.advance(29)
        assert RUNS == []
        await clock.advance(31)
    assert [(r[3], r[5]) for r in RUNS] == [(("later",), 30.0), (("td",), 45.0), (("at",), 60.0)]


async def test_enqueue_with_an_id_replaces_the_pending_run_never_duplicates(
    backend: Backend,
) -> None:
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        first = await system.jobs.enqueue(send, "v1", delay=10, id="invoice-7")
        second = await system.jobs.enqueue(send, "v2", delay=20, id="invoice-7")
        assert first == second == "invoice-7"
        (pending,) = await system.jobs.list(send)
        assert (pending.id, pending.args, pending.state) == ("invoice-7", ("v2",), "pending")
        await clock.advance(60)
    assert [(r[1], r[3], r[5]) for r in RUNS] == [("invoice-7", ("v2",), 20.0)]


async def test_failed_runs_are_retried_with_backoff_then_parked(backend: Backend) -> None:
    FAILURES["flaky"] = 99
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        run_id = await system.jobs.enqueue(flaky)
        await clock.advance(10)
        assert [(r[2], r[5]) for r in RUNS] == [(1, 0.0), (2, 1.0), (3, 3.0)]  # 1 s, then 2 s
        (parked,) = await system.jobs.list(flaky, state="parked")
        assert (parked.id, parked.attempts, parked.state) == (run_id, 3, "parked")
        assert parked.last_error is not None
        assert "ConnectionError" in parked.last_error
        assert await system.jobs.list(state="parked") == [parked]
        FAILURES["flaky"] = 0
        await system.jobs.retry_parked(flaky, run_id)
        await clock.advance(0.001)
        assert len(RUNS) == 4
        assert await system.jobs.get(flaky, run_id) is None  # done: deleted
        with pytest.raises(TaskNotFoundError):
            await system.jobs.discard_parked(flaky, run_id)


async def test_max_retries_given_at_enqueue_overrides_the_jobs(backend: Backend) -> None:
    FAILURES["flaky"] = 99
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        run_id = await system.jobs.enqueue(flaky, max_retries=0)
        await clock.advance(10)
        assert len(RUNS) == 1
        await system.jobs.discard_parked(flaky, run_id)
        assert await system.jobs.list(flaky) == []


async def test_a_failure_not_in_retry_on_parks_at_once(backend: Backend) -> None:
    FAILURES["picky"] = 99
    clock = ManualClock(wall=T0)
    async with _system(backend, clock) as system:
        await system.jobs.enqueue(picky)
        await clock.advance(600)
        assert len(RUNS) == 1  # ConnectionError is not a TimeoutError: no retry
        assert [r.state for r in await system.jobs.list(picky)] == ["parked"]


async def test_bad_calls_raise_at_enqueue_and_store_nothing() -> None:
    clock = ManualClock(wall=T0)

    async def undecorated(ctx: JobContext) -> None:
        pass

    async with ActorSystem(clock=clock) as system:
        with pytest.raises(CodecError):
            await system.jobs.enqueue(send, object())
        with pytest.raises(CodecError):
            await system.jobs.enqueue(send, blob=b"x" * (2 * 1024 * 1024))
        with pytest.raises(JobNotFoundError):
            await system.jobs.enqueue(undecorated)
        with pytest.raises(InvalidIntervalError):
            await system.jobs.enqueue(send, delay=-1)
        with pytest.raises(ValueError, match="`at`"):
            await system.jobs.enqueue(send, at=datetime(2030, 1, 1))
        with pytest.raises(ValueError, match="not both"):
            await system.jobs.enqueue(send, delay=1, at=datetime(2030, 1, 1, tzinfo=UTC))
        with pytest.raises(ValueError, match="`id`"):
            await system.jobs.enqueue(send, id="")
        with pytest.raises(ValueError, match="`max_retries`"):
            await system.jobs.enqueue(send, max_retries=-1)
        assert await system.jobs.list() == []
    with pytest.raises(ActorSystemNotStartedError):
        await ActorSystem().jobs.enqueue(send)


async def test_a_run_no_running_node_knows_waits_then_runs_where_known(
    persistent_backend: Backend,
) -> None:
    clock = ManualClock(wall=T0)
    name = f"{__name__}.defined_later_{persistent_backend.name}"  # registered once per process
    async with _system(persistent_backend, clock) as system:
        run_id = await system.jobs.enqueue(name, "waiting")
        await clock.advance(600)
        (run,) = await system.jobs.list(name)
        assert (run.id, run.state, run.args) == (run_id, "pending", ("waiting",))
    assert RUNS == []

    @job(name=name)
    async def defined_later(ctx: JobContext, *args: Any) -> None:
        _record(ctx, "later", args, {})

    async with _system(persistent_backend, clock) as system:
        await clock.advance(0.001)
    assert [(r[1], r[3]) for r in RUNS] == [(run_id, ("waiting",))]


async def test_jobs_option_imports_modules_at_start(persistent_backend: Backend) -> None:
    import importlib
    import sys

    sys.modules.pop("tests.jobs.sample_jobs", None)
    clock = ManualClock(wall=T0)
    async with _system(persistent_backend, clock) as system:
        await system.jobs.enqueue("tests.jobs.sample_jobs.record", 5)
    async with _system(persistent_backend, clock, jobs=["tests.jobs.sample_jobs"]):
        await clock.advance(0.001)
    sample = importlib.import_module("tests.jobs.sample_jobs")
    assert [r[2] for r in sample.RUNS] == [(5,)]


async def test_a_row_written_with_a_tick_gives_the_run_that_tick() -> None:
    from tocsin import Tick
    from tocsin.jobs import job_row
    from tocsin.stores import MemoryStore, UpsertTask

    store = MemoryStore()
    clock = ManualClock(wall=T0)
    instant = datetime.fromtimestamp(T0, UTC)
    tick = Tick("nightly-report", instant, fence=3)
    row = job_row(
        resolve_name(send), "nightly-report@1", T0, ("x",), {}, max_retries=1,
        created_at=T0, tick=tick,
    )  # fmt: skip
    async with ActorSystem(clock=clock, store=store):
        await store.apply([UpsertTask(row)])
        await store.announce()
        await clock.advance(0.001)
    (ctx,) = CONTEXTS
    assert (ctx.tick, ctx.fence, ctx.job_id) == (tick, 3, "nightly-report@1")
    assert [r[3] for r in RUNS] == [("x",)]


def resolve_name(function: Any) -> str:
    from tocsin.jobs import resolve

    return resolve(function).name
