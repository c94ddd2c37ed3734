# SPDX-License-Identifier: Apache-2.0
"""Scheduling's face for the layers above it (durable, the facade, metrics, the console),
beside the public :mod:`tocsin.scheduling`: they import these names from here and from no
other ``scheduling._*`` module (DESIGN.md "Layers"). Re-exports only.

``Scheduler`` is the service the facade starts; its ``statistics()`` (a
``SchedulerStatistics``) and ``last_lateness`` read it for introspection; ``zone`` and
``local_zone_name`` resolve cron time zones the way schedules do (``same_zone`` compares
two by their rules).
"""

from __future__ import annotations

from ._cron import local_zone_name, same_zone, zone
from ._introspect import SchedulerStatistics, last_lateness
from ._scheduler import Scheduler

__all__ = [
    "Scheduler",
    "SchedulerStatistics",
    "last_lateness",
    "local_zone_name",
    "same_zone",
    "zone",
]
