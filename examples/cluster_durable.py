# SPDX-License-Identifier: Apache-2.0
"""Three nodes, one durable actor, one activation.

Three actor systems join one cluster on a ``memory://`` coordinator, share one durable
store and one ManualClock (in production each node is its own process with
``remoting=``, a PostgreSQL or SQLite store, and a PostgreSQL, Redis or SQLite
coordinator). ``system.durable(Account, "acct-1")`` on every node returns a PID that
reaches the same single activation; when its node leaves, the next message activates
the identity on another node, with its state and a new fencing epoch.

Run: ``python examples/cluster_durable.py``
"""

from __future__ import annotations

import asyncio

from tocsin import ActorSystem, Cluster, ManualClock, ReceiveContext
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore


class Account(DurableActor):
    kind = "example.Account"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        self.node = ctx.system.name  # where this activation runs

    async def deposit(self, amount: int) -> tuple[str, int]:
        balance = int(await self.storage.get("balance", 0)) + amount
        await self.storage.put("balance", balance)  # fenced by this node's epoch
        return self.node, balance


async def main() -> None:
    clock = ManualClock()
    store = MemoryStore()  # the durable store every node shares
    cluster = Cluster("memory://example-durable", lease=3.0)
    nodes = [ActorSystem(n, clock=clock, store=store, cluster=cluster) for n in ("n1", "n2", "n3")]
    for node in nodes:
        await node.start()
    await clock.advance(1.0)  # one renewal: every node's view lists the three

    for node in nodes:  # ask through each node: one activation answers every time
        pid = await node.durable(Account, "acct-1")
        home, balance = await pid.ask(Call("deposit", 10))
        print(f"via {node.name}: served by {home}, balance {balance}")
    assert balance == 30

    owner = next(node for node in nodes if node.name == home)
    await owner.stop()  # a graceful leave: its identities may move at once
    survivor = next(node for node in nodes if node.running)
    await clock.advance(1.0)  # the survivors see it leave
    pid = await survivor.durable(Account, "acct-1")
    new_home, balance = await pid.ask(Call("deposit", 1))
    entry = await survivor.cluster.coordinator.owner(Account.kind, "acct-1")
    assert entry is not None
    print(f"after {home} left: served by {new_home}, balance {balance}, epoch {entry.epoch}")
    assert new_home != home
    assert balance == 31
    assert entry.epoch == 2
    for node in nodes:
        await node.stop()


if __name__ == "__main__":
    asyncio.run(main())
