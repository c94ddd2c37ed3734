# SPDX-License-Identifier: Apache-2.0
"""A node of the stored-schedule process tests.

``COORDINATOR STORE NAME DELIVERY DELAY LOG``: an ``ActorSystem`` with remoting, the
shared STORE and ``Cluster(COORDINATOR, lease=3, delivery_lease=2)``, declaring one
stored schedule: ``Interval(1)`` to ``tests.integration._stored_jobs.slow(LOG, DELAY)``
with ``delivery=DELIVERY``. Prints ``{"event": "ready"}`` once started, then runs until
killed.
"""

from __future__ import annotations

import asyncio
import json
import sys

from tocsin import ActorSystem, Cluster, Remoting
from tocsin.schedules import Interval, Schedule


async def main(
    coordinator: str, store: str, name: str, delivery: str, delay: float, log: str
) -> None:
    spec = Schedule(
        "every-second",
        Interval(1),
        "tests.integration._stored_jobs.slow",
        args=(log, delay),
        delivery=delivery,
    )
    system = ActorSystem(
        name,
        store=store,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"cluster-test-secret!"),
        cluster=Cluster(coordinator, lease=3.0, delivery_lease=2.0, poll_interval=0.5),
        schedules=[spec],
        jobs=["tests.integration._stored_jobs"],
    )
    async with system:
        sys.stdout.write(json.dumps({"event": "ready"}) + "\n")
        sys.stdout.flush()
        while True:
            await asyncio.sleep(3600)


if __name__ == "__main__":
    args = sys.argv[1:]
    asyncio.run(main(args[0], args[1], args[2], args[3], float(args[4]), args[5]))
