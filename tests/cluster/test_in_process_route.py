# SPDX-License-Identifier: Apache-2.0
"""The in-process route seam: what a memory:// node sends to a peer's actor can pass
through a route (the simulated network of ``tocsin.testing.Simulation``)."""

from __future__ import annotations

import uuid

from tocsin import Actor, ActorSystem, Cluster, ManualClock, ReceiveContext
from tocsin.actor._spi import PID, target_of
from tocsin.cluster._spi import add_in_process_route, in_process_pid
from tocsin.stores import MemoryStore


class Echo(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        ctx.respond(ctx.message)


async def test_a_route_sees_every_peer_pid_a_node_gets_and_can_be_removed() -> None:
    clock = ManualClock(wall=1_800_000_000.0)
    name = f"memory://route-{uuid.uuid4().hex}"
    store = MemoryStore()
    a = ActorSystem("ra", clock=clock, store=store, cluster=Cluster(name, lease=3.0))
    b = ActorSystem("rb", clock=clock, store=store, cluster=Cluster(name, lease=3.0))
    seen: list[tuple[str, str]] = []

    def route(origin: str, pid: PID) -> PID:
        seen.append((origin, str(pid)))
        return pid

    async with a, b:
        pid = await b.spawn(Echo, "echo")
        remove = add_in_process_route(route)
        try:
            routed = in_process_pid(b.address, "/user/echo", origin=a.address)
            assert routed == pid
            assert seen == [(a.address, str(pid))]
            assert in_process_pid(b.address, "/user/echo") == pid  # no origin: no route
            assert len(seen) == 1
            assert await routed.ask("hi") == "hi"
        finally:
            remove()
        in_process_pid(b.address, "/user/echo", origin=a.address)
        assert len(seen) == 1  # removed: not called again
        assert target_of(pid).alive()
