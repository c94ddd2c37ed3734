# SPDX-License-Identifier: Apache-2.0
"""A cluster node process for ``test_cluster_rebalance_processes.py``.

``URL STORE NAME SEED COUNT EXPECT``: a real ``ActorSystem`` with remoting, the shared
durable STORE and ``cluster=Cluster(URL, lease=3, poll_interval=0.5)``. Prints ``ready``
once started, then every 0.5 s ``{"event": "active", "ids": [...]}`` (the identities
active on this node). With SEED=1 it waits until EXPECT members are listed, activates
``i-0`` … ``i-COUNT-1`` (each ``add`` once), prints ``seeded`` and from then on sends
``add`` to every identity in turn, checking that each answer is the previous one plus
one (a lost or doubled update breaks the sequence). On SIGTERM it prints
``{"event": "done", "sent": N, "errors": [...], "mismatches": [...], "fenced": F}`` and
exits at once.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from typing import Any

from tocsin import ActorSystem, Cluster, Remoting
from tocsin.durable import Call, DurableActor


def emit(**fields: Any) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


class Item(DurableActor):
    kind = "rebalance-test.Item"

    async def add(self, amount: int) -> int:
        total = int(await self.storage.get("total", 0)) + amount
        await self.storage.put("total", total)
        return total


async def main(url: str, store: str, name: str, seed: bool, count: int, expect: int) -> None:
    system = ActorSystem(
        name,
        store=store,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=b"rebalance-test-secret!"),
        cluster=Cluster(url, lease=3.0, poll_interval=0.5),
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    sent = 0
    errors: list[str] = []
    mismatches: list[str] = []
    async with system:
        emit(event="ready")

        async def report() -> None:
            while True:
                durable = system._durable  # test-only: which identities are active here
                ids = (
                    []
                    if durable is None
                    else sorted(i for (_k, i), h in durable.handles.items() if h.cell is not None)
                )
                emit(event="active", ids=ids)
                await asyncio.sleep(0.5)

        async def send() -> None:
            nonlocal sent
            while len(system.cluster.members()) < expect:
                await asyncio.sleep(0.1)
            totals: dict[str, int] = {}
            pids = {}
            for i in range(count):
                identity = f"i-{i}"
                pids[identity] = await system.durable(Item, identity)
                totals[identity] = int(await pids[identity].ask(Call("add", 1), timeout=30))
            emit(event="seeded")
            while True:
                for identity, pid in pids.items():
                    try:
                        total = int(await pid.ask(Call("add", 1), timeout=30))
                    except Exception as exc:
                        errors.append(f"{identity}: {exc!r}")
                        continue
                    sent += 1
                    if total != totals[identity] + 1:
                        mismatches.append(f"{identity}: {totals[identity]} -> {total}")
                    totals[identity] = total
                    await asyncio.sleep(0.005)

        tasks = [asyncio.ensure_future(report())]
        if seed:
            tasks.append(asyncio.ensure_future(send()))
        await stop.wait()
        emit(
            event="done",
            sent=sent,
            errors=errors[:20],
            mismatches=mismatches[:20],
            fenced=system.cluster.metrics().fenced_writes,
        )
        sys.stdout.flush()
        import os

        os._exit(0)


if __name__ == "__main__":
    url, store, name, seed, count, expect = sys.argv[1:7]
    asyncio.run(main(url, store, name, seed == "1", int(count), int(expect)))
