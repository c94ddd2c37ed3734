# SPDX-License-Identifier: Apache-2.0
"""``tocsin.Client``: enqueue from a process that runs nothing; workers pick the work up
(within their poll on a ManualClock, at once on PostgreSQL through LISTEN/NOTIFY)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.durable.durable_support import Backend
from tests.eventually import eventually

from tocsin import (
    ActorSystem,
    ActorSystemNotStartedError,
    Client,
    InvalidStoreURLError,
    JobContext,
    ManualClock,
    job,
)
from tocsin.durable import DurableActor
from tocsin.stores import MemoryStore

T0 = 1_700_000_000.0
RUNS: list[tuple[str, tuple[Any, ...], float]] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RUNS.clear()


@job
async def deliver(ctx: JobContext, *args: Any) -> None:
    RUNS.append((ctx.job_id, args, ctx.system.clock.wall() - T0))


async def _until_ran(clock: ManualClock, count: int, *, bound: float = 20.0) -> None:
    """Let simulated time stand still and wait (a bounded real wait) for ``count`` runs:
    only a pushed change can start them."""

    async def ran() -> bool:
        await clock.advance(0)
        return len(RUNS) >= count

    await eventually(ran, f"{count} runs (simulated time standing still)", within=bound)


async def test_a_client_enqueues_without_running_anything(persistent_backend: Backend) -> None:
    clock = ManualClock(wall=T0)
    async with Client(persistent_backend.make(), clock=clock) as client:
        run_id = await client.jobs.enqueue(deliver, "from-the-web")
        (run,) = await client.jobs.list(deliver)
        assert (run.id, run.args, run.state) == (run_id, ("from-the-web",), "pending")
        assert await client.jobs.get(deliver, run_id) == run
    assert RUNS == []  # nothing ran in the client
    async with ActorSystem(clock=clock, store=persistent_backend.make()):
        await clock.advance(0.001)
    assert [(r[0], r[1]) for r in RUNS] == [(run_id, ("from-the-web",))]


async def test_a_running_worker_starts_client_work_within_its_poll(
    persistent_backend: Backend,
) -> None:
    clock = ManualClock(wall=T0)
    async with (
        ActorSystem(clock=clock, store=persistent_backend.make()),
        Client(persistent_backend.make(), clock=clock) as client,
    ):
        await client.jobs.enqueue(deliver, 1)
        await client.jobs.enqueue(deliver, 2, delay=400)
        await clock.advance(150)  # the worker's look-ahead poll (LOOKAHEAD / 2)
        assert [r[1] for r in RUNS] == [(1,)]
        await clock.advance(300)
    assert [(r[1], r[2] >= 400) for r in RUNS] == [((1,), False), ((2,), True)]


@pytest.mark.integration
async def test_on_postgresql_a_worker_starts_client_work_at_once(postgres_dsn: str) -> None:
    from tests.durable.durable_support import postgres_backend

    backend = postgres_backend(postgres_dsn)
    clock = ManualClock(wall=T0)
    async with (
        ActorSystem(clock=clock, store=backend.make()),
        Client(backend.make(), clock=clock) as client,
    ):
        for i in range(3):
            await client.jobs.enqueue(deliver, i)
        await _until_ran(clock, 3)  # simulated time never moved: NOTIFY woke the worker
    assert sorted(r[1] for r in RUNS) == [(0,), (1,), (2,)]
    assert {r[2] for r in RUNS} == {0.0}


async def test_on_sqlite_a_worker_on_a_real_clock_starts_client_work_from_its_change_watch(
    tmp_path: Any,
) -> None:
    from tocsin.stores.sqlite import SQLiteStore

    path = tmp_path / "jobs.db"
    async with (
        ActorSystem(store=SQLiteStore(path)),
        Client(SQLiteStore(path)) as client,
    ):
        await client.jobs.enqueue(deliver, "watched")
        # The change watch looks once a second.
        await eventually(lambda: RUNS, "the worker ran the client's job", within=20.0)
    assert [r[1] for r in RUNS] == [("watched",)]


async def test_a_memory_store_shared_in_process_wakes_the_worker_at_once() -> None:
    store = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock, store=store), Client(store, clock=clock) as client:
        await client.jobs.enqueue(deliver, "pushed")
        await _until_ran(clock, 1)


async def test_client_calls_before_open_raise_and_bad_urls_raise_at_construction() -> None:
    client = Client("memory://")
    with pytest.raises(ActorSystemNotStartedError, match="not open"):
        await client.jobs.enqueue(deliver)
    with pytest.raises(InvalidStoreURLError):
        Client("sqlite://app.db")
    with pytest.raises(TypeError):
        Client(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`clock`"):
        Client("memory://", clock=1)  # type: ignore[arg-type]
    assert "closed" in repr(client)


class Ticker(DurableActor):
    kind = "ClientTicker"

    async def start(self, payload: Any) -> None:
        await self.every(10, "tick", id="t")

    async def tick(self, payload: Any) -> None:
        pass


async def test_a_client_reads_durable_task_history_from_the_store(
    persistent_backend: Backend,
) -> None:
    from tocsin.durable import Call

    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock, store=persistent_backend.make(), timezone="UTC") as system:
        pid = await system.durable(Ticker, "a")
        await pid.ask(Call("start"))
        await clock.advance(25)
        async with Client(persistent_backend.make(), clock=clock) as client:
            history = await client.task_history(Ticker, "a", "t")
            assert [h.outcome.value for h in history] == ["delivered", "delivered"]
            assert await client.task_history("ClientTicker", "a", "nope") == []


async def test_a_worker_of_jobs_finds_sqlite_changes_by_its_own_quick_look(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With durable's own look pushed to an hour, only the jobs' look (every 10 ms) can
    start the client's run within the bounded wait."""
    from tocsin.durable import _runtime
    from tocsin.stores.sqlite import SQLiteStore

    monkeypatch.setattr(_runtime, "CHANGE_CHECK_SECONDS", 3600.0)
    path = tmp_path / "jobs.db"
    async with (
        ActorSystem(store=SQLiteStore(path), jobs=[__name__]),
        Client(SQLiteStore(path)) as client,
    ):
        await client.jobs.enqueue(deliver, "looked")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20.0
        while not RUNS:
            assert loop.time() < deadline, "the worker's quick look never saw the client's run"
            await asyncio.sleep(0.02)
    assert [r[1] for r in RUNS] == [("looked",)]
