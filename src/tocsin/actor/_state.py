# SPDX-License-Identifier: Apache-2.0
"""The named states of an actor incarnation (no magic numbers)."""

from __future__ import annotations

import enum

__all__ = ["CellState"]


class CellState(enum.IntEnum):
    """Where an incarnation is in its life; ordered, so ``>= STOPPING`` means "gone"."""

    STARTING = 0
    RUNNING = 1
    SUSPENDED = 2
    STOPPING = 3
    STOPPED = 4
