# SPDX-License-Identifier: Apache-2.0
"""The triggers of stored schedules (:class:`Interval`, :class:`Cron`, :class:`Once`):
when a :class:`~._values.Schedule` fires (the delivery modes, :class:`Delivery`, are the
policy engine's, ``tocsin.triggers``).

Frozen, slotted values checked at construction (typed errors at the line that wrote
them), with no dependency on the rest of the package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import final

from .._deadlines import to_seconds
from ..cron import CronExpression, DSTPolicy
from ..triggers import Delivery

__all__ = ["Cron", "Delivery", "Interval", "Once", "Trigger"]


def _aware(value: object, name: str) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"`{name}` must be an aware datetime, got {value!r}")
    return value


@final
@dataclass(frozen=True, slots=True)
class Interval:
    """Instants ``anchor + k * seconds`` on the wall clock, for every integer ``k``: a grid
    that survives restarts and catch-ups (a late run never moves it).

    Args:
        seconds: the period (positive finite seconds, or a ``timedelta``; at least 1 ms).
        anchor: an aware datetime on the grid; ``None`` (default): the time of the
            schedule's first ``add``, in whole seconds, stored with it and kept by later
            upserts unless ``seconds`` or ``anchor`` change.

    Raises:
        InvalidIntervalError: bad ``seconds``.
        ValueError: a naive ``anchor``.
    """

    seconds: float
    anchor: datetime | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", to_seconds(self.seconds, "seconds"))
        if self.anchor is not None:
            _aware(self.anchor, "anchor")


@final
@dataclass(frozen=True, slots=True)
class Cron:
    """The fire times of a cron expression (Quartz, or 5-field Unix cron).

    Args:
        expression: the cron text (``"0 0 2 * * ?"``).
        timezone: IANA zone the expression is read in (default: UTC, the cluster's
            zone, so every node and every deploy computes the same instants).
        dst: a :class:`~tocsin.DSTPolicy` (default: Quartz's behaviour).

    Raises:
        InvalidCronExpressionError: a bad expression, or one with no fire time.
        InvalidTimezoneError: an unknown zone.
    """

    expression: str
    timezone: str | None = field(default=None, kw_only=True)
    dst: DSTPolicy | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if not isinstance(self.expression, str):
            raise TypeError(f"`expression` must be a str, got {self.expression!r}")
        CronExpression.parse(self.expression, self.timezone)  # raises the typed errors
        if self.dst is not None and not isinstance(self.dst, DSTPolicy):
            raise ValueError(f"`dst` must be a tocsin.DSTPolicy or None, got {self.dst!r}")

    @property
    def parsed(self) -> CronExpression:
        """The expression, parsed in its zone (UTC when none is given)."""
        return CronExpression.parse(self.expression, self.timezone or "UTC")


@final
@dataclass(frozen=True, slots=True)
class Once:
    """One instant: ``at`` (an aware datetime) or ``delay`` seconds after the schedule is
    stored. Either way it is resolved to an absolute instant when stored; once that
    instant is decided the schedule is removed (its ledger row stays).

    Raises:
        ValueError: neither or both of ``at`` and ``delay``, or a naive ``at``.
        InvalidIntervalError: a bad ``delay``.
    """

    at: datetime | None = field(default=None, kw_only=True)
    delay: float | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        if (self.at is None) == (self.delay is None):
            raise ValueError(
                f"Once needs exactly one of `at` (an aware datetime) or `delay` (seconds), "
                f"got at={self.at!r}, delay={self.delay!r}"
            )
        if self.at is not None:
            _aware(self.at, "at")
        else:
            object.__setattr__(self, "delay", to_seconds(self.delay, "delay"))


Trigger = Interval | Cron | Once
