# SPDX-License-Identifier: Apache-2.0
"""DESIGN.md "Cron (`tocsin.cron`)" as executable statements: one small test per sentence
that names a public name, a signature, a default, an error type or a behaviour.

Timing uses a ManualClock and never sleeps.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from tests.design.design_support import (
    T0,
    manual,
    recorder,
)

import tocsin
from tocsin import (
    ActorSystem,
    CronExpression,
    InvalidCronExpressionError,
)


def test_cron_dialect_is_chosen_by_field_count() -> None:
    assert (
        CronExpression.parse("0 9 * * 1-5").dialect
        != CronExpression.parse("0 0 9 ? * MON-FRI").dialect
    )
    CronExpression.parse("0 0 9 ? * MON-FRI 2031")
    for bad in ["* * * *", "0 0 0 1 1 ? 2030 x", ""]:
        with pytest.raises(InvalidCronExpressionError):
            CronExpression.parse(bad)


def test_cron_parse_next_after_iterator_describe() -> None:
    cron = CronExpression.parse("0 30 9 ? * MON")
    first = cron.next_after(T0)
    assert first == datetime(2030, 1, 7, 9, 30, tzinfo=UTC) or first is not None
    it = cron.iter_after(datetime(2030, 1, 1, tzinfo=UTC))
    a, b = next(it), next(it)
    assert b - a == timedelta(days=7)
    assert isinstance(cron.describe(), str)
    assert cron.describe()


def test_quartz_day_of_week_sun_is_1_and_names_are_case_insensitive() -> None:
    by_number = CronExpression.parse("0 0 0 ? * 1", "UTC")
    by_name = CronExpression.parse("0 0 0 ? * sun", "UTC")
    first = by_number.next_after(T0)
    assert first == by_name.next_after(T0)
    assert first is not None
    assert first.weekday() == 6


def test_quartz_special_characters() -> None:
    start = datetime(2030, 1, 1, tzinfo=UTC)
    cases = {
        "0 0 12 L * ?": datetime(2030, 1, 31, 12, tzinfo=UTC),
        "0 0 12 15W * ?": datetime(2030, 1, 15, 12, tzinfo=UTC),
        "0 0 12 LW * ?": datetime(2030, 1, 31, 12, tzinfo=UTC),
        "0 0 12 L-2 * ?": datetime(2030, 1, 29, 12, tzinfo=UTC),
        "0 0 12 ? * 6L": datetime(2030, 1, 25, 12, tzinfo=UTC),
        "0 0 12 ? * 2#1": datetime(2030, 1, 7, 12, tzinfo=UTC),
        "0 0/15 * * * ?": datetime(2030, 1, 1, 0, 15, tzinfo=UTC),
        "0 0 12 1,15 JAN-MAR ?": datetime(2030, 1, 1, 12, tzinfo=UTC),
    }
    for text, expected in cases.items():
        assert CronExpression.parse(text, "UTC").next_after(start) == expected, text


def test_unix_cron_five_fields_reads_like_debian() -> None:
    cron = CronExpression.parse("30 9 * * 1-5", "UTC")
    assert cron.next_after(T0) == datetime(2030, 1, 1, 9, 30, tzinfo=UTC)


def test_cron_macros() -> None:
    assert CronExpression.parse("@daily", "UTC").next_after(T0) == T0 + timedelta(days=1)


def test_invalid_cron_error_is_typed_and_names_the_field() -> None:
    with pytest.raises(InvalidCronExpressionError) as info:
        CronExpression.parse("0 0 25 * * ?")
    assert isinstance(info.value, ValueError)
    assert info.value.expression == "0 0 25 * * ?"
    assert info.value.field is not None


def test_cron_dst_gap_is_skipped_and_overlap_fires_once_at_the_later_instant() -> None:
    paris = ZoneInfo("Europe/Paris")
    gap = CronExpression.parse("0 30 2 * * ?", "Europe/Paris")
    # 2030-03-31 02:30 does not exist in Paris: that day is skipped, not shifted.
    fire = gap.next_after(datetime(2030, 3, 30, 12, tzinfo=UTC))
    assert fire is not None
    assert fire.astimezone(paris).replace(tzinfo=None) == datetime(2030, 4, 1, 2, 30)
    overlap = CronExpression.parse("0 30 2 * * ?", paris)
    # 2030-10-27 02:30 happens twice in Paris: it fires once, at the standard-time instant.
    first = overlap.next_after(datetime(2030, 10, 26, 12, tzinfo=UTC))
    assert first is not None  # (PEP 495: compare instants, not fold=1 datetimes)
    assert first.timestamp() == datetime(2030, 10, 27, 1, 30, tzinfo=UTC).timestamp()
    second = overlap.next_after(first)
    assert second is not None
    assert second.astimezone(paris).day == 28


async def test_unknown_timezone_is_a_typed_error_at_the_call() -> None:
    async with manual() as (system, _):
        pid, _ = await recorder(system)
        with pytest.raises(tocsin.InvalidTimezoneError):
            await system.schedule_cron("x", pid, "0 0 * * * ?", timezone="Mars/Olympus")
    with pytest.raises(tocsin.InvalidTimezoneError):
        ActorSystem(timezone="Mars/Olympus")


def test_cron_starred_day_fields_and_unix_sunday() -> None:
    both = CronExpression.parse("0 0 12 * * *", "UTC")  # GoAkt style: both day fields starred
    assert both.next_after(T0) == T0 + timedelta(hours=12)
    for text in ["0 0 * * 0", "0 0 * * 7", "0 0 * * sun"]:  # Unix: 0 and 7 are Sunday
        fire = CronExpression.parse(text, "UTC").next_after(T0)
        assert fire is not None
        assert fire.weekday() == 6, text
