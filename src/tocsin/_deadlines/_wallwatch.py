# SPDX-License-Identifier: Apache-2.0
"""Noticing wall-clock steps that the clock cannot report (NTP, a manual change).

Cron fire times and durable due times are wall-clock instants armed on the monotonic
heap. If wall time steps, the armed deadlines are wrong until re-armed. A real clock has
no event for that, so every :data:`WALL_CHECK_SECONDS` the watch compares
``wall() - monotonic()`` with its last reading; a change beyond
:data:`WALL_JUMP_TOLERANCE` is reported to the clock's ``on_wall_jump`` listeners,
exactly as :class:`~tocsin.ManualClock` reports ``jump_wall``. A step is thus noticed
within ``WALL_CHECK_SECONDS``: a forward step fires the skipped tick once (coalesced),
a backward step never fires a tick twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from ._heap import Deadline

if TYPE_CHECKING:
    from ..clock import Clock
    from ._service import DeadlineService

__all__ = ["WALL_CHECK_SECONDS", "WALL_JUMP_TOLERANCE", "WallWatch"]

#: Seconds between two comparisons of wall and monotonic time.
WALL_CHECK_SECONDS = 30.0
#: Drift between two checks that counts as a jump (slewing by NTP stays far below it).
WALL_JUMP_TOLERANCE = 0.5


@final
class WallWatch(Deadline):
    """Re-arms itself every :data:`WALL_CHECK_SECONDS` on the system's heap."""

    __slots__ = ("_clock", "_deadlines", "_offset")

    def __init__(self, clock: Clock, deadlines: DeadlineService) -> None:
        super().__init__()
        self._clock = clock
        self._deadlines = deadlines
        self._offset = clock.wall() - clock.monotonic()

    def start(self) -> None:
        self._deadlines.add(self._clock.monotonic() + WALL_CHECK_SECONDS, self)

    def fire(self, now: float, deadline: float) -> None:
        offset = self._clock.wall() - now
        delta = offset - self._offset
        self._offset = offset
        if abs(delta) > WALL_JUMP_TOLERANCE:
            self._clock.report_wall_jump(delta)
        self._deadlines.add(now + WALL_CHECK_SECONDS, self)
