# SPDX-License-Identifier: Apache-2.0
"""A job target of a stored schedule runs as a durable job run: the node that wins an
instant stores the run (with the instant's Tick); the worker running it keeps the
instant's ledger row up to date (delivered with its start, failed with the error's text,
retried). Under at_least_once a failed run is retried with the job's backoff, then
parked, and a run cut short by a crash runs again after a restart; under at_most_once
(the default) neither runs again: the row says failed. SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.schedules import jobs_for_tests as jobs

from tocsin import ActorSystem, Delivery, ManualClock, Tick, TickNotDelivered
from tocsin.cluster._single_fire import tick_key
from tocsin.jobs import DEFAULT_MAX_RETRIES, job_row
from tocsin.jobs._worker import INTERRUPTED, start_mark
from tocsin.metrics import Metrics, prometheus_endpoint
from tocsin.schedules import Interval, Schedule
from tocsin.schedules._targets import task_id
from tocsin.stores import UpsertTask
from tocsin.stores.postgres import PostgresStore
from tocsin.stores.sqlite import SQLiteStore
from tocsin.triggers import Outcome

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp()
JOBS = "tests.schedules.jobs_for_tests."


@pytest.fixture(autouse=True)
def _runs() -> Iterator[None]:
    jobs.RUNS.clear()
    jobs.ATTEMPTS.clear()
    jobs.ACTIVE[:] = [0, 0]
    yield
    jobs.RUNS.clear()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.integration)])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'app.db'}"
    dsn: str = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def _open(store_url: str) -> SQLiteStore | PostgresStore:
    if store_url.startswith("sqlite:///"):
        return SQLiteStore(store_url.removeprefix("sqlite:///"))
    dsn, _, schema = store_url.partition("?schema=")
    return PostgresStore(dsn, schema=schema)


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(T0 + seconds, UTC)


async def test_a_failed_run_is_retried_with_backoff_and_the_ledger_follows_it(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    events: list[Any] = []
    declared = [Schedule("f", Interval(60), JOBS + "flaky", delivery=Delivery.AT_LEAST_ONCE)]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        system.events.subscribe(events.append, TickNotDelivered)
        await clock.advance(60)
        [row] = await system.schedules.history("f")
        assert (row.outcome, row.detail) == (Outcome.FAILED, "ConnectionError: db away")
        assert row.started == at(60)
        assert [(e.reference, e.outcome) for e in events] == [("f", Outcome.FAILED)]
        await clock.advance(1.5)  # Retry(base=1, jitter=0): the retry 1 s later
        [row] = await system.schedules.history("f")
        assert (row.outcome, row.detail, row.started) == (Outcome.RETRIED, None, at(61))
        # One instant, two attempts: ctx.tick carries the instant both times.
        first = at(60).isoformat()
        assert [(first, 1), (first, 2)] == jobs.ATTEMPTS
        assert await system.jobs.list("tests.schedules.jobs_for_tests.flaky") == []
        body, _ = prometheus_endpoint(Metrics.of(system))()
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        counted = {
            s.labels["outcome"]: s.value
            for s in families["tocsin_schedule_ticks"].samples
            if s.labels["reference"] == "f"
        }
        assert counted == {"failed": 1.0, "retried": 1.0}


async def test_a_run_failing_every_retry_is_parked_and_its_row_says_failed(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    declared = [Schedule("d", Interval(60), JOBS + "doomed", delivery=Delivery.AT_LEAST_ONCE)]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(65)
        [row] = await system.schedules.history("d")
        assert (row.outcome, row.detail) == (Outcome.FAILED, "RuntimeError: still broken")
        [parked] = await system.jobs.list(JOBS + "doomed", state="parked")
        assert parked.id == "d@2026-03-02T09:01:00.000Z"
        assert parked.attempts == 2


async def test_at_most_once_a_failed_run_is_not_retried_and_its_row_says_failed(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    events: list[Any] = []
    declared = [Schedule("f", Interval(60), JOBS + "flaky")]  # at_most_once: the default
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        system.events.subscribe(events.append, TickNotDelivered)
        await clock.advance(60)
        await clock.advance(10)  # well past the job's 1 s retry backoff
        [row] = await system.schedules.history("f")
        assert (row.outcome, row.detail) == (Outcome.FAILED, "ConnectionError: db away")
        assert row.started == at(60)
        # The handler ran once; the run is over, neither waiting for a retry nor parked.
        assert [(at(60).isoformat(), 1)] == jobs.ATTEMPTS
        assert await system.jobs.list(JOBS + "flaky") == []
        assert [(e.reference, e.outcome) for e in events] == [("f", Outcome.FAILED)]


async def test_at_most_once_a_run_cut_by_a_stop_is_not_run_again_at_the_next_start(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    events: list[Any] = []
    declared = [Schedule("s", Interval(3600), JOBS + "slow", args=(100.0,))]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(3600 + 10)  # the run started at 3600 s, still running
        assert [r[1] for r in jobs.RUNS] == [at(3600).isoformat()]
    # The process is gone mid-run; the stored run is found at the next start, already
    # started: at most once, so it is not run again and its row records the loss.
    async with ActorSystem("n2", clock=clock, store=store_url, schedules=declared) as system:
        system.events.subscribe(events.append, TickNotDelivered)
        await clock.advance(1)
        await clock.advance(100)
        assert [r[1] for r in jobs.RUNS] == [at(3600).isoformat()]
        [row] = await system.schedules.history("s")
        assert (row.outcome, row.detail, row.node) == (Outcome.FAILED, INTERRUPTED, "n2")
        assert row.started == at(3600)  # when the one run started
        assert await system.jobs.list(JOBS + "slow") == []
        assert [(e.reference, e.outcome, e.detail) for e in events] == [
            ("s", Outcome.FAILED, INTERRUPTED)
        ]


async def test_at_most_once_a_run_whose_start_mark_is_taken_does_not_run(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    declared = [Schedule("m", Interval(60), JOBS + "record")]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared):
        pass  # stored, anchored at T0
    # Another run of the 60 s instant (an owner stalled past its shard's lease) took the
    # start mark and has not written the ledger row's start yet: this one must not run.
    store = _open(store_url)
    await store.open()
    try:
        assert await store.claim_schedule_tick(start_mark("m", T0 + 60), "n0", T0, T0 + 3600)
    finally:
        await store.close()
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(60)
        assert jobs.RUNS == []
        [row] = await system.schedules.history("m")
        assert (row.outcome, row.detail) == (Outcome.FAILED, INTERRUPTED)
        await clock.advance(60)  # the next instant's mark is free: it runs
        assert [r[1] for r in jobs.RUNS] == [at(120).isoformat()]
        assert [r.outcome for r in await system.schedules.history("m")] == [
            Outcome.FAILED,
            Outcome.DELIVERED,
        ]


async def test_at_least_once_a_run_cut_by_a_stop_runs_again_at_the_next_start(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    declared = [
        Schedule("s", Interval(3600), JOBS + "slow", args=(100.0,), delivery=Delivery.AT_LEAST_ONCE)
    ]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(3600 + 10)  # the run started at 3600 s, still running
        assert [r[1] for r in jobs.RUNS] == [at(3600).isoformat()]
    # The process is gone mid-run: the stored run is still there for the next start.
    async with ActorSystem("n2", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(1)
        assert [r[1] for r in jobs.RUNS] == [at(3600).isoformat()] * 2
        [row] = await system.schedules.history("s")
        assert (row.outcome, row.node) == (Outcome.DELIVERED, "n2")
        await clock.advance(100)
        assert await system.jobs.list(JOBS + "slow") == []


async def test_buffer_one_runs_of_one_schedule_never_overlap(store_url: str) -> None:
    clock = ManualClock(wall=T0)
    declared = [Schedule("x", Interval(10), JOBS + "exclusive", args=(25.0,))]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(120.5)
        assert jobs.ACTIVE[1] == 1
        rows = await system.schedules.history("x")
        outcomes = {r.outcome for r in rows}
        assert outcomes == {Outcome.DELIVERED, Outcome.SKIPPED_OVERLAP}
        # One after another: each run started when the one before it ended.
        starts = sorted(r.started for r in rows if r.started is not None)
        assert all((b - a).total_seconds() >= 25 for a, b in itertools.pairwise(starts))


@pytest.mark.parametrize("delivery", [Delivery.AT_MOST_ONCE, Delivery.AT_LEAST_ONCE])
async def test_without_a_cluster_at_least_once_decides_again_an_instant_its_claimer_died_on(
    store_url: str, delivery: Delivery
) -> None:
    clock = ManualClock(wall=T0)
    declared = [Schedule("c", Interval(60), JOBS + "record", delivery=delivery)]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared):
        pass  # stored, anchored at T0
    # A previous life won 60 s and died before storing its run: a claim, no ledger row.
    store = _open(store_url)
    await store.open()
    try:
        key = tick_key("schedule:c", T0 + 60)
        assert await store.claim_schedule_tick(key, "dead", T0 + 60, T0 + 3600)
    finally:
        await store.close()
    clock.set_wall(T0 + 90)
    async with ActorSystem("n2", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(0)
        rows = await system.schedules.history("c")
        if delivery == Delivery.AT_LEAST_ONCE:
            assert [r[1] for r in jobs.RUNS] == [at(60).isoformat()]
            assert [(r.instant, r.node) for r in rows] == [(at(60), "n2")]
        else:  # lost, as at_most_once promises: never run twice, maybe not at all
            assert jobs.RUNS == []
            assert rows == []


async def test_at_most_once_a_finished_run_found_again_keeps_its_delivered_row(
    store_url: str,
) -> None:
    clock = ManualClock(wall=T0)
    events: list[Any] = []
    declared = [Schedule("m", Interval(3600), JOBS + "record")]
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        await clock.advance(3600)
        assert [r[1] for r in jobs.RUNS] == [at(3600).isoformat()]
        [row] = await system.schedules.history("m")
        assert (row.outcome, row.node) == (Outcome.DELIVERED, "n1")
    # The process died after the handler returned, before the run's completion was
    # committed (durable completions are committed after the run, in batches): the
    # stored run is found again at the next start. It ran to its end: at most once, it
    # does not run again, and its row still says delivered (not failed, interrupted).
    store = _open(store_url)
    await store.open()
    try:
        stored = await store.schedule_row("m")
        assert stored is not None
        instant = T0 + 3600
        task = job_row(
            JOBS + "record",
            task_id("m", instant),
            instant,
            (),
            {},
            max_retries=DEFAULT_MAX_RETRIES,
            created_at=instant,
            tick=Tick("m", at(3600), 1, False, False, None),
            ledger=(stored.version, 256, False),
            at_most_once=True,
        )
        await store.apply([UpsertTask(task)])
    finally:
        await store.close()
    async with ActorSystem("n2", clock=clock, store=store_url, schedules=declared) as system:
        system.events.subscribe(events.append, TickNotDelivered)
        await clock.advance(1)
        await clock.advance(10)
        assert [r[1] for r in jobs.RUNS] == [at(3600).isoformat()]
        [row] = await system.schedules.history("m")
        assert (row.outcome, row.detail, row.started) == (Outcome.DELIVERED, None, at(3600))
        assert await system.jobs.list(JOBS + "record") == []
        assert events == []


async def test_the_decided_row_is_written_before_any_worker_is_woken(store_url: str) -> None:
    # A run that fails at once (here, or on the node an announcement reaches) writes its
    # ``failed`` row; the deciding node's ``delivered`` must already be there, never land
    # after it and overwrite it.
    from tocsin.schedules._runner import runner_of

    clock = ManualClock(wall=T0)
    declared = [Schedule("f", Interval(60), JOBS + "flaky")]
    seen: list[list[str]] = []
    async with ActorSystem("n1", clock=clock, store=store_url, schedules=declared) as system:
        runner = runner_of(system.runtime)
        assert runner is not None
        wake = runner._wake

        async def spy(kind: str, identity: str, now: float) -> None:
            seen.append([str(r.outcome) for r in await system.schedules.history("f")])
            await wake(kind, identity, now)

        runner._wake = spy  # type: ignore[method-assign]
        await clock.advance(60)
        await clock.advance(10)
        [row] = await system.schedules.history("f")
        assert (row.outcome, row.detail) == (Outcome.FAILED, "ConnectionError: db away")
    assert seen == [["delivered"]]
