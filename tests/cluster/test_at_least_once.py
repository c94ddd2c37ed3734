# SPDX-License-Identifier: Apache-2.0
"""Cluster cron ``delivery="at_least_once"`` (issue 23), in process on one ManualClock:
the claim's fence, the delivery lease renewed while ``receive`` runs, the re-claim of a
tick whose winner died or was cut off, and the outcomes the losers record.

On the memory and SQLite coordinators (the contract suite covers every coordinator's
steps; these cover the node's side of them)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from tests.cluster.cluster_support import Flaky, World

from tocsin import Actor, ActorSystem, Cluster, ManualClock, Outcome, ReceiveContext, Tick
from tocsin.cluster import ClusterNode
from tocsin.cluster._single_fire import tick_key
from tocsin.cluster._sqlite import SQLiteCoordinator
from tocsin.scheduling._spi import Scheduler

LEASE = 5.0


@dataclass
class Node:
    """What one node's scheduler saw of a tick: its deliveries and what it skipped."""

    node: ClusterNode
    delivered: list[tuple[float, int]] = field(default_factory=list)
    finish: list[Callable[[], None]] = field(default_factory=list)
    skipped: list[tuple[float, Outcome | None, Any]] = field(default_factory=list)

    def deliver(self, fire: float, fence: int, finished: Callable[[], None] | None) -> bool:
        self.delivered.append((fire, fence))
        if finished is not None:
            self.finish.append(finished)
        return True

    def skip(self, fire: float, outcome: Outcome | None, detail: Any) -> None:
        self.skipped.append((fire, outcome, detail))

    def fire(self, at: float, delivery: str = "at_least_once") -> None:
        self.node.cron_claims.deliver_if_won(
            "r", at, 60.0, partial(self.deliver, at), partial(self.skip, at), delivery=delivery
        )


@asynccontextmanager
async def world_of(
    kind: str, tmp_path: Path, *names: str
) -> AsyncIterator[tuple[World, list[Node]]]:
    world = World(lease=60.0)  # node leases outlive every test: only tick claims lapse
    opened: list[Any] = []
    try:
        nodes = []
        for name in names:
            coordinator: Any = None
            if kind == "sqlite":
                coordinator = SQLiteCoordinator(tmp_path / "coordinator.db", clock=world.clock)
                await coordinator.open()
                opened.append(coordinator)
            node = world.node(name, coordinator=coordinator)
            await node.start()
            nodes.append(Node(node))
        yield world, nodes
    finally:
        await world.close()
        for coordinator in opened:
            await coordinator.close()


backends = pytest.mark.parametrize("kind", ["memory", "sqlite"])


def _append(into: list[int], fence: int, done: object) -> bool:
    into.append(fence)
    return True


def _skip(into: list[Any], instant: float, outcome: Outcome | None, detail: object) -> None:
    into.append((instant, outcome))


@backends
async def test_one_node_delivers_and_the_others_record_claimed_elsewhere_once_done(
    kind: str, tmp_path: Path
) -> None:
    async with world_of(kind, tmp_path, "a", "b", "c") as (world, nodes):
        at = world.clock.wall()
        for node in nodes:
            node.fire(at)
        await world.clock.advance(0)
        [winner] = [n for n in nodes if n.delivered]
        losers = [n for n in nodes if n is not winner]
        assert winner.delivered[0][1] >= 1
        # Not done yet: the losers watch the claim and record nothing.
        assert all(n.skipped == [] for n in losers)
        winner.finish.pop()()
        await world.clock.advance(LEASE + 0.1)
        assert [s for n in losers for s in n.skipped] == [(at, Outcome.CLAIMED_ELSEWHERE, None)] * 2
        assert sum(len(n.delivered) for n in nodes) == 1
        assert winner.node.metrics().claims_finished == 1


@backends
async def test_a_slow_receive_keeps_its_claim_by_renewing_it(kind: str, tmp_path: Path) -> None:
    async with world_of(kind, tmp_path, "a", "b", "c") as (world, nodes):
        at = world.clock.wall()
        for node in nodes:
            node.fire(at)
        await world.clock.advance(0)
        [winner] = [n for n in nodes if n.delivered]
        await world.clock.advance(40)  # eight delivery leases: renewed every third of one
        assert sum(len(n.delivered) for n in nodes) == 1
        winner.finish.pop()()
        await world.clock.advance(LEASE + 0.1)
        assert sum(len(n.skipped) for n in nodes) == 2
        assert sum(n.node.metrics().claims_reclaimed for n in nodes) == 0


@backends
async def test_a_winner_that_dies_before_receive_returns_is_replaced_with_a_larger_fence(
    kind: str, tmp_path: Path
) -> None:
    async with world_of(kind, tmp_path, "a", "b", "c") as (world, nodes):
        at = world.clock.wall()
        for node in nodes:
            node.fire(at)
        await world.clock.advance(0)
        [first] = [n for n in nodes if n.delivered]
        await first.node.cron_claims.close()  # it dies: no renewal, no finish
        await world.clock.advance(LEASE + 0.1)
        [second] = [n for n in nodes if n is not first and n.delivered]
        assert second.delivered[0][1] > first.delivered[0][1]
        assert second.node.metrics().claims_reclaimed == 1
        second.finish.pop()()
        await world.clock.advance(LEASE + 0.1)
        [third] = [n for n in nodes if n is not first and n is not second]
        assert third.skipped == [(at, Outcome.CLAIMED_ELSEWHERE, None)]
        assert third.delivered == []


async def test_a_winner_cut_off_from_the_coordinator_is_superseded(tmp_path: Path) -> None:
    world = World(lease=60.0)
    flaky = Flaky(world.coordinator())
    await flaky.inner.open()
    try:
        cut = Node(world.node("a", coordinator=flaky))
        await cut.node.start()
        [other] = [Node(n) for n in await world.start("b")]
        at = world.clock.wall()
        cut.fire(at)
        await world.clock.advance(0)
        other.fire(at)
        await world.clock.advance(0)
        assert len(cut.delivered) == 1
        flaky.fail["renew_tick"] = "before"  # a partition: renewals fail, the lease lapses
        flaky.fail["finish_tick"] = "before"
        await world.clock.advance(LEASE + 0.1)
        assert len(other.delivered) == 1
        assert other.delivered[0][1] > cut.delivered[0][1]
        del flaky.fail["renew_tick"]
        await world.clock.advance(LEASE)
        assert cut.node.metrics().claims_superseded == 1
    finally:
        await world.close()
        await flaky.inner.close()


@backends
async def test_at_most_once_ticks_carry_growing_fences_and_are_never_claimed_again(
    kind: str, tmp_path: Path
) -> None:
    async with world_of(kind, tmp_path, "a", "b", "c") as (world, nodes):
        for _ in range(3):
            at = world.clock.wall()
            for node in nodes:
                node.fire(at, "at_most_once")
            await world.clock.advance(60)
        fences = sorted(fence for n in nodes for _, fence in n.delivered)
        assert len(fences) == 3
        assert len(set(fences)) == 3
        await world.clock.advance(3 * LEASE)
        assert sum(len(n.delivered) for n in nodes) == 3
        outcomes = [outcome for n in nodes for _, outcome, _ in n.skipped]
        assert outcomes == [Outcome.CLAIMED_ELSEWHERE] * 6
        assert all(not n.finish for n in nodes)  # at_most_once: nothing to finish


@asynccontextmanager
async def _claims_failing() -> AsyncIterator[tuple[World, Flaky, Node]]:
    """One node whose coordinator's claims fail (``flaky.fail``) until the test clears it."""
    world = World()
    flaky = Flaky(world.coordinator())
    await flaky.inner.open()
    try:
        node = Node(world.node("a", coordinator=flaky))
        await node.node.start()
        flaky.fail["claim_tick"] = "before"
        yield world, flaky, node
    finally:
        await world.close()
        await flaky.inner.close()


async def test_a_claim_that_errs_is_recorded_with_the_coordinators_text() -> None:
    async with _claims_failing() as (world, flaky, node):
        at = world.clock.wall()
        node.fire(at)
        await world.clock.advance(0)
        # An unknown outcome is asked again while the tick's window (the 60 s TTL) lasts;
        # only then is it a claim_error, recorded once, with the coordinator's text.
        assert node.skipped == []
        await world.clock.advance(30)
        assert node.skipped == []
        await world.clock.advance(31)
        assert node.skipped == [(at, Outcome.CLAIM_ERROR, "injected failure before claim_tick")]
        assert node.delivered == []
        del flaky.fail["claim_tick"]
        node.fire(at)
        await world.clock.advance(0)
        assert node.skipped[-1] == (at, Outcome.CLAIM_LATE, None)


@backends
async def test_a_backfill_never_delivers_an_instant_whose_claim_is_kept(
    kind: str, tmp_path: Path
) -> None:
    async with world_of(kind, tmp_path, "a", "b") as (world, [a, b]):
        at = world.clock.wall()
        a.fire(at, "at_most_once")
        await world.clock.advance(3600)  # far past the TTL, within the retention (a day)
        skipped: list[Any] = []
        delivered: list[int] = []
        for node in (a, b):
            for instant in (at, at - 60):  # fired; never fired
                node.node.cron_claims.deliver_if_won(
                    "r",
                    instant,
                    60.0,
                    partial(_append, delivered),
                    partial(_skip, skipped, instant),
                    backfill=True,
                )
                await world.clock.advance(0)
        assert len(delivered) == 1  # only the instant that never fired, once
        assert sorted(skipped) == [
            (at - 60, Outcome.CLAIMED_ELSEWHERE),
            (at, Outcome.CLAIMED_ELSEWHERE),
            (at, Outcome.CLAIMED_ELSEWHERE),
        ]


# -- through ActorSystem.schedule_cron -------------------------------------------------

START = datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC)


class Job(Actor):
    def __init__(self, log: list[tuple[str, Tick | None]], node: str) -> None:
        self.log = log
        self.node = node

    async def receive(self, ctx: ReceiveContext) -> None:
        self.log.append((self.node, ctx.tick))


@asynccontextmanager
async def systems_of(*names: str) -> AsyncIterator[tuple[ManualClock, list[ActorSystem]]]:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    systems = [ActorSystem(n, clock=clock, cluster=Cluster(url, lease=30.0)) for n in names]
    try:
        for system in systems:
            await system.start()
        yield clock, systems
    finally:
        for system in systems:
            await system.stop()


@pytest.mark.parametrize("delivery", ["at_most_once", "at_least_once"])
async def test_schedule_cron_delivers_each_instant_once_with_its_nominal_instant_and_fence(
    delivery: str,
) -> None:
    log: list[tuple[str, Tick | None]] = []
    recorded: list[tuple[str, float, Outcome]] = []
    async with systems_of("a", "b", "c") as (clock, systems):
        for system in systems:
            schedules = system.runtime.schedules  # type: ignore[union-attr]
            assert isinstance(schedules, Scheduler)
            scheduler = schedules.tick_path

            def outcome(
                record: Any, instant: float, what: Outcome, detail: Any, n: str = system.name
            ) -> None:
                recorded.append((n, instant, what))

            scheduler.outcome = outcome  # type: ignore[method-assign, assignment]
            pid = await system.spawn(partial(Job, log, system.name), "job")
            await system.schedule_cron(
                "tick", pid, "0 * * * * ?", reference="minutely", delivery=delivery
            )
        await clock.advance(180)  # 09:01, 09:02, 09:03
        await clock.advance(LEASE + 1)  # the losers' watches end (at_least_once)
        ticks = [tick for _, tick in log]
        assert all(tick is not None for tick in ticks)
        instants = [t.instant for t in ticks if t is not None]
        assert instants == [datetime(2030, 1, 1, 9, m, tzinfo=UTC) for m in (1, 2, 3)]
        fences = [t.fence for t in ticks if t is not None and t.fence is not None]
        assert fences == sorted(fences)
        assert len(set(fences)) == 3
        assert {t.reference for t in ticks if t is not None} == {"minutely"}
        # The two losers of each instant recorded claimed_elsewhere for it.
        assert len(recorded) == 6
        assert {what for _, _, what in recorded} == {Outcome.CLAIMED_ELSEWHERE}
        if delivery == "at_least_once":
            assert sum(s.cluster.metrics().claims_finished for s in systems) == 3
        key = tick_key("minutely", instants[0].timestamp())
        assert key == "minutely@2030-01-01T09:01:00Z"  # the nominal instant


async def test_delivery_is_checked_at_the_call_and_means_nothing_without_a_cluster() -> None:
    log: list[tuple[str, Tick | None]] = []
    clock = ManualClock(wall=START)
    async with ActorSystem("solo", clock=clock) as system:
        pid = await system.spawn(partial(Job, log, "solo"), "job")
        with pytest.raises(ValueError, match="`delivery` must be"):
            await system.schedule_cron("t", pid, "0 * * * * ?", delivery="exactly_once")
        await system.schedule_cron("t", pid, "0 * * * * ?", delivery="at_least_once")
        await clock.advance(60)
        assert len(log) == 1
        tick = log[0][1]
        assert tick is None or tick.fence is None  # no claim, no fence


def test_cluster_checks_its_delivery_lease_and_claim_retention() -> None:
    config = Cluster("memory://x")
    assert (config.delivery_lease, config.claim_retention) == (5.0, 86_400.0)
    assert Cluster("memory://x", delivery_lease=1, claim_retention=0).claim_retention == 0.0
    with pytest.raises(ValueError, match="`delivery_lease` must be between"):
        Cluster("memory://x", delivery_lease=61)
    with pytest.raises(ValueError, match="`claim_retention` must be between"):
        Cluster("memory://x", claim_retention=-1)


class _Recording:
    """A node's cron gate, noting each claim's key, when (wall time) it is asked and how
    long before the tick's delivery time."""

    def __init__(self, inner: Any, clock: ManualClock, name: str, into: list[Any]) -> None:
        self.inner = inner
        self.clock = clock
        self.name = name
        self.into = into

    def deliver_if_won(self, reference: str, fire_at: float, *args: Any, **kw: Any) -> None:
        ahead = kw["at"] - self.clock.monotonic()
        self.into.append((self.name, fire_at, self.clock.wall(), ahead))
        self.inner.deliver_if_won(reference, fire_at, *args, **kw)

    def lead(self, period: float) -> float:
        return float(self.inner.lead(period))

    def pause_note(self, reference: str) -> Any:
        return self.inner.pause_note(reference)


@pytest.mark.parametrize("delivery", ["at_most_once", "at_least_once"])
async def test_jitter_is_the_same_on_every_node_and_claims_keep_the_nominal_instant(
    delivery: str,
) -> None:
    log: list[tuple[str, Tick | None]] = []
    asked: list[tuple[str, float, float, float]] = []
    async with systems_of("a", "b", "c") as (clock, systems):
        for system in systems:
            scheduler = system.runtime.schedules  # type: ignore[union-attr]
            assert isinstance(scheduler, Scheduler)
            scheduler.cron_gate = _Recording(scheduler.cron_gate, clock, system.name, asked)
            pid = await system.spawn(partial(Job, log, system.name), "job")
            await system.schedule_cron(
                "tick", pid, "0 * * * * ?", reference="spread", jitter=30, delivery=delivery
            )
        await clock.advance(5 * 60)
        await clock.advance(LEASE + 1)
        instants = [t.instant for _, t in log if t is not None]
        assert instants == [datetime(2030, 1, 1, 9, m, tzinfo=UTC) for m in range(1, 6)]
        by_instant: dict[float, set[float]] = {}
        for _, fire_at, asked_at, ahead in asked:
            # Claimed ahead of the delivery time by Cluster(claim_ahead=0.25) (a quarter
            # of the minute's period and half of max_skew are larger).
            assert ahead == pytest.approx(0.25)
            at = asked_at + ahead
            assert fire_at == int(fire_at)  # the key: the nominal whole minute
            assert fire_at <= at < fire_at + 30  # delivered within [instant, instant + 30)
            by_instant.setdefault(fire_at, set()).add(round(at, 6))
        # Every node asked at the same jittered moment: the offset is the same everywhere.
        assert len(by_instant) == 5
        assert all(len(moments) == 1 for moments in by_instant.values()), by_instant
        assert len(asked) == 15


async def test_a_claim_never_finished_is_renewed_only_within_its_window() -> None:
    # A tick dropped in its mailbox (its schedule cancelled there) never calls finished():
    # its claim is held until the instant's window ends, then left (no node claims a
    # tick that late), never renewed for ever.
    world = World(lease=60.0)
    renewals: list[float] = []
    inner = world.coordinator()
    await inner.open()

    class Counting(Flaky):
        async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
            renewals.append(world.clock.wall())
            return await inner.renew_tick(key, fence, lease)

    try:
        node = Node(world.node("a", coordinator=Counting(inner)))
        await node.node.start()
        at = world.clock.wall()
        node.fire(at)
        await world.clock.advance(0)
        assert len(node.delivered) == 1
        await world.clock.advance(120)
        held = len(renewals)
        assert held > 0
        assert max(renewals) <= at + 60 + LEASE
        await world.clock.advance(120)
        assert len(renewals) == held
    finally:
        await world.close()
        await inner.close()


async def test_a_claim_that_errs_is_asked_again_and_delivered_once_it_answers() -> None:
    # A coordinator busy or locked for a few seconds (a peer frozen in its transaction):
    # the at_least_once tick is not lost, and delivered once.
    async with _claims_failing() as (world, flaky, node):
        at = world.clock.wall()
        node.fire(at)
        await world.clock.advance(3.5)
        assert node.delivered == []
        del flaky.fail["claim_tick"]
        await world.clock.advance(1)
        assert [instant for instant, _ in node.delivered] == [at]
        await world.clock.advance(3 * LEASE)
        assert len(node.delivered) == 1
        assert node.skipped == []
