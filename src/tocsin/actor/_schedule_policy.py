# SPDX-License-Identifier: Apache-2.0
"""The schedule-policy values every tier shares: :class:`Overlap`, :class:`Misfire`,
:class:`Tick`, and what became of an instant (:class:`Outcome`, :class:`TickOutcome`).

DESIGN.md "Schedule policies" and "Operating schedules". They live in the kernel, beside
:class:`~tocsin.actor._schedule_info.ScheduleInfo`, because ``ReceiveContext`` (a kernel
type) hands out :class:`Tick` and the scheduling calls the kernel declares take the
policies; the kernel itself only carries them: the scheduling layer (``scheduling/``),
durable tasks (``durable/``) and cluster cron (``cluster/``) give them their meaning.

All are plain values: frozen, slotted, hashable, equal field by field, and each has a
codec-safe ``to_wire()`` / ``from_wire()`` pair (durable tasks persist them, remote
frames carry :class:`Tick`). Nothing here reads the clock.

Prior art: Temporal's ``ScheduleOverlapPolicy`` and catch-up window, Quartz's misfire
instructions and threshold, APScheduler's ``coalesce`` / ``misfire_grace_time`` /
``max_instances``, Kubernetes' ``concurrencyPolicy`` / ``startingDeadlineSeconds``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, ClassVar, Final, Literal, final

from .._deadlines import Seconds, to_seconds

__all__ = ["Misfire", "Outcome", "Overlap", "Tick", "TickOutcome"]

OverlapMode = Literal["allow", "skip", "buffer_one", "limit"]
MisfireMode = Literal["once", "skip", "all"]

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND: Final = timedelta(microseconds=1)

_OVERLAP_MODES: Final = ("allow", "skip", "buffer_one", "limit")
_MISFIRE_MODES: Final = ("once", "skip", "all")


def _positive_int(value: object, option: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{option} must be an int >= 1, got {value!r}")
    return value


@final
@dataclass(frozen=True, slots=True)
class Overlap:
    """What a schedule does with a tick whose predecessors of the same reference are
    still *in flight* (sent, and the target's ``receive`` for it not yet returned).

    ``Overlap.ALLOW`` (default for actor schedules: every tick an independent send),
    ``Overlap.SKIP`` (drop a tick while one is in flight), ``Overlap.BUFFER_ONE`` (keep
    the first waiting tick and deliver it when the predecessor is done; later ones while
    it waits are skipped; the default for durable tasks), ``Overlap.limit(n)`` (at most
    ``n`` in flight, then skip). Only ticks of one reference count; other messages to
    the same actor are untouched.

    Attributes:
        mode: ``"allow"``, ``"skip"``, ``"buffer_one"`` or ``"limit"``.
        max_in_flight: how many ticks may be in flight at once (``math.inf`` for
            ``ALLOW``; 1 for ``SKIP`` and ``BUFFER_ONE``; ``n`` for ``limit(n)``).
    """

    mode: OverlapMode
    max_in_flight: float

    ALLOW: ClassVar[Overlap]
    SKIP: ClassVar[Overlap]
    BUFFER_ONE: ClassVar[Overlap]

    def __post_init__(self) -> None:
        if self.mode not in _OVERLAP_MODES:
            raise ValueError(
                f"overlap must be Overlap.ALLOW, Overlap.SKIP, Overlap.BUFFER_ONE or "
                f"Overlap.limit(n), got mode {self.mode!r}"
            )

    @classmethod
    def limit(cls, n: int) -> Overlap:
        """At most ``n`` ticks in flight; a tick beyond that is skipped.

        Raises:
            ValueError: ``n`` is not an int >= 1 (``limit(0)`` would never deliver).
        """
        return cls("limit", _positive_int(n, "Overlap.limit(n): n"))

    @classmethod
    def check(cls, value: object, option: str = "overlap") -> Overlap:
        """``value`` if it is an :class:`Overlap`, else a ``ValueError`` naming ``option``."""
        if type(value) is cls:
            return value
        raise ValueError(
            f"`{option}` must be Overlap.ALLOW, Overlap.SKIP, Overlap.BUFFER_ONE or "
            f"Overlap.limit(n), got {value!r}"
        )

    @property
    def tracks(self) -> bool:
        """Whether ticks must be tracked in flight (every mode but ``ALLOW``)."""
        return self.mode != "allow"

    def to_wire(self) -> str:
        """``"allow"``, ``"skip"``, ``"buffer_one"`` or ``"limit:<n>"``."""
        if self.mode == "limit":
            return f"limit:{int(self.max_in_flight)}"
        return self.mode

    @classmethod
    def from_wire(cls, value: object) -> Overlap:
        """The inverse of :meth:`to_wire`. Raises ``ValueError`` on anything else."""
        if value == "allow":
            return cls.ALLOW
        if value == "skip":
            return cls.SKIP
        if value == "buffer_one":
            return cls.BUFFER_ONE
        if isinstance(value, str) and value.startswith("limit:"):
            digits = value[len("limit:") :]
            if digits.isdigit():
                return cls.limit(int(digits))
        raise ValueError(f"not a stored overlap policy: {value!r}")

    def __repr__(self) -> str:
        if self.mode == "limit":
            return f"Overlap.limit({int(self.max_in_flight)})"
        return f"Overlap.{self.mode.upper()}"


Overlap.ALLOW = Overlap("allow", math.inf)
Overlap.SKIP = Overlap("skip", 1)
Overlap.BUFFER_ONE = Overlap("buffer_one", 1)


def _grace(value: object) -> float | None:
    return None if value is None else to_seconds(value, "grace")


@final
@dataclass(frozen=True, slots=True)
class Misfire:
    """What a schedule does with ticks not delivered at their instants: the loop
    stalled, the schedule's node or the whole system was down, or (durable tasks) the
    identity was passivated past them.

    ``Misfire.once(grace=None)`` (default: the overdue ticks are coalesced into one),
    ``Misfire.skip(grace=None)`` (drop them, go on at the next future instant),
    ``Misfire.all(max=N, rate=None, grace=None)`` (replay the most recent ``N`` of them,
    oldest first, at most ``rate`` per second, each carrying its own instant).

    ``grace`` (seconds, per tick): a tick whose delivery would come later than ``grace``
    after its instant is *missed* (recorded, not delivered) whatever the mode; ``None``:
    no limit (Quartz's misfire threshold). Resuming a paused schedule is not a misfire.

    Attributes:
        mode: ``"once"``, ``"skip"`` or ``"all"``.
        grace: seconds, or ``None``.
        max: ``all`` only: how many overdue ticks are replayed at most (else 1).
        rate: ``all`` only: ticks per second at most, or ``None`` for no limit.
    """

    mode: MisfireMode
    grace: float | None = None
    max: int = 1
    rate: float | None = None

    ONCE: ClassVar[Misfire]

    def __post_init__(self) -> None:
        if self.mode not in _MISFIRE_MODES:
            raise ValueError(
                f"misfire must be Misfire.once(), Misfire.skip() or Misfire.all(max=N), "
                f"got mode {self.mode!r}"
            )

    @classmethod
    def once(cls, grace: Seconds | None = None) -> Misfire:
        """Coalesce the overdue ticks into one delivery (the default).

        Raises:
            InvalidIntervalError: ``grace`` is not positive finite seconds.
        """
        return cls("once", _grace(grace))

    @classmethod
    def skip(cls, grace: Seconds | None = None) -> Misfire:
        """Drop the overdue ticks; go on at the next instant after now."""
        return cls("skip", _grace(grace))

    @classmethod
    def all(
        cls, max: int = 100, rate: float | None = None, grace: Seconds | None = None
    ) -> Misfire:
        """Replay the most recent ``max`` overdue ticks, oldest first, at most ``rate``
        per second (``None``: as fast as they are taken).

        ``max`` defaults to 100 (Kubernetes gives up on a CronJob after 100 misses): a
        replay is never unbounded.

        Raises:
            ValueError: ``max`` not an int >= 1, ``rate`` not a positive finite number.
            InvalidIntervalError: ``grace`` is not positive finite seconds.
        """
        count = _positive_int(max, "Misfire.all(max=...)")
        if rate is not None and (
            isinstance(rate, bool)
            or not isinstance(rate, (int, float))
            or not (0 < rate < math.inf)
        ):
            raise ValueError(
                f"Misfire.all(rate=...) must be a positive finite number of ticks per "
                f"second, or None, got {rate!r}"
            )
        return cls("all", _grace(grace), count, None if rate is None else float(rate))

    @classmethod
    def check(cls, value: object, option: str = "misfire") -> Misfire:
        """``value`` if it is a :class:`Misfire`, else a ``ValueError`` naming ``option``."""
        if type(value) is cls:
            return value
        raise ValueError(
            f"`{option}` must be Misfire.once(...), Misfire.skip(...) or "
            f"Misfire.all(max=N, ...), got {value!r}"
        )

    @property
    def is_default(self) -> bool:
        """Whether this is ``Misfire.once()`` with no grace: today's behaviour."""
        return self.mode == "once" and self.grace is None

    def to_wire(self) -> dict[str, Any]:
        """A codec-safe dict (stored with durable tasks)."""
        return {"mode": self.mode, "grace": self.grace, "max": self.max, "rate": self.rate}

    @classmethod
    def from_wire(cls, value: object) -> Misfire:
        """The inverse of :meth:`to_wire`. Raises ``ValueError`` on anything else."""
        if not isinstance(value, dict):
            raise ValueError(f"not a stored misfire policy: {value!r}")
        mode = value.get("mode")
        grace = value.get("grace")
        if mode == "once":
            return cls.once(grace)
        if mode == "skip":
            return cls.skip(grace)
        if mode == "all":
            return cls.all(value.get("max", 100), value.get("rate"), grace)
        raise ValueError(f"not a stored misfire policy: {value!r}")

    def __repr__(self) -> str:
        grace = "" if self.grace is None else f"grace={self.grace:g}"
        if self.mode == "all":
            parts = [f"max={self.max}"]
            if self.rate is not None:
                parts.append(f"rate={self.rate:g}")
            if grace:
                parts.append(grace)
            return f"Misfire.all({', '.join(parts)})"
        return f"Misfire.{self.mode}({grace})"


Misfire.ONCE = Misfire("once")


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
