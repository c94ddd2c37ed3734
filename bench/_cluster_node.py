# SPDX-License-Identifier: Apache-2.0
"""A cluster node for ``bench/cluster.py``: the durable actor both sides use, the system
builder, and the node process the bench starts (remote owner, or owner to SIGKILL).

``python bench/_cluster_node.py serve COORDINATOR STORE NAME LEASE``: join, print
``{"ready": address}`` and serve until killed (the remote owner of the latency test).

``python bench/_cluster_node.py own COORDINATOR STORE NAME LEASE``: start alone, activate
``Account("m")`` (asked by the failover test) and ``Account("t")`` with a task every
0.1 s, print ``{"ready": address}`` and serve until SIGKILLed (the failover test).

STORE is ``sqlite:///path`` or ``postgresql://...#SCHEMA``.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tocsin import ActorSystem, Cluster, ReceiveContext, Remoting
from tocsin.durable import Call, DurableActor
from tocsin.stores import Store

SECRET = b"bench-cluster-secret-0123456789!"
#: Called with the node's name each time ``Account.beat`` runs (the failover test's probe).
on_beat: Callable[[str], None] | None = None


class Account(DurableActor):
    """One balance: ``deposit`` reads and writes it (a fenced write in cluster mode)."""

    kind = "bench.Account"

    async def pre_start(self, ctx: ReceiveContext) -> None:
        self.node = ctx.system.name

    async def deposit(self, amount: int) -> int:
        balance = int(await self.storage.get("balance", 0)) + amount
        await self.storage.put("balance", balance)
        return balance

    async def where(self, payload: Any) -> str:
        return self.node

    async def start_beat(self, payload: Any) -> None:
        await self.every(0.1, "beat", id="beat")

    async def beat(self, payload: Any) -> None:
        await self.storage.put("beat", self.now().timestamp())
        if on_beat is not None:
            on_beat(self.node)


def open_store(spec: str) -> str | Store:
    """``sqlite:///path`` as is; ``postgresql://...#SCHEMA`` as a PostgresStore."""
    if not spec.startswith("postgresql://"):
        return spec
    from tocsin.stores.postgres import PostgresStore

    dsn, _, schema = spec.partition("#")
    return PostgresStore(dsn, schema=schema)


def node(name: str, coordinator: str | None, store: str, lease: float) -> ActorSystem:
    """A system with remoting on loopback; in cluster mode when ``coordinator`` is given."""
    if coordinator is None:
        return ActorSystem(name, store=open_store(store))
    return ActorSystem(
        name,
        store=open_store(store),
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET),
        cluster=Cluster(coordinator, lease=lease),
    )


async def _serve(mode: str, coordinator: str, store: str, name: str, lease: float) -> None:
    async with node(name, coordinator, store, lease) as system:
        if mode == "own":
            await (await system.durable(Account, "m")).ask(Call("where"), timeout=30.0)
            pid = await system.durable(Account, "t")
            await pid.ask(Call("start_beat"), timeout=30.0)
        print(json.dumps({"ready": system.cluster.members()[0].address}), flush=True)
        while True:
            await asyncio.sleep(3600)


if __name__ == "__main__":
    mode, coordinator, store, name, lease = sys.argv[1:6]
    asyncio.run(_serve(mode, coordinator, store, name, float(lease)))
