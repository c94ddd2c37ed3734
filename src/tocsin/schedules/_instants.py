# SPDX-License-Identifier: Apache-2.0
"""A stored schedule's spec as the policy engine's trigger: nothing here computes an
instant (the engine, ``tocsin.triggers``, does: the raw instants, the calendar, DST,
jitter, the next instant delivered); this fixes what a spec leaves to the time it is
stored and names the trigger it stands for. Nothing here reads the clock but the
construction check (the caller passes ``now`` everywhere else).

* :func:`resolve` fixes what a spec leaves to the time it is stored: an
  :class:`~._values.Interval`'s default anchor (whole seconds) and a
  :class:`~._values.Once`'s ``delay``.
* :func:`trigger_of` is a resolved spec's :class:`~tocsin.triggers.Trigger`.
* :func:`check_has_instant` is :func:`~tocsin.triggers.check_horizon` at construction.
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..triggers import CronTrigger, IntervalTrigger, OnceTrigger, Trigger, check_horizon
from ._triggers import Cron, Interval, Once

if TYPE_CHECKING:
    from ..cron import Calendar

__all__ = ["check_has_instant", "resolve", "trigger_of"]


class Spec(Protocol):
    """What the instants of a schedule depend on (a :class:`~._values.Schedule`)."""

    @property
    def id(self) -> str: ...
    @property
    def trigger(self) -> Interval | Cron | Once: ...
    @property
    def exclude(self) -> Calendar | None: ...
    @property
    def jitter(self) -> float | None: ...


S = TypeVar("S", bound=Spec)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def resolve(spec: S, now: float, *, keep_anchor: datetime | None = None) -> S:
    """``spec`` with what it leaves to storage fixed at ``now`` (epoch seconds): an
    Interval without an anchor gets ``keep_anchor`` (the stored one, kept across
    upserts) or ``now`` in whole seconds; ``Once(delay=d)`` becomes ``Once(at=now + d)``."""
    trigger = spec.trigger
    if isinstance(trigger, Interval) and trigger.anchor is None:
        anchor = keep_anchor if keep_anchor is not None else _utc(float(math.floor(now)))
        changed: Any = replace(spec, trigger=Interval(trigger.seconds, anchor=anchor))  # type: ignore[type-var]
        return changed  # type: ignore[no-any-return]
    if isinstance(trigger, Once) and trigger.at is None:
        assert trigger.delay is not None
        once: Any = replace(spec, trigger=Once(at=_utc(now + trigger.delay)))  # type: ignore[type-var]
        return once  # type: ignore[no-any-return]
    return spec


def trigger_of(spec: Spec) -> Trigger:
    """The engine's trigger for a resolved ``spec`` (see :func:`resolve`): its instants,
    its calendar read in its zone (a cron's, else UTC), its DST policy and its jitter
    keyed by the schedule's id."""
    trigger = spec.trigger
    exclude, jitter = spec.exclude, spec.jitter or None
    if isinstance(trigger, Interval):
        assert trigger.anchor is not None, "resolve() the spec first"
        return IntervalTrigger(
            trigger.seconds, trigger.anchor.timestamp(), exclude=exclude, jitter=jitter
        )
    if isinstance(trigger, Once):
        assert trigger.at is not None, "resolve() the spec first"
        return OnceTrigger(trigger.at.timestamp(), exclude=exclude)
    expression = trigger.parsed
    return CronTrigger(
        expression, expression.timezone or UTC, dst=trigger.dst, exclude=exclude, jitter=jitter
    )


def check_has_instant(spec: Spec) -> None:
    """The check made when a :class:`Schedule` is constructed: a calendar or policy that
    leaves no instant in the next 10 years is a ``ValueError`` (the engine's
    :func:`~tocsin.triggers.check_horizon`). A ``Once`` already past is accepted (it is
    decided, as missed, when stored); a ``Once`` its calendar excludes is not."""
    from ..clock import SystemClock

    now = SystemClock().wall()
    resolved = resolve(spec, now)
    trigger = trigger_of(resolved)
    once = resolved.trigger
    if isinstance(once, Once):
        assert once.at is not None
        # A past Once is checked at its own instant (it is decided when stored).
        now = min(now, math.nextafter(once.at.timestamp(), -math.inf))
    check_horizon(trigger, now, f"schedule {spec.id!r}")
