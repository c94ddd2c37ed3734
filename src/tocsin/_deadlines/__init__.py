# SPDX-License-Identifier: Apache-2.0
"""Deadlines: the one heap behind the one armed timer, the wall-jump watch, and the one
validator of durations in seconds.

Every layer above (the actor kernel's ask timeouts and passivation, scheduling, durable
alarms and budgets) arms its deadlines here, so a system has exactly one clock timer.
This package imports nothing of tocsin but ``errors`` and ``clock``.
"""

from ._heap import COMPACT_DEAD_RATIO, COMPACT_MIN_SIZE, Deadline, DeadlineHeap
from ._seconds import MIN_SECONDS, Seconds, to_seconds
from ._service import MAX_FIRES_PER_TURN, DeadlineService
from ._wallwatch import WALL_CHECK_SECONDS, WALL_JUMP_TOLERANCE, WallWatch

__all__ = [
    "COMPACT_DEAD_RATIO",
    "COMPACT_MIN_SIZE",
    "MAX_FIRES_PER_TURN",
    "MIN_SECONDS",
    "WALL_CHECK_SECONDS",
    "WALL_JUMP_TOLERANCE",
    "Deadline",
    "DeadlineHeap",
    "DeadlineService",
    "Seconds",
    "WallWatch",
    "to_seconds",
]
