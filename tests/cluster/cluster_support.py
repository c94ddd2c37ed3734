# SPDX-License-Identifier: Apache-2.0
"""Helpers for in-process clusters on ``memory://`` driven by one ManualClock."""

from __future__ import annotations

import uuid
from typing import Any

from tocsin.clock import ManualClock
from tocsin.cluster import Cluster, ClusterNode, ClusterView
from tocsin.cluster._memory import MemoryCoordinator
from tocsin.errors import CoordinatorError

START_WALL = 1_800_000_000.0


class Flaky:
    """A coordinator wrapper whose calls can be made to fail (after or instead of acting)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.url = inner.url
        #: method name -> "before" (fail without acting) or "after" (act, then fail)
        self.fail: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self.inner, name)
        # A batch of claims fails as the single claim is set to fail (the batched path is
        # the one the scheduler takes), unless claim_ticks is set on its own.
        key = "claim_tick" if name == "claim_ticks" and name not in self.fail else name

        async def call(*args: Any, **kwargs: Any) -> Any:
            mode = self.fail.get(key)
            if mode == "before":
                raise CoordinatorError(f"injected failure before {key}")
            result = await method(*args, **kwargs)
            if mode == "after":
                raise CoordinatorError(f"injected failure after {key}")
            return result

        return call


class World:
    """Nodes of one in-process cluster sharing one clock and one memory coordinator."""

    def __init__(self, lease: float = 3.0) -> None:
        self.clock = ManualClock(wall=START_WALL)
        self.lease = lease
        self.name = f"w{uuid.uuid4().hex}"
        self.events: dict[str, list[object]] = {}
        self.lost: dict[str, int] = {}
        self.nodes: list[ClusterNode] = []

    def node(self, name: str, *, coordinator: Any = None) -> ClusterNode:
        events = self.events.setdefault(name, [])
        self.lost.setdefault(name, 0)

        def lost() -> None:
            self.lost[name] += 1

        config = Cluster(
            coordinator if coordinator is not None else f"memory://{self.name}",
            lease=self.lease,
        )
        node = ClusterNode(
            config,
            name=name,
            address=f"tocsin://{name}@in-process",
            clock=self.clock,
            publish=events.append,
            on_lease_lost=lost,
        )
        self.nodes.append(node)
        return node

    async def clock_sleep_until(self, wall: float) -> None:
        """Wait on the clock until its wall time reaches ``wall``."""
        from tocsin.cluster._periodic import sleep

        await sleep(self.clock, max(0.0, wall - self.clock.wall()))

    def coordinator(self) -> MemoryCoordinator:
        return MemoryCoordinator(self.name, clock=self.clock)

    async def start(self, *names: str) -> list[ClusterNode]:
        nodes = [self.node(name) for name in names]
        for node in nodes:
            await node.start()
        return nodes

    async def close(self) -> None:
        for node in self.nodes:
            await node.stop()
        self.clock.autojump = False


def freeze(node: ClusterNode | ClusterView) -> None:
    """Stop a node's renewals without leaving: a SIGSTOPped or partitioned node (a
    ``system.cluster`` view reaches its node). On memory:// its view reads stop too (they
    are pushed, not polled: a stopped process reads nothing)."""
    if isinstance(node, ClusterView):
        node = node._node
    membership = node.membership
    membership._renewer._stopped = True
    handle = membership._renewer._handle
    if handle is not None:
        handle.cancel()
    pushed = membership._pushed
    if pushed is not None:
        FROZEN_PUSH[id(membership)] = pushed
        membership._pushed = None  # no timer re-armed by a read still in flight
        if membership._unlisten is not None:
            membership._unlisten()
            membership._unlisten = None
        if membership._peer_expiry is not None:
            membership._peer_expiry.cancel()
            membership._peer_expiry = None
        if membership._rereading is not None:
            membership._rereading.cancel()


#: The memory:// coordinators of frozen memberships (by id), for thaw.
FROZEN_PUSH: dict[int, Any] = {}


def thaw(node: ClusterNode) -> None:
    """Resume a frozen node's renewals (and on memory:// its pushed view) from now on."""
    membership = node.membership
    membership._renewer.start()
    pushed = FROZEN_PUSH.pop(id(membership), None)
    if pushed is not None:
        membership._pushed = pushed
        membership._unlisten = pushed.on_change(membership._reread)
        membership._reread()
