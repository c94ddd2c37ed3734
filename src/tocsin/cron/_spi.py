# SPDX-License-Identifier: Apache-2.0
"""Cron's face for the layers above it (the CLI's ``cron explain``), beside the public
:mod:`tocsin.cron`: they import these names from here and from no other ``cron._*``
module (DESIGN.md "Layers"). Re-exports only."""

from __future__ import annotations

from tocsin.cron._describe import describe_fields
from tocsin.cron._dialects import MACROS
from tocsin.cron._fields import FIELD_NAMES, DayKind

__all__ = ["FIELD_NAMES", "MACROS", "DayKind", "describe_fields"]
