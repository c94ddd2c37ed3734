# SPDX-License-Identifier: Apache-2.0
"""The engine's answers for callers that keep their own state (the in-memory scheduler's
records and cron memo, durable rows, cluster claims): the fast path's questions asked
once at creation, the waiting room of a durable run, the replay rate, the grace note,
and the cron / calendar / jitter instants they used to compute themselves."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

from tocsin.cron import CronExpression
from tocsin.triggers import (
    Calendar,
    CronTrigger,
    DSTPolicy,
    IntervalTrigger,
    Misfire,
    OnceTrigger,
    Overlap,
    calendar_excludes,
    counts_in_flight,
    cron_after,
    delivered_after,
    grace_note,
    jitter_delay,
    jitter_offset,
    needs_policy,
    replay_rate,
    run_waiting_room,
)

PARIS = ZoneInfo("Europe/Paris")
# 2026-12-05 is a Saturday; 2026-12-07 a Monday.
SATURDAY_NOON = datetime(2026, 12, 5, 12, tzinfo=UTC).timestamp()
MONDAY_NOON = datetime(2026, 12, 7, 12, tzinfo=UTC).timestamp()


# -- the fast path: asked once, when a schedule is made ------------------------------------


def test_needs_policy_is_false_only_for_the_tiers_defaults() -> None:
    assert not needs_policy(Overlap.ALLOW, Misfire.ONCE)
    # Equal by value counts as the default (a policy built by hand).
    assert not needs_policy(Overlap("allow", math.inf), Misfire.once())
    assert needs_policy(Overlap.SKIP, Misfire.ONCE)
    assert needs_policy(Overlap.limit(2), Misfire.ONCE)
    assert needs_policy(Overlap.ALLOW, Misfire.once(grace=5))
    assert needs_policy(Overlap.ALLOW, Misfire.skip())
    assert needs_policy(Overlap.ALLOW, Misfire.all(max=3))


def test_needs_policy_takes_the_durable_default_of_buffer_one() -> None:
    assert not needs_policy(Overlap.BUFFER_ONE, Misfire.ONCE, Overlap.BUFFER_ONE)
    assert needs_policy(Overlap.ALLOW, Misfire.ONCE, Overlap.BUFFER_ONE)
    assert needs_policy(Overlap.BUFFER_ONE, Misfire.ONCE)


def test_needs_policy_sends_anything_not_a_policy_value_to_its_check() -> None:
    # The caller's check then raises, naming the option.
    assert needs_policy("allow", Misfire.ONCE)
    assert needs_policy(Overlap.ALLOW, "once")
    assert needs_policy(None, None)


def test_counts_in_flight_for_every_mode_but_allow() -> None:
    assert not counts_in_flight(Overlap.ALLOW)
    assert counts_in_flight(Overlap.SKIP)
    assert counts_in_flight(Overlap.BUFFER_ONE)
    assert counts_in_flight(Overlap.limit(3))


# -- runs that never overlap: the waiting room --------------------------------------------


def test_run_waiting_room_is_the_overlap_room_less_those_waiting() -> None:
    assert run_waiting_room(Overlap.BUFFER_ONE, 0) == 1
    assert run_waiting_room(Overlap.BUFFER_ONE, 1) == 0
    assert run_waiting_room(Overlap.SKIP, 0) == 0
    assert run_waiting_room(Overlap.limit(4), 1) == 2


def test_run_waiting_room_leaves_allow_to_the_misfire_policy() -> None:
    assert run_waiting_room(Overlap.ALLOW, 0) is None
    assert run_waiting_room(Overlap.ALLOW, 5) is None


# -- misfire: replay rate and the grace note ----------------------------------------------


def test_replay_rate_is_alls_rate_and_no_limit_otherwise() -> None:
    assert replay_rate(Misfire.all(max=5, rate=2.5)) == 2.5
    assert replay_rate(Misfire.all(max=5)) is None
    assert replay_rate(Misfire.once()) is None
    assert replay_rate(Misfire.skip(grace=3)) is None


def test_grace_note_says_how_late_and_the_grace() -> None:
    assert grace_note(Misfire.once(grace=10), 12.5) == "12.5 s late, grace 10 s"
    assert grace_note(Misfire.skip(grace=0.5), 3600.0) == "3.6e+03 s late, grace 0.5 s"


# -- instants ----------------------------------------------------------------------------


def test_cron_after_is_the_raw_cron_sequence_in_the_zone_under_the_dst_policy() -> None:
    expr = CronExpression.parse("0 30 2 * * ?")
    # 2027-03-28 02:30 does not exist in Paris (the clocks go 02:00 -> 03:00).
    before = datetime(2027, 3, 27, 12, tzinfo=UTC).timestamp()
    moved = cron_after(expr, PARIS, DSTPolicy(gap="next"), before)
    skipped = cron_after(expr, PARIS, DSTPolicy(gap="skip"), before)
    assert moved is not None
    assert skipped is not None
    assert datetime.fromtimestamp(moved, PARIS) == datetime(2027, 3, 28, 3, tzinfo=PARIS)
    assert datetime.fromtimestamp(skipped, PARIS).day == 29  # not that day
    # The trigger answers the same (it asks this function).
    assert CronTrigger(expr, PARIS, dst=DSTPolicy(gap="skip")).after(before) == skipped


def test_cron_after_is_none_past_the_last_fire_time() -> None:
    expr = CronExpression.parse("0 0 0 1 1 ? 2026")
    assert cron_after(expr, UTC, None, SATURDAY_NOON) is None


def test_calendar_excludes_reads_the_instant_in_the_zone() -> None:
    weekend = Calendar.weekly("SAT", "SUN")
    assert calendar_excludes(weekend, SATURDAY_NOON, UTC)
    assert not calendar_excludes(weekend, MONDAY_NOON, UTC)
    assert not calendar_excludes(None, SATURDAY_NOON, UTC)
    # Monday 00:30 in Paris is still Sunday 23:30 in UTC.
    monday_paris = datetime(2026, 12, 7, 0, 30, tzinfo=PARIS).timestamp()
    assert calendar_excludes(weekend, monday_paris, UTC)
    assert not calendar_excludes(weekend, monday_paris, PARIS)


def test_jitter_delay_is_jitter_offset_capped_at_the_next_instant() -> None:
    instant = MONDAY_NOON
    moment = datetime.fromtimestamp(instant, UTC)
    assert jitter_delay("r", instant, 30.0, None) == jitter_offset("r", moment, 30.0, None)
    assert jitter_delay("r", instant, 30.0, instant + 10) == jitter_offset("r", moment, 30.0, 10)
    assert jitter_delay("r", instant, 30.0, instant + 10) < 10
    assert jitter_delay("r", instant, 30.0, instant) == 0.0  # no room before the next
    # An instant past the datetime range is never reached: no offset.
    assert jitter_delay("r", 1e15, 30.0, None) == 0.0


def test_delivered_after_applies_the_calendar_then_the_jitter() -> None:
    weekend = Calendar.weekly("SAT", "SUN")
    daily = IntervalTrigger(86_400.0, SATURDAY_NOON, exclude=weekend, jitter=60.0)
    delivered = delivered_after(daily, "report", SATURDAY_NOON - 1)
    assert delivered is not None
    assert MONDAY_NOON <= delivered < MONDAY_NOON + 60
    assert delivered == daily.delivery("report", MONDAY_NOON)
    assert delivered_after(OnceTrigger(SATURDAY_NOON), "x", SATURDAY_NOON) is None
