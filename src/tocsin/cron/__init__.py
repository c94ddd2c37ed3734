# SPDX-License-Identifier: Apache-2.0
"""Cron expressions: parse, next fire time, description. Pure: no asyncio, no clock.

Two dialects, chosen by field count: 6-7 fields are Quartz cron, exactly 5 are Unix
cron as Debian's cron reads it.

>>> from datetime import datetime, timezone
>>> cron = CronExpression.parse("0 0 12 ? * 6L")
>>> cron.next_after(datetime(2025, 1, 1, tzinfo=timezone.utc)).isoformat()
'2025-01-31T12:00:00+00:00'
>>> CronExpression.parse("0 9 * * 1-5").describe()
'At 09:00, on Monday through Friday (Unix cron)'
"""

from __future__ import annotations

from tocsin.cron._calendar import Calendar
from tocsin.cron._dst import DSTPolicy
from tocsin.cron._expression import CronExpression
from tocsin.errors import InvalidCronExpressionError

__all__ = ["Calendar", "CronExpression", "DSTPolicy", "InvalidCronExpressionError"]

CronExpression.__module__ = "tocsin.cron"
DSTPolicy.__module__ = "tocsin.cron"
Calendar.__module__ = "tocsin.cron"
