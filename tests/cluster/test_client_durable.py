# SPDX-License-Identifier: Apache-2.0
"""``client.durable(Kind, id)``: a process that runs nothing reaches a durable identity
wherever the cluster runs it, over real remoting (TCP on localhost). Bounded waits,
outcomes only."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tocsin import ActorSystem, Client, Cluster, Remoting, RemotingDisabledError, SystemClock
from tocsin.durable import Call, DurableActor
from tocsin.stores import MemoryStore

SECRET = b"client-durable-remote-secret!!!!"


class Counter(DurableActor):
    kind = "client-durable-test.Counter"

    async def where(self, payload: Any) -> str:
        return str(self._handle.runtime.name)

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total


async def test_a_client_reaches_each_identity_on_its_one_activation() -> None:
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
            await system.cluster._node.membership.tick()  # every view lists all
        async with Client(
            store,
            cluster=Cluster(url),
            remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET),
        ) as client:
            homes: set[str] = set()
            for n in range(8):
                identity = f"c-{n}"
                from_client = await client.durable(Counter, identity)
                from_node = await systems[n % 2].durable(Counter, identity)
                assert await from_client.ask(Call("add", 1), timeout=10.0) == 1
                assert await from_node.ask(Call("add", 1), timeout=10.0) == 2
                assert await from_client.ask(Call("add", 1), timeout=10.0) == 3
                homes.add(await from_client.ask(Call("where"), timeout=10.0))
            assert homes == {"a", "b"}  # the client reached identities on both nodes
    finally:
        for system in systems:
            await system.stop()


async def test_client_durable_needs_cluster_and_remoting() -> None:
    async with Client(MemoryStore()) as client:
        with pytest.raises(RemotingDisabledError, match="cluster="):
            await client.durable(Counter, "x")
        with pytest.raises(TypeError, match="`kind`"):
            await client.durable(object, "x")  # type: ignore[arg-type]
