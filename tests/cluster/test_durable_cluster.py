# SPDX-License-Identifier: Apache-2.0
"""Cluster-wide durable actors on memory:// with one ManualClock: one activation per
identity across the nodes, routing from any node, takeover after the owner's lease
expires, and a passivated identity's due tasks run by one node only."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.cluster.cluster_support import freeze

from tocsin import ActorSystem, Cluster, ManualClock, ReceiveContext
from tocsin.cluster._placement import rendezvous_owner
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore

T0 = 1_800_000_000.0
LEASE = 3.0
STARTS: Counter[tuple[str, str]] = Counter()  # (node, identity) -> activations
RUNS: list[tuple[str, str]] = []  # (node, identity) of each task run


class Account(DurableActor):
    kind = "cluster-test.Account"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        STARTS[ctx.system.name, self.identity] += 1

    async def where(self, payload: Any) -> str:
        return str(self._handle.runtime.name)

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total

    async def later(self, delay: float) -> str:
        return await self.schedule(delay, "remind")

    async def remind(self, payload: Any) -> None:
        RUNS.append((self._handle.runtime.name, self.identity))


@asynccontextmanager
async def cluster_of(*names: str) -> AsyncIterator[tuple[ManualClock, list[ActorSystem]]]:
    STARTS.clear()
    RUNS.clear()
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()  # the durable store every node shares
    systems = [
        ActorSystem(n, clock=clock, store=store, cluster=Cluster(url, lease=LEASE)) for n in names
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


async def test_every_node_reaches_the_one_activation_of_an_identity() -> None:
    async with cluster_of("a", "b", "c") as (_clock, systems):
        pids = [await s.durable(Account, "acct-1") for s in systems]
        homes = {await pid.ask(Call("where")) for pid in pids}
        assert len(homes) == 1
        for i, pid in enumerate(pids):
            assert await pid.ask(Call("add", 1)) == i + 1  # one state, no lost update
        assert sum(STARTS.values()) == 1
        owner = await systems[0].cluster.coordinator.owner(Account.kind, "acct-1")
        assert owner is not None
        assert owner.node == homes.pop()
        assert owner.epoch == 1


async def test_identities_spread_and_each_activates_once() -> None:
    async with cluster_of("a", "b", "c") as (_clock, systems):
        for n in range(30):
            for system in systems:
                await (await system.durable(Account, f"id-{n}")).ask(Call("add", 1))
        assert all(count == 1 for count in STARTS.values())
        assert len(STARTS) == 30
        assert len({node for node, _ in STARTS}) >= 2  # rendezvous spreads the load


async def test_a_dead_owners_identity_comes_back_on_another_node_with_its_state() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        pid = await systems[0].durable(Account, "acct-2")
        home = await pid.ask(Call("where"))
        await pid.ask(Call("add", 5))
        dead = next(s for s in systems if s.name == home)
        freeze(dead.cluster)  # SIGSTOP or partition: no renewal, no leave
        await clock.advance(LEASE + LEASE / 3 + 0.1)  # its lease expires; the view shows it
        assert dead.cluster._node.membership.holds_lease() is False
        survivor = next(s for s in systems if s is not dead)
        moved = await survivor.durable(Account, "acct-2")
        assert await moved.ask(Call("where")) != home
        assert await moved.ask(Call("add", 1)) == 6
        owner = await survivor.cluster.coordinator.owner(Account.kind, "acct-2")
        assert owner is not None
        assert owner.epoch == 2
        assert owner.node != home
        assert sum(s.cluster.metrics().takeovers for s in systems if s is not dead) == 1
        # The frozen node stopped its activation when its own clock said the lease was gone.
        assert not any(h.cell for h in dead._durable.handles.values())  # type: ignore[union-attr]


async def test_a_passivated_identitys_due_task_runs_once_in_the_cluster() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        pid = await systems[1].durable(Account, "acct-3", passivate_after=10.0)
        await pid.ask(Call("later", 600.0))  # beyond the look-ahead: lives in the store
        await clock.advance(30)  # passivated
        assert sum(STARTS.values()) == 1
        await clock.advance(600)
        assert len(RUNS) == 1


async def test_a_dead_owners_due_task_runs_once_elsewhere() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        pid = await systems[0].durable(Account, "acct-4", passivate_after=10.0)
        home = await pid.ask(Call("where"))
        await pid.ask(Call("later", 400.0))
        dead = next(s for s in systems if s.name == home)
        freeze(dead.cluster)
        await clock.advance(800)
        assert [node for node, _ in RUNS] != []
        assert len(RUNS) == 1
        assert RUNS[0][0] != home


async def test_a_dead_owners_due_task_runs_within_the_lease_plus_one_renewal() -> None:
    async with cluster_of("a", "b", "c") as (clock, systems):
        pid = await systems[0].durable(Account, "acct-5", passivate_after=1.0)
        home = await pid.ask(Call("where"))
        await pid.ask(Call("later", LEASE + LEASE / 3 + 1.0))
        dead = next(s for s in systems if s.name == home)
        freeze(dead.cluster)  # dies right away: its lease lapses before the task is due
        # Peers notice at their next renewal after the lease ran out (NodeLeft) and poll
        # the store at once (not at the periodic poll, minutes later): the preferred
        # survivor claims the identity and runs the task when it is due.
        await clock.advance(LEASE + LEASE / 3 + 1.5)
        assert len(RUNS) == 1
        assert RUNS[0][0] != home


async def test_a_dead_owners_due_task_runs_within_the_lease_plus_the_poll_interval() -> None:
    # A 9 s lease renews every 3 s; with poll_interval 0.5 s the survivors read the
    # members every 0.5 s, so they notice the dead owner (and poll its due tasks) within
    # 0.5 s of its expiry, not at their next renewal up to 3 s later.
    RUNS.clear()
    lease, poll = 9.0, 0.5
    clock = ManualClock(wall=T0)
    config = Cluster(f"memory://{uuid.uuid4().hex}", lease=lease, poll_interval=poll)
    store = MemoryStore()
    owner, b, c = (ActorSystem(n, clock=clock, store=store, cluster=config) for n in "abc")
    try:
        await owner.start()
        pid = await owner.durable(Account, "acct-7", passivate_after=1.0)  # alone: owns it
        await pid.ask(Call("later", 12.2))  # due just after the owner's lease lapses
        await clock.advance(1.5)  # the survivors renew out of phase with the owner
        await b.start()
        await c.start()
        await clock.advance(1.5)  # t = 3: the owner renews, then dies at once
        freeze(owner.cluster)
        # Its lease lapses at t = 12; the survivors renew at t = 10.5 and 13.5 but read
        # the members every 0.5 s: by t = 12.5 one has claimed the identity and run it.
        await clock.advance(lease + poll + 0.1)
        assert [node for node, _ in RUNS] in (["b"], ["c"])
    finally:
        for system in (owner, b, c):
            if system.running:
                await system.stop()


class _OpensWhenLetGo:
    """The shared store, but this node's ``open`` waits for ``let_go`` (a slow store)."""

    def __init__(self, inner: MemoryStore) -> None:
        self.inner = inner
        self.let_go = asyncio.Event()

    async def open(self, *, exclusive: bool = False) -> None:
        await self.let_go.wait()
        await self.inner.open(exclusive=exclusive)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def test_a_node_joins_only_once_it_can_serve_its_durable_identities() -> None:
    # Found by the real-process chaos test: a peer listed a node whose store was still
    # opening, sent it an identity it was preferred for, and got DeadActorError.
    clock = ManualClock(wall=T0)
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()
    slow = _OpensWhenLetGo(store)
    a = ActorSystem("a", clock=clock, store=store, cluster=Cluster(url, lease=LEASE))
    b = ActorSystem("b", clock=clock, store=slow, cluster=Cluster(url, lease=LEASE))
    await a.start()
    try:
        starting = asyncio.create_task(b.start())
        await clock.advance(LEASE)  # a's view is refreshed three times meanwhile
        assert [m.name for m in a.cluster.members()] == ["a"]
        slow.let_go.set()
        await starting
        await clock.advance(LEASE / 3)
        assert [m.name for m in a.cluster.members()] == ["a", "b"]
        identity = next(
            f"acct-{i}"
            for i in range(100)
            if rendezvous_owner(Account.kind, f"acct-{i}", ["a", "b"]) == "b"
        )
        pid = await a.durable(Account, identity)
        assert await pid.ask(Call("where")) == "b"
    finally:
        for system in (a, b):
            if system.running:
                await system.stop()


async def test_outside_cluster_mode_nothing_is_fenced() -> None:
    async with ActorSystem("solo", clock=ManualClock(wall=T0)) as system:
        pid = await system.durable(Account, "acct-6")
        assert await pid.ask(Call("add", 2)) == 2
        handle = system._durable.handles[Account.kind, "acct-6"]  # type: ignore[union-attr]
        assert handle.epoch is None
