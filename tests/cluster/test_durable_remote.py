# SPDX-License-Identifier: Apache-2.0
"""Cluster-wide durable actors over real remoting (TCP on localhost): a node that does
not own an identity returns a remote PID to the owner, and messages reach the one
activation there. Real sockets, bounded waits, outcomes only."""

from __future__ import annotations

import uuid
from typing import Any

from tocsin import ActorSystem, Cluster, Remoting, SystemClock
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore

SECRET = b"cluster-durable-remote-secret!!!"


class Tally(DurableActor):
    kind = "remote-cluster-test.Tally"

    async def where(self, payload: Any) -> str:
        return str(self._handle.runtime.name)

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total


async def test_a_non_owner_reaches_the_owner_over_remoting() -> None:
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()
    systems = [
        ActorSystem(
            name,
            clock=SystemClock(),
            store=store,
            remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET),
            cluster=Cluster(url, lease=30.0),
        )
        for name in ("a", "b")
    ]
    try:
        for system in systems:
            await system.start()
        for system in systems:
            await system.cluster._node.membership.tick()  # every view lists both nodes
        homes: set[str] = set()
        for n in range(8):
            identity = f"t-{n}"
            pids = [await s.durable(Tally, identity) for s in systems]
            where = {await pid.ask(Call("where"), timeout=10.0) for pid in pids}
            assert len(where) == 1
            homes |= where
            assert [await pid.ask(Call("add", 1), timeout=10.0) for pid in pids] == [1, 2]
        assert homes == {"a", "b"}  # some identities live on the other node: routed there
    finally:
        for system in systems:
            await system.stop()
