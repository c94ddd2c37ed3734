# SPDX-License-Identifier: Apache-2.0
"""Three cluster nodes, one cron job, one delivery per tick: the cluster layer on its own.

Three nodes share a ``memory://`` coordinator and one ManualClock (the deterministic way
to test a cluster). Each node runs the same every-minute trigger and, at each fire
instant, does what the scheduler does in cluster mode: claim the tick, deliver only if
it won. Along the way: members, NodeJoined/NodeLeft, a cluster-wide pause, a graceful
leave, and the counters. ``ActorSystem(cluster=Cluster(...))`` makes these calls for you
once remoting is wired in (docs/cluster.md); this shows the layer underneath.

Run: ``python examples/cluster_single_fire.py``
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from tocsin import Cluster, ManualClock, NodeJoined, NodeLeft
from tocsin.clock import TimerHandle
from tocsin.cluster import ClusterNode, cron_period
from tocsin.cron import CronExpression

START = datetime(2027, 3, 1, 9, 0, 30, tzinfo=UTC)
EVERY_MINUTE = CronExpression.parse("0 * * * * ?")


def arm(
    node: ClusterNode,
    clock: ManualClock,
    deliveries: dict[str, list[str]],
    timers: dict[str, TimerHandle],
) -> None:
    """Arm this node's trigger for the next fire instant (re-armed after each fire)."""
    nxt = EVERY_MINUTE.next_after(clock.wall_datetime())
    assert nxt is not None
    fire_at = nxt.timestamp()

    def fire() -> None:
        label = nxt.strftime("%H:%M")
        node.cron_claims.deliver_if_won(
            "report",
            fire_at,
            cron_period(EVERY_MINUTE, fire_at),
            lambda: deliveries.setdefault(label, []).append(node.name),
        )
        arm(node, clock, deliveries, timers)

    timers[node.name] = clock.call_at(clock.monotonic() + (fire_at - clock.wall()), fire)


async def main() -> None:
    clock = ManualClock(wall=START)
    config = Cluster("memory://shop", lease=10.0)
    events: list[object] = []  # what shop-1 publishes on its system.events
    nodes = [
        ClusterNode(config, name=name, address=f"tocsin://{name}", clock=clock,
                    publish=events.append if name == "shop-1" else lambda event: None)
        for name in ("shop-1", "shop-2", "shop-3")
    ]  # fmt: skip
    for node in nodes:
        await node.start()
    await clock.advance(10.0 / 3)  # one renewal: every node has seen every other
    print("members:", [m.name for m in nodes[0].members()])
    print("shop-1 saw join:", [e.name for e in events if isinstance(e, NodeJoined)])

    deliveries: dict[str, list[str]] = {}
    timers: dict[str, TimerHandle] = {}
    for node in nodes:
        arm(node, clock, deliveries, timers)
    await clock.advance(120)  # 09:01 and 09:02
    await nodes[0].pause_cron("report")  # on every node, from any node
    await clock.advance(60)  # 09:03: nobody claims it
    await nodes[2].resume_cron("report")
    timers["shop-2"].cancel()  # a stopping system cancels its schedules...
    await nodes[1].stop()  # ...and leaves the cluster gracefully
    await clock.advance(60)  # 09:04, two nodes left

    for minute in ("09:01", "09:02", "09:03", "09:04"):
        who = deliveries.get(minute, [])
        print(f"{minute}: delivered {len(who)} time(s)")
        assert len(who) == (0 if minute == "09:03" else 1)
    left = [(e.name, e.reason) for e in events if isinstance(e, NodeLeft)]
    print("shop-1 saw leave:", left)
    total = {name: 0 for name in ("won", "lost", "paused")}
    for node in nodes:
        metrics = node.metrics()
        total["won"] += metrics.claims_won
        total["lost"] += metrics.claims_lost
        total["paused"] += metrics.claims_skipped_paused
    print("claims:", total)
    for node in (nodes[0], nodes[2]):
        timers[node.name].cancel()
        await node.stop()


if __name__ == "__main__":
    asyncio.run(main())
