# SPDX-License-Identifier: Apache-2.0
"""Cron single fire on memory:// with one ManualClock: one delivery per tick cluster-wide."""

from __future__ import annotations

import asyncio
import logging
import math
from datetime import UTC, datetime
from functools import partial
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from tests.cluster.cluster_support import Flaky, World

from tocsin import Outcome
from tocsin.cluster import ClusterNode
from tocsin.cluster._single_fire import (
    MAX_TTL,
    MIN_TTL,
    claim_ttl,
    cron_period,
    require_reference,
    tick_key,
)
from tocsin.cron import CronExpression
from tocsin.errors import ScheduleReferenceRequiredError


def _note(into: list[Any], value: object, *_: object) -> bool:
    into.append(value)
    return True


def test_the_claim_key_is_the_reference_at_the_utc_fire_instant() -> None:
    instant = datetime(2027, 3, 1, 9, 0, tzinfo=UTC).timestamp()
    assert tick_key("nightly", instant) == "nightly@2027-03-01T09:00:00Z"
    assert tick_key("r", instant + 0.25) == "r@2027-03-01T09:00:00.250Z"


def test_the_ttl_is_the_period_clamped_to_a_minute_and_a_day() -> None:
    assert claim_ttl(1.0) == MIN_TTL == 60.0
    assert claim_ttl(300.0) == 300.0
    assert claim_ttl(7 * 86_400.0) == MAX_TTL == 86_400.0
    assert claim_ttl(math.inf) == MAX_TTL


def test_the_period_is_the_gap_to_the_next_fire_instant() -> None:
    every_5_min = CronExpression.parse("0 */5 * * * ?")
    at = datetime(2027, 3, 1, 9, 0, tzinfo=UTC).timestamp()
    assert cron_period(every_5_min, at) == 300.0
    twice_a_day = CronExpression.parse("0 0 9,17 * * ?", timezone="UTC")
    assert cron_period(twice_a_day, at) == 8 * 3600.0
    once = CronExpression.parse("0 0 9 1 3 ? 2027")
    assert cron_period(once, at) == math.inf
    # A daily job in a DST zone: the spring-forward day is 23 hours long.
    daily = CronExpression.parse("0 0 9 * * ?")
    paris = ZoneInfo("Europe/Paris")
    before_dst = datetime(2027, 3, 27, 9, 0, tzinfo=paris).timestamp()
    assert cron_period(daily, before_dst, paris) == 23 * 3600.0


@pytest.mark.parametrize("reference", [None, ""])
def test_cron_in_cluster_mode_needs_a_reference(reference: str | None) -> None:
    with pytest.raises(ScheduleReferenceRequiredError, match="explicit `reference`"):
        require_reference(reference)
    assert require_reference("nightly") == "nightly"


async def test_exactly_one_node_delivers_each_tick() -> None:
    world = World()
    try:
        nodes = await world.start("a", "b", "c")
        fire = world.clock.wall()
        results = await asyncio.gather(*(n.cron_claims.claim("r", fire, 60) for n in nodes))
        assert sorted(results) == [False, False, True]
        won = sum(n.metrics().claims_won for n in nodes)
        lost = sum(n.metrics().claims_lost for n in nodes)
        assert (won, lost) == (1, 2)
    finally:
        await world.close()


async def test_an_hour_of_a_minutely_cron_on_three_nodes_delivers_each_tick_once() -> None:
    world = World(lease=3.0)
    expression = CronExpression.parse("0 * * * * ?")
    delivered: list[tuple[str, float]] = []

    async def trigger(node: ClusterNode) -> None:
        # What each node's scheduler does: at each fire instant, claim, deliver if won.
        nxt = expression.next_after(datetime.fromtimestamp(world.clock.wall(), UTC))
        while nxt is not None and len(delivered) < 60:
            fire = nxt.timestamp()
            await world.clock_sleep_until(fire)
            if await node.cron_claims.claim("minutely", fire, cron_period(expression, fire)):
                delivered.append((node.name, fire))
            nxt = expression.next_after(nxt)

    try:
        nodes = await world.start("a", "b", "c")
        world.clock.autojump = True
        tasks = [asyncio.create_task(trigger(n)) for n in nodes]
        await asyncio.wait_for(asyncio.gather(*tasks), 60)
        fires = [fire for _, fire in delivered]
        assert len(fires) == len(set(fires)) >= 60
        assert sum(n.metrics().claims_won for n in nodes) == len(fires)
        assert {name for name, _ in delivered} <= {"a", "b", "c"}
    finally:
        await world.close()


async def test_a_tick_reached_more_than_the_ttl_late_is_skipped_and_counted() -> None:
    world = World()
    try:
        [a] = await world.start("a")
        fire = world.clock.wall()
        await world.clock.advance(61)
        assert await a.cron_claims.claim("r", fire, 1.0) is False
        assert a.metrics().claims_skipped_late == 1
        assert await a.cron_claims.claim("r", fire + 60, 1.0) is True
    finally:
        await world.close()


async def test_a_paused_reference_is_not_claimed_by_any_node_even_one_that_joins_later() -> None:
    world = World()
    try:
        [a] = await world.start("a")
        await a.pause_cron("nightly")
        await a.pause_cron("nightly")  # a no-op
        [c] = await world.start("c")
        assert await c.paused_crons() == frozenset({"nightly"})
        fire = world.clock.wall()
        assert await c.cron_claims.claim("nightly", fire, 60) is False
        assert c.metrics().claims_skipped_paused == 1
        await c.resume_cron("nightly")
        assert await a.cron_claims.claim("nightly", fire, 60) is True
    finally:
        await world.close()


async def test_pause_cron_refuses_a_reference_that_is_not_a_non_empty_str() -> None:
    world = World()
    try:
        [a] = await world.start("a")
        with pytest.raises(TypeError, match="`reference` must be a str, got int"):
            await a.pause_cron(42)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="non-empty"):
            await a.resume_cron("")
    finally:
        await world.close()


@pytest.mark.parametrize("mode", ["before", "after"])
async def test_a_claim_that_errs_delivers_nothing_and_is_counted(mode: str) -> None:
    world = World()
    flaky = Flaky(world.coordinator())
    await flaky.inner.open()
    try:
        a = world.node("a", coordinator=flaky)
        [b] = await world.start("b")
        await a.start()
        flaky.fail["claim_tick"] = mode
        fire = world.clock.wall()
        assert await a.cron_claims.claim("r", fire, 60) is False
        assert a.metrics().claims_failed == 1
        # "after": the claim was written, so nobody else delivers that tick either: the
        # tick is lost, never doubled. "before": nothing was written; another node wins.
        assert await b.cron_claims.claim("r", fire, 60) is (mode == "before")
    finally:
        await world.close()
        await flaky.inner.close()


async def test_failed_claims_log_one_warning_per_outage(caplog: pytest.LogCaptureFixture) -> None:
    # Issue 20, item 8: one WARNING per failed claim per node per tick for the whole outage.
    world = World()
    flaky = Flaky(world.coordinator())
    await flaky.inner.open()
    try:
        a = world.node("a", coordinator=flaky)
        await a.start()
        flaky.fail["claim_tick"] = "before"
        with caplog.at_level(logging.INFO, logger="tocsin.cluster"):
            for tick in range(5):
                assert await a.cron_claims.claim("r", world.clock.wall() + tick, 60) is False
            del flaky.fail["claim_tick"]
            assert await a.cron_claims.claim("r", world.clock.wall() + 10, 60) is True
            flaky.fail["claim_tick"] = "before"  # a second outage is logged again
            assert await a.cron_claims.claim("r", world.clock.wall() + 11, 60) is False
        messages = [r.getMessage() for r in caplog.records]
        failing = [m for m in messages if "cron tick claims failing" in m]
        assert len(failing) == 2, messages
        assert "injected failure before claim_tick" in failing[0]
        assert sum("answers again" in m for m in messages) == 1
        assert a.metrics().claims_failed == 6
    finally:
        await world.close()
        await flaky.inner.close()


async def test_deliver_if_won_delivers_on_exactly_one_node_from_a_timer_callback() -> None:
    world = World()
    delivered: list[str] = []
    try:
        nodes = await world.start("a", "b", "c")
        fire = world.clock.wall() + 5
        skipped: list[str] = []

        def at_fire(node: ClusterNode) -> None:
            # What the scheduler's timer does at the fire instant: never blocks.
            node.cron_claims.deliver_if_won(
                "r",
                fire,
                60,
                partial(_note, delivered, node.name),
                partial(_note, skipped, node.name),
            )

        for node in nodes:
            world.clock.call_at(world.clock.monotonic() + 5, partial(at_fire, node))
        await world.clock.advance(5)  # returns after the claims and the delivery
        assert len(delivered) == 1
        assert sorted(delivered + skipped) == ["a", "b", "c"]
    finally:
        await world.close()


async def test_claims_in_flight_at_stop_deliver_nothing() -> None:
    world = World()
    delivered: list[str] = []
    try:
        [a] = await world.start("a")
        skipped: list[str] = []
        a.cron_claims.deliver_if_won(
            "r",
            world.clock.wall(),
            60,
            partial(_note, delivered, "a"),
            partial(_note, skipped, "a"),
        )
        await a.stop()
        world.nodes.remove(a)
        await world.clock.advance(1)
        assert delivered == []
        assert skipped == ["a"]  # the scheduler learns the tick was not delivered
    finally:
        await world.close()


class _Frozen:
    """A coordinator whose claims (single or batched) wait until ``thaw`` is set (a
    SIGSTOPped coordinator), recording the instants claimed."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.url = inner.url
        self.thaw = asyncio.Event()
        self.thaw.set()
        self.claimed: list[float] = []
        self.batches: list[int] = []  # the size of each batched claim

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def claim_tick(
        self, key: str, reference: str, fire_at: float, *rest: Any, **kw: Any
    ) -> Any:
        self.claimed.append(fire_at)
        await self.thaw.wait()
        return await self.inner.claim_tick(key, reference, fire_at, *rest, **kw)

    async def claim_ticks(self, requests: Any, node: str) -> Any:
        self.claimed.extend(request.fire_at for request in requests)
        self.batches.append(len(requests))
        await self.thaw.wait()
        return await self.inner.claim_ticks(requests, node)


async def test_one_claim_in_flight_per_reference_and_a_frozen_coordinator_releases_no_burst() -> (
    None
):
    # Issue 20, item 6: after a 20 s freeze, 18 queued claims were granted and their ticks
    # delivered within 40 ms, out of order. Now: the first claim waits; the later ticks
    # coalesce into the latest, claimed once the first answers; in instant order.
    world = World(lease=60.0)  # the lease outlives the freeze: only the claims wait
    frozen = _Frozen(world.coordinator())
    await frozen.inner.open()
    try:
        a = world.node("a", coordinator=frozen)
        await a.start()
        delivered: list[float] = []
        skipped: list[float] = []
        # Instants already reached: a claim of a future one waits for it (claim
        # earliness, cluster/_time.py), and this clock does not move.
        start = world.clock.wall() - 20
        frozen.thaw.clear()
        for second in range(20):  # one tick a second while the coordinator is frozen
            fire = start + second
            a.cron_claims.deliver_if_won(
                "r",
                fire,
                1.0,
                partial(_note, delivered, fire),
                partial(_note, skipped, fire),
            )
            await asyncio.sleep(0)
        assert frozen.claimed == [start]  # one claim in flight, not twenty
        assert a.metrics().claims_coalesced == 18  # ticks 1..18 gave way to tick 19
        assert skipped == [start + s for s in range(1, 19)]
        frozen.thaw.set()
        await a.cron_claims.wait_idle()
        assert frozen.claimed == [start, start + 19]
        assert delivered == [start, start + 19]  # in instant order
        # Another reference is not held up by this one's claim.
        frozen.thaw.clear()
        a.cron_claims.deliver_if_won("r", start + 20, 1.0, lambda fence, done: True)
        a.cron_claims.deliver_if_won("other", start + 20, 1.0, lambda fence, done: True)
        for _ in range(2):  # the turn the claims are queued in, then the batch's task
            await asyncio.sleep(0)
        assert frozen.claimed[-2:] == [start + 20, start + 20]  # claimed together
        frozen.thaw.set()
        await a.cron_claims.wait_idle()
    finally:
        await world.close()
        await frozen.inner.close()


async def test_at_least_once_ticks_behind_a_frozen_claim_are_queued_then_claimed_in_one_batch() -> (
    None
):
    # Issue 30: at_least_once ticks that come due while a claim of their reference is in
    # flight are never coalesced away: they all wait, and the claim's answer releases
    # them together, every reference's in one round trip, each within its window.
    world = World(lease=60.0)
    frozen = _Frozen(world.coordinator())
    await frozen.inner.open()
    try:
        a = world.node("a", coordinator=frozen)
        await a.start()
        references = ("r1", "r2", "r3")
        delivered: dict[str, list[float]] = {r: [] for r in references}
        skipped: list[tuple[str, object]] = []
        start = world.clock.wall() - 10  # reached: claims do not wait for their instants
        frozen.thaw.clear()
        for second in range(10):
            fire = start + second
            for reference in references:  # one timer callback: one batch per instant
                a.cron_claims.deliver_if_won(
                    reference,
                    fire,
                    1.0,
                    partial(_note, delivered[reference], fire),
                    partial(_note, skipped, (reference, fire)),
                    delivery="at_least_once",
                )
            await asyncio.sleep(0)
        assert frozen.batches == [3]  # the first instant, of every reference, in flight
        assert a.metrics().claims_coalesced == 0
        assert skipped == []
        frozen.thaw.set()
        await a.cron_claims.wait_idle()
        # Then the nine instants waiting behind it, for the three references: one batch.
        assert frozen.batches == [3, 27]
        for reference in references:
            assert delivered[reference] == [start + s for s in range(10)]  # in instant order
        assert (a.metrics().claims_won, a.metrics().claims_coalesced, skipped) == (30, 0, [])
        # An instant past its window while it waited is the coordinator's to refuse (late).
        frozen.thaw.clear()
        old = world.clock.wall() - 120  # past the 60 s TTL
        a.cron_claims.deliver_if_won("r1", old, 1.0, partial(_note, delivered["r1"], old))
        await asyncio.sleep(0)
        a.cron_claims.deliver_if_won(
            "r1",
            old + 1,
            1.0,
            partial(_note, delivered["r1"], old + 1),
            lambda outcome, detail: skipped.append(("r1", outcome)),
            delivery="at_least_once",
        )
        frozen.thaw.set()
        await a.cron_claims.wait_idle()
        assert skipped == [("r1", Outcome.CLAIM_LATE)]  # not coalesced
        assert a.metrics().claims_skipped_late == 2
    finally:
        await world.close()
        await frozen.inner.close()


class _Counting:
    """A coordinator recording each claim call it gets: single or batched, and its size."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.url = inner.url
        self.calls: list[tuple[str, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def claim_tick(self, *args: Any, **kwargs: Any) -> Any:
        self.calls.append(("claim_tick", 1))
        return await self.inner.claim_tick(*args, **kwargs)

    async def claim_ticks(self, requests: Any, node: str) -> Any:
        self.calls.append(("claim_ticks", len(requests)))
        return await self.inner.claim_ticks(requests, node)


async def test_the_ticks_of_one_instant_are_claimed_in_one_round_trip_per_node() -> None:
    # Two nodes, 300 references firing at one instant: each node sends one batch of 300;
    # each tick is delivered by exactly one node, with the batch's answers in order.
    world = World(lease=60.0)
    counting = [_Counting(world.coordinator()), _Counting(world.coordinator())]
    for each in counting:
        await each.inner.open()
    try:
        nodes = [world.node(name, coordinator=c) for name, c in zip("ab", counting, strict=True)]
        for node in nodes:
            await node.start()
        fire = world.clock.wall() - 1  # reached: no wait for the instant
        delivered: list[tuple[str, str]] = []
        for node, name in zip(nodes, "ab", strict=True):
            for i in range(300):
                node.cron_claims.deliver_if_won(
                    f"ref-{i}", fire, 1.0, partial(_note, delivered, (name, f"ref-{i}"))
                )
        await world.clock.advance(0)
        for node in nodes:
            await node.cron_claims.wait_idle()
        assert [c.calls for c in counting] == [[("claim_ticks", 300)], [("claim_ticks", 300)]]
        assert sorted(ref for _, ref in delivered) == sorted(f"ref-{i}" for i in range(300))
        assert {name for name, _ in delivered} == {"a"}  # a's batch went first: it won all
        won = sum(node.metrics().claims_won for node in nodes)
        lost = sum(node.metrics().claims_lost for node in nodes)
        assert (won, lost) == (300, 300)
    finally:
        await world.close()
        for each in counting:
            await each.inner.close()
