# SPDX-License-Identifier: Apache-2.0
"""Placement: rendezvous preference, single activation by directory CAS, takeover, epochs."""

from __future__ import annotations

import asyncio
from collections import Counter

from tests.cluster.cluster_support import Flaky, World, freeze

from tocsin.cluster._placement import rendezvous_owner


def test_rendezvous_is_deterministic_and_ignores_the_order_of_nodes() -> None:
    nodes = ["n1", "n2", "n3"]
    first = rendezvous_owner("Order", "42", nodes)
    assert first in nodes
    assert rendezvous_owner("Order", "42", list(reversed(nodes))) == first
    assert rendezvous_owner("Order", "42", []) is None
    # (kind, identity) is one key: the split point cannot make two pairs collide.
    pairs = [("ab", "c"), ("a", "bc")]
    picks = {rendezvous_owner(k, i, [f"n{j}" for j in range(50)]) for k, i in pairs}
    assert len(picks) == 2


def test_rendezvous_spreads_identities_and_moves_only_those_of_a_removed_node() -> None:
    nodes = ["n1", "n2", "n3", "n4"]
    ids = [str(i) for i in range(4000)]
    before = {i: rendezvous_owner("Order", i, nodes) for i in ids}
    counts = Counter(before.values())
    assert all(800 <= counts[n] <= 1200 for n in nodes), counts
    after = {i: rendezvous_owner("Order", i, ["n1", "n2", "n4"]) for i in ids}
    moved = [i for i in ids if before[i] != after[i]]
    assert all(before[i] == "n3" for i in moved)
    assert len(moved) == counts["n3"]


async def test_every_node_locates_the_same_single_owner() -> None:
    world = World(lease=3.0)
    try:
        nodes = await world.start("a", "b", "c")
        await world.clock.advance(1.0)  # every node sees every other
        placements = await asyncio.gather(*(n.directory.locate("Order", "7") for n in nodes))
        preferred = rendezvous_owner("Order", "7", ["a", "b", "c"])
        assert {p.node for p in placements if p is not None} == {preferred}
        owner = next(n for n in nodes if n.name == preferred)
        mine = await owner.directory.locate("Order", "7")
        assert mine is not None
        assert (mine.node, mine.epoch, mine.local) == (preferred, 1, True)
        for other in nodes:
            seen = await other.directory.locate("Order", "7")
            assert seen is not None
            assert (seen.node, seen.epoch) == (preferred, 1)
            assert seen.local == (other is owner)
    finally:
        await world.close()


async def test_a_forwarded_identity_is_claimed_by_the_node_it_reaches() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await world.clock.advance(1.0)
        entry = await b.directory.acquire("Order", "x")
        assert entry is not None
        assert (entry.node, entry.epoch) == ("b", 1)
        # A later acquire elsewhere finds the live owner and changes nothing.
        again = await a.directory.acquire("Order", "x")
        assert again == entry
        assert a.metrics().takeovers == 0
    finally:
        await world.close()


async def test_an_owner_is_taken_over_only_after_its_lease_expired_with_a_new_epoch() -> None:
    world = World(lease=3.0)
    try:
        a, b = await world.start("a", "b")
        await world.clock.advance(1.0)
        held = await a.directory.acquire("Order", "1")
        assert held is not None
        assert held.node == "a"
        freeze(a)  # paused or partitioned
        await world.clock.advance(2.9)  # renewed at 1.0: live until 4.0 on the coordinator
        early = await b.directory.acquire("Order", "1")
        assert early is not None
        assert (early.node, early.epoch) == ("a", 1)
        await world.clock.advance(0.2)
        taken = await b.directory.acquire("Order", "1", previous=held)
        assert taken is not None
        assert (taken.node, taken.epoch, taken.alive) == ("b", 2, True)
        assert b.metrics().takeovers == 1
        # The frozen node knows it has no lease, so it may not activate anything.
        assert not a.membership.holds_lease()
        assert await a.directory.acquire("Order", "2") is None
        placement = await b.directory.locate("Order", "1")
        assert placement is not None
        assert (placement.node, placement.epoch, placement.local) == ("b", 2, True)
    finally:
        await world.close()


async def test_a_claim_with_an_unknown_outcome_reads_the_directory_back() -> None:
    world = World(lease=3.0)
    flaky = Flaky(world.coordinator())
    await flaky.inner.open()
    try:
        a = world.node("a", coordinator=flaky)
        await a.start()
        flaky.fail["claim_owner"] = "after"  # written, but the answer is lost
        entry = await a.directory.acquire("Order", "1")
        assert entry is not None
        assert (entry.node, entry.epoch) == ("a", 1)
        assert a.metrics().ownership_claims == 1
    finally:
        await world.close()
        await flaky.inner.close()
