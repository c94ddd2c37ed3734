# SPDX-License-Identifier: Apache-2.0
"""Cron trigger state: a parsed expression, its zone, and its next wall-clock fire time.

Fire times are wall-clock instants computed by :mod:`tocsin.cron` in the schedule's zone;
the scheduler arms them on the monotonic heap (``deadline = now + (next_wall - wall)``)
and re-arms them when wall time jumps. ``next_wall`` only ever moves forward, which is
what guarantees that a backward wall jump never fires the same tick twice.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, final

from ..cron._spi import zone
from ..errors import InvalidCronExpressionError

if TYPE_CHECKING:
    from ..cron import CronExpression, DSTPolicy

__all__ = ["CronState"]


@final
class CronState:
    """The cron part of a schedule record (internal)."""

    __slots__ = ("dst", "expr", "last_wall", "next_wall", "text", "tz", "zone_name")

    def __init__(
        self, expr: CronExpression, text: str, zone_name: str, dst: DSTPolicy | None = None
    ) -> None:
        self.expr = expr
        #: The DST policy every next fire time is computed under (None: Quartz's).
        self.dst = dst
        self.text = text
        self.zone_name = zone_name
        self.tz = zone(zone_name)
        self.next_wall = 0.0
        self.last_wall: float | None = None

    @classmethod
    def create(
        cls, expression: str, zone_name: str, wall: float, dst: DSTPolicy | None = None
    ) -> CronState:
        """Parse and compute the first fire time after ``wall``.

        Raises:
            InvalidCronExpressionError: malformed, or no fire time after now.
            InvalidTimezoneError: unknown zone.
        """
        from ..cron import CronExpression

        if not isinstance(expression, str):
            raise InvalidCronExpressionError(
                f"`expression` must be a str, got {expression!r}", expression=repr(expression)
            )
        state = cls(CronExpression.parse(expression), expression, zone_name, dst)
        first = state.expr.next_after(datetime.fromtimestamp(wall, state.tz), dst=dst)
        if first is None:
            raise InvalidCronExpressionError(
                f"cron expression {expression!r} has no fire time after now "
                f"({datetime.fromtimestamp(wall, state.tz).isoformat()} in {zone_name})",
                expression=expression,
            )
        state.next_wall = first.timestamp()
        return state

    def advance(self, after: float) -> bool:
        """Move to the first fire time strictly after ``after``; False if there is none."""
        nxt = self.expr.next_after(datetime.fromtimestamp(after, self.tz), dst=self.dst)
        if nxt is None:
            return False
        self.last_wall = self.next_wall
        self.next_wall = max(self.next_wall, nxt.timestamp())
        return True
