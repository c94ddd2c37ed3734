# SPDX-License-Identifier: Apache-2.0
"""What became of each schedule's recent instants: the history ring, the
:class:`~tocsin.TickNotDelivered` events and the per-outcome counts behind
``tocsin_schedule_ticks_total`` (DESIGN.md "Operating schedules").

Every schedule record keeps its own bounded ring (``ActorSystem(history=N)``, default
:data:`DEFAULT_HISTORY`) in two of its slots, ``history`` (a list, made at the first
entry with two slots, all a one-shot needs, and grown to ``2 * N`` slots at the second)
and ``history_at`` (the next write position). An entry takes two slots:

* a delivered tick: two floats that already exist on the fire path, its instant and the
  time it was handed to the target (monotonic seconds for interval and one-shot
  schedules, wall seconds for cron): no object is built per tick, and the
  :class:`~tocsin.TickOutcome` is made only when the ring is read;
* anything else: a tuple ``(outcome value, detail, recorded)`` (``recorded``: the wall
  time it was recorded at), then the instant (wall seconds). Not rare in a cluster: every
  tick another node won is ``claimed_elsewhere`` here (two in three on three nodes), so
  the :class:`~tocsin.TickOutcome` is made only when the ring is read, and the
  :class:`~tocsin.TickNotDelivered` event only when someone subscribes to events. The
  tuple holds only strings, numbers and ``None`` (the outcome's value, not the enum
  member), so the collector stops tracking it at its first pass: the entries a ring
  keeps never reach the oldest generation, whose full passes they would bring on.

This module builds and reads the entries; the record's own module writes its slots
(``ScheduleRecord.remember``), so a field has one writer. Nothing here reads the clock
except through the :class:`History`'s clock, on the not-delivered path and on reads.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, final

from ..actor._spi import Outcome, TickNotDelivered, TickOutcome

if TYPE_CHECKING:
    from ..actor._spi import EventStream
    from ..clock import Clock

__all__ = [
    "DEFAULT_HISTORY",
    "GENERATED_LABEL",
    "MAX_REFERENCE_LABELS",
    "OTHER_LABEL",
    "History",
    "HistoryRecord",
    "check_history",
]

#: Entries each schedule keeps by default (``ActorSystem(history=N)``).
DEFAULT_HISTORY: Final = 64
#: The largest ``history=`` accepted: a ring is per schedule, and a system may hold many.
MAX_HISTORY: Final = 65_536

#: ``tocsin_schedule_ticks_total`` label cardinality is bounded two ways. Generated
#: references (``$schedule-N``, one per anonymous schedule: unbounded over a process's
#: life) all count under this one label value...
GENERATED_LABEL: Final = "$generated"
#: ...and at most this many distinct named references get a label value of their own
#: (first come, kept for the process's life so every series stays monotonic); the rest
#: count under :data:`OTHER_LABEL`.
MAX_REFERENCE_LABELS: Final = 100
OTHER_LABEL: Final = "other"

_GENERATED_PREFIX: Final = "$schedule-"
_DELIVERED: Final = Outcome.DELIVERED


def check_history(value: object) -> int:
    """``value`` if it is a valid ``history=``: an int from 1 to :data:`MAX_HISTORY`.

    Raises:
        ValueError: anything else (0, negatives, bools, floats, None).
    """
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_HISTORY:
        raise ValueError(
            f"`history` must be an int from 1 to {MAX_HISTORY} (entries kept per schedule), "
            f"got {value!r}"
        )
    return value


def _utc(seconds: float) -> datetime:
    """Aware UTC; past ``datetime``'s years (a test clock jumped 1e13 s), its bound: a
    record must never fail the fire path."""
    try:
        return datetime.fromtimestamp(seconds, UTC)
    except (ValueError, OverflowError, OSError):
        return (datetime.max if seconds > 0 else datetime.min).replace(tzinfo=UTC)


class HistoryRecord(Protocol):
    """What :class:`History` needs of a schedule record (``ScheduleRecord``)."""

    @property
    def reference(self) -> str: ...

    @property
    def history(self) -> list[Any] | None: ...

    @property
    def history_at(self) -> int: ...

    @property
    def cron(self) -> object | None: ...

    def remember(self, first: Any, second: Any) -> None:
        """Write one entry (two slots) into this record's ring."""


@final
class History:
    """The outcome log of one scheduler (internal): records the entries that are not a
    plain delivery, publishes them, counts them, and reads any record's ring.

    Args:
        size: entries kept per schedule (validated by :func:`check_history`).
        node: this node's name, in every entry and event.
        clock: the system's clock (times of not-delivered outcomes, and the monotonic to
            wall conversion of an interval schedule's entries when read).
        events: where :class:`~tocsin.TickNotDelivered` is published.
    """

    __slots__ = ("_clock", "_counts", "_events", "_labels", "node", "size", "slots")

    def __init__(self, size: int, node: str, clock: Clock, events: EventStream) -> None:
        self.size = check_history(size)
        #: Slots of a full ring (two per entry).
        self.slots = 2 * self.size
        self.node = node
        self._clock = clock
        self._events = events
        #: (label, outcome) -> count; bounded by the labels (see MAX_REFERENCE_LABELS).
        self._counts: dict[tuple[str, Outcome], int] = {}
        #: reference -> its label value, for the named references given their own.
        self._labels: dict[str, str] = {}

    # -- recording ---------------------------------------------------------------------

    def outcome(
        self,
        record: HistoryRecord,
        instant_wall: float,
        outcome: Outcome,
        detail: int | str | None = None,
    ) -> None:
        """Record that ``record``'s instant ``instant_wall`` (wall seconds) was not
        delivered (or was delivered by hand: a ``delivered`` outcome is only recorded
        here for manual and backfilled ticks): into its ring, and, unless it is
        ``delivered``, as an event and in the counts."""
        record.remember((outcome.value, detail, self._clock.wall()), instant_wall)
        if outcome is not _DELIVERED:
            reference = record.reference
            key = (self.label(reference), outcome)
            self._counts[key] = self._counts.get(key, 0) + 1
            events = self._events
            if events.subscribed:
                events.publish(
                    TickNotDelivered(reference, _utc(instant_wall), outcome, detail, self.node)
                )
            else:  # counted all the same (``events.count``); no one to read the event
                events.tally(TickNotDelivered)

    def label(self, reference: str) -> str:
        """The ``reference`` label value this reference counts under."""
        label = self._labels.get(reference)
        if label is not None:
            return label
        if reference.startswith(_GENERATED_PREFIX):
            return GENERATED_LABEL
        if len(self._labels) >= MAX_REFERENCE_LABELS:
            return OTHER_LABEL
        self._labels[reference] = reference
        return reference

    # -- reading -----------------------------------------------------------------------

    def read(self, record: HistoryRecord) -> list[TickOutcome]:
        """The record's ring as :class:`~tocsin.TickOutcome` values, oldest first."""
        ring = record.history
        if ring is None:
            return []
        at = record.history_at
        ordered = ring[at:] + ring[:at]  # before the first wrap the tail is all None
        wall_of = self._wall_of(record)
        out: list[TickOutcome] = []
        reference, node = record.reference, self.node
        for i in range(0, len(ordered), 2):
            first = ordered[i]
            if first is None:
                continue
            if type(first) is tuple:
                value, detail, recorded = first
                instant = ordered[i + 1]
                out.append(
                    TickOutcome(
                        reference, _utc(instant), _utc(recorded), Outcome(value), detail, node
                    )
                )
                continue
            instant, handed = wall_of(first), wall_of(ordered[i + 1])
            out.append(TickOutcome(reference, _utc(instant), _utc(handed), _DELIVERED, None, node))
        return out

    def _wall_of(self, record: HistoryRecord) -> Any:
        """Wall seconds of a delivered entry's float: cron entries are wall already; an
        interval or one-shot entry is monotonic, shown in wall time as of now, as
        ``next_fire_at`` is (a wall jump since moves it with the clock)."""
        if record.cron is not None:
            return float
        clock = self._clock
        offset = clock.wall() - clock.monotonic()
        return lambda mono: mono + offset

    def counts(self) -> Iterable[tuple[str, Outcome, int]]:
        """``(reference label, outcome, count)`` of every outcome counted so far."""
        return [(label, outcome, n) for (label, outcome), n in sorted(self._counts.items())]
