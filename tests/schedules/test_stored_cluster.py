# SPDX-License-Identifier: Apache-2.0
"""Stored schedules in cluster mode: three memory:// nodes sharing one store and one
ManualClock. Every kind fires once per instant cluster-wide; one ledger row per instant;
a change made on one node is seen by all within poll_interval."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from tests.schedules import jobs_for_tests as jobs

from tocsin import ActorSystem, Cluster, ManualClock
from tocsin.schedules import Cron, Interval, Once, Schedule
from tocsin.stores import MemoryStore
from tocsin.triggers import Outcome

START = datetime(2030, 1, 1, 9, 0, tzinfo=UTC).timestamp()
RECORD = "tests.schedules.jobs_for_tests.record"


@pytest.fixture(autouse=True)
def _runs() -> Iterator[None]:
    jobs.RUNS.clear()
    yield
    jobs.RUNS.clear()


@asynccontextmanager
async def cluster_of(
    *names: str, schedules: list[Schedule] | None = None, store: MemoryStore | None = None
) -> AsyncIterator[tuple[ManualClock, list[ActorSystem]]]:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    store = store or MemoryStore()
    systems = [
        ActorSystem(
            n,
            clock=clock,
            store=store,
            cluster=Cluster(url, lease=30.0, poll_interval=1.0),
            schedules=schedules,
        )
        for n in names
    ]
    try:
        for system in systems:
            await system.start()
        yield clock, systems
    finally:
        for system in systems:
            await system.stop()


@pytest.mark.parametrize(
    "trigger",
    [Interval(60), Cron("0 * * * * ?")],
    ids=["interval", "cron"],
)
async def test_every_instant_runs_once_on_three_nodes_and_the_ledger_has_one_row_each(
    trigger: Interval | Cron,
) -> None:
    declared = [Schedule("every-minute", trigger, RECORD)]
    async with cluster_of("a", "b", "c", schedules=declared) as (clock, systems):
        # + poll_interval: a run is started by its shard's owner, maybe another node.
        await clock.advance(5 * 60 + 2)
        instants = [run[1] for run in jobs.RUNS]
        assert len(instants) == 5
        assert len(set(instants)) == 5
        rows = await systems[1].schedules.history("every-minute")
        assert [r.outcome for r in rows] == [Outcome.DELIVERED] * 5
        assert [r.instant.isoformat() for r in rows] == instants
        assert {r.node for r in rows} <= {"a", "b", "c"}
        # All three nodes claimed every instant: one won, two lost (and wrote nothing).
        metrics = [s.cluster.metrics() for s in systems]
        assert sum(m.claims_won for m in metrics) == 5
        assert sum(m.claims_lost for m in metrics) == 10
        # The declared schedule was stored once, by the first node; the others found it.
        assert (await systems[2].schedules.get("every-minute")).version == 1


async def test_a_once_runs_once_cluster_wide_and_is_removed() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        await systems[0].schedules.add(Schedule("once", Once(delay=30), RECORD))
        await clock.advance(2)  # every node polls and arms it
        await clock.advance(40)
        assert len(jobs.RUNS) == 1
        assert [s.id for s in await systems[2].schedules.list()] == []
        [row] = await systems[1].schedules.history("once")
        assert row.outcome is Outcome.DELIVERED


async def test_a_pause_on_one_node_is_seen_by_every_node_and_recorded_once_per_instant() -> None:
    declared = [Schedule("r", Interval(10), RECORD)]
    async with cluster_of("a", "b", "c", schedules=declared) as (clock, systems):
        await clock.advance(10.5)
        assert len(jobs.RUNS) == 1
        await systems[2].schedules.pause("r", note="OPS-7")
        await clock.advance(30)
        assert len(jobs.RUNS) == 1
        rows = await systems[0].schedules.history("r")
        assert [(r.outcome, r.note, r.paused_by) for r in rows[1:]] == [
            (Outcome.PAUSED, "OPS-7", "c")
        ] * 3


async def test_an_update_on_one_node_reaches_every_node_within_the_poll_interval() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        await systems[0].schedules.add(Schedule("r", Interval(100), RECORD))
        await clock.advance(1.5)
        await systems[1].schedules.update("r", trigger=Interval(10))
        await clock.advance(1.5)  # a poll on every node
        await clock.advance(30)
        assert len(jobs.RUNS) == 3
        assert len({run[1] for run in jobs.RUNS}) == 3


async def test_the_runs_of_one_timer_batch_are_announced_together_and_all_run_once() -> None:
    # Fifty instants at once: their runs are announced to the other nodes (a NOTIFY on
    # PostgreSQL, a round trip each) in a few announcements, not fifty; every run
    # still starts, on whichever node owns its shard.
    store = MemoryStore()
    announced = 0
    announce = store.announce

    async def counted() -> None:
        nonlocal announced
        announced += 1
        await announce()

    store.announce = counted  # type: ignore[method-assign]
    anchor = datetime.fromtimestamp(START, UTC)
    declared = [Schedule(f"s{i}", Interval(60, anchor=anchor), RECORD) for i in range(50)]
    async with cluster_of("a", "b", "c", schedules=declared, store=store) as (clock, _):
        await clock.advance(5)
        announced = 0
        await clock.advance(60)
        assert sorted(run[0] for run in jobs.RUNS) == sorted(s.id for s in declared)
        assert 1 <= announced <= 5


async def test_a_node_stopping_before_an_instant_it_won_ahead_decides_it_first() -> None:
    # Claimed 0.25 s ahead (Cluster(claim_ahead=...)): the other nodes lost the claim,
    # so the winner's graceful stop waits for the instant's time and decides it first.
    declared = [Schedule("every-minute", Cron("0 * * * * ?"), RECORD)]
    async with cluster_of("a", "b", "c", schedules=declared) as (clock, systems):
        await clock.advance(59.875)  # 0.125 s before 09:01, claimed ahead
        [winner] = [s for s in systems if s.cluster.metrics().claims_won]
        stop = asyncio.create_task(winner.stop())
        await clock.advance(0.125)
        await stop
        await clock.advance(3)  # the run, on whichever live node owns its shard
        live = next(s for s in systems if s is not winner)
        rows = await live.schedules.history("every-minute")
        assert [(r.outcome, r.instant.timestamp()) for r in rows] == [
            (Outcome.DELIVERED, START + 60)
        ]
        assert len(jobs.RUNS) == 1
