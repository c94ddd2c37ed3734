# SPDX-License-Identifier: Apache-2.0
"""The durable-actor directory under ordinary events (issue 19), on memory:// with one
ManualClock: a coordinator that lost its data, a node that joined a moment ago, two nodes
activating one identity at once, a zombie whose write was refused."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tocsin import ActorSystem, Cluster, ManualClock, NodeLeft, ReceiveContext
from tocsin.cluster._memory import MemoryCoordinator, _State
from tocsin.cluster._placement import rendezvous_owner
from tocsin.durable import Call, DurableActor
from tocsin.stores import Fence, MemoryStore

T0 = 1_800_000_000.0
LEASE = 3.0
STARTS: Counter[tuple[str, str]] = Counter()  # (node, identity) -> pre_start runs
BEATS: list[tuple[str, str, float]] = []  # (node, identity, wall) of each `every` run


class Job(DurableActor):
    kind = "directory-test.Job"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        STARTS[ctx.system.name, self.identity] += 1

    async def where(self, payload: Any) -> str:
        return str(self._handle.runtime.name)

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total

    async def start_beating(self, interval: float) -> None:
        await self.every(interval, "beat", id="beat")

    async def beat(self, payload: Any) -> None:
        BEATS.append((self._handle.runtime.name, self.identity, self._handle.runtime.clock.wall()))
        total = int(await self.storage.get("beats", 0)) + 1
        await self.storage.put("beats", total)


@asynccontextmanager
async def cluster_of(
    *names: str, store: MemoryStore | None = None, url: str | None = None
) -> AsyncIterator[tuple[ManualClock, list[ActorSystem]]]:
    STARTS.clear()
    BEATS.clear()
    clock = ManualClock(wall=T0)
    url = url or f"memory://{uuid.uuid4().hex}"
    shared = store if store is not None else MemoryStore()
    systems = [
        ActorSystem(n, clock=clock, store=shared, cluster=Cluster(url, lease=LEASE)) for n in names
    ]
    try:
        for system in systems:
            await system.start()
        await clock.advance(LEASE / 3)  # every node's view lists every node
        yield clock, systems
    finally:
        for system in systems:
            if system.running:
                await system.stop()


def _state(system: ActorSystem) -> _State:
    coordinator = system.cluster.coordinator
    assert isinstance(coordinator, MemoryCoordinator)
    state = coordinator._state
    assert state is not None
    return state


def _empty(system: ActorSystem) -> None:
    """The coordinator loses everything (Redis restarted empty, FLUSHALL, file deleted)."""
    state = _state(system)
    state.leases.clear()
    state.directory.clear()
    state.claims.clear()


# -- 1. a coordinator that lost its data -----------------------------------------------


async def test_a_fresh_coordinator_claims_above_the_stores_fences() -> None:
    # coordinator.db deleted between runs: the store still holds the fences of epochs
    # up to 5; the new directory would hand out epoch 1 and be refused for ever.
    store = MemoryStore()
    await store.open()
    await store.apply([Fence(Job.kind, "job-0", 5)])
    async with cluster_of("a", "b", store=store) as (_clock, systems):
        for i, system in enumerate(systems):
            pid = await system.durable(Job, "job-0")
            assert await pid.ask(Call("add", 1)) == i + 1
        owner = await systems[0].cluster.coordinator.owner(Job.kind, "job-0")
        assert owner is not None
        assert owner.epoch == 6
        assert await store.fence_epoch(Job.kind, "job-0") == 6
        assert sum(STARTS.values()) == 1


async def test_a_coordinator_emptied_mid_run_resumes_durable_work_without_lost_updates() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        pids = [await s.durable(Job, f"job-{i}") for i, s in enumerate(systems)]
        for pid in pids:
            await pid.ask(Call("start_beating", 1.0))
            assert await pid.ask(Call("add", 1)) == 1
        await clock.advance(3.0)
        epochs = {
            i: (await systems[0].cluster.coordinator.owner(Job.kind, f"job-{i}")).epoch  # type: ignore[union-attr]
            for i in range(3)
        }
        events_before = [s.events.count(NodeLeft) for s in systems]
        _empty(systems[0])
        reset_at = clock.wall()
        # Within lease + poll_interval every node is back, every identity beats again.
        await clock.advance(LEASE + 1.0)
        resumed = {identity for _node, identity, wall in BEATS if wall > reset_at + 1.0}
        assert resumed == {"job-0", "job-1", "job-2"}
        for i, s in enumerate(systems):
            pid = await s.durable(Job, f"job-{i}")
            assert await pid.ask(Call("add", 1)) == 2  # no update lost, none doubled
            entry = await s.cluster.coordinator.owner(Job.kind, f"job-{i}")
            assert entry is not None
            assert entry.epoch > epochs[i]
        # Nobody left: no NodeLeft was invented for peers of a reset coordinator.
        assert [s.events.count(NodeLeft) for s in systems] == events_before
        assert all(sorted(m.name for m in s.cluster.members()) == ["a", "b", "c"] for s in systems)
        # Each node kept its incarnation (peers saw no new life).
        incarnations = {s.name: s.cluster.membership.incarnation for s in systems}
        assert {n: r.incarnation for n, r in _state(systems[0]).leases.items()} == incarnations


async def test_a_peer_that_really_died_during_a_reset_is_announced_expired() -> None:
    from tests.cluster.cluster_support import freeze

    async with cluster_of("a", "b", "c") as (clock, systems):
        a, _b, c = systems
        left: list[NodeLeft] = []
        a.events.subscribe(left.append, NodeLeft)
        freeze(c.cluster)  # c dies (no renewal, no leave) at the moment of the reset
        _empty(a)
        await clock.advance(LEASE / 3 + 0.1)
        assert left == []  # carried: it may rejoin
        assert "c" in [m.name for m in a.cluster.members()]
        await clock.advance(LEASE)
        assert [(e.name, e.reason) for e in left] == [("c", "expired")]
        assert [m.name for m in a.cluster.members()] == ["a", "b"]


# -- 2. concurrent activation ------------------------------------------------------------


async def test_twenty_concurrent_activations_of_one_identity_from_three_nodes_all_succeed() -> None:
    async with cluster_of("a", "b", "c") as (_clock, systems):

        async def one(i: int) -> int:
            system = systems[i % 3]
            pid = await system.durable(Job, "job-0")
            return int(await pid.ask(Call("add", 1)))

        results = await asyncio.gather(*(one(i) for i in range(20)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        assert errors == []
        assert sorted(results) == list(range(1, 21))  # type: ignore[type-var]
        assert sum(STARTS.values()) == 1


async def test_a_pid_held_across_the_owners_failover_reaches_the_new_owner() -> None:
    from tests.cluster.cluster_support import freeze

    async with cluster_of("a", "b", "c") as (clock, systems):
        caller = systems[0]
        identity = next(
            f"job-{i}"
            for i in range(100)
            if rendezvous_owner(Job.kind, f"job-{i}", ["a", "b", "c"]) != "a"
        )
        pid = await caller.durable(Job, identity)
        home = await pid.ask(Call("where"))
        assert home != "a"
        assert await pid.ask(Call("add", 5)) == 5
        freeze(next(s for s in systems if s.name == home).cluster)
        await clock.advance(LEASE + LEASE / 3 + 0.1)
        assert await pid.ask(Call("where")) not in (home,)
        assert await pid.ask(Call("add", 1)) == 6


# -- 3. placement on the coordinator's view ---------------------------------------------


async def test_identities_placed_a_moment_after_a_node_joined_may_land_on_it() -> None:
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()
    STARTS.clear()
    a = ActorSystem("a", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    b = ActorSystem("b", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    await a.start()
    try:
        await b.start()  # a's member list does not show b yet (no clock advance)
        assert [m.name for m in a.cluster.members()] == ["a"]
        homes: Counter[str] = Counter()
        for i in range(20):
            pid = await a.durable(Job, f"job-{i}")
            home = await pid.ask(Call("where"))
            assert home == rendezvous_owner(Job.kind, f"job-{i}", ["a", "b"])
            homes[home] += 1
        assert homes["b"] > 0
        assert homes["a"] > 0
        assert all(count == 1 for count in STARTS.values())
    finally:
        for system in (a, b):
            if system.running:
                await system.stop()


# -- 5. a zombie whose write was refused ---------------------------------------------------


async def test_a_refused_write_stops_the_activation_and_later_messages_reach_the_owner() -> None:
    STARTS.clear()
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()
    a = ActorSystem("a", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    b = ActorSystem("b", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    await a.start()
    try:
        identity = next(
            f"job-{i}"
            for i in range(100)
            if rendezvous_owner(Job.kind, f"job-{i}", ["a", "b"]) == "b"
        )
        pid = await a.durable(Job, identity)  # alone: a owns it
        assert await pid.ask(Call("add", 1)) == 1
        await b.start()  # a's view does not list b yet: nothing rebalances
        # b took the identity over while a was cut off (a never noticed): the directory
        # names b at a newer epoch and b's fence is in the store.
        state = _state(a)
        node, _inc, epoch = state.directory[Job.kind, identity]
        assert node == "a"
        state.directory[Job.kind, identity] = ("b", b.cluster.membership.incarnation, epoch + 1)
        await store.apply([Fence(Job.kind, identity, epoch + 1)])
        result = await asyncio.gather(pid.ask(Call("add", 1)), return_exceptions=True)
        assert type(result[0]).__name__ == "FencedError"
        await asyncio.sleep(0)
        # Stopped, not restarted: pre_start ran once on a.
        assert STARTS["a", identity] == 1
        # The next message claims again and is forwarded to the real owner.
        assert await pid.ask(Call("where")) == "b"
        assert await pid.ask(Call("add", 1)) == 2
        assert STARTS["a", identity] == 1
        assert STARTS["b", identity] == 1
    finally:
        for system in (b, a):
            if system.running:
                await system.stop()


# -- 4. rebalancing on join ----------------------------------------------------------------


def _active(system: ActorSystem) -> set[str]:
    durable = system._durable
    assert durable is not None
    return {identity for (_k, identity), h in durable.handles.items() if h.cell is not None}


async def test_rebalance_rate_is_validated() -> None:
    import pytest

    for bad in (0, -1, float("inf"), float("nan"), True, "100", None):
        with pytest.raises(ValueError, match="rebalance_rate"):
            Cluster("memory://x", rebalance_rate=bad)  # type: ignore[arg-type]
    assert Cluster("memory://x").rebalance_rate == 100.0
    assert Cluster("memory://x", rebalance_rate=5).rebalance_rate == 5.0


async def test_idle_identities_move_to_a_joining_node_at_the_rate_without_losing_messages() -> None:
    STARTS.clear()
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()
    config = Cluster(url, lease=LEASE, rebalance_rate=10)
    a = ActorSystem("a", clock=clock, store=store, cluster=config)
    b = ActorSystem("b", clock=clock, store=store, cluster=config)
    identities = [f"job-{i}" for i in range(40)]
    await a.start()
    try:
        pids = {i: await a.durable(Job, i) for i in identities}
        for identity in identities:
            assert await pids[identity].ask(Call("add", 1)) == 1
        assert _active(a) == set(identities)
        await b.start()
        should_move = {i for i in identities if rendezvous_owner(Job.kind, i, ["a", "b"]) == "b"}
        assert 5 < len(should_move) < 35
        # memory:// pushes b's join to a at once (no poll to wait for): NodeJoined,
        # rebalancing starts.
        await clock.advance(1.0)
        moved = set(identities) - _active(a)
        assert moved <= should_move
        assert 0 < len(moved) <= 12  # about 10 a second, not all at once
        assert not (_active(a) & _active(b))
        # Messages sent while identities move all land, once, on the one activation.
        totals = dict.fromkeys(identities, 1)
        for _ in range(6):
            await clock.advance(0.5)
            assert not (_active(a) & _active(b))
            for identity in identities:
                totals[identity] += 1
                assert await pids[identity].ask(Call("add", 1)) == totals[identity]
        await clock.advance(5.0)
        for identity in identities:
            home = await pids[identity].ask(Call("where"))
            assert home == ("b" if identity in should_move else "a"), identity
        assert _active(b) == should_move
        assert a.cluster.metrics().handed_over == len(should_move)
        assert all(STARTS["a", i] == 1 for i in identities)  # never reactivated on a
        assert all(STARTS["b", i] == 1 for i in should_move)
    finally:
        for system in (b, a):
            if system.running:
                await system.stop()


class Slow(DurableActor):
    kind = "directory-test.Slow"
    release: asyncio.Event | None = None

    async def hold(self, payload: Any) -> str:
        assert Slow.release is not None
        await Slow.release.wait()
        return str(self._handle.runtime.name)

    async def where(self, payload: Any) -> str:
        return str(self._handle.runtime.name)


async def test_a_busy_identity_moves_once_idle() -> None:
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()
    a = ActorSystem("a", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    b = ActorSystem("b", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    Slow.release = asyncio.Event()
    await a.start()
    try:
        identity = next(
            f"s-{i}" for i in range(100) if rendezvous_owner(Slow.kind, f"s-{i}", ["a", "b"]) == "b"
        )
        pid = await a.durable(Slow, identity)
        held = asyncio.ensure_future(pid.ask(Call("hold"), timeout=600))
        await asyncio.sleep(0)
        await b.start()
        await clock.advance(LEASE / 3 + 3.0)
        assert _active(a) == {identity}  # busy: stays
        Slow.release.set()
        assert await held == "a"
        await clock.advance(2.0)  # the next look finds it idle
        assert _active(a) == set()
        assert await pid.ask(Call("where")) == "b"
    finally:
        for system in (b, a):
            if system.running:
                await system.stop()


async def test_after_a_reset_each_node_rejoins_once_under_its_incarnation_and_no_one_left() -> None:
    from tests.cluster.cluster_support import World

    world = World(lease=3.0)
    try:
        nodes = await world.start("a", "b", "c")
        await world.clock.advance(1.0)
        incarnations = [n.membership.incarnation for n in nodes]
        state = MemoryCoordinator._shared[world.name]
        state.leases.clear()
        state.directory.clear()
        for _ in range(10):
            await world.clock.advance(0.5)
        assert [n.membership.incarnation for n in nodes] == incarnations
        assert all(n.membership.holds_lease() for n in nodes)
        assert world.lost == {"a": 1, "b": 1, "c": 1}  # activations stopped once each
        assert sorted(state.leases) == ["a", "b", "c"]
        for name in "abc":
            assert [e for e in world.events[name] if isinstance(e, NodeLeft)] == []
        assert all([m.name for m in n.members()] == ["a", "b", "c"] for n in nodes)
    finally:
        await world.close()
