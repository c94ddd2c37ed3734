# SPDX-License-Identifier: Apache-2.0
"""Quartz cron expressions: parse, next fire time, description. Pure: no asyncio, no clock.

>>> from datetime import datetime, timezone
>>> cron = CronExpression.parse("0 0 12 ? * 6L")
>>> cron.next_after(datetime(2025, 1, 1, tzinfo=timezone.utc)).isoformat()
'2025-01-31T12:00:00+00:00'
"""

from __future__ import annotations

from tocsin.cron._expression import CronExpression
from tocsin.errors import InvalidCronExpressionError

__all__ = ["CronExpression", "InvalidCronExpressionError"]

CronExpression.__module__ = "tocsin.cron"
