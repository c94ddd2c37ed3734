# SPDX-License-Identifier: Apache-2.0
"""Fire times of durable cron tasks (``DurableActor.cron``, issue 15 part 2).

A cron task is a stored row with its expression in ``cron`` and its IANA zone in
``timezone``; its ``due`` is a wall-clock instant like every task's. Only two questions
are asked of the expression: the first fire time after ``now`` (at registration) and the
next fire time after a run (at completion). Expressions are parsed once per text
(:func:`functools.lru_cache`), so a completion costs one ``next_after``.

The rule after downtime: the next due time is the first fire time strictly after
``max(due of the run that just finished, now)``. A task overdue by ten missed fires runs
once, then continues at the next *future* fire time (as cron does after a reboot, and as
Quartz's "fire once now" misfire instruction does), never once per missed fire.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache
from typing import TYPE_CHECKING

from ..cron._spi import zone
from ..errors import InvalidCronExpressionError
from ..triggers import CronTrigger

if TYPE_CHECKING:
    from ..cron import CronExpression, DSTPolicy

__all__ = ["first_fire", "next_fire"]


@lru_cache(maxsize=1024)
def _parsed(text: str) -> CronExpression:
    from ..cron import CronExpression

    return CronExpression.parse(text)


def _after(text: str, zone_name: str, after: float, dst: DSTPolicy | None = None) -> float | None:
    # The policy engine's trigger: the one place a cron's next instant is computed.
    return CronTrigger(_parsed(text), zone(zone_name), dst=dst).after(after)


def first_fire(
    expression: object, zone_name: str, now: float, dst: DSTPolicy | None = None
) -> float:
    """The first fire time after ``now`` (epoch seconds) in ``zone_name`` (under ``dst``).

    Raises:
        InvalidCronExpressionError: not a str, malformed, or no fire time after now.
        InvalidTimezoneError: ``zone_name`` is not an IANA zone.
    """
    if not isinstance(expression, str):
        raise InvalidCronExpressionError(
            f"`expression` must be a str, got {expression!r}", expression=repr(expression)
        )
    tz = zone(zone_name)  # the zone first: a bad zone is the clearer error
    fire = _after(expression, zone_name, now, dst)
    if fire is None:
        raise InvalidCronExpressionError(
            f"cron expression {expression!r} has no fire time after now "
            f"({datetime.fromtimestamp(now, tz).isoformat()} in {zone_name})",
            expression=expression,
        )
    return fire


def next_fire(expression: str, zone_name: str, due: float, now: float) -> float | None:
    """The due time after a run that was due at ``due`` and finished its turn at ``now``:
    the first fire time strictly after both, or ``None`` when the expression has no more
    (the task is then done)."""
    return _after(expression, zone_name, max(due, now))
