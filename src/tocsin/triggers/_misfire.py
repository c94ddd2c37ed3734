# SPDX-License-Identifier: Apache-2.0
"""The misfire policy: :class:`Misfire` (the value) and its decisions: which of the
instants that came due at once are delivered (:func:`plan_misfire`), how many are looked
at (:meth:`Misfire.keep`), and whether one tick is past its grace (:func:`past_grace`).

Ticks *misfire* when they were not delivered at their instants: the loop stalled, the
schedule's node or the whole system was down, or, for durable tasks, the identity was
passivated past them (DESIGN.md "Schedule policies"). Every tier asks this module.

Prior art: Quartz's misfire instructions and threshold, APScheduler's ``coalesce`` and
``misfire_grace_time``, Kubernetes' ``startingDeadlineSeconds``, Temporal's catch-up
window.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final, Literal, TypeVar, final

from .._deadlines import Seconds, to_seconds
from ._checks import positive_int

__all__ = [
    "Misfire",
    "MisfirePlan",
    "goes_on_from_now",
    "past_grace",
    "plan_misfire",
    "supersede",
]

_T = TypeVar("_T")

MisfireMode = Literal["once", "skip", "all"]

_MISFIRE_MODES: Final = ("once", "skip", "all")


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
        count = positive_int(max, "Misfire.all(max=...)")
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

    def keep(self) -> int:
        """How many of the most recent overdue instants a caller must collect for
        :func:`plan_misfire`: ``max`` for ``all``, else 1."""
        return self.max if self.mode == "all" else 1

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


def past_grace(misfire: Misfire, late: float) -> bool:
    """Whether a tick delivered ``late`` seconds after its instant is *missed*: later
    than the policy's ``grace`` (never, when ``grace`` is ``None``)."""
    grace = misfire.grace
    return grace is not None and late > grace


@final
@dataclass(frozen=True, slots=True)
class MisfirePlan:
    """What :func:`plan_misfire` decided for instants that came due at once.

    Attributes:
        deliver: the instants to offer for delivery, oldest first (each still meets the
            overlap policy and its own grace).
        coalesced: ``once``: how many later instants the delivered one stands for
            (recorded as ``Outcome.COALESCED`` on the first instant); else 0.
        missed: how many instants are dropped unseen (``skip``: all of them; ``all``:
            those older than ``max``), recorded as ``Outcome.MISSED`` on the first.
        judged_by: the instant whose lateness decides the grace of a ``once`` tick (the
            most recent: the coalesced tick stands for all of them); else ``None``, each
            delivered instant is judged by its own.
        rate: ``all``: ticks per second at most for the replay, or ``None``.
        noted: the instant ``coalesced`` and ``missed`` are recorded on (``None``: on
            the ``first`` instant given to :func:`plan_misfire`).
    """

    deliver: tuple[float, ...]
    coalesced: int = 0
    missed: int = 0
    judged_by: float | None = None
    rate: float | None = None
    noted: float | None = None


def plan_misfire(
    misfire: Misfire,
    first: float,
    count: int,
    recent: Sequence[float],
    *,
    ledger: bool = False,
) -> MisfirePlan:
    """Apply ``misfire`` to ``count`` instants that came due at once (``count >= 1``):
    ``first`` is the oldest, ``recent`` the most recent ones (oldest first, at least one,
    and :meth:`Misfire.keep` of them when there are that many). Outcomes not delivered are
    recorded on ``first`` (``ledger``: see below).

    ``once`` delivers one tick on the first overdue instant (the coalesced one keeps the
    instant it was armed for, as before policies existed); ``skip`` delivers none;
    ``all`` replays the most recent ``max``, oldest first.

    ``ledger``: where every instant has one row and the newest row marks how far a
    schedule was decided (stored schedules), ``once`` delivers the most recent instant
    (its ``coalesced`` row stays on ``first``, a row of its own) and ``skip`` records its
    ``missed`` row on the most recent (:attr:`MisfirePlan.noted`), so a later catch-up
    starts after them.
    """
    if count < 1 or not recent:
        raise ValueError(f"plan_misfire needs count >= 1 and one instant, got {count}, {recent}")
    mode = misfire.mode
    latest = recent[-1]
    if mode == "once":
        carried = latest if ledger else first
        return MisfirePlan((carried,), coalesced=count - 1, judged_by=latest)
    if mode == "skip":
        return MisfirePlan((), missed=count, noted=latest if ledger else None)
    replayed = tuple(recent[-misfire.max :])
    return MisfirePlan(replayed, missed=count - len(replayed), rate=misfire.rate)


def goes_on_from_now(misfire: Misfire, following: float | None, now: float) -> bool:
    """After an instant is decided, whether a schedule's walk goes on from ``now``
    instead of from ``following`` (its next instant): the loop stalled past
    ``following`` and the policy does not replay overdue instants (``once`` and
    ``skip``: the overdue ones are coalesced into the instant just decided). ``all``
    walks on through each of them."""
    return following is not None and following <= now and misfire.mode != "all"


def supersede(waiting: _T | None, newer: _T) -> tuple[_T, _T | None]:
    """One tick waits per reference behind a decision in flight (a cluster claim on a
    frozen coordinator): ``newer`` becomes the waiting one, and the one it replaces is
    returned to be recorded ``Outcome.COALESCED`` into it (``Misfire.once``'s rule, so
    a stall releases at most two ticks, in instant order, never a burst).

    Returns:
        ``(waiting, coalesced)``: the tick that waits now, and the one dropped (or
        ``None`` when none waited).
    """
    return newer, waiting
