# SPDX-License-Identifier: Apache-2.0
"""What a daylight-saving change keeps from firing is recorded: ``dst_gap`` for a wall time
that did not exist, ``dst_fold`` for the occurrence of a repeated wall time the policy does
not fire; in the history, as ``TickNotDelivered``. A policy that moves the gap instant or
fires both occurrences records nothing. ManualClock only."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from tests.scheduling.scheduling_support import TickRecorder, running_system

from tocsin import DSTPolicy, Outcome, Tick, TickNotDelivered

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


async def _outcomes(
    zone: ZoneInfo, begin: datetime, days: int, expression: str, dst: DSTPolicy | None
) -> tuple[list[tuple[Outcome, datetime]], list[TickNotDelivered], int]:
    log: list[tuple[object, Tick | None, float]] = []
    events: list[TickNotDelivered] = []
    async with running_system(wall=begin, timezone=zone.key) as (system, clock):
        system.events.subscribe(events.append, TickNotDelivered)
        pid = await system.spawn(lambda: TickRecorder(log))
        await system.schedule_cron("t", pid, expression, reference="d", dst=dst)
        await clock.advance(timedelta(days=days).total_seconds())
        history: list[tuple[Outcome, datetime]] = [
            (row.outcome, row.instant.astimezone(zone))
            for row in system.schedule_history("d")
            if row.outcome is not Outcome.DELIVERED
        ]
    return history, events, len(log)


async def test_a_daily_job_in_the_spring_gap_is_recorded_as_dst_gap() -> None:
    history, events, delivered = await _outcomes(
        PARIS, datetime(2026, 3, 27, 12, tzinfo=PARIS), 4, "0 30 2 * * ?", None
    )
    # 2026-03-29 02:30 does not exist in Paris; Quartz fires nothing that day.
    assert delivered == 3
    assert [(o, (w.month, w.day, w.hour, w.minute)) for o, w in history] == [
        (Outcome.DST_GAP, (3, 29, 3, 0))  # reported at the first instant after the gap
    ]
    assert [(e.outcome, e.reference) for e in events] == [(Outcome.DST_GAP, "d")]


async def test_never_skip_records_no_dst_outcome() -> None:
    history, events, delivered = await _outcomes(
        PARIS, datetime(2026, 3, 27, 12, tzinfo=PARIS), 4, "0 30 2 * * ?", DSTPolicy.never_skip()
    )
    assert delivered == 4
    assert history == []
    assert events == []


@pytest.mark.parametrize(
    ("dst", "dropped_offset"),
    [(None, -4), (DSTPolicy(fold="first"), -5), (DSTPolicy(fold="last"), -4)],
)
async def test_a_fold_occurrence_the_policy_does_not_fire_is_dst_fold(
    dst: DSTPolicy | None, dropped_offset: int
) -> None:
    # 2026-11-01 01:30 occurs twice in New York (EDT, then EST).
    history, _, delivered = await _outcomes(
        NEW_YORK, datetime(2026, 10, 30, 12, tzinfo=NEW_YORK), 4, "0 30 1 * * ?", dst
    )
    assert delivered == 4
    assert len(history) == 1
    outcome, wall = history[0]
    assert outcome is Outcome.DST_FOLD
    assert (wall.month, wall.day, wall.hour, wall.minute) == (11, 1, 1, 30)
    offset = wall.utcoffset()
    assert offset is not None
    assert offset == timedelta(hours=dropped_offset)


async def test_fold_both_fires_twice_and_records_nothing() -> None:
    history, _, delivered = await _outcomes(
        NEW_YORK, datetime(2026, 10, 30, 12, tzinfo=NEW_YORK), 4, "0 30 1 * * ?",
        DSTPolicy(fold="both"),
    )  # fmt: skip
    assert delivered == 5
    assert history == []
