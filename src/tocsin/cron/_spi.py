# SPDX-License-Identifier: Apache-2.0
"""Cron's face for the layers above it (the CLI's ``cron explain``, and the one zone
lookup of :mod:`._zones` for schedules, durable cron, the system and the cluster), beside
the public :mod:`tocsin.cron`: they import these names from here and from no other
``cron._*`` module (DESIGN.md "Layers"). Re-exports only."""

from __future__ import annotations

from tocsin.cron._describe import describe_fields
from tocsin.cron._dialects import MACROS
from tocsin.cron._fields import FIELD_NAMES, DayKind
from tocsin.cron._zones import local_zone, local_zone_name, same_zone, zone

__all__ = [
    "FIELD_NAMES",
    "MACROS",
    "DayKind",
    "describe_fields",
    "local_zone",
    "local_zone_name",
    "same_zone",
    "zone",
]
