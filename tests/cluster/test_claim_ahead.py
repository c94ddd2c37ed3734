# SPDX-License-Identifier: Apache-2.0
"""Claim ahead (``Cluster(claim_ahead=...)``): a node asks for a cron tick's claim that
long before the tick's delivery time, and the winner delivers it at that time from its
own timer, so the coordinator's round trip is not paid after the instant.

Three systems on one ManualClock and a memory coordinator. Every guarantee of the
claim is kept: one delivery per instant, at the instant; a node that stops gracefully
delivers the ``at_most_once`` ticks it won ahead at their time first (its stop waits at
most the lead; one cut off is recorded ``dead_letter``); an ``at_least_once`` tick won
ahead whose node stops, or whose schedule is cancelled, is delivered by another node
after the delivery lease; an ``at_most_once`` one whose schedule is cancelled is
recorded ``dead_letter`` on the winner; a cluster-wide pause made by the winner in that
window stops it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from functools import partial

import pytest

from tocsin import Actor, ActorSystem, Cluster, ManualClock, Outcome, ReceiveContext

#: Half a minute before a whole minute: the first tick of "0 * * * * ?" is 30 s away.
START = datetime(2030, 1, 1, 9, 0, 30, tzinfo=UTC).timestamp()
FIRST = datetime(2030, 1, 1, 9, 1, tzinfo=UTC).timestamp()
DELIVERY_LEASE = 5.0
#: Seconds from the end of ``cluster()``'s setup (START + 1) to 0.125 s before FIRST:
#: binary fractions, so the ManualClock reaches FIRST exactly.
BEFORE = 28.875

Seen = list[tuple[str, float, float, int | None]]


class Job(Actor):
    """Records (node, instant, wall time it arrived, fence) per tick."""

    def __init__(self, seen: Seen, node: str, clock: ManualClock) -> None:
        self.seen = seen
        self.node = node
        self.clock = clock

    async def receive(self, ctx: ReceiveContext) -> None:
        tick = ctx.tick
        assert tick is not None
        self.seen.append((self.node, tick.instant.timestamp(), self.clock.wall(), tick.fence))


@asynccontextmanager
async def cluster(
    *, ahead: float = 0.25, delivery: str = "at_most_once"
) -> AsyncIterator[tuple[ManualClock, list[ActorSystem], Seen]]:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    config = Cluster(url, lease=30.0, delivery_lease=DELIVERY_LEASE, claim_ahead=ahead)
    systems = [ActorSystem(n, clock=clock, cluster=config) for n in ("a", "b", "c")]
    seen: Seen = []
    try:
        for system in systems:
            await system.start()
        await clock.advance(1)  # a lease renewal has measured every node's offset
        for system in systems:
            pid = await system.spawn(partial(Job, seen, system.name, clock), "job")
            await system.schedule_cron(
                "tick", pid, "0 * * * * ?", reference="minutely", delivery=delivery
            )
        yield clock, systems, seen
    finally:
        for system in systems:
            if system.running:
                await system.stop()


def _won(systems: list[ActorSystem]) -> list[ActorSystem]:
    return [s for s in systems if s.cluster.metrics().claims_won]


@pytest.mark.parametrize("delivery", ["at_most_once", "at_least_once"])
async def test_a_tick_is_claimed_ahead_and_delivered_at_its_instant_once(delivery: str) -> None:
    async with cluster(delivery=delivery) as (clock, systems, seen):
        await clock.advance(BEFORE)
        # Claimed 0.25 s ahead: won by one node, not delivered yet.
        assert len(_won(systems)) == 1
        assert sum(s.cluster.metrics().claims_lost for s in systems) == 2
        assert seen == []
        await clock.advance(0.125)
        assert [(instant, at) for _, instant, at, _ in seen] == [(FIRST, FIRST)]
        await clock.advance(120 + DELIVERY_LEASE)
        assert [instant for _, instant, _, _ in seen] == [FIRST, FIRST + 60, FIRST + 120]
        assert all(at == instant for _, instant, at, _ in seen)


async def test_claim_ahead_zero_claims_at_the_delivery_time() -> None:
    async with cluster(ahead=0.0) as (clock, systems, seen):
        await clock.advance(BEFORE)
        assert _won(systems) == []
        await clock.advance(0.125)
        assert [(instant, at) for _, instant, at, _ in seen] == [(FIRST, FIRST)]


async def test_the_lead_is_at_most_half_of_max_skew_and_a_quarter_of_the_period() -> None:
    clock = ManualClock(wall=START)
    config = Cluster(f"memory://{uuid.uuid4().hex}", claim_ahead=0.8, max_skew=1.0)
    system = ActorSystem("a", clock=clock, cluster=config)
    async with system:
        await clock.advance(1)
        node = system._cluster
        assert node is not None
        gate = node.cron_claims
        assert gate.lead(60.0) == 0.5  # half of max_skew
        assert gate.lead(1.0) == 0.25  # a quarter of an every-second period


async def test_an_at_least_once_tick_won_ahead_then_cancelled_goes_to_another_node() -> None:
    async with cluster(delivery="at_least_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        await winner.cancel_schedule("minutely")
        await clock.advance(0.125)
        assert seen == []  # the winner does not deliver it
        # Its claim lapses: another node claims it again after the delivery lease.
        await clock.advance(DELIVERY_LEASE + 0.5)
        [(node, instant, at, _)] = [row for row in seen if row[1] == FIRST]
        assert node != winner.name
        assert instant == FIRST
        assert FIRST < at <= FIRST + DELIVERY_LEASE + 0.5 - 0.125
        assert sum(s.cluster.metrics().claims_reclaimed for s in systems) == 1


def _holds_a_tick_won_ahead(system: ActorSystem) -> bool:
    node = system._cluster
    assert node is not None
    return bool(node.cron_claims._early)


def _outcomes(system: ActorSystem) -> list[tuple[float, Outcome, object]]:
    """Every outcome ``system``'s schedules record from now on: (instant, outcome, detail)."""
    outcomes: list[tuple[float, Outcome, object]] = []
    path = system.runtime.schedules.tick_path  # type: ignore[union-attr]
    record_outcome = path.outcome

    def outcome(record: object, instant: float, what: Outcome, detail: object = None) -> None:
        outcomes.append((instant, what, detail))
        record_outcome(record, instant, what, detail)

    path.outcome = outcome
    return outcomes


async def test_an_at_most_once_tick_won_ahead_whose_schedule_is_cancelled_is_a_dead_letter() -> (
    None
):
    # A cancel promises no tick reaches receive after it, and the other nodes recorded
    # claimed_elsewhere: not delivered by any node, recorded on the winner. The next
    # instant is delivered.
    async with cluster(delivery="at_most_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        outcomes = _outcomes(winner)
        await winner.cancel_schedule("minutely")
        await clock.advance(60.125)
        [(node, instant, _, _)] = seen  # FIRST is delivered by no node
        assert (instant, node != winner.name) == (FIRST + 60, True)
        [(at, what, detail)] = outcomes
        assert (at, what) == (FIRST, Outcome.DEAD_LETTER)
        assert "cancelled" in str(detail)


async def test_a_node_stopping_before_an_at_most_once_tick_it_won_ahead_delivers_it() -> None:
    async with cluster(delivery="at_most_once") as (clock, systems, seen):
        await clock.advance(BEFORE)  # 0.125 s before FIRST, won ahead by one node
        [winner] = _won(systems)
        stop = asyncio.create_task(winner.stop())
        await clock.advance(0.0625)
        assert not stop.done()  # the stop waits for the tick's time
        assert seen == []
        await clock.advance(0.0625)
        await stop
        # Delivered by the winner, at its instant, before its actors stopped.
        [(node, instant, at, _)] = seen
        assert (node, instant, at) == (winner.name, FIRST, FIRST)
        await clock.advance(60)
        assert [row[1] for row in seen] == [FIRST, FIRST + 60]
        assert seen[1][0] != winner.name


async def test_a_stop_with_nothing_won_ahead_does_not_wait() -> None:
    async with cluster(delivery="at_most_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [loser, *_] = [s for s in systems if s not in _won(systems)]
        await loser.stop()  # returns without the clock moving
        await clock.advance(0.125)
        assert [row[1] for row in seen] == [FIRST]


async def test_a_stop_whose_grace_ends_before_a_tick_won_ahead_records_a_dead_letter() -> None:
    async with cluster(delivery="at_most_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        outcomes = _outcomes(winner)
        stop = asyncio.create_task(winner.stop(timeout=0.0625))
        await clock.advance(0.0625)
        await stop  # cut off by the grace: not waiting for the tick any longer
        await clock.advance(0.0625)
        assert seen == []  # no node delivers it; the winner recorded why
        [(at, what, detail)] = outcomes
        assert (at, what) == (FIRST, Outcome.DEAD_LETTER)
        assert "stopped before its delivery time" in str(detail)


class Busy(Actor):
    """Records each message it starts, then waits on something that never comes (only a
    stop's grace ends it)."""

    def __init__(self, started: list[object]) -> None:
        self.started = started

    async def receive(self, ctx: ReceiveContext) -> None:
        self.started.append(ctx.message)
        await asyncio.Event().wait()


async def test_a_grace_running_out_during_the_wait_stops_the_actors_before_cancelling() -> None:
    # The grace (0.0625 s) ends while the stop still waits for a tick won ahead (0.125 s
    # away): it first asks every actor to stop, so the busy actor's cancelled handler is
    # its last; its next message is a dead letter, not a handler no grace would end.
    async with cluster(delivery="at_most_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        started: list[object] = []
        busy = await winner.spawn(partial(Busy, started), "busy")
        busy.tell("first")
        busy.tell("second")
        await clock.advance(0)
        assert started == ["first"]
        stop = asyncio.create_task(winner.stop(timeout=0.0625))
        await clock.advance(0.0625)
        await stop
        assert started == ["first"]
        assert seen == []


class Spawner(Job):
    """A tick handler that spawns a worker for each tick."""

    async def receive(self, ctx: ReceiveContext) -> None:
        await ctx.spawn(Child)
        await super().receive(ctx)


class Child(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


async def test_a_tick_delivered_during_the_stops_wait_may_spawn() -> None:
    # The actors run as usual while the stop waits for the ticks won ahead.
    clock = ManualClock(wall=START)
    config = Cluster(f"memory://{uuid.uuid4().hex}", lease=30.0, claim_ahead=0.25)
    system = ActorSystem("a", clock=clock, cluster=config)
    seen: Seen = []
    await system.start()
    try:
        await clock.advance(1)
        pid = await system.spawn(partial(Spawner, seen, "a", clock), "job")
        await system.schedule_cron("tick", pid, "0 * * * * ?", reference="minutely")
        await clock.advance(BEFORE)
        assert system.cluster.metrics().claims_won == 1
        stop = asyncio.create_task(system.stop())
        await clock.advance(0.125)
        await stop
        assert [(node, instant) for node, instant, _, _ in seen] == [("a", FIRST)]
    finally:
        if system.running:
            await system.stop()


async def test_a_stopping_node_claims_nothing_new() -> None:
    async with cluster(delivery="at_most_once") as (clock, systems, _):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        node = winner._cluster
        assert node is not None
        won = winner.cluster.metrics().claims_won
        stop = asyncio.create_task(winner.stop())
        await clock.advance(0.0625)  # stopping: waiting for the tick it won ahead
        told: list[tuple[object, object]] = []
        node.cron_claims.deliver_if_won(
            "other", FIRST, 60.0, lambda fence, done: True, lambda o, d: told.append((o, d))
        )
        assert told == [(None, None)]  # not claimed: nothing to record here
        await clock.advance(0.0625)
        await stop
        assert node.cron_claims.counters.claims_won == won


async def test_no_every_second_tick_is_lost_across_graceful_stops() -> None:
    """An every-second at_most_once cron on three nodes; six times the winner of the next
    tick stops gracefully in the window between its claim and the tick's time (a rolling
    restart: a fresh node joins in its place). Every instant is delivered, once."""
    clock = ManualClock(wall=START)
    config = Cluster(f"memory://{uuid.uuid4().hex}", lease=30.0, claim_ahead=0.25)
    seen: Seen = []
    live: list[ActorSystem] = []

    async def join(name: str) -> None:
        system = ActorSystem(name, clock=clock, cluster=config)
        await system.start()
        pid = await system.spawn(partial(Job, seen, name, clock), "job")
        await system.schedule_cron("tick", pid, "* * * * * ?", reference="every-second")
        live.append(system)

    try:
        for name in ("a", "b", "c"):
            await join(name)
        await clock.advance(1)  # the offsets are measured: claims go ahead from now on
        first = clock.wall()
        for restart in range(6):
            await clock.advance(2.875)  # 0.125 s before an instant, claimed ahead
            [winner] = [s for s in live if _holds_a_tick_won_ahead(s)]
            live.remove(winner)
            stop = asyncio.create_task(winner.stop())
            await clock.advance(0.125)
            await stop
            await join(f"n{restart}")
        await clock.advance(3)
        last = clock.wall()
    finally:
        for system in live:
            await system.stop()
    instants = [row[1] for row in seen]
    expected = [first + i for i in range(int(last - first) + 1)]
    assert len(expected) == 1 + 6 * 3 + 3
    assert sorted(instants) == expected  # none lost, none twice
    assert all(at == instant for _, instant, at, _ in seen)


async def test_a_node_stopping_with_an_at_least_once_tick_won_ahead_lets_another_deliver() -> None:
    async with cluster(delivery="at_least_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        await winner.stop()
        await clock.advance(DELIVERY_LEASE + 0.6)
        [(node, instant, _, _)] = seen
        assert (instant, node != winner.name) == (FIRST, True)


@pytest.mark.parametrize("delivery", ["at_most_once", "at_least_once"])
async def test_a_pause_the_winner_makes_after_winning_ahead_stops_the_tick(delivery: str) -> None:
    async with cluster(delivery=delivery) as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        outcomes: list[tuple[float, Outcome]] = []
        path = winner.runtime.schedules.tick_path  # type: ignore[union-attr]

        def outcome(record: object, instant: float, what: Outcome, detail: object) -> None:
            outcomes.append((instant, what))

        path.outcome = outcome
        await winner.cluster.pause_cron("minutely")
        await clock.advance(0.125 + DELIVERY_LEASE + 1)
        assert seen == []  # no node delivers a paused instant
        assert (FIRST, Outcome.PAUSED) in outcomes


def test_claim_ahead_is_checked() -> None:
    with pytest.raises(ValueError, match="`claim_ahead` must be between"):
        Cluster("memory://x", claim_ahead=-0.1)
    with pytest.raises(ValueError, match="`claim_ahead` must be between"):
        Cluster("memory://x", claim_ahead=61)
    with pytest.raises(ValueError, match="`claim_ahead` must be a finite number"):
        Cluster("memory://x", claim_ahead=float("nan"))
    assert Cluster("memory://x").claim_ahead == 0.25


async def test_an_at_most_once_tick_won_ahead_whose_target_stopped_is_a_dead_letter() -> None:
    async with cluster(delivery="at_most_once") as (clock, systems, seen):
        await clock.advance(BEFORE)
        [winner] = _won(systems)
        outcomes = _outcomes(winner)
        await winner.stop_actor(await winner.actor_of("job"))
        stop = asyncio.create_task(winner.stop())
        await clock.advance(0.125)
        await stop
        assert seen == []
        [(at, what, detail)] = outcomes
        assert (at, what) == (FIRST, Outcome.DEAD_LETTER)
        assert detail == "stopped"  # the target's refusal, as any tick to a stopped actor
