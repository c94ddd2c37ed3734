# SPDX-License-Identifier: Apache-2.0
"""``ActorSystem(cluster=Cluster(...))``: systems of one process on memory:// and one
ManualClock; cron fires once per tick cluster-wide, interval schedules stay node-local."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    ActorSystemNotStartedError,
    Cluster,
    ClusterDisabledError,
    ManualClock,
    NodeJoined,
    NodeLeft,
    ReceiveContext,
    ScheduleReferenceRequiredError,
)

START = datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC)


class Counter(Actor):
    def __init__(self, log: list[tuple[str, Any]], node: str) -> None:
        self.log = log
        self.node = node

    async def receive(self, ctx: ReceiveContext) -> None:
        self.log.append((self.node, ctx.message))


@asynccontextmanager
async def cluster_of(
    *names: str, **kw: Any
) -> AsyncIterator[tuple[ManualClock, list[ActorSystem]]]:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    systems = [
        ActorSystem(name, clock=clock, cluster=Cluster(url, lease=3.0), **kw) for name in names
    ]
    try:
        for system in systems:
            await system.start()
        yield clock, systems
    finally:
        for system in systems:
            await system.stop()


async def test_a_cron_schedule_made_on_every_node_fires_once_per_tick() -> None:
    log: list[tuple[str, Any]] = []
    async with cluster_of("a", "b", "c") as (clock, systems):
        for system in systems:
            pid = await system.spawn(partial(Counter, log, system.name), "counter")
            await system.schedule_cron("report", pid, "0 * * * * ?", reference="report")
        await clock.advance(180)  # 09:01, 09:02, 09:03
        assert [message for _, message in log] == ["report"] * 3
        won = sum(s.cluster.metrics().claims_won for s in systems)
        lost = sum(s.cluster.metrics().claims_lost for s in systems)
        assert (won, lost) == (3, 6)


async def test_cron_needs_a_reference_and_defaults_to_the_system_zone_in_cluster_mode() -> None:
    # Issue 19 item 7: the system's zone, as outside cluster mode (it used to be UTC).
    async with cluster_of("a", timezone="Europe/Paris") as (_, [system]):
        pid = await system.spawn(lambda: Counter([], "a"), "counter")
        with pytest.raises(ScheduleReferenceRequiredError, match="explicit `reference`"):
            await system.schedule_cron("tick", pid, "0 * * * * ?")
        await system.schedule_cron("tick", pid, "0 0 9 * * ?", reference="daily")
        await system.schedule_cron("tick", pid, "0 0 9 * * ?", reference="utc", timezone="UTC")
        await system.schedule("tick", pid, 60.0, reference="local")
        infos = {info.reference: info for info in system.list_schedules()}
        assert {r: i.timezone for r, i in infos.items()} == {
            "daily": "Europe/Paris",
            "utc": "UTC",
            "local": None,
        }
        # Operators see which schedules are claimed cluster-wide (cron) and which are not.
        assert {r: i.cluster_claimed for r, i in infos.items()} == {
            "daily": True,
            "utc": True,
            "local": False,
        }


async def test_interval_schedules_stay_node_local() -> None:
    log: list[tuple[str, Any]] = []
    async with cluster_of("a", "b") as (clock, systems):
        for system in systems:
            pid = await system.spawn(partial(Counter, log, system.name), "counter")
            await system.schedule("beat", pid, 10.0, reference="beat")
        await clock.advance(10)
        assert sorted(node for node, _ in log) == ["a", "b"]


async def test_pause_cron_on_one_node_stops_the_ticks_everywhere_until_resumed() -> None:
    log: list[tuple[str, Any]] = []
    async with cluster_of("a", "b") as (clock, systems):
        for system in systems:
            pid = await system.spawn(partial(Counter, log, system.name), "counter")
            await system.schedule_cron("report", pid, "0 * * * * ?", reference="report")
        await systems[0].cluster.pause_cron("report")
        await clock.advance(120)
        assert log == []
        assert sum(s.cluster.metrics().claims_skipped_paused for s in systems) == 4
        await systems[1].cluster.resume_cron("report")
        await clock.advance(60)
        assert len(log) == 1


async def test_a_cluster_wide_pause_note_shows_on_every_nodes_list_schedules() -> None:
    log: list[tuple[str, Any]] = []
    async with cluster_of("a", "b") as (clock, systems):
        for system in systems:
            pid = await system.spawn(partial(Counter, log, system.name), "counter")
            await system.schedule_cron("report", pid, "0 * * * * ?", reference="report")
        await systems[0].cluster.pause_cron("report", note="db migration OPS-42")
        await clock.advance(60)  # b learns it when its claim answers "paused"
        for system in systems:
            [info] = system.list_schedules()
            assert info.note == "db migration OPS-42"
            assert info.paused_by == "a"
            assert info.paused_at is not None
            assert not info.paused  # not paused here: paused cluster-wide
        await systems[1].cluster.resume_cron("report")
        await clock.advance(60)  # a learns it when it wins a claim again
        assert len(log) == 1
        for system in systems:
            [info] = system.list_schedules()
            assert (info.note, info.paused_at, info.paused_by) == (None, None, None)


async def test_members_and_node_events_on_system_events() -> None:
    async with cluster_of("a") as (clock, [a]):
        seen: list[object] = []
        a.events.subscribe(seen.append, NodeJoined, NodeLeft)
        b = ActorSystem("b", clock=clock, cluster=Cluster(a.cluster.coordinator.url, lease=3.0))
        await b.start()
        await clock.advance(1.0)
        assert [m.name for m in a.cluster.members()] == ["a", "b"]
        assert seen == [NodeJoined("b", b.address)]
        await b.stop()
        await clock.advance(1.0)
        assert seen[-1] == NodeLeft("b", b.address, "left")


async def test_cluster_configuration_errors_are_raised_where_written() -> None:
    with pytest.raises(TypeError, match=r"`cluster` must be a tocsin\.Cluster"):
        ActorSystem("a", cluster="memory://")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs `remoting=`"):
        ActorSystem("a", cluster=Cluster("sqlite:///cluster.db"))
    plain = ActorSystem("plain")
    with pytest.raises(ClusterDisabledError, match="made without `cluster=`") as raised:
        _ = plain.cluster
    assert isinstance(raised.value, RuntimeError)  # what it raised before it had a type
    clustered = ActorSystem("c", cluster=Cluster("memory://x"))
    with pytest.raises(ActorSystemNotStartedError, match="joins its cluster"):
        _ = clustered.cluster
