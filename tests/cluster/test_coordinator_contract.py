# SPDX-License-Identifier: Apache-2.0
"""The Coordinator contract, run unchanged on memory, SQLite, PostgreSQL and Redis.

Time moves without sleeping: memory and SQLite read a shared ManualClock; PostgreSQL and
Redis read their server's clock plus an offset that the tests move (``_offset``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tocsin.clock import ManualClock
from tocsin.cluster import Coordinator
from tocsin.cluster._protocol import (
    BatchCoordinator,
    ClaimOutcome,
    PauseNote,
    TickRequest,
    claim_ticks,
    least_fence,
)
from tocsin.errors import CoordinatorError

LEASE = 10.0


@dataclass
class Backend:
    name: str
    factory: Callable[[], Any]
    clock: ManualClock | None = None
    made: list[Any] = field(default_factory=list)

    def make(self) -> Coordinator:
        coordinator = self.factory()
        if self.made and self.clock is None:
            coordinator._offset = self.made[0]._offset
        self.made.append(coordinator)
        return coordinator  # type: ignore[no-any-return]

    async def advance(self, seconds: float) -> None:
        if self.clock is not None:
            await self.clock.advance(seconds)
        for coordinator in self.made:
            if hasattr(coordinator, "_offset"):
                coordinator._offset += seconds


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    name = request.param
    if name == "memory":
        from tocsin.cluster._memory import MemoryCoordinator

        clock = ManualClock(wall=1_800_000_000.0)
        shared = f"contract-{uuid.uuid4().hex}"
        return Backend(name, lambda: MemoryCoordinator(shared, clock=clock), clock)
    if name == "sqlite":
        from tocsin.cluster._sqlite import SQLiteCoordinator

        clock = ManualClock(wall=1_800_000_000.0)
        path = tmp_path / "coordinator.db"
        return Backend(name, lambda: SQLiteCoordinator(path, clock=clock), clock)
    if name == "postgres":
        from tocsin.cluster._postgres import PostgresCoordinator

        dsn = request.getfixturevalue("postgres_dsn")
        schema = f"c_{uuid.uuid4().hex[:16]}"
        return Backend(name, lambda: PostgresCoordinator(dsn, schema=schema))
    from tocsin.cluster._redis import RedisCoordinator

    url = request.getfixturevalue("redis_url")
    prefix = f"t{uuid.uuid4().hex[:12]}:"
    return Backend(name, lambda: RedisCoordinator(url, prefix=prefix))


async def opened(backend: Backend, n: int = 1) -> list[Coordinator]:
    coordinators = [backend.make() for _ in range(n)]
    for coordinator in coordinators:
        await coordinator.open()
    return coordinators


async def close_all(coordinators: list[Coordinator]) -> None:
    for coordinator in coordinators:
        await coordinator.close()


# -- membership ----------------------------------------------------------------------


async def test_a_joined_node_is_listed_alive_with_its_address(backend: Backend) -> None:
    [c] = await opened(backend)
    try:
        row = await c.join("n1", "inc-a", "tocsin://n1@127.0.0.1:7100", LEASE)
        assert row is not None
        assert row.alive
        assert row.joined == row.renewed
        assert row.expires == pytest.approx(row.renewed + LEASE)
        now, rows = await c.leases()
        assert [(r.node, r.incarnation, r.address, r.alive) for r in rows] == [
            ("n1", "inc-a", "tocsin://n1@127.0.0.1:7100", True)
        ]
        assert abs(now - row.renewed) < 5
    finally:
        await c.close()


async def test_join_and_renew_rows_carry_the_coordinators_clock_at_the_step(
    backend: Backend,
) -> None:
    # Cluster time (issue 20, item 5) is measured from it: ``renewed`` is the
    # coordinator's clock read inside the join or renewal, between a now() before the
    # call and one after (Redis keeps milliseconds: 1 ms of slack).
    [c] = await opened(backend)
    try:
        before = await c.now()
        joined = await c.join("n1", "inc-a", "addr", LEASE)
        middle = await c.now()
        await backend.advance(2.0)
        renewed = await c.renew("n1", "inc-a", LEASE)
        after = await c.now()
        assert joined is not None
        assert renewed is not None
        assert before - 0.001 <= joined.renewed <= middle
        assert middle + 2.0 - 0.001 <= renewed.renewed <= after
    finally:
        await c.close()


async def test_a_live_name_cannot_be_joined_by_another_incarnation_until_it_expires(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        first = await a.join("n1", "old", "addr-old", LEASE)
        assert first is not None
        assert await b.join("n1", "new", "addr-new", LEASE) is None
        await backend.advance(LEASE + 0.5)
        row = await b.join("n1", "new", "addr-new", LEASE)
        assert row is not None
        assert row.incarnation == "new"
        assert row.address == "addr-new"
        assert row.joined > first.joined
        assert await a.renew("n1", "old", LEASE) is None  # the old life is over
    finally:
        await close_all([a, b])


async def test_renew_extends_a_live_lease_but_never_revives_an_expired_one(
    backend: Backend,
) -> None:
    [c] = await opened(backend)
    try:
        joined = await c.join("n1", "i", "a", LEASE)
        assert joined is not None
        await backend.advance(LEASE - 1)
        renewed = await c.renew("n1", "i", LEASE)
        assert renewed is not None
        assert renewed.alive
        assert renewed.expires == pytest.approx(renewed.renewed + LEASE)
        assert renewed.joined == joined.joined
        assert await c.renew("n1", "other", LEASE) is None
        await backend.advance(LEASE + 0.5)
        assert await c.renew("n1", "i", LEASE) is None
        _, rows = await c.leases()
        assert [(r.node, r.alive) for r in rows] == [("n1", False)]
    finally:
        await c.close()


async def test_leave_deletes_only_that_incarnations_lease(backend: Backend) -> None:
    [c] = await opened(backend)
    try:
        await c.join("n1", "i", "a", LEASE)
        await c.join("n2", "j", "b", LEASE)
        assert await c.leave("n1", "wrong") is False
        assert await c.leave("n1", "i") is True
        assert await c.leave("n1", "i") is False
        _, rows = await c.leases()
        assert [r.node for r in rows] == ["n2"]
    finally:
        await c.close()


async def test_a_lease_carries_the_nodes_cron_zone_through_renewals(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        row = await a.join("paris", "i", "addr-p", LEASE, "Europe/Paris")
        assert row is not None
        assert row.zone == "Europe/Paris"
        assert (await b.join("plain", "j", "addr-u", LEASE)) is not None  # no zone: UTC
        renewed = await a.renew("paris", "i", LEASE)
        assert renewed is not None
        assert renewed.zone == "Europe/Paris"
        _, rows = await b.leases()
        assert [(r.node, r.zone) for r in rows] == [("paris", "Europe/Paris"), ("plain", "UTC")]
        # A new life of the node records the zone it has now.
        await backend.advance(LEASE + 0.5)
        again = await b.join("paris", "i2", "addr-p", LEASE, "America/New_York")
        assert again is not None
        assert again.zone == "America/New_York"
        _, rows = await a.leases()
        assert {r.node: r.zone for r in rows}["paris"] == "America/New_York"
    finally:
        await close_all([a, b])


# -- directory -----------------------------------------------------------------------


async def test_the_first_claim_owns_with_epoch_one_and_repeating_it_changes_nothing(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        await a.join("n1", "i1", "a1", LEASE)
        await b.join("n2", "i2", "a2", LEASE)
        assert await a.owner("Order", "42") is None
        first = await a.claim_owner("Order", "42", "n1", "i1")
        assert first is not None
        assert (first.node, first.epoch, first.alive) == ("n1", 1, True)
        again = await a.claim_owner("Order", "42", "n1", "i1")
        assert again == first
        other = await b.claim_owner("Order", "42", "n2", "i2")
        assert other == first  # a live owner is never taken over
        assert await b.owner("Order", "42") == first
        # Identities are independent, and kind is part of the key.
        mine = await b.claim_owner("Invoice", "42", "n2", "i2")
        assert mine is not None
        assert (mine.node, mine.epoch) == ("n2", 1)
    finally:
        await close_all([a, b])


async def test_an_expired_owner_is_taken_over_with_a_greater_epoch(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        await a.join("n1", "i1", "a1", LEASE)
        await b.join("n2", "i2", "a2", LEASE)
        await a.claim_owner("Order", "42", "n1", "i1")
        await backend.advance(LEASE / 2)
        await b.renew("n2", "i2", LEASE)
        await backend.advance(LEASE / 2 + 0.5)  # n1 not renewed within its lease
        seen = await b.owner("Order", "42")
        assert seen is not None
        assert seen.node == "n1"
        assert not seen.alive
        taken = await b.claim_owner("Order", "42", "n2", "i2")
        assert taken is not None
        assert (taken.node, taken.epoch, taken.alive) == ("n2", 2, True)
        # The old owner, even after re-joining with a new incarnation, cannot take it back.
        assert await a.join("n1", "i1-bis", "a1", LEASE) is not None
        assert await a.claim_owner("Order", "42", "n1", "i1-bis") == taken
    finally:
        await close_all([a, b])


async def test_a_graceful_leave_frees_the_owners_identities_at_once(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        await a.join("n1", "i1", "a1", LEASE)
        await b.join("n2", "i2", "a2", LEASE)
        await a.claim_owner("Order", "1", "n1", "i1")
        await a.leave("n1", "i1")
        taken = await b.claim_owner("Order", "1", "n2", "i2")
        assert taken is not None
        assert (taken.node, taken.epoch) == ("n2", 2)
    finally:
        await close_all([a, b])


async def test_a_restarted_node_reclaims_its_old_identity_with_a_new_epoch(
    backend: Backend,
) -> None:
    [c] = await opened(backend)
    try:
        await c.join("n1", "first-life", "a", LEASE)
        await c.claim_owner("Order", "1", "n1", "first-life")
        await c.leave("n1", "first-life")
        await c.join("n1", "second-life", "a", LEASE)
        again = await c.claim_owner("Order", "1", "n1", "second-life")
        assert again is not None
        assert (again.incarnation, again.epoch) == ("second-life", 2)
    finally:
        await c.close()


async def test_a_node_without_a_live_lease_cannot_claim(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        assert await a.claim_owner("Order", "1", "ghost", "x") is None
        await a.join("n1", "i1", "a1", LEASE)
        await a.claim_owner("Order", "1", "n1", "i1")
        await backend.advance(LEASE + 0.5)
        # n2 never joined; n1 expired: nobody can claim, the entry stays as it was.
        held = await b.claim_owner("Order", "1", "n2", "i2")
        assert held is not None
        assert (held.node, held.epoch, held.alive) == ("n1", 1, False)
    finally:
        await close_all([a, b])


async def test_concurrent_takeovers_elect_exactly_one_owner(backend: Backend) -> None:
    coordinators = await opened(backend, 6)
    try:
        for i, c in enumerate(coordinators):
            await c.join(f"n{i}", f"i{i}", f"a{i}", LEASE)
        results = await asyncio.gather(
            *(c.claim_owner("Order", "race", f"n{i}", f"i{i}") for i, c in enumerate(coordinators))
        )
        owners = {(r.node, r.epoch) for r in results if r is not None}
        assert len(owners) == 1
        assert next(iter(owners))[1] == 1
    finally:
        await close_all(coordinators)


async def test_a_floor_lifts_the_epoch_of_a_new_entry_a_takeover_and_the_callers_own(
    backend: Backend,
) -> None:
    # Issue 19: a coordinator that lost its directory starts again at epoch 1 while the
    # durable store has fenced higher epochs; the floor keeps the epoch above the fence.
    a, b = await opened(backend, 2)
    try:
        await a.join("n1", "i1", "a1", LEASE)
        await b.join("n2", "i2", "a2", LEASE)
        first = await a.claim_owner("Order", "1", "n1", "i1", floor=5)
        assert first is not None
        assert (first.node, first.epoch) == ("n1", 5)
        # The caller's own entry below the floor is lifted; at or above it, unchanged.
        lifted = await a.claim_owner("Order", "1", "n1", "i1", floor=8)
        assert lifted is not None
        assert (lifted.node, lifted.epoch) == ("n1", 8)
        assert await a.claim_owner("Order", "1", "n1", "i1", floor=3) == lifted
        assert await a.owner("Order", "1") == lifted
        # Another live owner's entry is never touched, whatever the floor.
        assert await b.claim_owner("Order", "1", "n2", "i2", floor=50) == lifted
        # A takeover takes max(epoch + 1, floor).
        await a.leave("n1", "i1")
        taken = await b.claim_owner("Order", "1", "n2", "i2", floor=4)
        assert taken is not None
        assert (taken.node, taken.epoch) == ("n2", 9)
        await b.leave("n2", "i2")
        await a.join("n1", "i1b", "a1", LEASE)
        again = await a.claim_owner("Order", "1", "n1", "i1b", floor=20)
        assert again is not None
        assert (again.node, again.epoch) == ("n1", 20)
        # A caller without a live lease changes nothing, floor or not.
        assert await b.claim_owner("Order", "1", "n2", "i2", floor=99) == again
    finally:
        await close_all([a, b])


async def test_place_puts_a_free_identity_on_the_rendezvous_choice_of_the_live_leases(
    backend: Backend,
) -> None:
    # Issue 19: placement on the coordinator's view, in the claim's own step.
    from tocsin.cluster._rendezvous import rendezvous_owner

    a, b, c = await opened(backend, 3)
    try:
        await a.join("n1", "i1", "a1", LEASE)
        await b.join("n2", "i2", "a2", LEASE)
        await c.join("n3", "i3", "a3", LEASE)
        await backend.advance(LEASE / 2)
        await a.renew("n1", "i1", LEASE)
        await b.renew("n2", "i2", LEASE)
        await backend.advance(LEASE / 2 + 0.5)  # n3 expired: never placed on
        incarnations = {"n1": "i1", "n2": "i2"}
        placed = {"n1": 0, "n2": 0}
        for i in range(40):
            identity = f"ident-{i}-é"
            entry = await a.claim_owner("Order", identity, "n1", "i1", place=True)
            assert entry is not None
            expected = rendezvous_owner("Order", identity, ["n1", "n2"])
            assert entry.node == expected, identity
            assert (entry.incarnation, entry.epoch) == (incarnations[entry.node], 1)
            assert await b.owner("Order", identity) == entry
            placed[entry.node] += 1
            # The placed node finds it already its own on arrival.
            assert await b.claim_owner("Order", identity, "n2", "i2") == entry
        assert placed["n1"] > 0
        assert placed["n2"] > 0
        # A live owner is kept; place changes nothing then.
        entry = await b.owner("Order", "ident-0-é")
        assert await a.claim_owner("Order", "ident-0-é", "n1", "i1", place=True) == entry
    finally:
        await close_all([a, b, c])


async def test_hand_over_gives_an_owned_entry_to_the_preferred_live_node(
    backend: Backend,
) -> None:
    # Issue 19, rebalancing: the owner hands an idle identity to the node it now prefers.
    from tocsin.cluster._rendezvous import rendezvous_owner

    a, b = await opened(backend, 2)
    try:
        await a.join("n1", "i1", "a1", LEASE)
        identities = [f"h-{i}" for i in range(30)]
        for identity in identities:
            await a.claim_owner("Order", identity, "n1", "i1")
        await b.join("n2", "i2", "a2", LEASE)
        moved = 0
        for identity in identities:
            # Only the owner can hand over; another node changes nothing.
            before = await b.owner("Order", identity)
            assert await b.hand_over("Order", identity, "n2", "i2") == before
            after = await a.hand_over("Order", identity, "n1", "i1", floor=7)
            assert after is not None
            if rendezvous_owner("Order", identity, ["n1", "n2"]) == "n2":
                assert (after.node, after.incarnation, after.epoch) == ("n2", "i2", 7)
                moved += 1
                # n2 finds it its own on arrival.
                assert await b.claim_owner("Order", identity, "n2", "i2") == after
            else:
                assert after == before  # still preferred: nothing changes
        assert 0 < moved < len(identities)
        assert await a.hand_over("Order", "never-owned", "n1", "i1") is None
    finally:
        await close_all([a, b])


# -- cron single fire ----------------------------------------------------------------


async def test_the_first_claim_of_a_tick_wins_and_every_later_one_loses(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        now = await a.now()
        fire = float(int(now))
        assert (
            await a.claim_tick(f"daily@{fire}", "daily", fire, 60, "n1")
        ).outcome is ClaimOutcome.WON
        assert (
            await b.claim_tick(f"daily@{fire}", "daily", fire, 60, "n2")
        ).outcome is ClaimOutcome.LOST
        assert (
            await a.claim_tick(f"daily@{fire}", "daily", fire, 60, "n1")
        ).outcome is ClaimOutcome.LOST
        nxt = fire + 60
        assert (
            await b.claim_tick(f"daily@{nxt}", "daily", nxt, 60, "n2")
        ).outcome is ClaimOutcome.WON
    finally:
        await close_all([a, b])


async def test_concurrent_claims_of_one_tick_have_exactly_one_winner(backend: Backend) -> None:
    coordinators = await opened(backend, 8)
    try:
        fire = float(int(await coordinators[0].now()))
        outcomes = await asyncio.gather(
            *(
                c.claim_tick(f"r@{fire}", "r", fire, 60, f"n{i}")
                for i, c in enumerate(coordinators)
                for _ in range(3)
            )
        )
        got = [claim.outcome for claim in outcomes]
        assert got.count(ClaimOutcome.WON) == 1
        assert got.count(ClaimOutcome.LOST) == len(got) - 1
    finally:
        await close_all(coordinators)


async def test_a_tick_reached_more_than_the_ttl_late_is_skipped_without_claiming(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        await backend.advance(61)
        assert (await a.claim_tick(f"r@{fire}", "r", fire, 60, "n1")).outcome is ClaimOutcome.LATE
        # Nothing was written: a node that is not late (a longer TTL) can still win it.
        assert (await b.claim_tick(f"r@{fire}", "r", fire, 120, "n2")).outcome is ClaimOutcome.WON
    finally:
        await close_all([a, b])


async def test_a_claim_is_held_for_the_ttl_after_the_fire_instant_even_when_early(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now())) + 100  # a node whose clock runs ahead claims early
        assert (await a.claim_tick(f"r@{fire}", "r", fire, 60, "n1")).outcome is ClaimOutcome.WON
        await backend.advance(150)  # past now+ttl of the claim, not past fire+ttl
        assert (await b.claim_tick(f"r@{fire}", "r", fire, 60, "n2")).outcome is ClaimOutcome.LOST
    finally:
        await close_all([a, b])


async def test_a_paused_reference_is_never_claimed_until_resumed(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        await a.set_cron_paused("nightly", True)
        await a.set_cron_paused("nightly", True)  # idempotent
        assert await b.paused_crons() == frozenset({"nightly"})
        key = f"nightly@{fire}"
        assert (await b.claim_tick(key, "nightly", fire, 60, "n2")).outcome is ClaimOutcome.PAUSED
        assert (
            await b.claim_tick(f"other@{fire}", "other", fire, 60, "n2")
        ).outcome is ClaimOutcome.WON
        await b.set_cron_paused("nightly", False)
        await b.set_cron_paused("nightly", False)
        assert await a.paused_crons() == frozenset()
        assert (await a.claim_tick(key, "nightly", fire, 60, "n1")).outcome is ClaimOutcome.WON
    finally:
        await close_all([a, b])


async def test_a_pause_note_is_kept_until_forgotten(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        assert await b.pause_notes() == {}
        note = PauseNote("db migration", 1_900_000_000.5, "node-a")
        await a.set_pause_note("nightly", note)
        await a.set_pause_note("hourly", PauseNote(None, 1_900_000_001.0, "tocsin-cli@host"))
        assert await b.pause_notes() == {
            "nightly": note,
            "hourly": PauseNote(None, 1_900_000_001.0, "tocsin-cli@host"),
        }
        await b.set_pause_note("nightly", PauseNote("again", 1_900_000_002.0, "node-b"))
        assert (await a.pause_notes())["nightly"].note == "again"  # replaced
        await b.set_pause_note("nightly", None)
        await b.set_pause_note("nightly", None)  # forgetting twice is a no-op
        assert set(await a.pause_notes()) == {"hourly"}
    finally:
        await close_all([a, b])


async def test_a_closed_coordinator_raises_coordinator_error(backend: Backend) -> None:
    c = backend.make()
    with pytest.raises(CoordinatorError, match="not open"):
        await c.claim_tick("r@1", "r", 1.0, 60, "n1")
    await c.open()
    await c.open()  # idempotent
    await c.close()
    await c.close()
    with pytest.raises(CoordinatorError, match="not open"):
        await c.leases()


async def test_leases_expired_for_over_an_hour_are_purged_at_the_next_join(
    backend: Backend,
) -> None:
    [c] = await opened(backend)
    try:
        await c.join("old", "i", "a", LEASE)
        await backend.advance(1800)
        await c.join("recent", "j", "b", LEASE)
        await backend.advance(1800 + LEASE + 1)
        await c.join("new", "k", "c", LEASE)
        _, rows = await c.leases()
        assert [(r.node, r.alive) for r in rows] == [("new", True), ("recent", False)]
    finally:
        await c.close()


async def test_a_paused_reference_reads_paused_even_when_late(backend: Backend) -> None:
    [c] = await opened(backend)
    try:
        fire = float(int(await c.now()))
        await c.set_cron_paused("r", True)
        await backend.advance(120)
        assert (await c.claim_tick(f"r@{fire}", "r", fire, 60, "n1")).outcome is ClaimOutcome.PAUSED
        await c.set_cron_paused("r", False)
        assert (await c.claim_tick(f"r@{fire}", "r", fire, 60, "n1")).outcome is ClaimOutcome.LATE
    finally:
        await c.close()


# -- fences, at_least_once, retention, backfill (issue 23) ----------------------------


async def test_every_grant_of_a_reference_gets_a_larger_fence(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        fences = []
        for i in range(4):
            at = fire + 60 * i
            won = await (a if i % 2 else b).claim_tick(f"r@{at}", "r", at, 60, "n")
            assert won.outcome is ClaimOutcome.WON
            fences.append(won.fence)
            lost = await a.claim_tick(f"r@{at}", "r", at, 60, "m")
            assert (lost.outcome, lost.fence, lost.retry_in) == (ClaimOutcome.LOST, 0, None)
        assert fences == sorted(fences)
        assert len(set(fences)) == 4
        assert fences[0] >= least_fence(fire)  # at least the clock in microseconds
        other = await b.claim_tick(f"o@{fire}", "o", fire, 60, "n")
        assert other.fence >= least_fence(fire)
    finally:
        await close_all([a, b])


async def _lose_data(backend: Backend, coordinators: list[Coordinator]) -> None:
    """Empty the coordinator as a reset would (Redis flushed, a PostgreSQL restore of an
    empty database, ``coordinator.db`` deleted): every claim and every fence gone."""
    probe = coordinators[0]
    if backend.name == "postgres":
        await probe._require().execute(  # type: ignore[attr-defined]
            "TRUNCATE tocsin_cluster_claims, tocsin_cluster_fences"
        )
    elif backend.name == "redis":
        client = probe._client  # type: ignore[attr-defined]
        keys = [key async for key in client.scan_iter(match=probe.prefix + "*")]  # type: ignore[attr-defined]
        assert keys
        await client.delete(*keys)
    else:  # memory and SQLite: the state goes with its last user, or with the file
        await close_all(coordinators)
        if backend.name == "sqlite":
            for path in Path(probe.path).parent.glob("coordinator.db*"):  # type: ignore[attr-defined]
                path.unlink()
        for coordinator in coordinators:
            await coordinator.open()


async def test_fences_keep_growing_across_a_coordinator_that_lost_its_data(
    backend: Backend,
) -> None:
    # A claim that finds its row missing after a reset must not carry a smaller fence
    # than the grant it repeats: a handler keeping the largest fence it saw would take
    # the zombie's older delivery for the newer one. Issued before and after the loss.
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        before = []
        for i in range(3):
            won = await a.claim_tick(f"r@{fire + i}", "r", fire + i, 60, "n", lease=5.0)
            assert won.outcome is ClaimOutcome.WON
            before.append(won.fence)
        [batched] = await claim_ticks(a, [TickRequest(f"r@{fire + 3}", "r", fire + 3, 60)], "n")
        before.append(batched.fence)
        await _lose_data(backend, [a, b])
        await backend.advance(1.0)  # a reset takes time: at least a second here
        # The watcher's re-claim of an instant claimed before: its row is missing, so it
        # is won again, with a fence above every one granted before the loss.
        again = await b.claim_tick(f"r@{fire + 2}", "r", fire + 2, 60, "m", lease=5.0)
        assert again.outcome is ClaimOutcome.WON
        assert again.fence > max(before), (again.fence, before)
        # And in a batch, for that reference and a reference never seen.
        claims = await claim_ticks(
            b,
            [
                TickRequest(f"r@{fire + 4}", "r", fire + 4, 60),
                TickRequest(f"s@{fire}", "s", fire, 60),
            ],
            "m",
        )
        assert [c.outcome for c in claims] == [ClaimOutcome.WON, ClaimOutcome.WON]
        assert claims[0].fence > again.fence
        assert claims[1].fence > max(before)
    finally:
        await close_all([a, b])


async def test_an_undone_at_least_once_claim_is_lost_until_its_lease_passes_then_reclaimed(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        key = f"r@{fire}"
        first = await a.claim_tick(key, "r", fire, 60, "n1", lease=5.0)
        assert first.outcome is ClaimOutcome.WON
        lost = await b.claim_tick(key, "r", fire, 60, "n2", lease=5.0)
        assert lost.outcome is ClaimOutcome.LOST
        assert lost.retry_in is not None
        assert 4.0 < lost.retry_in <= 5.0
        # An at_most_once caller never takes an at_least_once claim over.
        await backend.advance(6)
        assert (await b.claim_tick(key, "r", fire, 60, "n2")).outcome is ClaimOutcome.LOST
        again = await b.claim_tick(key, "r", fire, 60, "n2", lease=5.0)
        assert again.outcome is ClaimOutcome.WON
        assert again.fence > first.fence
        # The replaced winner can neither renew nor finish it any more.
        assert await a.renew_tick(key, first.fence, 5.0) is False
        assert await a.finish_tick(key, first.fence) is False
        assert await b.finish_tick(key, again.fence) is True
        done = await a.claim_tick(key, "r", fire, 60, "n1", lease=5.0)
        assert (done.outcome, done.retry_in) == (ClaimOutcome.LOST, None)
        await backend.advance(30)
        assert (await a.claim_tick(key, "r", fire, 60, "n1", lease=5.0)).retry_in is None
    finally:
        await close_all([a, b])


async def test_renewing_keeps_an_at_least_once_claim_held(backend: Backend) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        key = f"r@{fire}"
        won = await a.claim_tick(key, "r", fire, 60, "n1", lease=3.0)
        for _ in range(4):
            await backend.advance(2)
            assert await a.renew_tick(key, won.fence, 3.0) is True
            lost = await b.claim_tick(key, "r", fire, 60, "n2", lease=3.0)
            assert lost.outcome is ClaimOutcome.LOST
            assert lost.retry_in is not None
            assert lost.retry_in > 2.0
        assert await a.finish_tick(key, won.fence) is True
        assert await a.renew_tick(key, won.fence, 3.0) is False  # done: nothing to renew
    finally:
        await close_all([a, b])


async def test_concurrent_reclaims_of_a_lapsed_claim_have_exactly_one_winner(
    backend: Backend,
) -> None:
    coordinators = await opened(backend, 6)
    try:
        fire = float(int(await coordinators[0].now()))
        key = f"r@{fire}"
        first = await coordinators[0].claim_tick(key, "r", fire, 60, "n0", lease=2.0)
        await backend.advance(3)
        claims = await asyncio.gather(
            *(
                c.claim_tick(key, "r", fire, 60, f"n{i}", lease=2.0)
                for i, c in enumerate(coordinators)
            )
        )
        winners = [c for c in claims if c.outcome is ClaimOutcome.WON]
        assert len(winners) == 1
        assert winners[0].fence > first.fence
        assert all(c.retry_in is not None for c in claims if c.outcome is ClaimOutcome.LOST)
    finally:
        await close_all(coordinators)


async def test_claims_are_kept_for_the_retention_and_a_backfill_skips_the_lateness_check(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        fire = float(int(await a.now()))
        key = f"r@{fire}"
        assert (await a.claim_tick(key, "r", fire, 60, "n1", keep=3600)).outcome is ClaimOutcome.WON
        await backend.advance(1800)  # long past the TTL, within the retention
        assert (await b.claim_tick(key, "r", fire, 60, "n2")).outcome is ClaimOutcome.LATE
        kept = await b.claim_tick(key, "r", fire, 60, "n2", keep=3600, backfill=True)
        assert kept.outcome is ClaimOutcome.LOST  # the backfill does not deliver it again
        # An instant that never fired is claimed by the backfill, however old.
        old = fire - 600
        filled = await b.claim_tick(f"r@{old}", "r", old, 60, "n2", keep=3600, backfill=True)
        assert filled.outcome is ClaimOutcome.WON
        assert (
            await a.claim_tick(f"r@{old}", "r", old, 60, "n1", keep=3600, backfill=True)
        ).outcome is ClaimOutcome.LOST
        # Past the retention the claim is gone: a backfill would claim it again.
        await backend.advance(1801 + 60)
        again = await a.claim_tick(key, "r", fire, 60, "n1", keep=3600, backfill=True)
        assert again.outcome is ClaimOutcome.WON
        # Paused wins over backfill too.
        await a.set_cron_paused("r", True)
        paused = await a.claim_tick(f"r@{fire - 1}", "r", fire - 1, 60, "n1", backfill=True)
        assert paused.outcome is ClaimOutcome.PAUSED
    finally:
        await close_all([a, b])


# -- claims in batches -----------------------------------------------------------------


def _batch(fire: float, references: list[str], **options: Any) -> list[TickRequest]:
    return [TickRequest(f"{r}@{fire}", r, fire, 60.0, **options) for r in references]


async def test_a_batch_is_one_round_trip_that_decides_each_tick_as_a_single_claim_would(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        assert isinstance(a, BatchCoordinator)
        assert isinstance(b, BatchCoordinator)
        fire = float(int(await a.now()))
        await a.set_cron_paused("paused", True)
        # "taken" is held by another node; "late" was reached more than its TTL late.
        assert (await b.claim_tick(f"taken@{fire}", "taken", fire, 60, "n2")).outcome is (
            ClaimOutcome.WON
        )
        requests = [
            *_batch(fire, ["a", "taken", "paused", "b"]),
            TickRequest(f"late@{fire - 120}", "late", fire - 120, 60.0),
            TickRequest(f"old@{fire - 120}", "old", fire - 120, 60.0, backfill=True),
        ]
        claims = await a.claim_ticks(requests, "n1")
        assert [claim.outcome for claim in claims] == [
            ClaimOutcome.WON,
            ClaimOutcome.LOST,
            ClaimOutcome.PAUSED,
            ClaimOutcome.WON,
            ClaimOutcome.LATE,
            ClaimOutcome.WON,
        ]
        assert all(claims[i].fence >= 1 for i in (0, 3, 5))
        assert all(claims[i].fence == 0 for i in (1, 2, 4))
        # Nothing was written for the paused or late ticks; the won ones are held.
        await a.set_cron_paused("paused", False)
        again = await b.claim_ticks([*_batch(fire, ["a", "b", "paused"]), requests[4]], "n2")
        assert [claim.outcome for claim in again] == [
            ClaimOutcome.LOST,
            ClaimOutcome.LOST,
            ClaimOutcome.WON,
            ClaimOutcome.LATE,
        ]
        assert await a.claim_ticks([], "n1") == []
    finally:
        await close_all([a, b])


async def test_a_batch_grants_one_reference_growing_fences_in_the_order_given(
    backend: Backend,
) -> None:
    [c] = await opened(backend)
    try:
        assert isinstance(c, BatchCoordinator)
        fire = float(int(await c.now()))
        single = await c.claim_tick(f"r@{fire - 1}", "r", fire - 1, 60, "n1")
        claims = await c.claim_ticks(
            [
                TickRequest(f"r@{fire}", "r", fire, 60.0),
                TickRequest(f"s@{fire}", "s", fire, 60.0),
                TickRequest(f"r@{fire + 1}", "r", fire + 1, 60.0, backfill=True),
                TickRequest(f"r@{fire}", "r", fire, 60.0),  # the same key again: held
            ],
            "n1",
        )
        assert [claim.outcome for claim in claims] == [
            ClaimOutcome.WON,
            ClaimOutcome.WON,
            ClaimOutcome.WON,
            ClaimOutcome.LOST,
        ]
        assert single.fence < claims[0].fence < claims[2].fence
    finally:
        await c.close()


async def test_concurrent_batches_of_the_same_instants_grant_each_tick_once(
    backend: Backend,
) -> None:
    # Three nodes claim the same 200 ticks at once, each in its own order: every tick has
    # exactly one winner, and the batches neither deadlock nor fail.
    coordinators = await opened(backend, 3)
    try:
        fire = float(int(await coordinators[0].now()))
        references = [f"ref-{i:03d}" for i in range(200)]
        orders = [references, references[::-1], references[100:] + references[:100]]
        answers = await asyncio.gather(
            *(
                c.claim_ticks(_batch(fire, order), f"n{i}")  # type: ignore[attr-defined]
                for i, (c, order) in enumerate(zip(coordinators, orders, strict=True))
            )
        )
        winners: dict[str, int] = {}
        for order, claims in zip(orders, answers, strict=True):
            for reference, claim in zip(order, claims, strict=True):
                assert claim.outcome in (ClaimOutcome.WON, ClaimOutcome.LOST)
                if claim.outcome is ClaimOutcome.WON:
                    winners[reference] = winners.get(reference, 0) + 1
        assert winners == dict.fromkeys(references, 1)
    finally:
        await close_all(coordinators)


async def test_a_batch_of_at_least_once_claims_reclaims_the_lapsed_ones(
    backend: Backend,
) -> None:
    a, b = await opened(backend, 2)
    try:
        assert isinstance(a, BatchCoordinator)
        assert isinstance(b, BatchCoordinator)
        fire = float(int(await a.now()))
        held = await a.claim_ticks(_batch(fire, ["x", "y"], lease=5.0), "n1")
        assert [claim.outcome for claim in held] == [ClaimOutcome.WON, ClaimOutcome.WON]
        lost = await b.claim_ticks(_batch(fire, ["x", "y"], lease=5.0), "n2")
        assert [claim.outcome for claim in lost] == [ClaimOutcome.LOST, ClaimOutcome.LOST]
        assert all(claim.retry_in is not None and 4.0 < claim.retry_in <= 5.0 for claim in lost)
        assert await a.finish_tick(f"x@{fire}", held[0].fence) is True  # x done; y lapses
        await backend.advance(6)
        again = await b.claim_ticks(_batch(fire, ["x", "y"], lease=5.0), "n2")
        assert (again[0].outcome, again[0].retry_in) == (ClaimOutcome.LOST, None)
        assert again[1].outcome is ClaimOutcome.WON
        assert again[1].fence > held[1].fence
    finally:
        await close_all([a, b])


async def test_the_default_batch_loops_the_single_claim(backend: Backend) -> None:
    # A coordinator written before claim_ticks (only claim_tick) is claimed one tick at a
    # time by claim_ticks(), with the same answers.
    [c] = await opened(backend)

    class Single:
        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def claim_tick(self, *args: Any, **kwargs: Any) -> Any:
            return await self.inner.claim_tick(*args, **kwargs)

    try:
        fire = float(int(await c.now()))
        requests = [*_batch(fire, ["p", "q"]), TickRequest(f"p@{fire}", "p", fire, 60.0)]
        claims = await claim_ticks(Single(c), requests, "n1")  # type: ignore[arg-type]
        assert [claim.outcome for claim in claims] == [
            ClaimOutcome.WON,
            ClaimOutcome.WON,
            ClaimOutcome.LOST,
        ]
    finally:
        await c.close()
