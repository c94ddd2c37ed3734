# SPDX-License-Identifier: Apache-2.0
"""Print the next five fire times of a few cron expressions (Quartz and Unix).

Pure: the start is a fixed datetime, no clock is read. Run: ``python examples/cron_next.py``.
"""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from tocsin.cron import CronExpression

START = datetime(2025, 3, 27, 9, 0, tzinfo=ZoneInfo("Europe/Paris"))

EXPRESSIONS = [
    ("0 0 12 ? * 6L", "Europe/Paris"),  # noon, last Friday of the month
    ("0 30 2 * * ?", "Europe/Paris"),  # 02:30 daily: skipped on 30 March (DST gap)
    ("0 0/15 9-17 ? * MON-FRI", "America/New_York"),  # office hours, every 15 minutes
    ("@weekly", "UTC"),
    ("30 4 1,15 * FRI", "UTC"),  # Unix cron (5 fields): the 1st, the 15th and every Friday
]


def main() -> None:
    for text, zone in EXPRESSIONS:
        cron = CronExpression.parse(text, zone)
        print(f"{text}  [{zone}]  {cron.describe()}")
        for _, fire in zip(range(5), cron.iter_after(START), strict=False):
            print(f"    {fire.isoformat()}")


if __name__ == "__main__":
    main()
