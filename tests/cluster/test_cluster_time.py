# SPDX-License-Identifier: Apache-2.0
"""Cluster time (issue 20, item 5): a node measures its offset to the coordinator's clock at
each join and renewal and reads the cluster's time through it, so cron instants, claim
earliness and durable due times are the coordinator's, whatever the node's own clock says.

One ManualClock is the truth: the memory coordinators judge on it, and each node's own
clock is an ``OffsetClock`` over it (a node 30 s fast is ``OffsetClock(truth, 30)``).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial
from typing import Any

import pytest

from tocsin import Actor, ActorSystem, Cluster, ManualClock, ReceiveContext
from tocsin.clock import OFFSET_JUMP_TOLERANCE, OffsetClock
from tocsin.cluster import ClusterNode
from tocsin.cluster._memory import MemoryCoordinator
from tocsin.cluster._periodic import sleep
from tocsin.durable import Call, DurableActor
from tocsin.metrics import Metrics
from tocsin.stores import MemoryStore

START = datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC).timestamp()


class Log(Actor):
    """Records (node, the tick's instant, the true time) of each tick."""

    def __init__(self, log: list[tuple[str, float, float]], node: str, truth: ManualClock) -> None:
        self.log, self.node, self.truth = log, node, truth

    async def receive(self, ctx: ReceiveContext) -> None:
        assert ctx.tick is not None
        self.log.append((self.node, ctx.tick.instant.timestamp(), self.truth.wall()))


class Reminder(DurableActor):
    kind = "cluster-time.Reminder"

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "remind")

    async def remind(self, payload: Any) -> None:
        pass


@asynccontextmanager
async def skewed(
    skews: dict[str, float], *, store: Any = None, silent: bool = False, **config: Any
) -> AsyncIterator[tuple[ManualClock, list[ActorSystem]]]:
    """Systems whose own clocks are off the truth by ``skews[name]`` seconds, on memory
    coordinators that read the truth. ``silent``: a step of a node's own clock is not
    reported (as a real clock's, until the wall watch looks)."""
    config.setdefault("lease", 3.0)
    tolerance = math.inf if silent else OFFSET_JUMP_TOLERANCE
    truth = ManualClock(wall=START)
    name = uuid.uuid4().hex
    coordinators = [MemoryCoordinator(name, clock=truth) for _ in skews]
    for coordinator in coordinators:
        await coordinator.open()
    systems = [
        ActorSystem(
            node,
            clock=OffsetClock(truth, skew, jump_tolerance=tolerance),
            store=store,
            cluster=Cluster(coordinator, **config),
        )
        for (node, skew), coordinator in zip(skews.items(), coordinators, strict=True)
    ]
    try:
        for system in systems:
            await system.start()
        yield truth, systems
    finally:
        for system in systems:
            await system.stop()
        for coordinator in coordinators:
            await coordinator.close()


def _metric(system: ActorSystem, name: str) -> float:
    [metric] = [m for m in Metrics.of(system).collect() if m.prometheus_name == name]
    value = metric.samples[0].value
    assert isinstance(value, float | int)
    return float(value)


async def test_a_node_whose_clock_is_off_reads_the_coordinators_time_from_its_join() -> None:
    async with skewed({"fast": 30.0, "slow": -30.0, "true": 0.0}) as (truth, systems):
        fast, slow, true = systems
        assert (fast.cluster.offset, slow.cluster.offset, true.cluster.offset) == (-30, 30, 0)
        for system in systems:
            assert system.clock.wall() == truth.wall()  # the cluster's time
        assert _metric(fast, "tocsin_cluster_clock_offset_seconds") == -30.0
        assert _metric(fast, "tocsin_cluster_clock_offset_bound_seconds") == 0.0
        await truth.advance(1.0)  # a renewal: every view lists every node
        assert [m.name for m in fast.cluster.members()] == ["fast", "slow", "true"]


async def test_an_every_second_cron_on_skewed_nodes_fires_each_instant_once_on_time() -> None:
    # Issue 20: a node 30 s fast delivered every tick 30 s early and won every claim; a
    # node 30 s slow replayed stale ticks.
    log: list[tuple[str, float, float]] = []
    async with skewed({"fast": 30.0, "slow": -30.0, "true": 0.0}) as (truth, systems):
        for system in systems:
            pid = await system.spawn(partial(Log, log, system.name, truth), "job")
            await system.schedule_cron("tick", pid, "* * * * * ?", reference="every-second")
        await truth.advance(10.5)
        assert [at for _, _, at in log] == [START + s for s in range(1, 11)]  # once each
        assert all(at == instant for _, instant, at in log)  # at its instant
        assert sum(s.cluster.metrics().claims_won for s in systems) == 10
        assert sum(s.cluster.metrics().claims_early for s in systems) == 0


async def test_durable_due_times_are_written_on_the_coordinators_clock() -> None:
    # Issue 20: after a fast node died its identity's task waited 30.5 s, not the 11 s
    # bound: its due time had been written on the node's own clock.
    store = MemoryStore()
    async with skewed({"fast": 30.0}, store=store) as (truth, [fast]):
        pid = await fast.durable(Reminder, "r1")
        await pid.ask(Call("later", 10.0), timeout=5)
        [task] = await store.list_tasks(Reminder.kind, "r1")
        assert task.due == truth.wall() + 10.0


async def test_a_step_of_the_nodes_own_clock_is_measured_at_once_and_moves_no_tick() -> None:
    # A reported step (a ManualClock jump, the wall watch's finding) of this node's
    # clock only: it measures the offset again at once, so no tick comes early or twice.
    log: list[tuple[str, float, float]] = []
    async with skewed({"a": 0.0}) as (truth, [a]):
        own = a.clock.inner  # type: ignore[attr-defined]
        assert isinstance(own, OffsetClock)
        pid = await a.spawn(partial(Log, log, "a", truth), "job")
        await a.schedule_cron("tick", pid, "* * * * * ?", reference="every-second")
        await truth.advance(0.2)
        own.set_offset(5.0)  # an NTP step on this node only, reported
        await truth.advance(0.0)
        assert a.cluster.offset == -5.0
        await truth.advance(5.0)
        assert [at for _, _, at in log] == [START + s for s in range(1, 6)]
        assert a.cluster.metrics().claims_early == 0


async def test_a_claim_before_the_instant_on_the_coordinators_clock_waits_for_it() -> None:
    # This node's clock steps 5 s forward and nothing reports it (a real clock, between
    # two checks of the wall watch) before the next renewal, 10 s away: its cron ticks
    # come 5 s early by the coordinator's clock. Each claim waits for its instant.
    log: list[tuple[str, float, float]] = []
    async with skewed({"a": 0.0}, lease=30.0, silent=True) as (truth, [a]):
        silent = a.clock.inner  # type: ignore[attr-defined]
        assert isinstance(silent, OffsetClock)
        pid = await a.spawn(partial(Log, log, "a", truth), "job")
        await a.schedule_cron("tick", pid, "* * * * * ?", reference="every-second")
        await truth.advance(0.2)
        silent.set_offset(5.0)
        await truth.advance(2.3)  # by its own clock the node is at :37.5
        assert a.cluster.metrics().claims_early >= 1  # a claim waits for its instant
        await truth.advance(5.0)
        assert log  # delivered, each exactly at its instant on the coordinator's clock
        assert all(at == instant for _, instant, at in log), log
        instants = [instant for _, instant, _ in log]
        assert instants == sorted(set(instants))
        await truth.advance(5.0)  # the renewal at :40 measures the step
        assert a.cluster.offset == -5.0


class _SlowRenewals:
    """A coordinator whose renewals take ``delay`` seconds on the clock before acting (a
    coordinator that froze, then answered)."""

    def __init__(self, inner: MemoryCoordinator, clock: ManualClock) -> None:
        self.inner = inner
        self.url = inner.url
        self.clock = clock
        self.delay = 0.0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def renew(self, node: str, incarnation: str, lease: float) -> Any:
        await sleep(self.clock, self.delay)
        return await self.inner.renew(node, incarnation, lease)


def _node(own: OffsetClock, coordinator: Any, *, lease: float = 3.0) -> ClusterNode:
    """A node whose own clock is ``own``, reading the cluster's time on an OffsetClock
    over it (as ``ActorSystem(cluster=...)`` sets up)."""
    return ClusterNode(
        Cluster(coordinator, lease=lease),
        name="a",
        address="a",
        clock=OffsetClock(own),
        publish=lambda event: None,
    )


async def test_a_renewal_slower_than_max_skew_does_not_move_the_offset() -> None:
    truth = ManualClock(wall=START)
    inner = MemoryCoordinator(uuid.uuid4().hex, clock=truth)
    await inner.open()
    slow = _SlowRenewals(inner, truth)
    node = _node(OffsetClock(truth, 2.0), slow, lease=60.0)
    try:
        await node.start()
        assert (node.offset, node.time.bound) == (-2.0, 0.0)
        slow.delay = 10.0  # the step happens 10 s into a 10 s round trip: 5 s off
        await truth.advance(20.0 + 10.0)
        assert node.metrics().leases_renewed == 1
        assert (node.offset, node.time.bound) == (-2.0, 0.0)  # ignored
        slow.delay = 0.0
        await truth.advance(20.0)
        assert node.metrics().leases_renewed == 2
        assert (node.offset, node.time.bound) == (-2.0, 0.0)
    finally:
        await node.stop()
        await inner.close()


async def test_an_offset_beyond_max_skew_warns_once_a_minute(
    caplog: pytest.LogCaptureFixture,
) -> None:
    truth = ManualClock(wall=START)
    coordinator = MemoryCoordinator(uuid.uuid4().hex, clock=truth)
    await coordinator.open()
    node = _node(OffsetClock(truth, 30.0), coordinator)
    try:
        with caplog.at_level(logging.WARNING, logger="tocsin.cluster"):
            await node.start()
            await truth.advance(59.0)  # 59 renewals
            warnings = [r.getMessage() for r in caplog.records if "max_skew" in r.getMessage()]
            assert len(warnings) == 1
            assert (
                "node a: its clock is 30.000 s ahead of the cluster coordinator's" in (warnings[0])
            )
            await truth.advance(2.0)
            warnings = [r.getMessage() for r in caplog.records if "max_skew" in r.getMessage()]
            assert len(warnings) == 2
        assert node.offset == -30.0
    finally:
        await node.stop()
        await coordinator.close()


async def test_an_offset_within_max_skew_is_corrected_without_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    truth = ManualClock(wall=START)
    coordinator = MemoryCoordinator(uuid.uuid4().hex, clock=truth)
    await coordinator.open()
    node = _node(OffsetClock(truth, -0.4), coordinator)
    try:
        with caplog.at_level(logging.WARNING, logger="tocsin.cluster"):
            await node.start()
            await truth.advance(5.0)
        assert not [r for r in caplog.records if "max_skew" in r.getMessage()]
        assert node.offset == pytest.approx(0.4)
        assert node.time.now() == pytest.approx(truth.wall())
    finally:
        await node.stop()
        await coordinator.close()


async def test_a_sample_with_a_longer_round_trip_does_not_replace_a_better_one_until_a_lease() -> (
    None
):
    # A renewal answered while the node's loop was busy (a burst of ticks) has a long round
    # trip and the coordinator's step early in it: its estimate is off by up to half of
    # it. The smallest round trip's offset is kept, unless it is older than a lease.
    from tocsin.cluster._time import ClusterTime
    from tocsin.cluster._values import Counters

    clock = ManualClock(wall=START)

    async def coordinator_now() -> float:
        return clock.wall()

    time = ClusterTime(
        clock,
        node="n",
        max_skew=1.0,
        lease=3.0,
        coordinator_now=coordinator_now,
        counters=Counters(),
    )
    begun = time.begin()
    await clock.advance(0.002)
    time.sample(begun, START + 0.001)  # a 2 ms round trip, the step in its middle
    assert time.offset == pytest.approx(0.0, abs=1e-9)
    assert time.bound == pytest.approx(0.001)
    begun = time.begin()
    await clock.advance(0.4)
    time.sample(begun, clock.wall() - 0.39)  # 400 ms round trip, the step at its start
    assert time.offset == pytest.approx(0.0, abs=1e-9)  # kept: off by 190 ms otherwise
    assert time.bound == pytest.approx(0.001)
    await clock.advance(3.0)  # the good sample is now older than a lease
    begun = time.begin()
    await clock.advance(0.4)
    time.sample(begun, clock.wall() - 0.39)
    assert time.offset == pytest.approx(-0.19)
    assert time.bound == pytest.approx(0.2)
