# SPDX-License-Identifier: Apache-2.0
"""The overlap policy: :class:`Overlap` (the value) and the decision it makes for one
schedule's tick (:func:`admit`, :func:`settle`) over that schedule's :class:`Flight`.

A tick is *in flight* from the moment it is sent until the target's ``receive`` for it
returns (DESIGN.md "Schedule policies"). Every tier asks this module and no other what
happens to a tick whose predecessors are still in flight:

* the in-memory scheduler calls :func:`admit` before it sends a tick and :func:`settle`
  when one finishes (a held ``BUFFER_ONE`` tick then goes);
* durable tasks, whose runs never overlap (they are serialized in the actor's turn), ask
  :meth:`Overlap.waiting_room`: how many instants that came due during a run wait for it;
* stored schedules, whose runs queue one after another in the store, ask
  :func:`queue_admits` whether an instant joins the runs already queued.

Adding an overlap mode is a change to this module only (and its tests): a new constant
in :data:`_MODES`, a constructor, its line in :meth:`Overlap.waiting_room` and, if it
keeps waiting ticks differently, in :func:`admit`.

Prior art: Temporal's ``ScheduleOverlapPolicy``, APScheduler's ``max_instances``,
Kubernetes' ``concurrencyPolicy``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar, Final, Literal, final

from ._checks import positive_int

__all__ = [
    "Admission",
    "Flight",
    "Overlap",
    "admit",
    "counts_in_flight",
    "leave",
    "queue_admits",
    "release",
    "run_waiting_room",
    "settle",
]

OverlapMode = Literal["allow", "skip", "buffer_one", "limit"]

_MODES: Final = ("allow", "skip", "buffer_one", "limit")


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
        if self.mode not in _MODES:
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
        return cls("limit", positive_int(n, "Overlap.limit(n): n"))

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

    def waiting_room(self) -> float:
        """How many instants that came due while a run was in flight wait for it, where
        runs never overlap (durable tasks): ``ALLOW`` all (``math.inf``), ``SKIP`` none,
        ``BUFFER_ONE`` the first, ``limit(n)`` the first ``n - 1``."""
        if self.mode == "buffer_one":
            return 1
        if self.mode == "limit":
            return self.max_in_flight - 1
        return 0 if self.mode == "skip" else math.inf

    @property
    def buffers(self) -> bool:
        """Whether a tick refused for overlap waits (``BUFFER_ONE``) instead of being
        skipped."""
        return self.mode == "buffer_one"

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


class Admission(Enum):
    """What :func:`admit` decided for one tick."""

    #: Send it now (it is counted in flight).
    SEND = "send"
    #: ``BUFFER_ONE``: it waits, and goes when the tick in flight finishes (:func:`settle`).
    HOLD = "hold"
    #: Do not send it: record ``Outcome.SKIPPED_OVERLAP``.
    SKIP = "skip"


# The members as module constants for `admit`, which runs once per tick of a tracked
# schedule: reading an Enum member through its class costs ~90 ns on CPython 3.11 (the
# enum metaclass's lookup), a module constant ~10 ns.
_SEND: Final = Admission.SEND
_HOLD: Final = Admission.HOLD
_SKIP: Final = Admission.SKIP


class Flight:
    """One schedule's ticks in flight and its waiting tick: the state the overlap policy
    decides over (internal; the scheduler's per-schedule policy extends it).

    Attributes:
        in_flight: ticks sent and not yet finished (a ``receive`` that returned, raised
            or was cancelled; a tick rejected or dropped as stale).
        held: ``BUFFER_ONE``'s waiting tick (its nominal instant, in the caller's units),
            or ``None``.
    """

    # Slotted: one per schedule that has a non-default policy (a system may hold many).
    __slots__ = ("held", "in_flight")

    def __init__(self) -> None:
        self.in_flight = 0
        self.held: float | None = None


def admit(overlap: Overlap, flight: Flight, at: float) -> Admission:
    """Whether the tick of instant ``at`` goes now under ``overlap``; counts it in flight
    when it does, and keeps it as ``flight.held`` when ``BUFFER_ONE`` holds it.

    ``ALLOW`` always sends and counts nothing (its ticks are not tracked). Otherwise a
    tick goes while fewer than ``max_in_flight`` are in flight; past that, ``BUFFER_ONE``
    holds the first that came (later ones are skipped while it waits), every other mode
    skips it.
    """
    if overlap.mode == "allow":
        return _SEND
    if flight.in_flight < overlap.max_in_flight:
        flight.in_flight += 1
        return _SEND
    if overlap.mode == "buffer_one" and flight.held is None:
        flight.held = at
        return _HOLD
    return _SKIP


def settle(overlap: Overlap, flight: Flight) -> float | None:
    """One tick in flight is over (finished, rejected, or dropped as stale): one fewer
    in flight. Returns the held tick's instant, now released for the caller to offer
    again (through :func:`admit`), or ``None``."""
    if flight.in_flight > 0:
        flight.in_flight -= 1
    held = flight.held
    if held is not None:
        flight.held = None
    return held


def leave(flight: Flight) -> None:
    """A tick left flight without finishing (dropped as stale, refused by its target):
    one fewer in flight; a held tick keeps waiting for the next :func:`settle`."""
    if flight.in_flight > 0:
        flight.in_flight -= 1


def release(flight: Flight) -> float | None:
    """The held tick, dropped (its schedule paused or retired): its instant, or ``None``."""
    held = flight.held
    flight.held = None
    return held


def queue_admits(overlap: Overlap, queued: int, *, asked: bool = False) -> bool:
    """Where runs never overlap and wait in a queue (stored schedules: a schedule's runs
    are stored and run one after another), whether an instant joins ``queued`` runs not
    yet finished (the one running included): one runs and :meth:`Overlap.waiting_room`
    wait behind it (``ALLOW`` every one, ``SKIP`` none, ``BUFFER_ONE`` one, ``limit(n)``
    ``n - 1``); refused, it is ``Outcome.SKIPPED_OVERLAP``.

    ``asked``: an instant an operator asked for (trigger, backfill) or a misfire replay
    joins whatever waits: it was asked for by instant, and it runs in its turn.
    """
    return asked or queued < 1 + overlap.waiting_room()


def counts_in_flight(overlap: Overlap) -> bool:
    """Whether ``overlap`` counts a schedule's ticks in flight (every mode but
    ``ALLOW``, whose ticks go without being counted). Asked once, when a schedule is
    made: its answer is kept beside the schedule's :class:`Flight`, so a tick reads a
    flag instead of asking again."""
    return overlap.mode != "allow"


def run_waiting_room(overlap: Overlap, waiting: int) -> float | None:
    """Where runs never overlap (durable tasks), how many more of the instants that came
    due while a run was in flight may wait for it, ``waiting`` already waiting:
    :meth:`Overlap.waiting_room` less those (at most 0 means the rest are
    ``Outcome.SKIPPED_OVERLAP``). ``None`` under ``ALLOW``: no instant is refused for
    overlap; those that came due are overdue when the run ends, and the misfire policy
    decides them."""
    if overlap.mode == "allow":
        return None
    return overlap.waiting_room() - waiting
