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
    assert CronExpression.parse(text).describe() == description


def test_equal_expressions_have_equal_descriptions() -> None:
    assert (
        CronExpression.parse("0 0 12 ? * MON-FRI").describe()
        == CronExpression.parse("0 0 12 ? * 2-6").describe()
    )
