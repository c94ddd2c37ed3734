# SPDX-License-Identifier: Apache-2.0
"""The pushed view (joins and leaves called back, no polling) through a wrapper that binds
the memory coordinator's in-process extras: a simulated node's gated coordinator."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from tests.cluster.cluster_support import Flaky, World

from tocsin.cluster import NodeJoined, NodeLeft
from tocsin.cluster._membership import _pushes
from tocsin.stores import MemoryStore
from tocsin.testing._sim_gates import GatedCoordinator, GatedStore, NodeGate, Outages


async def _no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


async def gated(world: World, name: str, calls: Counter[str]) -> tuple[GatedCoordinator, NodeGate]:
    """``name``'s gated view of the world's coordinator; its gated calls are counted."""
    gate = NodeGate(name, Outages(_no_sleep, lambda: 0.0))
    coordinator = GatedCoordinator(world.coordinator(), gate)

    async def check(what: str) -> None:
        calls[what] += 1
        await gate.coordinator_call(what)

    coordinator._check = check
    await coordinator.open()
    return coordinator, gate


async def test_a_gated_memory_coordinator_pushes_and_a_forward_everything_wrapper_does_not() -> (
    None
):
    world = World(lease=3.0)
    coordinator, _gate = await gated(world, "a", Counter())
    assert _pushes(coordinator) is coordinator
    assert _pushes(world.coordinator()) is not None
    # A fault injector turning every name into a coroutine is polled, as before.
    assert _pushes(Flaky(world.coordinator())) is None


async def test_gated_nodes_read_no_view_while_nothing_changes_and_see_joins_and_leaves() -> None:
    world = World(lease=3.0)
    calls: Counter[str] = Counter()
    try:
        coordinator, _gate = await gated(world, "a", calls)
        a = world.node("a", coordinator=coordinator)
        await a.start()
        await world.start("b")
        await world.clock.advance(0.0)
        assert world.events["a"] == [NodeJoined("b", "tocsin://b@in-process")]
        reads = calls["leases"]
        await world.clock.advance(60.0)
        assert calls["renew"] == 60  # one per lease / 3
        assert calls["leases"] == reads  # polls cost nothing while nothing changes
        await world.nodes[1].stop()
        await world.clock.advance(0.0)
        assert world.events["a"][-1] == NodeLeft("b", "tocsin://b@in-process", "left")
    finally:
        await world.close()


async def test_a_join_pushed_while_cut_off_is_seen_at_the_first_renewal_after() -> None:
    world = World(lease=3.0)
    calls: Counter[str] = Counter()
    try:
        coordinator, gate = await gated(world, "a", calls)
        a = world.node("a", coordinator=coordinator)
        await a.start()
        await world.start("b")
        await world.clock.advance(0.5)
        gate.cut_off(True)
        await world.start("c")  # pushed to a, whose read of the view fails
        await world.clock.advance(1.0)  # a's renewal at 1.0 fails too
        assert NodeJoined("c", "tocsin://c@in-process") not in world.events["a"]
        gate.cut_off(False)
        await world.clock.advance(1.0)  # the renewal at 2.0 answers: the view is read
        assert NodeJoined("c", "tocsin://c@in-process") in world.events["a"]
        assert [m.name for m in a.members()] == ["a", "b", "c"]
    finally:
        await world.close()


def test_a_gated_memory_store_says_it_pushes_its_changes() -> None:
    from tocsin.durable._runtime import _pushes_changes

    gate = NodeGate("a", Outages(_no_sleep, lambda: 0.0))

    def on_write(*_: Any) -> None:
        pass

    assert _pushes_changes(MemoryStore())
    assert _pushes_changes(GatedStore(MemoryStore(), gate, on_write))
    assert not _pushes_changes(Flaky(MemoryStore()))
