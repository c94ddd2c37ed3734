# SPDX-License-Identifier: Apache-2.0
"""`describe()`: one plain-English sentence per schedule."""

from __future__ import annotations

import pytest

from tocsin.cron import CronExpression


@pytest.mark.parametrize(
    ("text", "description"),
    [
        ("0 0 12 ? * 6L", "At 12:00, on the last Friday of the month"),
        ("0 0 12 * * ?", "At 12:00"),
        ("30 15 10 * * ?", "At 10:15:30"),
        ("* * * * * ?", "Every second"),
        ("0 * * * * *", "Every minute"),
        ("0 */5 * * * ?", "Every 5 minutes"),
        ("0 0 * * * ?", "At minute 0 of every hour"),
        (
            "0 30 9-17 ? * MON-FRI",
            "At minute 30, during hours 9 through 17, on Monday through Friday",
        ),
        ("0 15 10 L-2 * ?", "At 10:15, 2 days before the last day of the month"),
        ("0 0 0 L * ?", "At 00:00, on the last day of the month"),
        ("0 0 0 LW * ?", "At 00:00, on the last weekday of the month"),
        ("0 0 0 15W * ?", "At 00:00, on the weekday nearest day 15 of the month"),
        ("0 0 12 ? * 2#1", "At 12:00, on the first Monday of the month"),
        ("0 0 12 1,15 * ?", "At 12:00, on days 1 and 15 of the month"),
        ("0 0 12 ? JAN-MAR SUN", "At 12:00, on Sunday, in January through March"),
        ("0 0 0 1 1 ? 2030", "At 00:00, on day 1 of the month, in January, in 2030"),
        ("0 5 */2 * * ?", "At minute 5, every 2 hours"),
        ("@weekly", "At 00:00, on Sunday"),
    ],
)
def test_description_reads_as_plain_english(text: str, description: str) -> None:
    reading = "@weekly" if text == "@weekly" else "Quartz cron"
    assert CronExpression.parse(text).describe() == f"{description} ({reading})"


@pytest.mark.parametrize(
    ("text", "description"),
    [
        ("0 9 * * 1-5", "At 09:00, on Monday through Friday (Unix cron)"),
        ("*/15 * * * *", "Every 15 minutes (Unix cron)"),
        ("0 0 * * 7", "At 00:00, on Sunday (Unix cron)"),
        ("0 0 * * 0", "At 00:00, on Sunday (Unix cron)"),
        ("0 0 1 * *", "At 00:00, on day 1 of the month (Unix cron)"),
        (
            "30 4 1,15 * FRI",
            "At 04:30, on days 1 and 15 of the month, and on every Friday (Unix cron)",
        ),
        (
            "0 0 */10 * MON",
            "At 00:00, every 10 days of the month, starting on day 1, if it is a Monday"
            " (Unix cron)",
        ),
        ("@daily", "At 00:00 (@daily)"),
    ],
)
def test_description_names_the_dialect_it_was_read_in(text: str, description: str) -> None:
    assert CronExpression.parse(text).describe() == description


def test_unix_and_quartz_spellings_of_one_schedule_are_equal_but_describe_their_dialect() -> None:
    unix, quartz = CronExpression.parse("0 12 * * MON"), CronExpression.parse("0 0 12 ? * MON")
    assert unix == quartz
    assert (unix.dialect, quartz.dialect) == ("unix", "quartz")
    assert unix.describe().endswith("(Unix cron)")
    assert quartz.describe().endswith("(Quartz cron)")


def test_equal_expressions_have_equal_descriptions() -> None:
    assert (
        CronExpression.parse("0 0 12 ? * MON-FRI").describe()
        == CronExpression.parse("0 0 12 ? * 2-6").describe()
    )
