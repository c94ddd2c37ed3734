# SPDX-License-Identifier: Apache-2.0
"""Scheduling's face for the layers above it (durable, the facade, metrics, the console),
beside the public :mod:`tocsin.scheduling`: they import these names from here and from no
other ``scheduling._*`` module (DESIGN.md "Layers"). Re-exports only.

``Scheduler`` is the service the facade starts; ``lateness_ring``, ``last_lateness`` and
``schedule_counts`` read it for introspection. ``zone``, ``local_zone_name`` and
``same_zone`` are the cron layer's one zone lookup (:mod:`tocsin.cron._zones`),
re-exported for the layers that import them from here.
"""

from __future__ import annotations

from ..cron._spi import local_zone_name, same_zone, zone
from ._introspect import last_lateness, lateness_ring, schedule_counts
from ._scheduler import Scheduler

__all__ = [
    "Scheduler",
    "last_lateness",
    "lateness_ring",
    "local_zone_name",
    "same_zone",
    "schedule_counts",
    "zone",
]
