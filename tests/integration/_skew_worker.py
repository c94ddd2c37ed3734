# SPDX-License-Identifier: Apache-2.0
"""A cluster node process for ``test_cluster_skew.py``, run with its clock off (libfaketime).

``URL NAME LEASE LOG``: a real ``ActorSystem`` with remoting and
``cluster=Cluster(URL, lease=LEASE)`` schedules ``* * * * * ?`` (every second) with
reference ``every-second`` to an actor that appends ``NAME INSTANT COORDINATOR_NOW`` to
LOG per delivered tick (one ``write`` per line, O_APPEND): the instant the tick stands
for (its claim key) and the coordinator's clock read as the actor receives it, so the
parent judges each delivery on the coordinator's clock, not on this node's (off) one.
Prints ``{"event": "ready", ...}`` then, every ``LEASE / 3`` seconds,
``{"event": "offset", "offset": system.cluster.offset, "wall": <this process's own
time.time()>}``, flushed, until killed.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections import deque
from typing import Any

from tocsin import Actor, ActorSystem, Cluster, ReceiveContext, Remoting
from tocsin.scheduling._spi import Scheduler


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


async def main(url: str, name: str, lease: float, log: str) -> None:
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    won: deque[float] = deque()  # instants of won ticks, in delivery (mailbox) order
    system = ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(url, lease=lease),
    )

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            instant = won.popleft()
            now = await system.cluster.coordinator.now()
            os.write(fd, f"{name} {instant!r} {now!r}\n".encode())

    class Recording:
        """The node's claim gate, noting the instant of each tick it won (the tick
        message carries none)."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        def deliver_if_won(
            self, reference: str, fire_at: float, period: float, deliver: Any, skipped: Any = None
        ) -> None:
            def recorded() -> None:
                won.append(fire_at)
                deliver()

            self.inner.deliver_if_won(reference, fire_at, period, recorded, skipped)

    async with system:
        runtime = system.runtime
        assert runtime is not None  # started
        scheduler = runtime.schedules  # test-only: the gate is internal
        assert isinstance(scheduler, Scheduler)
        assert scheduler.cron_gate is not None
        scheduler.cron_gate = Recording(scheduler.cron_gate)
        pid = await system.spawn(Job, "job")
        await system.schedule_cron("run", pid, "* * * * * ?", reference="every-second")
        emit(event="ready", offset=system.cluster.offset)
        while True:
            # This process's own clock, faked or not (the parent compares it with its own).
            emit(event="offset", offset=system.cluster.offset, wall=time.time())
            await asyncio.sleep(lease / 3)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]))
