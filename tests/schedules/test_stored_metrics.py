# SPDX-License-Identifier: Apache-2.0
"""A backlog is visible: a handler slower than its stored schedule shows in the ledger
(skipped_overlap rows, started times), in TickNotDelivered events and in the metrics
(tocsin_schedule_ticks_total, tocsin_schedule_start_lateness_seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.schedules import jobs_for_tests as jobs

from tocsin import ActorSystem, ManualClock, TickNotDelivered
from tocsin.durable import Call, DurableActor
from tocsin.metrics import Metrics, prometheus_endpoint
from tocsin.schedules import Interval, Schedule
from tocsin.stores import MemoryStore
from tocsin.triggers import Outcome

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp()


@pytest.fixture(autouse=True)
def _runs() -> Iterator[None]:
    jobs.RUNS.clear()
    yield
    jobs.RUNS.clear()


async def test_a_slow_handler_buffers_one_skips_the_rest_and_the_start_lateness_shows_it() -> None:
    clock = ManualClock(wall=T0)
    spec = Schedule("slow", Interval(10), "tests.schedules.jobs_for_tests.slow", args=(25.0,))
    events: list[Any] = []
    async with ActorSystem("n1", clock=clock, store=MemoryStore(), schedules=[spec]) as system:
        system.events.subscribe(events.append, TickNotDelivered)
        expose = prometheus_endpoint(Metrics.of(system))
        await clock.advance(60.5)
        rows = await system.schedules.history("slow")
        outcomes = [r.outcome for r in rows]
        # 10 s: runs to 35 s; 20 s: buffered (runs at 35 s); 30 s: skipped; 40 s:
        # buffered behind the 20 s run (ends 60 s); 50 s: skipped; 60 s: buffered.
        assert outcomes[:5] == [
            Outcome.DELIVERED,
            Outcome.DELIVERED,
            Outcome.SKIPPED_OVERLAP,
            Outcome.DELIVERED,
            Outcome.SKIPPED_OVERLAP,
        ]
        started = {int(r.instant.timestamp() - T0): r.started for r in rows if r.started}
        assert started[20] == datetime.fromtimestamp(T0 + 35, UTC)  # 15 s late
        skipped = [e for e in events if e.reference == "slow"]
        assert {e.outcome for e in skipped} == {Outcome.SKIPPED_OVERLAP}
        body, _ = expose()
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        ticks = families["tocsin_schedule_ticks"].samples
        assert any(
            s.labels == {"reference": "slow", "outcome": "skipped_overlap"} and s.value >= 2
            for s in ticks
        )
        late = families["tocsin_schedule_start_lateness_seconds"].samples
        total = next(s for s in late if s.name.endswith("_sum")).value
        assert total >= 15.0


class Paused(DurableActor):
    kind = "metrics.Paused"

    async def tick(self, payload: Any) -> None:
        del payload

    async def minutely(self, payload: Any) -> None:
        await self.every(60, "tick", id="m")
        await self.pause_schedule("m", note="OPS-9")


async def test_durable_tasks_outcomes_are_in_the_one_outcome_stream() -> None:
    clock = ManualClock(wall=T0)
    events: list[Any] = []
    async with ActorSystem("n1", clock=clock, store=MemoryStore()) as system:
        system.events.subscribe(events.append, TickNotDelivered)
        expose = prometheus_endpoint(Metrics.of(system))
        pid = await system.durable(Paused, "p")
        await pid.ask(Call("minutely"))
        await clock.advance(180.5)  # three instants pass paused
        reference = "/durable/metrics.Paused/p/m"
        assert [(e.reference, e.outcome, e.detail) for e in events] == [
            (reference, Outcome.PAUSED, "OPS-9")
        ] * 3
        body, _ = expose()
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        ticks = families["tocsin_schedule_ticks"].samples
        assert [s.value for s in ticks if s.labels["reference"] == reference] == [3.0]
        assert {s.labels["outcome"] for s in ticks if s.labels["reference"] == reference} == {
            "paused"
        }
