# SPDX-License-Identifier: Apache-2.0
"""A cluster node process for ``test_cluster_skew.py``, run with its clock off (libfaketime).

``cron URL NAME LEASE LOG``: a real ``ActorSystem`` with remoting and
``cluster=Cluster(URL, lease=LEASE)`` schedules ``* * * * * ?`` (every second) with
reference ``every-second`` to an actor that appends ``NAME INSTANT COORDINATOR_NOW`` to
LOG per delivered tick (one ``write`` per line, O_APPEND): the instant the tick stands
for (its claim key) and the coordinator's clock read as the actor receives it, so the
parent judges each delivery on the coordinator's clock, not on this node's (off) one.
Prints ``{"event": "ready", ...}`` then, every ``LEASE / 3`` seconds,
``{"event": "offset", "offset": system.cluster.offset, "wall": <this process's own
time.time()>}``, flushed, until killed.

``durable URL STORE NAME LEASE LOG SEED``: the same node with the shared durable STORE;
durable ``Counter`` identities tick every second, each tick adding one to a stored count
and appending ``NAME IDENTITY COUNT COORDINATOR_NOW`` to LOG after the write committed.
With SEED it waits for two members, then starts SEED identities the rendezvous hash
prefers for ``a`` and SEED for ``b`` (through their owners). Prints ``ready``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any

from tocsin import Actor, ActorSystem, Cluster, ReceiveContext, Remoting


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def main(url: str, name: str, lease: float, log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    system = ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=lease),
    )

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            tick = ctx.tick  # the nominal instant of the tick this node won
            assert tick is not None
            instant = tick.instant.timestamp()
            now = await system.cluster.coordinator.now()
            os.write(fd, f"{name} {instant!r} {now!r}\n".encode())

    async with system:
        pid = await system.spawn(Job, "job")
        await system.schedule_cron("run", pid, "* * * * * ?", reference="every-second")
        emit(event="ready", offset=system.cluster.offset)
        while True:
            # This process's own clock, faked or not (the parent compares it with its own).
            emit(event="offset", offset=system.cluster.offset, wall=time.time())
            await asyncio.sleep(lease / 3)


async def durable(url: str, store: str, name: str, lease: float, log: str, seed: int) -> None:
    from tocsin.cluster._placement import rendezvous_owner
    from tocsin.durable import Call, DurableActor

    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    system = ActorSystem(
        name,
        store=store,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=lease),
    )

    class Counter(DurableActor):
        kind = "skew.Counter"

        async def start(self, payload: Any) -> None:
            await self.every(1.0, "tick", id="tick")

        async def tick(self, payload: Any) -> None:
            count = int(await self.storage.get("count", 0)) + 1
            await self.storage.put("count", count)
            now = await system.cluster.coordinator.now()
            os.write(fd, f"{name} {self.identity} {count} {now!r}\n".encode())

    async with system:
        if seed:
            while len(system.cluster.members()) < 2:
                await asyncio.sleep(lease / 3)
            for owner in ("a", "b"):
                ids = (f"c-{i}" for i in range(1000))
                mine = [i for i in ids if rendezvous_owner(Counter.kind, i, ["a", "b"]) == owner]
                for identity in mine[:seed]:
                    pid = await system.durable(Counter, identity)
                    await pid.ask(Call("start"), timeout=20.0)
        emit(event="ready", offset=system.cluster.offset)
        while True:
            await asyncio.sleep(3600)


if __name__ == "__main__":
    if sys.argv[1] == "durable":
        args = sys.argv[2:]
        asyncio.run(durable(args[0], args[1], args[2], float(args[3]), args[4], int(args[5])))
    else:
        asyncio.run(main(sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]))
