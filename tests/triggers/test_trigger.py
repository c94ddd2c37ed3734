# SPDX-License-Identifier: Apache-2.0
"""Triggers: a schedule's instants with calendar, DST policy and jitter applied inside;
the one backfill limit; a calendar that leaves no instant in ten years."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tocsin.cron import CronExpression
from tocsin.triggers import (
    HORIZON,
    MAX_BACKFILL,
    Calendar,
    CronTrigger,
    DSTPolicy,
    IntervalTrigger,
    OnceTrigger,
    Outcome,
    Trigger,
    backfill_instants,
    check_horizon,
    jitter_offset,
    last_at,
    next_delivered,
    overdue,
)

MONDAY = datetime(2026, 11, 30, tzinfo=UTC).timestamp()  # a Monday, 00:00 UTC
DAY = 86_400.0


def test_every_kind_is_a_trigger() -> None:
    kinds = [
        IntervalTrigger(60, MONDAY),
        OnceTrigger(MONDAY),
        CronTrigger(CronExpression.parse("0 0 * * * ?"), UTC),
    ]
    assert all(isinstance(kind, Trigger) for kind in kinds)


def test_interval_instants_are_a_grid_through_the_anchor() -> None:
    trigger = IntervalTrigger(60, MONDAY)
    assert trigger.after(MONDAY) == MONDAY + 60
    assert trigger.after(MONDAY - 1) == MONDAY
    assert trigger.after(MONDAY + 61) == MONDAY + 120
    assert trigger.between(MONDAY, MONDAY + 180) == [MONDAY, MONDAY + 60, MONDAY + 120]
    assert trigger.between(MONDAY, MONDAY + 180, keep=1) == [MONDAY + 120]


def test_once_has_one_instant() -> None:
    trigger = OnceTrigger(MONDAY)
    assert trigger.after(MONDAY - 1) == MONDAY
    assert trigger.after(MONDAY) is None
    assert trigger.between(MONDAY, MONDAY + 1) == [MONDAY]


def test_next_after_skips_what_the_calendar_excludes() -> None:
    weekend = Calendar.weekly("SAT", "SUN")
    trigger = IntervalTrigger(DAY, MONDAY, exclude=weekend)
    friday = MONDAY + 4 * DAY
    assert trigger.after(friday) == friday + DAY  # the raw sequence: Saturday
    assert trigger.next_after(friday) == friday + 3 * DAY  # delivered: Monday


def test_cron_trigger_applies_its_dst_policy() -> None:
    paris = ZoneInfo("Europe/Paris")
    expression = CronExpression.parse("0 30 2 * * ?")
    before_gap = datetime(2026, 3, 29, 0, 0, tzinfo=paris).timestamp()
    skip = CronTrigger(expression, paris, dst=DSTPolicy(gap="skip"))
    nxt = CronTrigger(expression, paris, dst=DSTPolicy(gap="next"))
    assert skip.after(before_gap) == datetime(2026, 3, 30, 2, 30, tzinfo=paris).timestamp()
    assert nxt.after(before_gap) == datetime(2026, 3, 29, 3, 0, tzinfo=paris).timestamp()


def test_delivery_adds_the_jitter_every_node_computes() -> None:
    trigger = IntervalTrigger(60, MONDAY, jitter=30)
    at = trigger.delivery("report", MONDAY)
    instant = datetime.fromtimestamp(MONDAY, UTC)
    assert at == MONDAY + jitter_offset("report", instant, 30, 60)
    assert MONDAY <= at < MONDAY + 30
    assert IntervalTrigger(60, MONDAY).delivery("report", MONDAY) == MONDAY


def test_cron_jitter_is_capped_at_the_gap_to_the_next_instant() -> None:
    trigger = CronTrigger(CronExpression.parse("* * * * * ?"), UTC, jitter=3600)
    for k in range(50):
        assert trigger.delivery(f"r{k}", MONDAY) < MONDAY + 1


def test_backfill_lists_the_kept_instants_of_a_range() -> None:
    trigger = IntervalTrigger(DAY, MONDAY, exclude=Calendar.weekly("SAT", "SUN"))
    assert check_horizon(trigger, MONDAY + 4.5 * DAY) == MONDAY + 7 * DAY
    days = backfill_instants(trigger, MONDAY, MONDAY + 7 * DAY)
    assert days == [MONDAY + k * DAY for k in range(5)]


def test_backfill_past_the_one_limit_is_a_value_error() -> None:
    trigger = IntervalTrigger(1, MONDAY)
    assert len(backfill_instants(trigger, MONDAY, MONDAY + MAX_BACKFILL)) == MAX_BACKFILL
    with pytest.raises(ValueError, match="more than 100,000 instants: split the range"):
        backfill_instants(trigger, MONDAY, MONDAY + MAX_BACKFILL + 1)


def test_a_calendar_that_leaves_no_instant_in_ten_years_is_a_value_error() -> None:
    every_day = Calendar.weekly("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
    trigger = IntervalTrigger(1, MONDAY, exclude=every_day)
    with pytest.raises(ValueError, match="would never fire: its calendar"):
        check_horizon(trigger, MONDAY)


def test_a_calendar_that_leaves_a_rare_instant_passes_the_horizon_check() -> None:
    # Every second, all but Sundays excluded: the walk gives up one by one and probes.
    six_days = Calendar.weekly("MON", "TUE", "WED", "THU", "FRI", "SAT")
    trigger = IntervalTrigger(1, MONDAY, exclude=six_days)
    found = check_horizon(trigger, MONDAY)
    assert found is not None
    assert MONDAY + 6 * DAY <= found < MONDAY + 7 * DAY
    assert not trigger.excluded(found)


def test_the_horizon_check_leaves_far_or_absent_raw_instants_to_the_caller() -> None:
    assert check_horizon(OnceTrigger(MONDAY), MONDAY + 1) is None
    far = OnceTrigger(MONDAY + 2 * HORIZON, exclude=Calendar.weekly("MON"))
    assert check_horizon(far, MONDAY) == MONDAY + 2 * HORIZON


def test_next_delivered_crosses_a_long_excluded_stretch_to_its_first_kept_instant() -> None:
    # Every second, the weekend excluded: from Saturday 172,800 seconds are excluded in
    # a row (past the walk), and the answer is Monday 00:00:00 exactly, not merely some
    # kept instant a probe found.
    trigger = IntervalTrigger(1, MONDAY, exclude=Calendar.weekly("SAT", "SUN"))
    saturday = MONDAY + 5 * DAY
    assert trigger.next_after(saturday) is None  # the bounded scan gives up
    assert next_delivered(trigger, saturday) == MONDAY + 7 * DAY
    assert check_horizon(trigger, saturday) == MONDAY + 7 * DAY
    assert next_delivered(IntervalTrigger(60, MONDAY), MONDAY) == MONDAY + 60
    every_day = Calendar.weekly("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
    assert next_delivered(IntervalTrigger(3600, MONDAY, exclude=every_day), MONDAY) is None


def test_last_at_is_the_last_raw_instant_at_or_before_a_moment() -> None:
    grid = IntervalTrigger(60, MONDAY)
    assert last_at(grid, MONDAY) == MONDAY
    assert last_at(grid, MONDAY + 59.5) == MONDAY
    yearly = CronTrigger(CronExpression.parse("0 0 0 1 1 ?"), UTC)
    new_year = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
    assert last_at(yearly, MONDAY) == new_year  # found by widening the look back
    assert last_at(OnceTrigger(MONDAY), MONDAY - 1) is None


def test_overdue_counts_what_came_due_and_keeps_the_most_recent() -> None:
    grid = IntervalTrigger(60, MONDAY)
    # (since, until]: the instant at `since` was decided, the one at `until` is due.
    assert overdue(grid, MONDAY, MONDAY + 3600, 3) == (
        60,
        [MONDAY + 3480, MONDAY + 3540, MONDAY + 3600],
    )
    assert overdue(grid, MONDAY, MONDAY + 59, 1) == (0, [])
    minutely = CronTrigger(CronExpression.parse("0 * * * * ?"), UTC)
    assert overdue(minutely, MONDAY, MONDAY + 3600, 1) == (60, [MONDAY + 3600])


def test_a_cron_trigger_reports_what_a_dst_change_dropped() -> None:
    paris = ZoneInfo("Europe/Paris")
    half_past_two = CronTrigger(
        CronExpression.parse("0 30 2 * * ?"), paris, dst=DSTPolicy(gap="skip")
    )
    saturday = datetime(2026, 3, 28, 2, 30, tzinfo=paris).timestamp()
    monday = datetime(2026, 3, 30, 2, 30, tzinfo=paris).timestamp()
    gap = datetime(2026, 3, 29, 3, 0, tzinfo=paris).timestamp()  # reported after the gap
    assert half_past_two.dropped(saturday, monday) == [(gap, Outcome.DST_GAP)]
    assert half_past_two.dropped(monday, monday + DAY) == []  # one offset: nothing walked
