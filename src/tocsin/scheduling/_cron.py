# SPDX-License-Identifier: Apache-2.0
"""Cron trigger state: a parsed expression, its zone, and its next wall-clock fire time.

Fire times are wall-clock instants computed by :mod:`tocsin.cron` in the schedule's zone;
the scheduler arms them on the monotonic heap (``deadline = now + (next_wall - wall)``)
and re-arms them when wall time jumps. Outside a cluster ``next_wall`` only ever moves
forward, which is what guarantees that a backward wall jump never fires the same tick
twice. In a cluster a backward jump may bring it back (:meth:`CronState.rewind`), never to
an instant this node has fired: the cluster's claim is what keeps a tick single there.
"""

from __future__ import annotations

import math
from collections import deque
from datetime import datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING, Final, final

from ..actor._spi import Outcome
from ..cron import DSTPolicy
from ..cron._spi import zone
from ..errors import InvalidCronExpressionError
from ..triggers import SCAN_LIMIT, CronTrigger, cron_after

if TYPE_CHECKING:
    from ..cron import CronExpression

__all__ = ["OVERDUE_SCAN", "SHARED_GROUPS", "SHARED_INSTANTS", "CronState"]

#: Most overdue fire times counted after a stall (each costs one next-fire computation):
#: the policy engine's one scan limit.
OVERDUE_SCAN: Final = SCAN_LIMIT
#: Zones with no daylight saving by name (a ``ZoneInfo`` is not a fixed ``timezone``).
_NO_DST: Final = frozenset({"UTC", "Etc/UTC", "GMT", "Etc/GMT", "Etc/UCT", "UCT", "Zulu"})
#: Most answer sets kept in :data:`_SHARED` (one per expression text, zone and DST policy
#: in use); past it the registry starts again empty (states keep the set they hold).
SHARED_GROUPS: Final = 1024
#: Most fire times one answer set remembers before it starts again empty: the few
#: instants its schedules ask about at one time (this one, the next for jitter).
SHARED_INSTANTS: Final = 16
#: The next-fire answers shared by every schedule of one (expression text, zone, DST
#: policy): N references firing at one instant ask the same question N times, and a
#: next-fire computation costs ~15 µs against a dict read's ~0.1 µs (bench/cluster_load.py).
#: The answers are pure functions of the key and the instant, so sharing them across
#: schedules and systems changes no result.
_SHARED: dict[tuple[str, str, DSTPolicy | None], dict[float, float | None]] = {}
_MISSING: Final = -math.inf


def _fixed(tz: tzinfo) -> bool:
    """Whether ``tz`` is a fixed offset (``datetime.timezone``: never a DST change)."""
    return isinstance(tz, timezone)


@final
class CronState:
    """The cron part of a schedule record (internal)."""

    __slots__ = (
        "deliver_at",
        "delivery",
        "dst",
        "dst_watch",
        "expr",
        "last_offset",
        "last_wall",
        "next_wall",
        "offset",
        "shared",
        "text",
        "tz",
        "zone_name",
    )

    def __init__(
        self,
        expr: CronExpression,
        text: str,
        zone_name: str,
        dst: DSTPolicy | None = None,
        delivery: str = "at_most_once",
    ) -> None:
        self.expr = expr
        #: The DST policy every next fire time is computed under (None: Quartz's).
        self.dst = dst
        self.text = text
        self.zone_name = zone_name
        self.tz = zone(zone_name)
        #: Whether fire times may straddle a DST change (then `dropped` is asked).
        self.dst_watch = zone_name not in _NO_DST and not _fixed(self.tz)
        #: (fire time, its UTC offset) of the last `dropped` call: one offset read
        #: per fire instead of two.
        self.last_offset: tuple[float, timedelta | None] = (math.nan, None)
        self.next_wall = 0.0
        self.last_wall: float | None = None
        #: Cluster cron: "at_most_once" or "at_least_once" (schedule_cron(delivery=...)).
        self.delivery = delivery
        #: Seconds the tick due at ``next_wall`` is delivered after it (jitter; else 0).
        self.offset = 0.0
        #: Cluster mode: the monotonic delivery time of the tick due at ``next_wall``
        #: when it was armed to fire ahead of it (its claim is asked then); else None.
        self.deliver_at: float | None = None
        #: The answers of `following`, shared with every schedule of the same text, zone
        #: and DST policy (a jittered schedule also asks for the fire time after the next
        #: one to cap its jitter, then for the same one when it fires).
        self.shared = _answers(text, zone_name, dst)

    @classmethod
    def create(
        cls,
        expression: str,
        zone_name: str,
        wall: float,
        dst: DSTPolicy | None = None,
        delivery: str = "at_most_once",
    ) -> CronState:
        """Parse and compute the first fire time after ``wall``; ``delivery`` is the
        cluster delivery mode (checked by the scheduling call; unused outside a cluster).

        Raises:
            InvalidCronExpressionError: malformed, or no fire time after now.
            InvalidTimezoneError: unknown zone.
        """
        from ..cron import CronExpression

        if not isinstance(expression, str):
            raise InvalidCronExpressionError(
                f"`expression` must be a str, got {expression!r}", expression=repr(expression)
            )
        state = cls(CronExpression.parse(expression), expression, zone_name, dst, delivery)
        first = cron_after(state.expr, state.tz, dst, wall)
        if first is None:
            raise InvalidCronExpressionError(
                f"cron expression {expression!r} has no fire time after now "
                f"({datetime.fromtimestamp(wall, state.tz).isoformat()} in {zone_name})",
                expression=expression,
            )
        state.next_wall = first
        return state

    def advance(self, after: float) -> bool:
        """Move to the first fire time strictly after ``after``; False if there is none."""
        nxt = self.following(after)
        if nxt is None:
            return False
        self.last_wall = self.next_wall
        self.next_wall = max(self.next_wall, nxt)
        return True

    def following(self, after: float) -> float | None:
        """The first fire time strictly after ``after`` (epoch seconds), or None.

        Computed once per instant for all the schedules that share this one's text, zone
        and DST policy (:data:`_SHARED`), then read."""
        shared = self.shared
        result = shared.get(after, _MISSING)
        if result is _MISSING:
            result = cron_after(self.expr, self.tz, self.dst, after)
            if len(shared) >= SHARED_INSTANTS:
                shared.clear()
            shared[after] = result
        return result

    def dropped(self, previous: float, fire_at: float) -> list[tuple[float, Outcome]]:
        """The instants a daylight-saving change kept from firing between the fire times
        ``previous`` and ``fire_at`` (epoch seconds), each with ``DST_GAP`` (a matching
        wall time that did not exist: reported at the first instant after the gap) or
        ``DST_FOLD`` (the occurrence of a repeated wall time the policy does not fire).

        Cheap when nothing changed: one offset read (the previous one is kept) when both
        fire times share one UTC offset (the rule between DST changes). Else the matching
        wall times between them are walked under ``gap="next", fold="both"`` (what would
        fire if nothing were dropped), at most :data:`~tocsin.triggers.DST_SCAN` of them
        (``CronTrigger.dropped``, the rule stored schedules share). A gap the policy
        moves (``next``, ``shift``) or a fold it fires twice (``both``) drops nothing.
        """
        tz = self.tz
        last, before = self.last_offset
        if last != previous:
            before = datetime.fromtimestamp(previous, tz).utcoffset()
        after = datetime.fromtimestamp(fire_at, tz).utcoffset()
        self.last_offset = (fire_at, after)
        if before == after:
            return []
        # A change lies between them (rare): the trigger's walk, the rule stored
        # schedules share.
        return CronTrigger(self.expr, tz, dst=self.dst).dropped(previous, fire_at)

    def move_to(self, wall: float) -> None:
        """Make ``wall`` (a fire time after the current one) the next fire time."""
        self.last_wall = self.next_wall
        self.next_wall = max(self.next_wall, wall)

    def rewind(self, wall: float) -> bool:
        """Cluster mode only: bring ``next_wall`` back to the first fire time at or after
        ``wall`` but after ``last_wall`` (the last instant this node fired), when that is
        earlier. True if it moved.

        Only the instants a forward step of this node's clock made it skip come back:
        the coordinator's claim (one winner per instant) keeps any of them from being
        delivered twice in the cluster, and this node never reaches back to an instant
        it has already fired.
        """
        # An instant exactly at ``wall`` is due: look from just before it (a millisecond,
        # as datetimes round to microseconds; cron instants are whole seconds apart).
        floor = wall - 1e-3
        if self.last_wall is not None:
            floor = max(floor, self.last_wall)
        earlier = self.following(floor)
        if earlier is None or earlier >= self.next_wall:
            return False
        self.next_wall = earlier
        return True

    def set_deliver_at(self, at: float | None) -> None:
        """The monotonic delivery time of the tick due at ``next_wall`` when it is armed
        to fire ahead of it (cluster mode: claimed ahead), else ``None``."""
        self.deliver_at = at

    def set_offset(self, seconds: float) -> None:
        """The jitter of the tick due at ``next_wall``."""
        self.offset = seconds

    def overdue(
        self, first: float, wall: float, keep: int
    ) -> tuple[int, list[float], float | None]:
        """The fire times in ``[first, wall]`` (``first`` is one): how many, the most
        recent ``keep`` of them (at least one, oldest first), and the first after ``wall``.

        Bounded: past :data:`OVERDUE_SCAN` fire times (an every-second expression after
        a stall of hours) the count stops there and the scan goes on from ``wall``; the
        most recent ones kept are then the last ones scanned.
        """
        recent: deque[float] = deque([first], maxlen=max(1, keep))
        count = 1
        current = first
        while True:
            nxt = self.following(current)
            if nxt is None or nxt > wall:
                return count, list(recent), nxt
            count += 1
            recent.append(nxt)
            current = nxt
            if count >= OVERDUE_SCAN:
                return count, list(recent), self.following(wall)


def _answers(text: str, zone_name: str, dst: DSTPolicy | None) -> dict[float, float | None]:
    """The next-fire answers shared by the schedules of ``(text, zone_name, dst)``."""
    key = (text, zone_name, dst)
    answers = _SHARED.get(key)
    if answers is None:
        if len(_SHARED) >= SHARED_GROUPS:
            _SHARED.clear()
        answers = _SHARED[key] = {}
    return answers
