# SPDX-License-Identifier: Apache-2.0
"""Triggers: values that yield a schedule's instants (interval, cron, one-shot), with its
calendar, DST policy and jitter applied inside, so the next instant a trigger names is
the next one that will actually be delivered (DESIGN.md "Schedule policies": ``next_fire_at``
everywhere).

Every instant is wall time as epoch seconds (a float), the unit of cron, durable due
times and stored schedules; the in-memory scheduler, which arms monotonic deadlines,
converts at its edge. A trigger never reads the clock: the caller passes "now".

* :meth:`Trigger.after` is the raw sequence (no calendar): the instant strictly after a
  moment, ``None`` when there is none (a one-shot's past, a cron's last year).
* :meth:`Trigger.next_after` is the delivered sequence: :meth:`after` without the
  instants the calendar excludes (at most :data:`SCAN_LIMIT` looked at).
* :meth:`Trigger.delivery` is when an instant is delivered: plus its jitter offset, a
  hash of (key, instant) capped at the gap to the next raw instant (``jitter_offset``).
* :meth:`Trigger.between` lists the raw instants of a range (backfill, pauses, history).

Prior art: APScheduler 4 ``abc.Trigger`` (``next()``: a value that yields the next
instant) and ``triggers/`` (one class per kind); go-quartz ``Trigger.NextFireTime(prev)``.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Final, Protocol, final, runtime_checkable

from ._dst import dst_dropped
from ._jitter import jitter_offset
from ._ticks import Outcome

if TYPE_CHECKING:
    from ..cron import Calendar, CronExpression, DSTPolicy

__all__ = [
    "CRON_WALK_LIMIT",
    "SCAN_LIMIT",
    "CronTrigger",
    "IntervalTrigger",
    "OnceTrigger",
    "Trigger",
]

#: Instants one decision looks at, at most (a calendar that excludes everything, or a
#: per-second schedule after a year of downtime, must not loop for long).
SCAN_LIMIT: Final = 100_000

#: Fire times walked at most before a cron walk that keeps only the most recent ones
#: jumps nearer the end of its range (:meth:`CronTrigger.between`), so listing what a
#: long pause of an every-second schedule missed stays cheap.
CRON_WALK_LIMIT: Final = 10_000

_MICROSECOND: Final = timedelta(microseconds=1)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@runtime_checkable
class Trigger(Protocol):
    """What every trigger answers (interval, cron, one-shot); instants are wall epoch
    seconds. Implementations are immutable values."""

    @property
    def exclude(self) -> Calendar | None:
        """The calendar of instants not delivered, or ``None``."""
        ...

    @property
    def jitter(self) -> float | None:
        """Seconds of jitter (each delivery is its instant plus ``[0, jitter)``), or ``None``."""
        ...

    def after(self, moment: float) -> float | None:
        """The first raw instant strictly after ``moment`` (no calendar), or ``None``."""
        ...

    def excluded(self, instant: float) -> bool:
        """Whether the calendar holds ``instant`` (read in the trigger's zone)."""
        ...

    def next_after(self, moment: float) -> float | None:
        """The first instant strictly after ``moment`` the calendar does not exclude, or
        ``None``: none at all, or :data:`SCAN_LIMIT` excluded ones in a row."""
        ...

    def delivery(self, key: str, instant: float) -> float:
        """When ``instant`` is delivered: plus its jitter offset for ``key``."""
        ...

    def between(
        self, start: float, end: float, *, keep: int | None = None, cap: int | None = None
    ) -> list[float]:
        """The raw instants in ``[start, end)``, oldest first (``keep``: only the most
        recent ``keep``; ``cap``: stop after ``cap + 1``, for a caller that refuses more)."""
        ...


class _Triggers:
    """What the three kinds share: the calendar scan and the jitter (a mixin; each kind
    is a frozen slotted value with ``exclude``, ``jitter`` and ``zone`` fields)."""

    __slots__ = ()

    exclude: Calendar | None
    jitter: float | None
    zone: tzinfo

    def after(self, moment: float) -> float | None:  # pragma: no cover - each kind's own
        raise NotImplementedError

    def excluded(self, instant: float) -> bool:
        """Whether the calendar holds ``instant`` (read in the trigger's zone)."""
        exclude = self.exclude
        return exclude is not None and exclude.excludes(_utc(instant), self.zone)

    def next_after(self, moment: float) -> float | None:
        """The first instant strictly after ``moment`` the calendar does not exclude, or
        ``None`` (none at all, or :data:`SCAN_LIMIT` excluded ones in a row)."""
        instant = self.after(moment)
        if self.exclude is None:
            return instant
        for _ in range(SCAN_LIMIT):
            if instant is None or not self.excluded(instant):
                return instant
            instant = self.after(instant)
        return None

    def delivery(self, key: str, instant: float) -> float:
        """``instant`` plus its jitter offset: a hash of (``key``, ``instant``) in
        ``[0, jitter)``, capped at the gap to the next raw instant, the same on every node."""
        jitter = self.jitter
        if jitter is None:
            return instant
        following = self.after(instant)
        gap = None if following is None else max(0.0, following - instant)
        return instant + jitter_offset(key, _utc(instant), jitter, gap)

    def kept(self, instants: list[float]) -> list[float]:
        """``instants`` without those the calendar excludes."""
        if self.exclude is None:
            return instants
        return [t for t in instants if not self.excluded(t)]


@final
class IntervalTrigger(_Triggers):
    """Instants ``anchor + k * interval`` for every integer ``k`` (a fixed grid: it
    survives restarts and catch-ups).

    Args:
        interval: seconds between instants (> 0; callers check it with ``to_seconds``).
        anchor: one instant of the grid (epoch seconds).
        exclude: a calendar of instants not delivered.
        jitter: seconds, shorter than ``interval`` (``check_jitter`` says so at the call).
        zone: the zone the calendar reads instants in.
    """

    __slots__ = ("anchor", "exclude", "interval", "jitter", "zone")

    def __init__(
        self,
        interval: float,
        anchor: float,
        *,
        exclude: Calendar | None = None,
        jitter: float | None = None,
        zone: tzinfo = UTC,
    ) -> None:
        if not (interval > 0 and math.isfinite(interval)):
            raise ValueError(f"`interval` must be positive finite seconds, got {interval!r}")
        self.interval = float(interval)
        self.anchor = float(anchor)
        self.exclude = exclude
        self.jitter = jitter
        self.zone = zone

    def after(self, moment: float) -> float | None:
        """The first grid point strictly after ``moment``."""
        interval, anchor = self.interval, self.anchor
        k = math.floor((moment - anchor) / interval) + 1
        instant = anchor + k * interval
        while instant <= moment:  # float rounding
            k += 1
            instant = anchor + k * interval
        return instant

    def between(
        self, start: float, end: float, *, keep: int | None = None, cap: int | None = None
    ) -> list[float]:
        """The grid points in ``[start, end)``, oldest first (``keep``: the most recent
        ``keep``; ``cap``: at most ``cap + 1``, the oldest)."""
        if end <= start:
            return []
        interval, anchor = self.interval, self.anchor
        first = math.ceil((start - anchor) / interval)
        last = math.ceil((end - anchor) / interval) - 1
        if keep is not None:
            first = max(first, last - keep + 1)
        if cap is not None:
            last = min(last, first + cap)
        out = [anchor + k * interval for k in range(first, last + 1)]
        # Float rounding at the two ends: keep the range half-open exactly.
        return [t for t in out if start <= t < end]

    def __repr__(self) -> str:
        return f"IntervalTrigger({self.interval:g}, anchor={self.anchor!r})"


@final
class OnceTrigger(_Triggers):
    """One instant, ``at`` (epoch seconds)."""

    __slots__ = ("at", "exclude", "jitter", "zone")

    def __init__(self, at: float, *, exclude: Calendar | None = None, zone: tzinfo = UTC) -> None:
        self.at = float(at)
        self.exclude = exclude
        self.jitter: float | None = None  # a one-shot's delay is its own choice
        self.zone = zone

    def after(self, moment: float) -> float | None:
        """``at`` if it is after ``moment``, else ``None``."""
        return self.at if self.at > moment else None

    def between(
        self, start: float, end: float, *, keep: int | None = None, cap: int | None = None
    ) -> list[float]:
        """``[at]`` if it lies in ``[start, end)``."""
        return [self.at] if start <= self.at < end else []

    def __repr__(self) -> str:
        return f"OnceTrigger({_utc(self.at).isoformat()})"


@final
class CronTrigger(_Triggers):
    """The fire times of a cron expression in a zone, under a DST policy.

    Args:
        expression: a parsed :class:`~tocsin.cron.CronExpression`.
        zone: the zone it is evaluated in (its calendar reads instants there too).
        dst: the DST policy (``None``: Quartz's).
        exclude: a calendar of instants not delivered.
        jitter: seconds, capped per tick at the gap to the next fire time.
    """

    __slots__ = ("dst", "exclude", "expression", "jitter", "zone")

    def __init__(
        self,
        expression: CronExpression,
        zone: tzinfo,
        *,
        dst: DSTPolicy | None = None,
        exclude: Calendar | None = None,
        jitter: float | None = None,
    ) -> None:
        self.expression = expression
        self.zone = zone
        self.dst = dst
        self.exclude = exclude
        self.jitter = jitter

    def after(self, moment: float) -> float | None:
        """The first fire time strictly after ``moment``."""
        fire = self.expression.next_after(datetime.fromtimestamp(moment, self.zone), dst=self.dst)
        return None if fire is None else fire.timestamp()

    def between(
        self, start: float, end: float, *, keep: int | None = None, cap: int | None = None
    ) -> list[float]:
        """Fire times in ``[start, end)``, oldest first. ``keep``: only the most recent
        ``keep`` are wanted (a long range is then not walked whole: past
        :data:`CRON_WALK_LIMIT` fire times the walk jumps to the window that holds them).
        ``cap``: stop after ``cap + 1`` instants (the caller refuses the range)."""
        expr, tz, dst = self.expression, self.zone, self.dst
        out: list[float] = []
        if end <= start:
            return out
        cursor = datetime.fromtimestamp(start, tz) - _MICROSECOND
        walked = 0
        jumped = False
        while True:
            nxt = expr.next_after(cursor, dst=dst)
            if nxt is None:
                break
            t = nxt.timestamp()
            if t >= end:
                break
            if t >= start:  # a DST policy may step back inside the walk's first second
                out.append(t)
            walked += 1
            if cap is not None and len(out) > cap:
                break
            if keep is not None and not jumped and walked >= CRON_WALK_LIMIT and len(out) >= 2:
                # Far too many to walk: jump to the window that holds the last `keep` (the
                # gaps seen so far predict it for a regular expression), then walk on.
                jumped = True
                gap = (out[-1] - out[0]) / (len(out) - 1)
                restart = end - 2 * keep * gap
                if restart > t:
                    out.clear()
                    cursor = datetime.fromtimestamp(restart, tz)
                    continue
            cursor = nxt
            if keep is not None and len(out) > 4 * keep:
                del out[: len(out) - keep]
        return out if keep is None else out[-keep:]

    def dropped(self, since: float, fire_at: float) -> list[tuple[float, Outcome]]:
        """What a daylight-saving change kept from firing between the fire times
        ``since`` and ``fire_at``: :func:`~tocsin.triggers.dst_dropped` under this
        trigger's policy, when the zone's offset differs between the two (two offset
        reads, and nothing walked, otherwise)."""
        zone = self.zone
        if datetime.fromtimestamp(since, zone).utcoffset() == (
            datetime.fromtimestamp(fire_at, zone).utcoffset()
        ):
            return []
        return dst_dropped(self.expression, zone, self.dst, since, fire_at)

    def __repr__(self) -> str:
        return f"CronTrigger({self.expression!r}, {self.zone})"
