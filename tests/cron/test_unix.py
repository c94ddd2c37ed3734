# SPDX-License-Identifier: Apache-2.0
"""Five-field Unix cron: what Debian's cron accepts, what it means, and the near misses."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from itertools import islice
from zoneinfo import ZoneInfo

import pytest

from tocsin.cron import CronExpression, InvalidCronExpressionError


def _next(text: str, start: datetime, count: int = 3) -> list[str]:
    cron = CronExpression.parse(text)
    return [f.strftime("%a %Y-%m-%d %H:%M") for f in islice(cron.iter_after(start), count)]


START = datetime(2025, 1, 1, tzinfo=UTC)  # a Wednesday


def test_five_fields_are_unix_cron_and_six_or_seven_are_quartz() -> None:
    assert CronExpression.parse("0 9 * * 1-5").dialect == "unix"
    assert CronExpression.parse("0 0 9 ? * MON-FRI").dialect == "quartz"
    assert CronExpression.parse("0 0 9 ? * MON-FRI 2030").dialect == "quartz"
    assert CronExpression.parse("@hourly").dialect == "macro"
    assert CronExpression.parse("0 9 * * 1-5") == CronExpression.parse("0 0 9 ? * MON-FRI")


@pytest.mark.parametrize("sunday", ["0", "7", "SUN", "sun"])
def test_zero_and_seven_and_the_name_are_all_sunday(sunday: str) -> None:
    assert _next(f"0 0 * * {sunday}", START, 1) == ["Sun 2025-01-05 00:00"]


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("0 22 * * MON-FRI", "Wed 2025-01-01 22:00"),
        ("0 0 * JUL-AUG *", "Tue 2025-07-01 00:00"),
        ("0 0 * * FRI-7", "Fri 2025-01-03 00:00"),
        ("0 0 * * mon/3", "Thu 2025-01-02 00:00"),  # MON, THU, SUN(7)
        ("*/20 * * * *", "Wed 2025-01-01 00:20"),
        ("5/20 * * * *", "Wed 2025-01-01 00:05"),
        ("05 1 * * *", "Wed 2025-01-01 01:05"),  # leading zeros, as Debian reads them
    ],
)
def test_names_ranges_and_steps_read_as_debian_reads_them(text: str, first: str) -> None:
    assert _next(text, START, 1) == [first]


def test_both_day_fields_restricted_means_either_day_vixies_rule() -> None:
    # The 13th of each month, and every Friday.
    assert _next("0 0 13 * FRI", START, 4) == [
        "Fri 2025-01-03 00:00",
        "Fri 2025-01-10 00:00",
        "Mon 2025-01-13 00:00",
        "Fri 2025-01-17 00:00",
    ]


def test_a_day_field_starting_with_a_star_means_both_days() -> None:
    # Odd days of the month that are also Mondays: "*/2" starts with "*".
    assert _next("0 0 */2 * MON", START, 3) == [
        "Mon 2025-01-13 00:00",
        "Mon 2025-01-27 00:00",
        "Mon 2025-02-03 00:00",
    ]


def test_a_day_no_allowed_month_has_is_accepted_and_never_fires() -> None:
    assert CronExpression.parse("0 0 30 2 *").next_after(START) is None


@pytest.mark.parametrize(
    ("text", "field", "position", "words"),
    [
        ("60 * * * *", "minutes", 0, "out of range"),
        ("* 24 * * *", "hours", 2, "out of range"),
        ("* * 0 * *", "day-of-month", 4, "out of range"),
        ("* * * 13 *", "month", 6, "out of range"),
        ("* * * * 8", "day-of-week", 8, "out of range"),
        ("*/0 * * * *", "minutes", 0, "at least 1"),
        ("5-1 * * * *", "minutes", 0, "goes backwards"),
        ("* * * * SAT-SUN", "day-of-week", 8, "goes backwards"),
        ("* * * * MONDAY", "day-of-week", 8, "not a day-of-week name"),
        ("* * 1,,2 * *", "day-of-month", 4, "empty list element"),
    ],
)
def test_an_invalid_unix_field_names_the_field_position_and_what_is_allowed(
    text: str, field: str, position: int, words: str
) -> None:
    with pytest.raises(InvalidCronExpressionError, match=words) as info:
        CronExpression.parse(text)
    assert (info.value.field, info.value.position) == (field, position)
    assert "allowed (Unix cron, five fields)" in str(info.value)


@pytest.mark.parametrize(
    ("text", "quartz"),
    [
        ("0 12 ? * MON", "0 0 12 ? * MON"),
        ("0 12 L * *", "0 0 12 L * *"),
        ("0 12 15W * *", "0 0 12 15W * *"),
        ("0 12 * * 6L", "0 0 12 * * 6L"),
        ("0 12 * * 2#1", "0 0 12 * * 2#1"),
    ],
)
def test_quartz_only_syntax_in_five_fields_suggests_the_six_field_spelling(
    text: str, quartz: str
) -> None:
    with pytest.raises(
        InvalidCronExpressionError, match="6 fields starting with a seconds"
    ) as info:
        CronExpression.parse(text)
    assert repr(quartz) in str(info.value)
    CronExpression.parse(quartz)  # and the suggestion is valid Quartz


def test_a_unix_weekday_zero_in_a_quartz_expression_explains_both_numberings() -> None:
    with pytest.raises(InvalidCronExpressionError, match=r"SUN=1 … SAT=7.*Unix cron"):
        CronExpression.parse("0 0 12 ? * 0")


def test_both_day_fields_in_quartz_point_to_the_unix_dialect() -> None:
    with pytest.raises(InvalidCronExpressionError, match="five fields"):
        CronExpression.parse("0 0 12 1 * MON")


@pytest.mark.parametrize("text", ["* * * *", "0 0 12 * * ? 2030 x", "* * * * * * * * *"])
def test_a_wrong_field_count_names_both_dialects(text: str) -> None:
    with pytest.raises(InvalidCronExpressionError, match=r"5 fields .*Unix.* or 6-7 .*Quartz"):
        CronExpression.parse(text)


@pytest.mark.parametrize(
    ("zone", "start"),
    [("Europe/Paris", datetime(2025, 3, 29, 12)), ("America/New_York", datetime(2025, 3, 8))],
)
def test_across_dst_a_five_field_expression_follows_the_quartz_rule(
    zone: str, start: datetime
) -> None:
    moment = start.replace(tzinfo=ZoneInfo(zone))
    for unix, quartz in [("30 2 * * *", "0 30 2 * * ?"), ("*/30 * * * *", "0 */30 * * * ?")]:
        got = list(islice(CronExpression.parse(unix, zone).iter_after(moment), 60))
        want = list(islice(CronExpression.parse(quartz, zone).iter_after(moment), 60))
        assert got == want
        assert got[-1] - got[0] > timedelta(hours=1)
