# SPDX-License-Identifier: Apache-2.0
"""Hypothesis properties of `tocsin.cron`, each against a brute-force reference."""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st
from tests.strategies import (
    cron_expressions,
    cron_starts,
    cron_zones,
    day_cron_expressions,
    dense_cron_expressions,
    mutated_cron_text,
    unix_day_expressions,
    unix_expressions,
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


# --- Unix (five-field) cron, against a reference written from Debian's rules -------------

_UNIX_NAMES = {
    **{name: n for n, name in enumerate(["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"])},
    **{name: n for n, name in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN"], start=1)},
}


def _unix_value(text: str) -> int:
    return _UNIX_NAMES[text.upper()] if text[:1].isalpha() else int(text)


def _unix_set(text: str, low: int, high: int) -> set[int]:
    """A Unix field as a set of values, element by element, as cronsim reads it."""
    values: set[int] = set()
    for element in text.split(","):
        head, _, step_text = element.partition("/")
        step = int(step_text) if step_text else 1
        if head == "*":
            first, last = low, high
        elif "-" in head:
            first, last = (_unix_value(part) for part in head.split("-"))
            if step_text and first == last:
                last = high  # cronsim: a one-value range with a step runs to the top
        else:
            first = _unix_value(head)
            last = high if step_text else first
        values.update(range(first, last + 1, step))
    return values


def _unix_matches(text: str, wall: datetime) -> bool:
    """Does ``wall`` match the five-field ``text``? Written from Vixie cron's rules."""
    minute, hour, dom, month, dow = text.split()
    weekdays = {day % 7 for day in _unix_set(dow, 0, 7)}  # 7 is Sunday too
    dom_ok = wall.day in _unix_set(dom, 1, 31)
    dow_ok = (wall.weekday() + 1) % 7 in weekdays  # Python: Monday=0; cron: Sunday=0
    either = not (dom.startswith("*") or dow.startswith("*"))
    return (
        wall.second == 0
        and wall.minute in _unix_set(minute, 0, 59)
        and wall.hour in _unix_set(hour, 0, 23)
        and wall.month in _unix_set(month, 1, 12)
        and ((dom_ok or dow_ok) if either else (dom_ok and dow_ok))
    )


@_SETTINGS
@given(unix_expressions(), cron_starts, cron_zones)
def test_unix_fire_times_are_strictly_increasing_and_each_matches_debians_rules(
    text: str, start: datetime, zone: str
) -> None:
    cron = CronExpression.parse(text, zone)
    assert cron.dialect == "unix"
    previous = start.replace(tzinfo=ZoneInfo(zone))
    for count, fire in enumerate(cron.iter_after(previous)):
        assert fire > previous
        assert cron.matches(fire)
        assert _unix_matches(text, fire.replace(tzinfo=None))
        previous = fire
        if count == 20:
            break


@_SETTINGS
@given(unix_day_expressions(), st.dates(min_value=date(1995, 1, 1), max_value=date(2080, 1, 1)))
@example("0 12 1,15 * FRI", date(2025, 1, 1))  # either day (Vixie's OR rule)
@example("0 12 */2 * MON", date(2025, 1, 1))  # a field starting with * means both
@example("0 12 5-5/10 * 2-2/3", date(2025, 1, 1))  # cronsim's one-value range with a step
def test_unix_day_rules_agree_with_a_day_by_day_reference(text: str, first: date) -> None:
    cron = CronExpression.parse(text)
    begin = datetime(first.year, first.month, first.day, 12, tzinfo=UTC)
    days = 400
    expected = [
        begin + timedelta(days=offset)
        for offset in range(1, days)
        if _unix_matches(text, (begin + timedelta(days=offset)).replace(tzinfo=None))
    ]
    got = []
    for fire in cron.iter_after(begin):
        if fire >= begin + timedelta(days=days):
            break
        got.append(fire)
    assert got == expected


@_SETTINGS
@given(unix_expressions())
def test_a_unix_expression_equals_its_quartz_spelling_when_one_day_field_is_a_star(
    text: str,
) -> None:
    minute, hour, dom, month, dow = text.split()
    assume(dom == "*" or dow == "*")
    quartz_dow = (
        "?"
        if dow == "*"
        else ",".join(
            _quartz_weekday_text(day) for day in sorted({d % 7 for d in _unix_set(dow, 0, 7)})
        )
    )
    quartz_dom = "?" if dom == "*" and dow != "*" else dom
    if dom == "*" and dow == "*":
        quartz_dom, quartz_dow = "*", "?"
    quartz = f"0 {minute} {hour} {quartz_dom} {month} {quartz_dow}"
    # Where the dialects read a spelling differently (cronsim's "5-5/10", Quartz's cap
    # on steps), the comparison says nothing.
    assume(not re.search(r"\b(\w+)-\1/", text.upper()))
    try:
        expected = CronExpression.parse(quartz)
    except InvalidCronExpressionError:
        assume(False)
    assert CronExpression.parse(text) == expected


def _quartz_weekday_text(unix_day: int) -> str:
    return str(unix_day + 1)  # Unix 0 = Sunday; Quartz 1 = Sunday


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["*", "?", "0", "7", "L", "W", "#", "-", "/", ",", "MON", "JAN", "9" * 30]),
        min_size=5,
        max_size=5,
    )
)
def test_five_field_token_soup_raises_only_invalid_cron_expression_error(parts: list[str]) -> None:
    _check_only_cron_errors(" ".join(parts))
