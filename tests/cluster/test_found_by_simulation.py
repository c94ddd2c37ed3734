# SPDX-License-Identifier: Apache-2.0
"""Cluster faults that ``tocsin.testing.Simulation`` found, reduced to one node and one
fault each, so they replay whatever the seeds' runs become. A fault not yet fixed is a
strict xfail (an XPASS then fails the suite, and the marker goes); none is open today.
Fixed: the claim gate's coalescing of at-least-once ticks behind a slow claim
(``cluster/_single_fire.py``), the directory's self-forwarding loop
(``cluster/_durable.py``) and the instants a corrected clock step lost
(``scheduling/_cron.py`` ``rewind``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest

from tocsin import (
    Actor,
    ActorSystem,
    Cluster,
    ManualClock,
    Misfire,
    NotOwnerError,
    ReceiveContext,
)
from tocsin.clock import Clock, OffsetClock
from tocsin.cluster import Coordinator
from tocsin.cluster._spi import open_coordinator
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore

T0 = 1_800_000_000.0


class _Instants(Actor):
    def __init__(self, seen: list[float]) -> None:
        self.seen = seen

    async def receive(self, ctx: ReceiveContext) -> None:
        assert ctx.tick is not None
        self.seen.append(ctx.tick.instant.timestamp() - T0)


class _Lagging:
    """A coordinator whose calls take ``there`` and ``back`` simulated seconds (``only``:
    just those methods)."""

    def __init__(
        self, inner: Any, clock: ManualClock, there: float, back: float, only: set[str] | None
    ) -> None:
        self.inner = inner
        self.url = inner.url
        self._clock = clock
        self._there = there
        self._back = back
        self._only = only

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        if name in ("open", "close") or (self._only is not None and name not in self._only):
            return method
        if not asyncio.iscoroutinefunction(method):
            return method

        async def call(*args: Any, **kwargs: Any) -> Any:
            await self._clock.sleep(self._there)
            result = await method(*args, **kwargs)
            await self._clock.sleep(self._back)
            return result

        return call


async def _while_time_passes(clock: ManualClock, work: Awaitable[None]) -> None:
    """Await ``work`` while moving the clock (a lagging coordinator waits on it)."""
    task = asyncio.ensure_future(work)
    while not task.done():
        await clock.advance(0.1)
    await task


@asynccontextmanager
async def _node(
    clock: ManualClock, node_clock: Clock, lag: Callable[[Any], Any]
) -> AsyncIterator[tuple[ActorSystem, list[float]]]:
    coordinator = lag(open_coordinator(f"memory://found-{uuid.uuid4().hex}", clock=clock))
    await coordinator.open()
    system = ActorSystem(
        "a",
        clock=node_clock,
        timezone="UTC",
        cluster=Cluster(cast(Coordinator, coordinator), lease=10.0),
    )
    seen: list[float] = []
    try:
        await _while_time_passes(clock, system.start())
        pid = await system.spawn(lambda: _Instants(seen), "instants")
        await system.schedule_cron(
            "tick",
            pid,
            "* * * * * ?",
            reference="every-second",
            delivery="at_least_once",
            misfire=Misfire.all(max=100),
        )
        yield system, seen
    finally:
        await _while_time_passes(clock, system.stop())
        await coordinator.close()


async def test_ticks_due_behind_a_slow_claim_follow_misfire_all() -> None:
    # Simulation seed 1 (default faults, 600 s): a delay fault made coordinator calls
    # take up to 1.6 s a leg; instant 510 came due while 509's claim was in flight and
    # was coalesced on every node (TickNotDelivered "coalesced"), under Misfire.all.
    # DESIGN.md ("Outages heal by themselves"): what the claim's answer finds overdue
    # follows the schedule's misfire policy. Here each claim takes 1.5 s.
    clock = ManualClock(wall=T0)

    def lag(inner: Any) -> Any:
        return _Lagging(inner, clock, 1.5, 0.0, {"claim_tick", "claim_ticks"})

    async with _node(clock, clock, lag) as (_system, seen):
        await clock.advance(20)
    assert set(range(2, 16)) <= set(seen), sorted(set(range(2, 16)) - set(seen))


async def test_a_clock_step_the_cluster_corrects_loses_no_instant() -> None:
    # Simulation seed 1017 (crash=0.5, pause=1.5, skew=3, delay=1): n2's clock stepped
    # 19.2 s ahead while n0 and n1 were frozen; its cron re-armed to wall 228, the
    # renewal corrected the offset at once (reported as a -19.08 s jump) and the cron
    # stayed at 228: instants 211 and 212 were claimed by no node. One node here, its
    # coordinator 0.4 s away each way (the correction arrives after the re-arm).
    clock = ManualClock(wall=T0)
    node_clock = OffsetClock(clock)

    def lag(inner: Any) -> Any:
        return _Lagging(inner, clock, 0.4, 0.4, None)

    async with _node(clock, node_clock, lag) as (system, seen):
        await clock.advance(5.5)
        node_clock.set_offset(19.0)
        await clock.advance(2.5)
        assert abs(system.clock.wall() - (T0 + clock.monotonic())) < 0.5  # corrected
        await clock.advance(30)
    assert set(range(9, 35)) <= set(seen), sorted(set(range(9, 35)) - set(seen))
    assert len(seen) == len(set(seen)), sorted(seen)  # and none twice


class _Counter(DurableActor):
    kind = "found-by-simulation.Counter"

    async def inc(self, payload: object) -> int:
        count: int = await self.storage.get("count", 0) + 1
        await self.storage.put("count", count)
        return count


async def test_an_identity_another_incarnation_of_this_node_owns_is_not_forwarded_to_itself() -> (
    None
):
    # Simulation seed 4036 (four nodes, lease 4, default faults) stopped simulated time at
    # 388 s: the directory named node n0 under another incarnation than n0's own (a
    # lease the coordinator granted n0 without n0 knowing, or an older one not expired),
    # alive; n0 "forwarded" each message to the owner's PID, its own, whose handle
    # claimed and forwarded again, without ever waiting: a hot loop. Now nothing is
    # forwarded and the caller is told why.
    clock = ManualClock(wall=T0)
    coordinator = open_coordinator(f"memory://found-{uuid.uuid4().hex}", clock=clock)
    await coordinator.open()
    system = ActorSystem(
        "n0",
        clock=clock,
        store=MemoryStore(),
        timezone="UTC",
        cluster=Cluster(coordinator, lease=10.0),
    )
    try:
        await system.start()
        node = system._cluster
        assert node is not None
        address = node.membership.address_of("n0")
        assert address is not None
        await coordinator.leave("n0", node.membership.incarnation)
        assert await coordinator.join("n0", "ghost", address, 10.0) is not None
        owner = await coordinator.claim_owner(_Counter.kind, "c", "n0", "ghost")
        assert owner is not None
        assert owner.incarnation == "ghost"
        assert owner.alive
        pid = await system.durable(_Counter, "c")
        with pytest.raises(NotOwnerError, match="holds no cluster lease"):
            # A real-time bound: the loop never let simulated time move.
            await asyncio.wait_for(pid.ask(Call("inc")), 10)
    finally:
        await system.stop()
        await coordinator.close()


async def test_a_slow_clock_stepped_back_to_normal_loses_no_instant_and_repeats_none() -> None:
    # The other direction of the same cause: n2's clock ran 10 s slow (the cluster's
    # offset corrected it), then was stepped to the right time: the node's corrected
    # clock read 10 s ahead until measured again, its cron skipped to the skewed instant,
    # and the correction (a backward jump) left it there.
    clock = ManualClock(wall=T0)
    node_clock = OffsetClock(clock, -10.0)

    def lag(inner: Any) -> Any:
        return _Lagging(inner, clock, 0.4, 0.4, None)

    async with _node(clock, node_clock, lag) as (system, seen):
        await clock.advance(5.5)
        assert abs(system.clock.wall() - (T0 + clock.monotonic())) < 0.5  # corrected
        node_clock.set_offset(0.0)
        await clock.advance(2.5)
        assert abs(system.clock.wall() - (T0 + clock.monotonic())) < 0.5  # again
        await clock.advance(30)
    assert set(range(9, 35)) <= set(seen), sorted(set(range(9, 35)) - set(seen))
    assert len(seen) == len(set(seen)), sorted(seen)
