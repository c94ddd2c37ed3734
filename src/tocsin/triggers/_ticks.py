# SPDX-License-Identifier: Apache-2.0
"""What a scheduled delivery carries and what became of an instant: :class:`Tick`,
:class:`Outcome`, :class:`TickOutcome` (DESIGN.md "Schedule policies", "Operating
schedules").

Plain values: frozen, slotted, hashable, equal field by field; :class:`Tick` has a
codec-safe ``to_wire()`` / ``from_wire()`` pair (remote frames carry it). Nothing here
reads the clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Final, final

__all__ = ["Delivery", "Outcome", "Tick", "TickOutcome", "check_delivery"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)


@final
@dataclass(frozen=True, slots=True)
class Tick:
    """The scheduled delivery being handled: ``ctx.tick`` inside ``receive`` (``None``
    for any other message), ``self.current_task`` inside a durable task run.

    Attributes:
        reference: the schedule's reference (a durable task: its id).
        instant: the nominal fire time, aware UTC: a natural idempotency key (a jittered
            or late tick still carries its nominal instant).
        attempt: 1 for the first delivery of this instant; a durable task's retry counts
            up from there.
        manual: delivered by ``trigger_schedule`` / ``trigger``.
        backfill: delivered by ``backfill_schedule`` / ``backfill``.
        fence: in cluster mode the claim's token, which grows with every claim the
            coordinator grants for the reference (a re-claimed tick's new winner holds a
            larger one than any zombie); a durable task: its owner's epoch; else ``None``.
    """

    reference: str
    instant: datetime
    attempt: int = 1
    manual: bool = False
    backfill: bool = False
    fence: int | None = None

    def to_wire(self) -> list[Any]:
        """A codec-safe list: reference, epoch microseconds, attempt, manual, backfill,
        fence (remote frames carry it)."""
        # Exact integer arithmetic on the datetime (not `timestamp() * 1e6`, whose float
        # rounding moved an instant by 1 µs across two processes).
        micros = (self.instant - _EPOCH) // _MICROSECOND
        return [self.reference, micros, self.attempt, self.manual, self.backfill, self.fence]

    @classmethod
    def from_wire(cls, value: object) -> Tick:
        """The inverse of :meth:`to_wire`. Raises ``ValueError`` on anything else."""
        if not isinstance(value, (list, tuple)) or len(value) != 6:
            raise ValueError(f"not a wire tick: {value!r}")
        reference, micros, attempt, manual, backfill, fence = value
        if (
            not isinstance(reference, str)
            or type(micros) is not int
            or type(attempt) is not int
            or type(manual) is not bool
            or type(backfill) is not bool
            or not (fence is None or type(fence) is int)
        ):
            raise ValueError(f"not a wire tick: {value!r}")
        try:
            instant = _EPOCH + timedelta(microseconds=micros)
        except OverflowError:
            raise ValueError(f"not a wire tick (instant out of range): {value!r}") from None
        return cls(reference, instant, attempt, manual, backfill, fence)


class Delivery(StrEnum):
    """How a won cluster instant is delivered (DESIGN.md "Operating schedules"):
    ``AT_MOST_ONCE`` (default, GoAkt's rule: a winner that dies before delivering loses
    that instant) or ``AT_LEAST_ONCE`` (the claim is held with a delivery lease until the
    target's ``receive`` returns; a winner that dies is replaced, and ``Tick.fence`` lets
    the handler refuse a duplicate). A ``str`` enum: the strings ``"at_most_once"`` and
    ``"at_least_once"`` are accepted wherever a ``Delivery`` is, and compare equal."""

    AT_MOST_ONCE = "at_most_once"
    AT_LEAST_ONCE = "at_least_once"


def check_delivery(value: object) -> Delivery:
    """``value`` as a :class:`Delivery` (a member or its string).

    Raises:
        ValueError: anything else, naming the option and what is allowed.
    """
    if isinstance(value, str):
        try:
            return Delivery(value)
        except ValueError:
            pass
    raise ValueError(
        f"`delivery` must be Delivery.AT_MOST_ONCE or Delivery.AT_LEAST_ONCE (or the strings "
        f'"at_most_once", "at_least_once"), got {value!r}'
    )


class Outcome(StrEnum):
    """What became of one instant of a schedule (DESIGN.md "Operating schedules")."""

    DELIVERED = "delivered"
    SKIPPED_OVERLAP = "skipped_overlap"
    COALESCED = "coalesced"
    MISSED = "missed"
    EXCLUDED = "excluded"
    PAUSED = "paused"
    DEAD_LETTER = "dead_letter"
    DST_GAP = "dst_gap"
    DST_FOLD = "dst_fold"
    CLAIMED_ELSEWHERE = "claimed_elsewhere"
    CLAIM_LATE = "claim_late"
    CLAIM_ERROR = "claim_error"
    #: Stored schedules: the run raised (``detail``: the error's text).
    FAILED = "failed"
    #: Stored schedules: delivered again after its first winner let the claim lapse.
    RETRIED = "retried"


@final
@dataclass(frozen=True, slots=True)
class TickOutcome:
    """One entry of a schedule's history (``system.schedule_history(reference)``).

    Attributes:
        reference: the schedule's reference.
        instant: the nominal fire time it is about (aware UTC).
        at: when the outcome happened (aware UTC).
        outcome: an :class:`Outcome`.
        detail: more, by outcome: ``coalesced``: how many instants (int); a dead
            letter's reason; a claim error's text; else ``None``.
        node: the node (or system name) that recorded it.
        version: a stored schedule's spec version it was decided under, else ``None``.
        note: a ``paused`` row of a stored schedule: the pause's note.
        paused_by: a ``paused`` row of a stored schedule: who paused it.
        started: a delivered row: when the handler started (aware UTC), where the
            deciding node saw it start; else ``None``.
        manual: a stored schedule's row of a run ``trigger`` asked for (a row of its
            own beside the regular tick of the same instant).
    """

    reference: str
    instant: datetime
    at: datetime
    outcome: Outcome
    detail: int | str | None
    node: str
    version: int | None = None
    note: str | None = None
    paused_by: str | None = None
    started: datetime | None = None
    manual: bool = False
