# SPDX-License-Identifier: Apache-2.0
"""Parsing: what is valid, what each form means, and how errors point at the field."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

import tocsin.cron
from tocsin.cron import CronExpression, InvalidCronExpressionError
from tocsin.errors import InvalidTimezoneError

START = datetime(2025, 1, 1, tzinfo=UTC)


def _next(text: str, count: int = 3, start: datetime = START) -> list[str]:
    cron = CronExpression.parse(text)
    return [
        fire.strftime("%Y-%m-%d %H:%M:%S")
        for _, fire in zip(range(count), cron.iter_after(start), strict=False)
    ]


def test_the_public_names_are_exactly_cron_expression_its_policies_and_its_error() -> None:
    assert tocsin.cron.__all__ == [
        "Calendar",
        "CronExpression",
        "DSTPolicy",
        "InvalidCronExpressionError",
    ]
    assert CronExpression.__module__ == "tocsin"  # re-exported at the top: its public path


@pytest.mark.parametrize(
    ("macro", "quartz"),
    [
        ("@yearly", "0 0 0 1 1 ?"),
        ("@annually", "0 0 0 1 1 ?"),
        ("@monthly", "0 0 0 1 * ?"),
        ("@weekly", "0 0 0 ? * SUN"),
        ("@daily", "0 0 0 * * ?"),
        ("@midnight", "0 0 0 * * ?"),
        ("@hourly", "0 0 * * * ?"),
    ],
)
def test_each_macro_equals_its_quartz_expression(macro: str, quartz: str) -> None:
    assert CronExpression.parse(macro) == CronExpression.parse(quartz)
    assert str(CronExpression.parse(macro)) == macro


def test_an_unknown_macro_is_rejected_with_the_list_of_macros() -> None:
    with pytest.raises(InvalidCronExpressionError, match="@hourly"):
        CronExpression.parse("@sometimes")


@pytest.mark.parametrize(
    "text", ["0 * * * * *", "0 0 0 * * MON", "0 0 12 1 * *", "0 0 12 L * *", "0 0 12 * * 6L"]
)
def test_a_star_next_to_the_other_day_field_reads_as_a_question_mark(text: str) -> None:
    CronExpression.parse(text)


def test_both_day_fields_restricted_is_rejected_naming_day_of_week() -> None:
    with pytest.raises(InvalidCronExpressionError) as info:
        CronExpression.parse("0 0 12 1 * MON")
    assert info.value.field == "day-of-week"
    assert info.value.position == 11
    assert "'?'" in str(info.value)


def test_question_marks_in_both_day_fields_are_rejected() -> None:
    with pytest.raises(InvalidCronExpressionError, match="only one"):
        CronExpression.parse("0 0 12 ? * ?")


@pytest.mark.parametrize(
    ("text", "field", "position"),
    [
        ("*X * * * * ?", "seconds", 0),
        ("L 0 12 * * ?", "seconds", 0),
        ("0 60 * * * ?", "minutes", 2),
        ("0 0 24 * * ?", "hours", 4),
        ("0 0 12 0W * ?", "day-of-month", 7),
        ("0 0 12 32 * ?", "day-of-month", 7),
        ("0 0 12 ? 13 *", "month", 9),
        ("0 0 12 ? * 8", "day-of-week", 11),
        ("0 0 12 ? * 6#6", "day-of-week", 11),
        ("0 0 12 ? * MO", "day-of-week", 11),
        ("0 0 12 * * ? 1969", "year", 13),
        ("0 0 12 * * ? 2030-2025", "year", 13),
        ("0 */0 * * * ?", "minutes", 2),
        ("0 0/60 * * * ?", "minutes", 2),
        ("0 0 12 ? * 1-5L", "day-of-week", 11),
        ("0 0 12 L-31 * ?", "day-of-month", 7),
        ("0 0 12 ? * MON-FRI,L", "day-of-week", 11),
        ("0 0 12 * ٥ ?", "month", 9),
        ("0 0 12 * * ?,MON", "day-of-week", 11),
    ],
)
def test_an_invalid_field_is_reported_with_its_name_and_position(
    text: str, field: str, position: int
) -> None:
    with pytest.raises(InvalidCronExpressionError) as info:
        CronExpression.parse(text)
    assert info.value.field == field
    assert info.value.position == position
    assert info.value.expression == text
    assert repr(text.split()[len(text[:position].split())]) in str(info.value)
    assert "allowed:" in str(info.value)


@pytest.mark.parametrize("text", ["", " ", "0 0 12", "0 0 12 *", "kilroy was here"])
def test_too_few_fields_is_rejected_as_a_whole(text: str) -> None:
    with pytest.raises(InvalidCronExpressionError, match=r"expected 5 fields .* or 6-7") as info:
        CronExpression.parse(text)
    assert info.value.field is None


def test_an_eighth_field_is_rejected_unless_it_is_the_star_quartz_ignores() -> None:
    with pytest.raises(InvalidCronExpressionError, match="extra field") as info:
        CronExpression.parse("0 0 12 * * ? 2030 extra")
    assert info.value.position == 18
    assert CronExpression.parse("0 15 10 * * ? 2005 *") == CronExpression.parse(
        "0 15 10 * * ? 2005"
    )


@pytest.mark.parametrize("bad", [None, 12, b"0 0 12 * * ?", ["0"]])
def test_a_non_string_expression_raises_invalid_cron_expression_error(bad: object) -> None:
    with pytest.raises(InvalidCronExpressionError, match="must be a str"):
        CronExpression.parse(bad)  # type: ignore[arg-type]


def test_a_huge_number_is_rejected_without_converting_it() -> None:
    with pytest.raises(InvalidCronExpressionError, match="out of range"):
        CronExpression.parse("1" * 5000 + " 0 12 * * ?")


def test_names_are_case_insensitive_and_equal_to_numbers() -> None:
    assert CronExpression.parse("0 0 12 ? jan-MAR sUn") == CronExpression.parse("0 0 12 ? 1-3 1")


def test_steps_ranges_and_lists_expand_as_in_quartz() -> None:
    assert _next("5/20 * * * * ?") == [
        "2025-01-01 00:00:05",
        "2025-01-01 00:00:25",
        "2025-01-01 00:00:45",
    ]
    assert _next("0 10-50/7 * * * ?", 7)[-1] == "2025-01-01 01:10:00"
    assert _next("0 0 22-2 * * ?", 5) == [
        "2025-01-01 01:00:00",
        "2025-01-01 02:00:00",
        "2025-01-01 22:00:00",
        "2025-01-01 23:00:00",
        "2025-01-02 00:00:00",
    ]


def test_l_alone_in_day_of_week_means_every_saturday() -> None:
    assert _next("0 0 12 ? * L") == [
        "2025-01-04 12:00:00",
        "2025-01-11 12:00:00",
        "2025-01-18 12:00:00",
    ]


def test_nth_weekday_skips_months_without_it() -> None:
    # Fifth Friday: January, May, August 2025.
    assert _next("0 0 12 ? * 6#5") == [
        "2025-01-31 12:00:00",
        "2025-05-30 12:00:00",
        "2025-08-29 12:00:00",
    ]


def test_last_day_minus_n_skips_months_where_it_falls_before_the_first() -> None:
    assert _next("0 0 0 L-30 * ?") == [
        "2025-03-01 00:00:00",
        "2025-05-01 00:00:00",
        "2025-07-01 00:00:00",
    ]


def test_nearest_weekday_does_not_leave_the_month() -> None:
    # 2022-10-01 is a Saturday: 1W is Monday the 3rd, not Friday 30 September.
    fire = CronExpression.parse("0 0 0 1W * ?").next_after(datetime(2022, 9, 15, tzinfo=UTC))
    assert fire == datetime(2022, 10, 3, tzinfo=UTC)


def test_an_expression_that_can_never_fire_gives_none() -> None:
    assert CronExpression.parse("0 0 0 31 2 ?").next_after(START) is None
    assert CronExpression.parse("0 0 0 1 1 ? 2020").next_after(START) is None
    assert list(CronExpression.parse("0 0 0 1 1 ? 2099").iter_after(START))[-1].year == 2099


def test_next_after_is_strictly_after_at_one_second_granularity() -> None:
    cron = CronExpression.parse("* * * * * ?")
    assert cron.next_after(datetime(2025, 1, 1, 0, 0, 0, 999_999, tzinfo=UTC)) == datetime(
        2025, 1, 1, 0, 0, 1, tzinfo=UTC
    )


def test_a_naive_datetime_is_refused_with_a_clear_message() -> None:
    cron = CronExpression.parse("0 0 12 * * ?")
    with pytest.raises(ValueError, match="aware"):
        cron.next_after(datetime(2025, 1, 1))
    with pytest.raises(ValueError, match="aware"):
        cron.matches(datetime(2025, 1, 1))


def test_the_datetime_zone_is_used_unless_the_expression_carries_one() -> None:
    paris = ZoneInfo("Europe/Paris")
    free = CronExpression.parse("0 0 12 * * ?")
    fixed = CronExpression.parse("0 0 12 * * ?", "America/New_York")
    assert free.next_after(datetime(2025, 1, 1, tzinfo=paris)) == datetime(
        2025, 1, 1, 12, tzinfo=paris
    )
    fire = fixed.next_after(datetime(2025, 1, 1, tzinfo=paris))
    assert fire is not None
    assert fire.tzinfo == ZoneInfo("America/New_York")
    assert fire.hour == 12


def test_an_unknown_time_zone_raises_invalid_timezone_error() -> None:
    with pytest.raises(InvalidTimezoneError, match="Europe/Paris"):
        CronExpression.parse("0 0 12 * * ?", "Mars/Olympus")


def test_equal_schedules_compare_and_hash_equal_whatever_the_spelling() -> None:
    one = CronExpression.parse("0 0 12 ? * MON")
    two = CronExpression.parse("0 0 12 ? * 2")
    assert one == two
    assert hash(one) == hash(two)
    assert one != CronExpression.parse("0 0 12 ? * 2", "UTC")
    assert CronExpression.parse("0 0 12 ? * 2", UTC) != one
    assert str(one) == one.expression == "0 0 12 ? * MON"
    assert "0 0 12 ? * MON" in repr(one)


def test_an_expression_is_immutable() -> None:
    cron = CronExpression.parse("0 0 12 * * ?")
    with pytest.raises(AttributeError):
        cron._text = "x"


def test_quartz_name_leniency_reads_the_first_three_letters() -> None:
    # Quartz's own suite relies on it; tocsin keeps the reading (see docs/cron.md).
    assert CronExpression.parse("0 0 13 ? * MONDAY") == CronExpression.parse("0 0 13 ? * MON")
    assert CronExpression.parse("0 0 13 ? FEB123-MAY *") == CronExpression.parse("0 0 13 ? FEB *")
