# SPDX-License-Identifier: Apache-2.0
"""Cluster-wide durable actors on memory:// with one ManualClock: one activation per
identity across the nodes, routing from any node, takeover after the owner's lease
expires, and a passivated identity's due tasks run by one node only."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.cluster.cluster_support import freeze

from tocsin import ActorSystem, Cluster, ManualClock, ReceiveContext
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
        assert dead.cluster.membership.holds_lease() is False
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


async def test_outside_cluster_mode_nothing_is_fenced() -> None:
    async with ActorSystem("solo", clock=ManualClock(wall=T0)) as system:
        pid = await system.durable(Account, "acct-6")
        assert await pid.ask(Call("add", 2)) == 2
        handle = system._durable.handles[Account.kind, "acct-6"]  # type: ignore[union-attr]
        assert handle.epoch is None
