# SPDX-License-Identifier: Apache-2.0
"""Three nodes, one cron job, one delivery per tick.

Three actor systems join one cluster on a ``memory://`` coordinator and share one
ManualClock (the deterministic way to try a cluster; in production each node is its own
process with ``remoting=`` and a PostgreSQL, Redis or SQLite coordinator). Every node
registers the same cron schedule under the same reference, as the same application code
would; each tick is claimed cluster-wide and delivered by exactly one node. Along the way:
members, NodeJoined/NodeLeft, a cluster-wide pause, a graceful leave, the counters.

Run: ``python examples/cluster_single_fire.py``
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tocsin import Actor, ActorSystem, Cluster, ManualClock, NodeJoined, NodeLeft, ReceiveContext

DELIVERED: list[tuple[str, str]] = []  # (minute, node) of every report run


class Report(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        minute = ctx.system.clock.wall_datetime().strftime("%H:%M")
        DELIVERED.append((minute, ctx.system.name))


async def main() -> None:
    clock = ManualClock(wall=datetime(2027, 3, 1, 9, 0, 30, tzinfo=UTC))
    nodes = [
        ActorSystem(name, clock=clock, cluster=Cluster("memory://shop", lease=10.0))
        for name in ("shop-1", "shop-2", "shop-3")
    ]
    seen: list[object] = []
    nodes[0].events.subscribe(seen.append, NodeJoined, NodeLeft)
    for node in nodes:
        await node.start()
        pid = await node.spawn(Report, "report")
        # The same call on every node: in cluster mode the reference is required, and the
        # expression is evaluated in UTC unless a timezone is given.
        await node.schedule_cron("run", pid, "0 * * * * ?", reference="report")
    await clock.advance(10.0 / 3)  # one lease renewal: every node has seen every other
    print("members:", [m.name for m in nodes[0].cluster.members()])
    print("shop-1 saw join:", [e.name for e in seen if isinstance(e, NodeJoined)])

    await clock.advance(120)  # 09:01 and 09:02
    await nodes[0].cluster.pause_cron("report")  # on every node, from any node
    await clock.advance(60)  # 09:03: nobody claims it
    await nodes[2].cluster.resume_cron("report")
    await nodes[1].stop()  # a graceful leave
    await clock.advance(60)  # 09:04, two nodes left

    for minute in ("09:01", "09:02", "09:03", "09:04"):
        count = sum(1 for m, _ in DELIVERED if m == minute)
        print(f"{minute}: delivered {count} time(s)")
        assert count == (0 if minute == "09:03" else 1)
    print("shop-1 saw leave:", [(e.name, e.reason) for e in seen if isinstance(e, NodeLeft)])
    for node in (nodes[0], nodes[2]):
        metrics = node.cluster.metrics()
        print(f"{node.name}: won {metrics.claims_won}, lost {metrics.claims_lost}, "
              f"skipped while paused {metrics.claims_skipped_paused}")  # fmt: skip
        await node.stop()


if __name__ == "__main__":
    asyncio.run(main())
