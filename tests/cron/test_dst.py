# SPDX-License-Identifier: Apache-2.0
"""DST as Quartz handles it (missing wall times skipped, repeated ones fire once, later),
and as each :class:`DSTPolicy` chooses.

Expected instants are written in UTC so that the test says which of two equal wall
times fired.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tocsin._codec import decode, encode
from tocsin.cron import CronExpression, DSTPolicy
from tocsin.cron._dst import next_fire_dst


def _utc_fires(text: str, zone: str, local_start: str, count: int) -> list[str]:
    cron = CronExpression.parse(text, zone)
    moment: datetime | None = datetime.fromisoformat(local_start).replace(tzinfo=ZoneInfo(zone))
    out = []
    for _ in range(count):
        assert moment is not None
        moment = cron.next_after(moment)
        assert moment is not None
        out.append(moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M"))
    return out


@pytest.mark.parametrize(
    ("zone", "start", "expected"),
    [
        # Paris: 2025-03-30 02:00 CET jumps to 03:00 CEST.
        ("Europe/Paris", "2025-03-29T12:00", ["2025-03-31 00:30", "2025-04-01 00:30"]),
        # New York: 2025-03-09 02:00 EST jumps to 03:00 EDT.
        ("America/New_York", "2025-03-08T12:00", ["2025-03-10 06:30", "2025-03-11 06:30"]),
    ],
)
def test_a_daily_time_inside_the_spring_gap_is_skipped_that_day(
    zone: str, start: str, expected: list[str]
) -> None:
    assert _utc_fires("0 30 2 * * ?", zone, start, 2) == expected


def test_a_daily_time_inside_the_lord_howe_half_hour_gap_is_skipped_that_day() -> None:
    # Lord Howe: 2025-10-05 02:00 (+10:30) jumps to 02:30 (+11:00).
    assert _utc_fires("0 15 2 * * ?", "Australia/Lord_Howe", "2025-10-04T12:00", 2) == [
        "2025-10-05 15:15",  # Oct 6, 02:15 +11:00
        "2025-10-06 15:15",
    ]


@pytest.mark.parametrize(
    ("zone", "start", "expected_first"),
    [
        # Paris: 2025-10-26 03:00 CEST falls back to 02:00 CET; 02:30 CET is 01:30Z.
        ("Europe/Paris", "2025-10-25T12:00", "2025-10-26 01:30"),
        # New York: 2025-11-02 02:00 EDT falls back to 01:00 EST; 01:30 EST is 06:30Z.
        ("America/New_York", "2025-11-01T12:00", "2025-11-02 06:30"),
    ],
)
def test_a_repeated_daily_time_fires_once_at_its_later_standard_time_instant(
    zone: str, start: str, expected_first: str
) -> None:
    text = "0 30 2 * * ?" if zone == "Europe/Paris" else "0 30 1 * * ?"
    fires = _utc_fires(text, zone, start, 2)
    assert fires[0] == expected_first
    assert fires[1][:10] != fires[0][:10] or fires[1] != fires[0]


def test_an_hourly_expression_skips_the_first_occurrence_of_the_repeated_hour_in_paris() -> None:
    # 02:00 CEST (00:00Z) is passed over; 02:00 CET (01:00Z) fires: a two-hour gap in UTC.
    assert _utc_fires("0 0 * * * ?", "Europe/Paris", "2025-10-26T00:30", 4) == [
        "2025-10-25 23:00",
        "2025-10-26 01:00",
        "2025-10-26 02:00",
        "2025-10-26 03:00",
    ]


def test_a_half_hourly_expression_fires_only_in_the_standard_time_hour_in_new_york() -> None:
    assert _utc_fires("0 */30 * * * ?", "America/New_York", "2025-11-02T00:15", 4) == [
        "2025-11-02 04:30",  # 00:30 EDT
        "2025-11-02 06:00",  # 01:00 EST; 01:00 and 01:30 EDT never fire
        "2025-11-02 06:30",
        "2025-11-02 07:00",
    ]


def test_a_start_inside_the_first_occurrence_continues_in_the_second() -> None:
    start = datetime(2025, 11, 2, 1, 10, tzinfo=ZoneInfo("America/New_York"))  # EDT
    fire = CronExpression.parse("0 */30 * * * ?").next_after(start)
    assert fire is not None
    assert fire.astimezone(UTC) == datetime(2025, 11, 2, 6, 30, tzinfo=UTC)  # 01:30 EST


def test_a_repeated_half_hour_in_lord_howe_fires_once_at_its_later_instant() -> None:
    # 2025-04-06 02:00 (+11:00) falls back to 01:30 (+10:30): 01:30-01:59 happen twice.
    assert _utc_fires("0 */15 * * * ?", "Australia/Lord_Howe", "2025-04-06T01:20", 4) == [
        "2025-04-05 15:00",  # 01:30 +10:30
        "2025-04-05 15:15",
        "2025-04-05 15:30",  # 02:00 +10:30
        "2025-04-05 15:45",
    ]


def test_the_hour_after_the_spring_gap_fires_at_the_first_real_time() -> None:
    assert _utc_fires("0 0 * * * ?", "America/New_York", "2025-03-09T00:30", 2) == [
        "2025-03-09 06:00",  # 01:00 EST
        "2025-03-09 07:00",  # 03:00 EDT (02:00 does not exist)
    ]
    assert _utc_fires("0 */15 * * * ?", "Australia/Lord_Howe", "2025-10-05T01:40", 2) == [
        "2025-10-04 15:15",  # 01:45 +10:30
        "2025-10-04 15:30",  # 02:30 +11:00
    ]


def test_a_gap_time_moves_the_search_forward_by_the_gap_as_quartz_does() -> None:
    # 02:10 does not exist on 2025-10-05; Java reads it as 02:40 and Quartz searches on
    # from there, so 02:35 is not fired that day either.
    assert _utc_fires("0 10,35 2 * * ?", "Australia/Lord_Howe", "2025-10-04T12:00", 2) == [
        "2025-10-05 15:10",  # Oct 6, 02:10 +11:00
        "2025-10-05 15:35",
    ]


def test_fire_times_are_returned_in_the_evaluation_zone_with_fold_for_the_later_time() -> None:
    cron = CronExpression.parse("0 30 1 * * ?", "America/New_York")
    fire = cron.next_after(datetime(2025, 11, 1, 12, tzinfo=UTC))
    assert fire is not None
    assert fire.tzinfo == ZoneInfo("America/New_York")
    assert (fire.hour, fire.minute, fire.fold) == (1, 30, 1)
    assert cron.matches(fire)
    assert not cron.matches(fire.replace(fold=0))  # the EDT occurrence does not fire


# --- DSTPolicy (#22) -------------------------------------------------------------------


def _days(text: str, zone: str, policy: DSTPolicy, start: datetime, end: datetime) -> Counter[str]:
    cron = CronExpression.parse(text, zone)
    days: Counter[str] = Counter()
    for fire in cron.iter_after(start, dst=policy):
        if fire >= end:
            break
        days[fire.date().isoformat()] += 1
    return days


@pytest.mark.parametrize("zone", ["Europe/Paris", "America/New_York"])
def test_never_skip_fires_a_daily_0230_job_exactly_once_every_day_for_three_years(
    zone: str,
) -> None:
    tz = ZoneInfo(zone)
    start, end = datetime(2025, 1, 1, tzinfo=tz), datetime(2028, 1, 1, tzinfo=tz)
    days = _days("0 30 2 * * ?", zone, DSTPolicy.never_skip(), start, end)
    assert len(days) == (end.date() - start.date()).days == 1095
    assert set(days.values()) == {1}
    # Quartz's own rule loses the three spring-forward days (Paris: also none repeated
    # at 02:30 in New York, where the fold is 01:00-02:00).
    quartz = _days("0 30 2 * * ?", zone, DSTPolicy(), start, end)
    assert len(quartz) == 1095 - 3


def test_gap_next_fires_at_the_end_of_the_gap_and_shift_adds_the_gap_length() -> None:
    # New York, 2025-03-09: 02:00 EST jumps to 03:00 EDT (07:00Z).
    start = "2025-03-08T12:00"
    assert _utc_fires_dst("0 30 2 * * ?", "America/New_York", start, 2, DSTPolicy(gap="next")) == [
        "2025-03-09 07:00",  # 03:00 EDT
        "2025-03-10 06:30",
    ]
    shift = DSTPolicy(gap="shift")
    assert _utc_fires_dst("0 30 2 * * ?", "America/New_York", start, 2, shift) == [
        "2025-03-09 07:30",  # 03:30 EDT
        "2025-03-10 06:30",
    ]
    skip = DSTPolicy(gap="skip")
    assert _utc_fires_dst("0 30 2 * * ?", "America/New_York", start, 1, skip) == [
        "2025-03-10 06:30"
    ]


def test_an_instant_moved_onto_another_fire_time_is_delivered_once() -> None:
    for gap in ("next", "shift"):
        policy = DSTPolicy(gap=gap)
        assert _utc_fires_dst("0 0 * * * ?", "America/New_York", "2025-03-09T00:30", 3, policy) == [
            "2025-03-09 06:00",  # 01:00 EST
            "2025-03-09 07:00",  # 03:00 EDT: 02:00 moved here, one fire time
            "2025-03-09 08:00",
        ]
    # Every minute of the gap moves to 03:00: still one fire time at 03:00.
    fires = _utc_fires_dst(
        "0 * * * * ?", "America/New_York", "2025-03-09T01:58", 3, DSTPolicy(gap="next")
    )
    assert fires == ["2025-03-09 06:59", "2025-03-09 07:00", "2025-03-09 07:01"]


def test_fold_first_last_and_both_in_new_york() -> None:
    # 2025-11-02 02:00 EDT falls back to 01:00 EST: 01:30 happens at 05:30Z and 06:30Z.
    start = "2025-11-01T12:00"
    fire = "0 30 1 * * ?"
    first = _utc_fires_dst(fire, "America/New_York", start, 2, DSTPolicy(fold="first"))
    assert first == ["2025-11-02 05:30", "2025-11-03 06:30"]
    last = _utc_fires_dst(fire, "America/New_York", start, 2, DSTPolicy(fold="last"))
    assert last == ["2025-11-02 06:30", "2025-11-03 06:30"]
    both = _utc_fires_dst(fire, "America/New_York", start, 3, DSTPolicy(fold="both"))
    assert both == ["2025-11-02 05:30", "2025-11-02 06:30", "2025-11-03 06:30"]
    hourly = _utc_fires_dst(
        "0 0 * * * ?", "America/New_York", "2025-11-02T00:30", 4, DSTPolicy(fold="both")
    )
    assert hourly == [
        "2025-11-02 05:00",
        "2025-11-02 06:00",
        "2025-11-02 07:00",
        "2025-11-02 08:00",
    ]


def test_fold_last_starts_inside_the_first_occurrence_unlike_quartz() -> None:
    start = datetime(2025, 11, 2, 1, 10, tzinfo=ZoneInfo("America/New_York"))  # EDT
    cron = CronExpression.parse("0 */30 * * * ?")
    quartz = cron.next_after(start, dst=DSTPolicy())
    last = cron.next_after(start, dst=DSTPolicy(fold="last"))
    assert quartz is not None
    assert last is not None
    assert quartz.astimezone(UTC) == datetime(2025, 11, 2, 6, 30, tzinfo=UTC)  # 01:30 EST
    assert last.astimezone(UTC) == datetime(2025, 11, 2, 6, 0, tzinfo=UTC)  # 01:00 EST


def test_the_default_policy_is_the_plain_engine_and_a_fixed_zone_has_no_dst() -> None:
    cron = CronExpression.parse("0 30 2 * * ?", "Europe/Paris")
    start = datetime(2025, 3, 29, tzinfo=UTC)
    assert cron.next_after(start, dst=DSTPolicy()) == cron.next_after(start)
    utc = CronExpression.parse("0 30 2 * * ?", "UTC")
    assert utc.next_after(start, dst=DSTPolicy.never_skip()) == utc.next_after(start)
    assert cron.matches(
        datetime(2025, 3, 30, 3, tzinfo=ZoneInfo("Europe/Paris")), dst=DSTPolicy(gap="next")
    )
    assert not cron.matches(datetime(2025, 3, 30, 3, tzinfo=ZoneInfo("Europe/Paris")))


def test_the_policy_search_reproduces_quartz_on_the_dst_vectors() -> None:
    # The default never reaches next_fire_dst; forced through it, it must agree anyway.
    from tests.cron.test_dst_vectors import ROWS

    rows = [row for row in ROWS if row.gap == row.fold == "quartz"]
    assert rows
    for row in rows:
        cron = CronExpression.parse(row.expr, row.tz)
        zone = cron.timezone
        assert zone is not None
        moment = datetime.fromtimestamp(row.start_ms / 1000, UTC)
        for _ in range(row.n):
            slow = next_fire_dst(cron.fields, moment, zone, "quartz", "quartz")
            fast = cron.next_after(moment)
            assert slow == fast, row
            assert fast is not None
            moment = fast


def test_dst_policy_is_a_validated_value() -> None:
    assert DSTPolicy() == DSTPolicy("quartz", "quartz")
    assert DSTPolicy.never_skip() == DSTPolicy(gap="next", fold="first")
    assert hash(DSTPolicy.never_skip()) == hash(DSTPolicy(gap="next", fold="first"))
    with pytest.raises(
        ValueError, match=r"gap must be one of 'quartz', 'next', 'shift', 'skip', got 'later'"
    ):
        DSTPolicy(gap="later")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"fold must be one of .*'both', got 'twice'"):
        DSTPolicy(fold="twice")  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        DSTPolicy().gap = "next"  # type: ignore[misc]
    with pytest.raises(TypeError, match="DSTPolicy"):
        CronExpression.parse("@daily").next_after(datetime(2025, 1, 1, tzinfo=UTC), dst="next")  # type: ignore[arg-type]


def test_dst_policy_spelling_and_wire_round_trip() -> None:
    policy = DSTPolicy.parse("gap=next,fold=first")
    assert policy == DSTPolicy.never_skip() == DSTPolicy.parse("never_skip")
    assert DSTPolicy.parse(" fold=both ") == DSTPolicy(fold="both")
    assert DSTPolicy.parse(str(policy)) == policy
    assert DSTPolicy.from_wire(policy.to_wire()) == policy
    assert DSTPolicy.from_wire(decode(encode(policy.to_wire()))) == policy  # codec-safe
    for bad in ("", "gap", "gap=next,gap=skip", "when=next", "gap=sometimes"):
        with pytest.raises(ValueError, match=repr(bad) if bad != "gap=sometimes" else "gap"):
            DSTPolicy.parse(bad)
    with pytest.raises(ValueError):
        DSTPolicy.from_wire({"gap": "next"})


def _utc_fires_dst(
    text: str, zone: str, local_start: str, count: int, policy: DSTPolicy
) -> list[str]:
    cron = CronExpression.parse(text, zone)
    moment: datetime | None = datetime.fromisoformat(local_start).replace(tzinfo=ZoneInfo(zone))
    out = []
    for _ in range(count):
        assert moment is not None
        moment = cron.next_after(moment, dst=policy)
        assert moment is not None
        out.append(moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M"))
    return out


def test_samoa_skipping_a_whole_day_and_the_ends_of_the_year_range() -> None:
    # Pacific/Apia went from -10 to +14 at the end of 29 December 2011: no 30 December.
    cron = CronExpression.parse("0 0 12 30 12 ?", "Pacific/Apia")
    start = datetime(2011, 12, 28, tzinfo=UTC)
    quartz, never_skip = cron.next_after(start), cron.next_after(start, dst=DSTPolicy.never_skip())
    shift = cron.next_after(start, dst=DSTPolicy(gap="shift"))
    assert quartz is not None
    assert never_skip is not None
    assert shift is not None
    assert quartz.isoformat() == "2012-12-30T12:00:00+14:00"
    assert never_skip.isoformat() == "2011-12-31T00:00:00+14:00"  # the gap's end
    assert shift.isoformat() == "2011-12-31T12:00:00+14:00"  # 12:00 plus one day
    policy = DSTPolicy.never_skip()
    paris = "Europe/Paris"
    assert CronExpression.parse("0 0 0 31 2 ?", paris).next_after(start, dst=policy) is None
    late = datetime(2199, 12, 31, 12, tzinfo=UTC)
    assert CronExpression.parse("@daily", paris).next_after(late, dst=policy) is None
    early = CronExpression.parse("@yearly", paris).next_after(
        datetime(1960, 1, 1, tzinfo=UTC), dst=policy
    )
    assert early is not None
    assert early.isoformat() == "1970-01-01T00:00:00+01:00"
