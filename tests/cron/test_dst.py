# SPDX-License-Identifier: Apache-2.0
"""DST as Quartz handles it: missing wall times are skipped, repeated ones fire once (later).

Expected instants are written in UTC so that the test says which of two equal wall
times fired.
"""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from tocsin.cron import CronExpression


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
