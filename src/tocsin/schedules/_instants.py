# SPDX-License-Identifier: Apache-2.0
"""The instants of a stored schedule: pure functions of its spec (nothing here reads the
clock; the caller passes ``now``).

One small module on purpose: the policy engine of the companion issue (``tocsin/
triggers/``) will compute the same instants, and this is the one place to swap for it.

* :func:`resolve` fixes what a spec leaves to the time it is stored: an
  :class:`~._values.Interval`'s default anchor (whole seconds) and a
  :class:`~._values.Once`'s ``delay``.
* :class:`Instants` walks a resolved spec: the raw instants (:meth:`Instants.after`),
  which of them the calendar excludes, their jittered delivery times, and the next
  instant that will actually be delivered (:meth:`Instants.next_delivered`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, final

from ..triggers import DST_SCAN, dst_dropped, jitter_offset
from ._triggers import Cron, Interval, Once

if TYPE_CHECKING:
    from ..cron import Calendar

__all__ = ["DST_SCAN", "HORIZON", "Instants", "check_has_instant", "resolve"]

#: How far ahead an instant must exist (DESIGN.md: "no instant in the next 10 years").
HORIZON: Final = 10 * 365.25 * 86_400.0
#: Instants walked one by one before the search samples day starts instead.
_WALK: Final = 200


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


@final
class Instants:
    """The instants of one resolved spec (see :func:`resolve`)."""

    # Slotted, and the interval's grid kept as floats: one is walked per instant fired
    # on every node (bench/schedules.py).
    __slots__ = ("_anchor", "_cron", "_dst", "_step", "spec")

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        trigger = spec.trigger
        self._cron = trigger.parsed if isinstance(trigger, Cron) else None
        self._dst = trigger.dst if isinstance(trigger, Cron) else None
        interval = isinstance(trigger, Interval) and trigger.anchor is not None
        self._anchor = trigger.anchor.timestamp() if interval else 0.0  # type: ignore[union-attr]
        self._step = trigger.seconds if isinstance(trigger, Interval) else 0.0

    @property
    def zone(self) -> str:
        """The zone calendars are read in (a cron's zone, else UTC)."""
        trigger = self.spec.trigger
        return (trigger.timezone if isinstance(trigger, Cron) else None) or "UTC"

    def after(self, t: float) -> float | None:
        """The first raw instant strictly after ``t`` (epoch seconds), calendar not
        applied; ``None`` when there is none."""
        step = self._step
        if step:
            anchor = self._anchor
            k = math.floor((t - anchor) / step) + 1
            candidate = anchor + k * step
            while candidate <= t:  # float rounding at the boundary
                k += 1
                candidate = anchor + k * step
            return candidate
        trigger = self.spec.trigger
        if isinstance(trigger, Once):
            assert trigger.at is not None
            at = trigger.at.timestamp()
            return at if at > t else None
        assert self._cron is not None
        nxt = self._cron.next_after(_utc(t), dst=self._dst)
        return None if nxt is None else nxt.timestamp()

    def before(self, t: float, *, horizon: float = HORIZON) -> float | None:
        """The last raw instant at or before ``t`` (searching back up to ``horizon``)."""
        trigger = self.spec.trigger
        if isinstance(trigger, Interval):
            assert trigger.anchor is not None
            anchor, step = trigger.anchor.timestamp(), trigger.seconds
            candidate = anchor + math.floor((t - anchor) / step) * step
            while candidate > t:  # float rounding at the boundary
                candidate -= step
            return candidate
        span = 60.0
        while span <= horizon * 8:
            cursor = self.after(t - span)
            best = None
            while cursor is not None and cursor <= t:
                best = cursor
                cursor = self.after(cursor)
            if best is not None:
                return best
            span *= 8
        return None

    def count(self, after: float, until: float, cap: int) -> int:
        """How many raw instants lie in ``(after, until]``; at most ``cap`` are walked
        (a longer walk answers ``cap``); an Interval's are counted, not walked."""
        trigger = self.spec.trigger
        if isinstance(trigger, Interval):
            assert trigger.anchor is not None
            anchor, step = trigger.anchor.timestamp(), trigger.seconds
            return max(0, math.floor((until - anchor) / step) - math.floor((after - anchor) / step))
        found = 0
        cursor = self.after(after)
        while cursor is not None and cursor <= until and found < cap:
            found += 1
            cursor = self.after(cursor)
        return found

    def dst_dropped(self, since: float, fire_at: float) -> list[tuple[float, str]]:
        """The instants a daylight-saving change kept from firing in ``(since,
        fire_at)``: ``"dst_gap"`` (a matching wall time that did not exist, reported at
        the first instant after the gap) or ``"dst_fold"`` (the occurrence of a repeated
        wall time the policy does not fire). Empty unless the zone's offset differs
        between the two times (one offset read each otherwise); a cron schedule only.
        Walks at most :data:`DST_SCAN` matching wall times (the scheduler's rule,
        ``scheduling/_cron.py``)."""
        expr = self._cron
        if expr is None:
            return []
        tz = expr.timezone or UTC
        if datetime.fromtimestamp(since, tz).utcoffset() == (
            datetime.fromtimestamp(fire_at, tz).utcoffset()
        ):
            return []
        return [
            (at, str(outcome)) for at, outcome in dst_dropped(expr, tz, self._dst, since, fire_at)
        ]

    def excluded(self, instant: float) -> bool:
        """Whether the calendar excludes ``instant``."""
        exclude = self.spec.exclude
        return exclude is not None and exclude.excludes(_utc(instant), self.zone)

    def due(self, instant: float) -> float:
        """When ``instant`` is delivered: plus its jitter, never past the next instant."""
        jitter = self.spec.jitter
        if not jitter:
            return instant
        following = self.after(instant)
        gap = None if following is None else following - instant
        return instant + jitter_offset(self.spec.id, _utc(instant), jitter, gap)

    def next_delivered(self, t: float, *, horizon: float = HORIZON) -> float | None:
        """The first instant after ``t`` the calendar keeps, within ``horizon`` seconds
        (``None``: none found). Walks instants one by one, then samples four instants
        of each later day, so a calendar excluding whole days is crossed in O(days)."""
        end = t + horizon
        cursor: float | None = t
        for _ in range(_WALK):
            assert cursor is not None
            cursor = self.after(cursor)
            if cursor is None or cursor > end:
                return None
            if not self.excluded(cursor):
                return cursor
        assert cursor is not None
        day = _utc(cursor).replace(hour=0, minute=0, second=0, microsecond=0)
        while day.timestamp() < end:
            day += timedelta(days=1)
            for hour in (0, 6, 12, 18):  # a few probes a day: whole-day and window calendars
                probe = self.after(day.timestamp() + hour * 3600.0 - 1e-6)
                if probe is None or probe > end:
                    return None
                if not self.excluded(probe):
                    return probe
        return None


def check_has_instant(spec: Spec) -> None:
    """The check made when a :class:`Schedule` is constructed: a calendar or policy that
    leaves no instant in the next 10 years is a ``ValueError``. A ``Once`` already past is
    accepted (it is decided, as missed, when stored); a ``Once`` its calendar excludes is
    not."""
    from ..clock import SystemClock

    now = SystemClock().wall()
    resolved = resolve(spec, now)
    trigger = resolved.trigger
    if isinstance(trigger, Once):
        assert trigger.at is not None
        if Instants(resolved).excluded(trigger.at.timestamp()):
            raise ValueError(
                f"schedule {spec.id!r}: `exclude` excludes the one instant of its Once "
                f"({trigger.at.isoformat()}): it would never run"
            )
        return
    if Instants(resolved).next_delivered(now) is None:
        raise ValueError(
            f"schedule {spec.id!r}: its trigger and `exclude` leave no instant in the next "
            "10 years; widen the calendar or change the trigger"
        )
