# SPDX-License-Identifier: Apache-2.0
"""Every outcome an in-memory schedule can produce in one process appears in the three
places DESIGN.md "Operating schedules" names: the schedule's history ring, a
`TickNotDelivered` event, and `tocsin_schedule_ticks_total` (issue 23). ManualClock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families
from tests.scheduling.scheduling_support import EPOCH, Log, recorder

from tocsin import (
    Actor,
    ActorSystem,
    Calendar,
    Directive,
    ManualClock,
    Misfire,
    Outcome,
    Overlap,
    ReceiveContext,
    Tick,
    TickNotDelivered,
)
from tocsin.metrics import Metrics, prometheus_endpoint


def _at(seconds: float) -> datetime:
    return EPOCH + timedelta(seconds=seconds)


class Observed:
    """A running system with its TickNotDelivered events and its Prometheus text."""

    def __init__(self, system: ActorSystem, clock: ManualClock) -> None:
        self.system = system
        self.clock = clock
        self.events: list[TickNotDelivered] = []
        system.events.subscribe(self.events.append, TickNotDelivered)
        self._expose = prometheus_endpoint(Metrics.of(system))

    def counted(self) -> dict[tuple[str, str], float]:
        text = self._expose()[0].decode()
        family = {f.name: f for f in text_string_to_metric_families(text)}["tocsin_schedule_ticks"]
        return {(s.labels["reference"], s.labels["outcome"]): s.value for s in family.samples}

    def assert_everywhere(
        self, reference: str, outcome: Outcome, instant: datetime, detail: object = None
    ) -> None:
        """``outcome`` of ``instant`` is in the ring, was published, and is counted."""
        ring = [
            (h.instant, h.detail)
            for h in self.system.schedule_history(reference)
            if h.outcome is outcome
        ]
        assert (instant, detail) in ring, ring
        events = [(e.instant, e.detail) for e in self.events if e.outcome is outcome]
        assert (instant, detail) in events, events
        assert self.counted()[(reference, str(outcome))] >= 1


@asynccontextmanager
async def observed() -> AsyncIterator[Observed]:
    clock = ManualClock(wall=EPOCH)
    async with ActorSystem("test", clock=clock, timezone="UTC") as system:
        yield Observed(system, clock)


class Slow(Actor):
    """Blocks on ``gate`` for every tick, recording each ``ctx.tick``."""

    def __init__(self, gate: asyncio.Event, ticks: list[Tick | None]) -> None:
        self.gate = gate
        self.ticks = ticks

    async def receive(self, ctx: ReceiveContext) -> None:
        self.ticks.append(ctx.tick)
        await self.gate.wait()


async def test_skipped_overlap() -> None:
    async with observed() as o:
        gate, ticks = asyncio.Event(), list[Tick | None]()
        pid = await o.system.spawn(lambda: Slow(gate, ticks))
        await o.system.schedule("t", pid, 1, reference="r", overlap=Overlap.SKIP)
        await o.clock.advance(2)  # 1 runs and blocks; 2 finds it in flight
        o.assert_everywhere("r", Outcome.SKIPPED_OVERLAP, _at(2))
        gate.set()


async def test_coalesced() -> None:
    async with observed() as o:
        pid = await o.system.spawn(recorder(Log()))
        await o.system.schedule("t", pid, 1, reference="r")
        await o.clock.jump(3.5)  # 1, 2 and 3 overdue: one delivery, two coalesced
        [entry] = [h for h in o.system.schedule_history("r") if h.outcome is Outcome.COALESCED]
        o.assert_everywhere("r", Outcome.COALESCED, entry.instant, entry.detail)
        assert entry.detail == 2


async def test_missed_past_grace() -> None:
    async with observed() as o:
        pid = await o.system.spawn(recorder(Log()))
        await o.system.schedule_once("t", pid, 1, reference="r", misfire=Misfire.once(grace=1))
        await o.system.schedule("t", pid, 10, reference="keep")  # keeps the system busy
        await o.system.pause_schedule("keep")
        events = o.events
        await o.clock.jump(5)  # delivered 4 s late, past its 1 s grace
        assert [(e.reference, e.outcome) for e in events] == [("r", Outcome.MISSED)]
        assert o.counted()[("r", "missed")] == 1


async def test_excluded_by_the_calendar() -> None:
    async with observed() as o:
        pid = await o.system.spawn(recorder(Log()))
        await o.system.schedule_cron(
            "t", pid, "0 0 9 * * ?", reference="r", exclude=Calendar.dates("2030-01-01")
        )
        await o.clock.advance(86_400 + 10 * 3600)
        o.assert_everywhere("r", Outcome.EXCLUDED, datetime(2030, 1, 1, 9, tzinfo=EPOCH.tzinfo))
        delivered = [h for h in o.system.schedule_history("r") if h.outcome is Outcome.DELIVERED]
        assert [h.instant for h in delivered] == [datetime(2030, 1, 2, 9, tzinfo=EPOCH.tzinfo)]


async def test_paused() -> None:
    async with observed() as o:
        pid = await o.system.spawn(recorder(Log()))
        await o.system.schedule("t", pid, 1, reference="r")
        await o.system.pause_schedule("r", note="maintenance")
        await o.clock.advance(1)
        await o.system.resume_schedule("r")
        o.assert_everywhere("r", Outcome.PAUSED, _at(1))


async def test_dead_letter() -> None:
    async with observed() as o:
        target = await o.system.spawn(recorder(Log()), supervisor=Directive.SUSPEND)
        await o.system.schedule("t", target, 1, reference="r")
        target.tell(("fail", RuntimeError("boom")))
        await o.clock.advance(1)
        o.assert_everywhere("r", Outcome.DEAD_LETTER, _at(1), "suspended")


async def test_manual_and_backfilled_ticks_carry_their_flags_and_instants() -> None:
    async with observed() as o:
        gate, ticks = asyncio.Event(), list[Tick | None]()
        gate.set()
        pid = await o.system.spawn(lambda: Slow(gate, ticks))
        await o.clock.advance(30)
        await o.system.schedule("t", pid, 10, reference="r")  # grid 40, 50, ...
        await o.system.trigger_schedule("r")
        await o.system.backfill_schedule("r", _at(0), _at(25))
        await o.clock.advance(10)
        assert [(t.instant, t.manual, t.backfill) for t in ticks if t is not None] == [
            (_at(30), True, False),
            (_at(0), False, True),
            (_at(10), False, True),
            (_at(20), False, True),
            (_at(40), False, False),
        ]
        assert o.events == []  # every one delivered: nothing published, nothing counted
        assert o.counted() == {}


async def test_a_manual_tick_goes_through_the_overlap_policy() -> None:
    async with observed() as o:
        gate, ticks = asyncio.Event(), list[Tick | None]()
        pid = await o.system.spawn(lambda: Slow(gate, ticks))
        await o.system.schedule("t", pid, 10, reference="r", overlap=Overlap.SKIP)
        await o.system.trigger_schedule("r")
        await o.clock.advance(0)
        await o.system.trigger_schedule("r")  # the first is still in flight: skipped
        await o.clock.advance(0)
        o.assert_everywhere("r", Outcome.SKIPPED_OVERLAP, _at(0), "manual")
        gate.set()
        await o.clock.advance(0)
        await o.system.trigger_schedule("r")
        await o.clock.advance(0)
        assert [t.manual for t in ticks if t is not None] == [True, True]
