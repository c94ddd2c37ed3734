# SPDX-License-Identifier: Apache-2.0
"""Membership on memory:// with one ManualClock: leases, members(), NodeJoined/NodeLeft."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from tests.cluster.cluster_support import START_WALL, Flaky, World, freeze, thaw

from tocsin import ActorSystem, ManualClock
from tocsin.cluster import Cluster, NodeJoined, NodeLeft
from tocsin.errors import NodeNameTakenError


async def test_members_lists_every_live_node_with_address_joined_and_last_seen() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await world.clock.advance(1.0)  # one renewal period (lease / 3)
        members = a.members()
        assert [m.name for m in members] == ["a", "b"]
        assert members[0].address == "tocsin://a@in-process"
        assert members[0].joined == datetime.fromtimestamp(START_WALL, UTC)
        assert members[0].last_seen == datetime.fromtimestamp(START_WALL + 1.0, UTC)
        assert [m.name for m in b.members()] == ["a", "b"]
    finally:
        await world.close()


async def test_a_lease_is_renewed_every_third_of_the_lease() -> None:
    world = World(lease=3.0)
    try:
        [a] = await world.start("a")
        await world.clock.advance(0.99)
        assert a.metrics().leases_renewed == 0
        await world.clock.advance(0.01)
        assert a.metrics().leases_renewed == 1
        await world.clock.advance(9.0)
        assert a.metrics().leases_renewed == 10
        assert a.metrics().leases_lost == 0
        assert a.membership.holds_lease()
    finally:
        await world.close()


async def test_a_node_that_joins_later_is_announced_to_the_others() -> None:
    world = World(lease=3.0)
    try:
        [_a] = await world.start("a")
        await world.start("b")
        assert world.events["a"] == []
        await world.clock.advance(1.0)
        assert world.events["a"] == [NodeJoined("b", "tocsin://b@in-process")]
        assert world.events["b"] == []  # nodes already up are listed, not announced
    finally:
        await world.close()


async def test_a_graceful_leave_is_announced_as_left_within_a_renewal_period() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await world.clock.advance(1.0)
        world.events["a"].clear()
        await b.stop()
        await world.clock.advance(1.0)
        assert world.events["a"] == [NodeLeft("b", "tocsin://b@in-process", "left")]
        assert [m.name for m in a.members()] == ["a"]
    finally:
        await world.close()


async def test_a_node_not_renewed_within_its_lease_is_announced_as_expired() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await world.clock.advance(1.0)
        world.events["a"].clear()
        freeze(b)  # a crash or a partition: no renewal, no leave
        await world.clock.advance(1.9)
        assert world.events["a"] == []
        assert [m.name for m in a.members()] == ["a", "b"]
        await world.clock.advance(1.1)  # past the lease, then a's next renewal
        assert world.events["a"] == [NodeLeft("b", "tocsin://b@in-process", "expired")]
        assert [m.name for m in a.members()] == ["a"]
    finally:
        await world.close()


async def test_a_frozen_node_gives_up_its_lease_by_its_own_clock_and_rejoins_on_thaw() -> None:
    world = World(lease=3.0)
    try:
        _a, b = await world.start("a", "b")
        await world.clock.advance(1.0)
        world.events["a"].clear()
        first_life = b.membership.incarnation
        freeze(b)
        await world.clock.advance(2.5)
        assert b.membership.holds_lease()
        await world.clock.advance(0.5)  # lease measured from the last renewal *sent*
        assert not b.membership.holds_lease()
        assert world.lost["b"] == 1
        assert b.metrics().leases_lost == 1
        await world.clock.advance(1.0)
        thaw(b)
        await world.clock.advance(1.0)  # the renewal is refused: b rejoins as a new life
        assert b.membership.incarnation != first_life
        assert b.membership.holds_lease()
        assert world.lost["b"] == 1  # counted once per loss
        await world.clock.advance(1.0)
        assert world.events["a"] == [
            NodeLeft("b", "tocsin://b@in-process", "expired"),
            NodeJoined("b", "tocsin://b@in-process"),
        ]
    finally:
        await world.close()


async def test_a_restarted_node_waits_for_its_previous_lease_to_lapse() -> None:
    world = World(lease=3.0)
    world.clock.autojump = True
    try:
        old = world.node("a")
        await old.start()
        freeze(old)  # crashed without leaving
        start = world.clock.monotonic()
        new = world.node("a")
        await new.start()
        assert world.clock.monotonic() - start >= 3.0 - 1e-9
        assert new.membership.incarnation != old.membership.incarnation
    finally:
        await world.close()


async def test_a_name_held_by_another_live_node_raises_node_name_taken() -> None:
    world = World(lease=3.0)
    world.clock.autojump = True
    try:
        await world.start("a")
        twin = world.node("a")
        with pytest.raises(NodeNameTakenError, match="'a' is held by another live node"):
            await twin.start()
        world.nodes.remove(twin)
    finally:
        await world.close()


async def test_a_duplicate_name_on_memory_fails_at_once_without_time_passing() -> None:
    # No autojump: a lease its live holder keeps renewing never lapses, so waiting for it
    # (on a clock nobody advances) used to make start() wait for ever.
    world = World(lease=3.0)
    try:
        await world.start("a")
        twin = world.node("a")
        with pytest.raises(NodeNameTakenError, match="'a' is held by another live node"):
            await twin.start()
        world.nodes.remove(twin)
        assert world.clock.monotonic() == 0
    finally:
        await world.close()


async def test_a_duplicate_system_name_on_memory_fails_its_start() -> None:
    clock = ManualClock(wall=START_WALL)
    url = f"memory://{uuid.uuid4().hex}"
    async with ActorSystem("n1", clock=clock, cluster=Cluster(url)):
        twin = ActorSystem("n1", clock=clock, cluster=Cluster(url))
        with pytest.raises(NodeNameTakenError, match="give each node its own name"):
            await twin.start()
        assert not twin.running


async def test_on_memory_joins_are_seen_at_once_and_a_dead_node_at_its_expiry() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await world.clock.advance(0)
        assert [m.name for m in a.members()] == ["a", "b"]  # pushed: no renewal waited for
        assert NodeJoined("b", "tocsin://b@in-process") in world.events["a"]
        await world.clock.advance(0.5)
        freeze(b)  # last renewed at 0: its lease runs out at 3.0
        await world.clock.advance(2.49)
        assert [m.name for m in a.members()] == ["a", "b"]
        await world.clock.advance(0.01)
        assert [m.name for m in a.members()] == ["a"]  # at its expiry, not a poll later
        assert NodeLeft("b", "tocsin://b@in-process", "expired") in world.events["a"]
    finally:
        await world.close()


async def test_on_memory_a_renewal_reads_no_view_yet_members_show_it() -> None:
    world = World(lease=3.0)
    try:
        [a, _] = await world.start("a", "b")
        await world.clock.advance(0)  # the reads b's join caused are done
        reads = 0
        leases = world.nodes[0].coordinator.leases

        async def counted() -> Any:
            nonlocal reads
            reads += 1
            return await leases()

        a.coordinator.leases = counted  # type: ignore[method-assign]
        await world.clock.advance(30.0)  # 30 renewals of each node, nobody joins or leaves
        assert reads == 0
        assert a.metrics().leases_renewed == 30
        last_seen = {m.name: m.last_seen.timestamp() for m in a.members()}
        # As of a's last renewal (b renews at the same instant, just after a).
        assert last_seen == {"a": START_WALL + 30.0, "b": START_WALL + 29.0}
    finally:
        await world.close()


async def test_failed_renewals_are_counted_and_the_lease_is_given_up_in_time() -> None:
    world = World(lease=3.0)
    flaky = Flaky(world.coordinator())
    await flaky.inner.open()
    try:
        a = world.node("a", coordinator=flaky)
        await a.start()
        flaky.fail["renew"] = "before"
        await world.clock.advance(2.0)
        assert a.metrics().renew_failures == 2
        assert a.membership.holds_lease()
        await world.clock.advance(1.0)
        assert not a.membership.holds_lease()
        assert world.lost["a"] == 1
    finally:
        await world.close()
        await flaky.inner.close()


async def test_stop_leaves_even_when_called_while_a_renewal_is_in_flight() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await asyncio.gather(world.clock.advance(1.0), b.stop())
        await world.clock.advance(1.0)
        assert [m.name for m in a.members()] == ["a"]
    finally:
        await world.close()
