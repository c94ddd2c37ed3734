# SPDX-License-Identifier: Apache-2.0
"""Scheduling's face for the layers above it (durable, the facade, metrics, the console),
beside the public :mod:`tocsin.scheduling`: they import these names from here and from no
other ``scheduling._*`` module (DESIGN.md "Layers"). Re-exports only.

from ..cron._spi import local_zone_name, same_zone, zone
from ._introspect import SchedulerStatistics, last_lateness
"""

from __future__ import annotations

from ..cron._spi import local_zone_name, same_zone, zone
from ._history import DEFAULT_HISTORY, History, check_history
from ._introspect import SchedulerStatistics, last_lateness
from ._scheduler import Scheduler

__all__ = [
    "DEFAULT_HISTORY",
    "History",
    "Scheduler",
    "SchedulerStatistics",
    "check_history",
    "last_lateness",
    "local_zone_name",
    "same_zone",
    "zone",
]
