# SPDX-License-Identifier: Apache-2.0
"""Hypothesis properties of `tocsin.cron`, each against a brute-force reference."""

from __future__ import annotations

import calendar
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from strategies import (
    cron_expressions,
    cron_starts,
    cron_zones,
    day_cron_expressions,
    dense_cron_expressions,
    mutated_cron_text,
)
from tocsin.cron import CronExpression, InvalidCronExpressionError
from tocsin.cron._fields import FIELD_NAMES, MIN_YEAR, CronFields, DayKind

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _quartz_weekday(day: date) -> int:
    return (day.weekday() + 1) % 7 + 1  # SUN=1 … SAT=7


def _nearest_weekday(target: date) -> date:
    """The weekday nearest ``target`` without leaving its month (written out plainly)."""
    for delta in (0, -1, 1, -2, 2):
        candidate = target + timedelta(days=delta)
        if candidate.month == target.month and candidate.weekday() < 5:
            return candidate
    raise AssertionError("unreachable: every month has a weekday within two days")


def _day_matches(fields: CronFields, day: date) -> bool:
    """Reference day rule, independent of the bitset code in ``_next``."""
    rule = fields.days
    last = calendar.monthrange(day.year, day.month)[1]
    kind = rule.kind
    if kind is DayKind.EVERY_DAY:
        return True
    if kind is DayKind.DAYS_OF_MONTH:
        return bool(rule.mask >> day.day & 1)
    if kind is DayKind.DAYS_OF_WEEK:
        return bool(rule.mask >> _quartz_weekday(day) & 1)
    if kind is DayKind.LAST_DAY:
        return day.day == last - rule.value
    if kind is DayKind.LAST_WEEKDAY:
        target = last - rule.value
        return target >= 1 and _nearest_weekday(day.replace(day=target)) == day
    if kind is DayKind.NEAREST_WEEKDAY:
        return rule.value <= last and _nearest_weekday(day.replace(day=rule.value)) == day
    if kind is DayKind.LAST_OF_WEEKDAY:
        return _quartz_weekday(day) == rule.value and day.day + 7 > last
    return _quartz_weekday(day) == rule.value and (day.day - 1) // 7 + 1 == rule.nth


def _wall_matches(fields: CronFields, wall: datetime) -> bool:
    return bool(
        fields.years >> (wall.year - MIN_YEAR) & 1
        and fields.months >> wall.month & 1
        and fields.hours >> wall.hour & 1
        and fields.minutes >> wall.minute & 1
        and fields.seconds >> wall.second & 1
        and _day_matches(fields, wall.date())
    )


@_SETTINGS
@given(cron_expressions(), cron_starts, cron_zones)
def test_fire_times_are_strictly_increasing_and_each_matches(
    text: str, start: datetime, zone: str
) -> None:
    cron = CronExpression.parse(text, zone)
    previous = start.replace(tzinfo=ZoneInfo(zone))
    for count, fire in enumerate(cron.iter_after(previous)):
        assert fire > previous
        assert fire.microsecond == 0
        assert str(fire.tzinfo) == zone
        assert cron.matches(fire)
        assert _wall_matches(cron.fields, fire.replace(tzinfo=None))
        previous = fire
        if count == 20:
            break


@_SETTINGS
@given(
    dense_cron_expressions(),
    cron_starts,
    st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)
def test_no_matching_second_is_skipped_between_fire_times(
    text: str, start: datetime, zone: timezone
) -> None:
    cron = CronExpression.parse(text)
    begin = start.replace(tzinfo=zone, microsecond=0)
    end = begin + timedelta(hours=3)
    expected = []
    moment = begin + timedelta(seconds=1)
    while moment <= end:
        if _wall_matches(cron.fields, moment.replace(tzinfo=None)):
            expected.append(moment)
        moment += timedelta(seconds=1)
    got = []
    for fire in cron.iter_after(begin):
        if fire > end:
            break
        got.append(fire)
    assert got == expected


@_SETTINGS
@given(day_cron_expressions(), st.dates(min_value=date(1995, 1, 1), max_value=date(2080, 1, 1)))
@example("0 0 12 L-30 * ?", date(2024, 1, 1))
@example("0 0 12 1W * ?", date(2022, 9, 30))
@example("0 0 12 ? * 2#5", date(2024, 1, 1))
def test_day_rules_agree_with_a_day_by_day_reference(text: str, first: date) -> None:
    cron = CronExpression.parse(text)
    begin = datetime(first.year, first.month, first.day, 12, tzinfo=UTC)
    days = 500
    expected = [
        begin + timedelta(days=offset)
        for offset in range(1, days)
        if _wall_matches(cron.fields, (begin + timedelta(days=offset)).replace(tzinfo=None))
    ]
    got = []
    for fire in cron.iter_after(begin):
        if fire >= begin + timedelta(days=days):
            break
        got.append(fire)
    assert got == expected


def _check_only_cron_errors(text: str) -> None:
    error: InvalidCronExpressionError | None = None
    try:
        cron = CronExpression.parse(text)
    except InvalidCronExpressionError as raised:
        error = raised
    if error is None:
        cron.next_after(datetime(2025, 1, 1, tzinfo=UTC))
        cron.describe()
        return
    assert error.expression == text
    assert error.field is None or error.field in FIELD_NAMES
    assert error.position is None or 0 <= error.position <= len(text)
    assert str(error)


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_parse_of_arbitrary_text_raises_only_invalid_cron_expression_error(text: str) -> None:
    _check_only_cron_errors(text)


@settings(max_examples=400, deadline=None)
@given(mutated_cron_text())
def test_parse_of_near_valid_text_raises_only_invalid_cron_expression_error(text: str) -> None:
    _check_only_cron_errors(text)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["*", "?", "0", "L", "W", "#", "-", "/", ",", "5", "MON", "JAN", "9" * 30]),
        min_size=0,
        max_size=12,
    ),
    st.sampled_from([" ", "  ", "\t", " \t"]),
)
def test_parse_of_token_soup_raises_only_invalid_cron_expression_error(
    parts: list[str], separator: str
) -> None:
    _check_only_cron_errors(separator.join(parts))


@_SETTINGS
@given(cron_expressions())
def test_equal_fields_mean_equal_expressions_and_hashes(text: str) -> None:
    one, two = CronExpression.parse(text), CronExpression.parse(f" {text} ")
    assume(one.fields == two.fields)
    assert one == two
    assert hash(one) == hash(two)
    assert str(one) == text
