# SPDX-License-Identifier: Apache-2.0
"""What a durable task with policies does at each step: which instant runs, which are
skipped, missed or replayed, and when the row is due next (issue 22).

Only rows whose ``policy`` column is set come here (a task that passes no option keeps
the drain's plain path, today's behaviour, unchanged). Pure but for the codec: no clock
(the drain passes its times), no store (it returns the row to write).

Vocabulary. A recurring task has *instants*: an ``every`` task's are its pending instant
plus whole intervals (a run that started at ``S`` makes the next one ``S + interval``:
durable ``every`` counts from the start of the run); a cron task's are its expression's
fire times (under its ``dst`` policy) after its pending instant. Instants its calendar
excludes are never run (:meth:`Instants.excluded`). A row's ``due`` is its pending
instant plus its jitter offset (or, for a replayed instant, the paced time).

Two moments decide (DESIGN.md "Schedule policies", the durable reading):

* **Before a run** (:func:`before_run`, at the drain that found the row due at ``now``):
  the instants from the pending one up to ``now`` that no run dealt with were *missed*
  (the system was down, the identity passivated, the loop stalled): one of them is a
  plain late run; two or more are a misfire: ``once`` coalesces them into one run (it
  carries the first of them, the instant it was due at, as a task without policies
  does; ``grace`` misses it only when even the most recent is older than ``grace``),
  ``skip`` runs none, ``all(max, rate)`` replays the most recent ``max``, oldest first,
  paced at ``rate`` per second. ``grace`` misses (does not run) an instant later than
  ``grace`` after it.
* **After a run** (:func:`after_run`, when its method returned at ``end``): the instants
  that came due while it was in flight meet the overlap policy. Runs of one durable
  task never overlap (they are serialized in the actor's turn), so the policies say what
  waits: ``SKIP`` none (the next run is the first instant after ``end``), ``BUFFER_ONE``
  (default) the first of them, run right after, the later ones skipped, ``limit(n)`` the
  first ``n - 1``, run one after another with their own instants, and ``ALLOW`` all of
  them, which are then late instants for the misfire policy (``once`` coalesces them).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._codec import decode, encode
from ..actor._spi import Outcome
from ..clock import WALL_TOLERANCE
from ..cron._spi import zone
from ..errors import CodecError
from ..stores import DeleteTask, Op, TaskRow, UpsertTask
from ..triggers import jitter_offset
from ._policy import SCAN_LIMIT, TaskPolicy

if TYPE_CHECKING:
    from datetime import tzinfo

    from ..cron import CronExpression, DSTPolicy

__all__ = [
    "Cursor",
    "Instants",
    "Note",
    "Notes",
    "Step",
    "after_run",
    "before_run",
    "decode_policy",
    "encode_policy",
    "first_instant",
    "retry_row",
]

_replace = msgspec.structs.replace
#: Excluded instants one decision records in the history, at most (a calendar excluding
#: a night of per-second instants must not flood the ring).
NOTED: Final = 8


@dataclass(slots=True)
class Cursor:
    """What the planner remembers of a task between runs (mutable: a working copy).

    Attributes:
        instant: the nominal instant of the pending run (``None``: the row's ``due``).
        queue: instants waiting to run after the pending one, oldest first: kept by
            ``Overlap.limit(n)``, or replayed by ``Misfire.all`` (``paced``).
        paced: the queue is a misfire replay, run at most ``misfire.rate`` per second.
        waiting: the pending instant came from the queue (kept by overlap or replayed):
            the drain runs it without looking for missed instants again.
        horizon: instants at or before it were dealt with (run, queued or skipped);
            ``None``: only those before the pending instant.
        of: a manual (``trigger``) or backfilled run is a one-shot row of its own; this
            names the task it runs for (its ``current_task.reference``).
        manual, backfill: which of the two it is.
    """

    instant: float | None = None
    queue: list[float] = field(default_factory=list)
    paced: bool = False
    waiting: bool = False
    horizon: float | None = None
    of: str | None = None
    manual: bool = False
    backfill: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "i": self.instant,
            "q": self.queue,
            "pq": self.paced,
            "w": self.waiting,
            "h": self.horizon,
        }
        if self.of is not None:  # a manual or backfilled run of task `of`
            wire.update(of=self.of, m=self.manual, b=self.backfill)
        return wire

    @classmethod
    def from_wire(cls, value: Any) -> Cursor:
        if not isinstance(value, dict):
            raise ValueError(f"not a stored task cursor: {value!r}")
        queue = value.get("q") or []
        return cls(
            instant=_float_or_none(value.get("i")),
            queue=[float(x) for x in queue],
            paced=bool(value.get("pq", False)),
            waiting=bool(value.get("w", False)),
            horizon=_float_or_none(value.get("h")),
            of=None if value.get("of") is None else str(value["of"]),
            manual=bool(value.get("m", False)),
            backfill=bool(value.get("b", False)),
        )


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)


def encode_policy(policy: TaskPolicy, cursor: Cursor) -> bytes:
    """The ``policy`` column of a task row."""
    return encode({"p": policy.to_wire(), "c": cursor.to_wire()}, name="task policy")


def decode_policy(data: bytes) -> tuple[TaskPolicy, Cursor]:
    """The inverse of :func:`encode_policy`.

    Raises:
        CodecError: the bytes are not a stored policy (a corrupted row).
    """
    value = decode(data)
    try:
        if not isinstance(value, dict):
            raise ValueError(value)
        return TaskPolicy.from_wire(value["p"]), Cursor.from_wire(value["c"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CodecError(f"malformed stored task policy: {exc}") from None


@lru_cache(maxsize=1024)
def _parsed(text: str) -> CronExpression:
    from ..cron import CronExpression

    return CronExpression.parse(text)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


class Instants:
    """The instants of one task (its interval or cron expression, zone, DST policy and
    calendar), as epoch seconds."""

    __slots__ = ("calendar", "cron", "dst", "every", "tz")

    def __init__(
        self, every: float | None, cron: str | None, zone_name: str, policy: TaskPolicy
    ) -> None:
        self.every = every
        self.cron = None if cron is None else _parsed(cron)
        self.tz: tzinfo = zone(zone_name)
        self.dst: DSTPolicy | None = policy.dst
        self.calendar = policy.exclude

    @classmethod
    def of(cls, row: TaskRow, policy: TaskPolicy, default_zone: str) -> Instants:
        return cls(row.every, row.cron, row.timezone or default_zone, policy)

    @property
    def recurring(self) -> bool:
        return self.every is not None or self.cron is not None

    def after(self, moment: float) -> float | None:
        """The first instant strictly after ``moment`` (calendar not applied)."""
        if self.every is not None:
            return moment + self.every
        if self.cron is None:
            return None
        fire = self.cron.next_after(datetime.fromtimestamp(moment, self.tz), dst=self.dst)
        return None if fire is None else fire.timestamp()

    def excluded(self, instant: float) -> bool:
        calendar = self.calendar
        return calendar is not None and calendar.excludes(_utc(instant), self.tz)

    def after_ok(self, moment: float, notes: Notes | None = None) -> float | None:
        """The first instant after ``moment`` the calendar does not exclude (after
        :data:`SCAN_LIMIT` excluded ones, that last one: the run re-checks it). The
        excluded ones passed over go to ``notes`` (the first :data:`NOTED` of them)."""
        instant = self.after(moment)
        for passed in range(SCAN_LIMIT):
            if instant is None or not self.excluded(instant):
                return instant
            if notes is not None and passed < NOTED:
                notes.append((instant, Outcome.EXCLUDED, None))
            instant = self.after(instant)
        return instant

    def not_before(self, pending: float, moment: float, notes: Notes | None = None) -> float | None:
        """The first instant of the sequence through ``pending`` strictly after
        ``moment`` (for ``every``: ``pending`` plus whole intervals), calendar applied."""
        every = self.every
        if every is not None:
            steps = max(0, math.floor((moment - pending) / every) + 1)
            candidate = pending + steps * every
            while candidate <= moment:  # float rounding
                candidate += every
            if not self.excluded(candidate):
                return candidate
            if notes is not None:
                notes.append((candidate, Outcome.EXCLUDED, None))
            return self.after_ok(candidate, notes)
        return self.after_ok(max(pending, moment), notes)

    def missed(
        self, pending: float, horizon: float, now: float, need: int
    ) -> tuple[list[float], int]:
        """The instants of the sequence through ``pending`` that are ``pending`` itself
        or after ``horizon``, up to ``now``, not excluded: the most recent ``need`` of
        them, oldest first, and how many there are (counted up to :data:`SCAN_LIMIT`)."""
        found: list[float] = []
        if not self.excluded(pending) and pending <= now:
            found.append(pending)
        low = max(pending, horizon)
        every = self.every
        if every is not None:
            top = math.floor((now - pending) / every)
            first = max(1, math.floor((low - pending) / every) + 1)
            count = max(0, top - first + 1)
            tail: list[float] = []
            k = top
            while k >= first and len(tail) < need and top - k < SCAN_LIMIT:
                instant = pending + k * every
                if instant > low and not self.excluded(instant):
                    tail.append(instant)
                k -= 1
            tail.reverse()
            merged = found + tail
            return merged[-need:], len(found) + count
        recent: deque[float] = deque(found, maxlen=need)
        count = len(found)
        following = self.after(low)
        if following is not None and following < now:
            # A long outage: walk only the last stretch that holds `need` instants (a
            # window growing fourfold from an estimate of the expression's period), so
            # the walk stays short and the most recent instants are found.
            period = max(1.0, following - low)
            window = period * (need + 2)
            while now - window > following:
                probe = self.after(now - window)
                walked = 0
                while probe is not None and probe <= now and walked <= need:
                    probe = self.after(probe)
                    walked += 1
                if walked > need:
                    count = -1  # more than the window: counted below from its start
                    following = self.after(now - window)
                    break
                window *= 4
        if count < 0:
            recent.clear()
            count = SCAN_LIMIT  # at least this many (too many to count)
        steps = 0
        while following is not None and following <= now and steps < SCAN_LIMIT:
            if not self.excluded(following):
                recent.append(following)
                count += 1 if count < SCAN_LIMIT else 0
            following = self.after(following)
            steps += 1
        return list(recent), count


def jittered(row_id: str, instant: float, policy: TaskPolicy, instants: Instants) -> float:
    """The due time of a live instant: plus its jitter offset, the same on every node
    (a hash of the task id and the instant), never past the next instant."""
    if not policy.jitter:
        return instant
    following = instants.after(instant)
    gap = None if following is None else max(0.0, following - instant)
    return instant + jitter_offset(row_id, _utc(instant), policy.jitter, gap)


#: What became of an instant that did not run: (instant, outcome, detail).
Note = tuple[float, Outcome, int | str | None]
Notes = list[Note]


@dataclass(frozen=True, slots=True)
class Step:
    """What :func:`before_run` decided: run ``instant`` now (``op`` is ``None``), or run
    nothing and write ``op``."""

    instant: float
    op: Op | None = None


def first_instant(
    row_id: str, start: float, policy: TaskPolicy, instants: Instants
) -> tuple[float | None, float]:
    """The first instant of a newly registered recurring task whose sequence begins at
    ``start`` (already an instant: ``now + interval``, or the first cron fire), calendar
    applied, and its due time (jittered). ``None``: no instant at all."""
    instant: float | None = start
    if instants.excluded(start):
        instant = instants.after_ok(start)
    if instant is None:
        return None, start
    return instant, jittered(row_id, instant, policy, instants)


def _write(row: TaskRow, policy: TaskPolicy, cursor: Cursor, due: float) -> Op:
    return UpsertTask(_replace(row, due=due, policy=encode_policy(policy, cursor)))


def _advance(
    row: TaskRow,
    policy: TaskPolicy,
    cursor: Cursor,
    instants: Instants,
    now: float,
    notes: Notes | None = None,
) -> Op:
    """Run nothing now: the row goes on at its next queued instant, else its next live
    instant after ``now`` (deleted when there is none)."""
    if not instants.recurring:
        return DeleteTask(row.kind, row.identity, row.id)
    if cursor.queue:
        cursor.instant, cursor.waiting = cursor.queue.pop(0), True
        return _write(row, policy, cursor, now)
    pending = cursor.instant if cursor.instant is not None else row.due
    horizon = max(now, cursor.horizon if cursor.horizon is not None else pending)
    following = instants.not_before(pending, horizon, notes)
    if following is None:
        return DeleteTask(row.kind, row.identity, row.id)
    cursor.instant, cursor.paced, cursor.waiting, cursor.horizon = following, False, False, None
    return _write(row, policy, cursor, jittered(row.id, following, policy, instants))


def before_run(
    row: TaskRow, default_zone: str, now: float, notes: Notes | None = None
) -> tuple[Step, TaskPolicy, Cursor]:
    """Decide what the drain does with a due row that has policies (see the module).
    What became of instants that will not run is appended to ``notes`` (the history)."""
    assert row.policy is not None
    policy, cursor = decode_policy(row.policy)
    instants = Instants.of(row, policy, default_zone)
    pending = cursor.instant if cursor.instant is not None else row.due
    grace = policy.misfire.grace
    note = notes.append if notes is not None else _ignore

    def skip() -> tuple[Step, TaskPolicy, Cursor]:
        return Step(pending, _advance(row, policy, cursor, instants, now, notes)), policy, cursor

    if row.attempts or cursor.of is not None:
        # A retry of the same instant (no new decision), or a run an operator asked for
        # (trigger, backfill): neither is a misfire.
        return Step(pending), policy, cursor
    if not instants.recurring or cursor.waiting:
        # A one-shot task, or an instant kept by overlap or replayed by misfire: it runs
        # unless excluded or later than grace (measured from its instant; a live
        # instant's from its jittered time: jitter is a chosen delay, not lateness).
        late = now - (pending if cursor.waiting else row.due)
        if instants.excluded(pending):
            note((pending, Outcome.EXCLUDED, None))
            return skip()
        if grace is not None and late > grace:
            note((pending, Outcome.MISSED, _late(late, grace)))
            return skip()
        return Step(pending), policy, cursor
    misfire = policy.misfire
    need = misfire.max if misfire.mode == "all" else 1
    horizon = cursor.horizon if cursor.horizon is not None else pending
    # The drain runs what is due within WALL_TOLERANCE: so does this count.
    missed, count = instants.missed(pending, horizon, now + WALL_TOLERANCE, need)
    if not missed:  # the pending instant is excluded (and nothing after it is due)
        note((pending, Outcome.EXCLUDED, None))
        return skip()
    if instants.excluded(pending):
        note((pending, Outcome.EXCLUDED, None))
    if count == 1:
        late = now - (row.due if missed[0] == pending else missed[0])
        if grace is not None and late > grace:
            note((missed[0], Outcome.MISSED, _late(late, grace)))
            return skip()
        cursor.instant = missed[0]
        return Step(missed[0]), policy, cursor
    # A misfire: two or more instants went by without a run. The live sequence goes on
    # after the most recent of them (an instant: `every` keeps its cadence).
    cursor.horizon = missed[-1]
    first = pending if not instants.excluded(pending) else missed[0]
    if misfire.mode == "skip":
        note((first, Outcome.MISSED, f"{_many(count)} instants missed (misfire=skip)"))
        cursor.instant = missed[-1]
        step = Step(missed[-1], _advance(row, policy, cursor, instants, now, notes))
        return step, policy, cursor
    if misfire.mode == "once":
        # Coalesced into one run, which carries the first of them (the instant it was
        # due at, as a task without policies does); it is missed only when even the
        # most recent of them is older than grace.
        if grace is not None and now - missed[-1] > grace:
            note((first, Outcome.MISSED, f"{_many(count)} instants, all later than grace"))
            return skip()
        note((first, Outcome.COALESCED, count))
        cursor.instant = first
        return Step(first), policy, cursor
    if count > len(missed):
        note((first, Outcome.MISSED, f"{_many(count - len(missed))} older than max={need}"))
    if grace is not None:
        kept = [instant for instant in missed if now - instant <= grace]
        if len(kept) < len(missed):
            note((missed[0], Outcome.MISSED, f"{len(missed) - len(kept)} later than grace"))
        missed = kept
    if not missed:
        return skip()
    cursor.instant, cursor.queue, cursor.paced, cursor.waiting = missed[0], missed[1:], True, True
    return Step(missed[0]), policy, cursor


def _ignore(_: Note) -> None:
    """``notes.append`` when nobody keeps them."""


def _late(late: float, grace: float) -> str:
    return f"{late:.3g} s late, grace {grace:g} s"


def _many(count: int) -> str:
    return f"{count:,}" if count < SCAN_LIMIT else f"{SCAN_LIMIT:,}+"


def after_run(
    row: TaskRow,
    policy: TaskPolicy,
    cursor: Cursor,
    instant: float,
    start: float,
    end: float,
    default_zone: str,
    notes: Notes | None = None,
) -> Op:
    """The row after a successful run of ``instant`` that started at ``start`` (the
    drain turn's start: durable ``every`` counts from it) and returned at ``end``.
    Instants skipped by the overlap policy are appended to ``notes``."""
    instants = Instants.of(row, policy, default_zone)
    row = _replace(row, attempts=0, last_error=None)
    if not instants.recurring:
        return DeleteTask(row.kind, row.identity, row.id)
    horizon = max(instant, cursor.horizon if cursor.horizon is not None else instant)
    replaying = cursor.paced and bool(cursor.queue)
    following: float | None
    if not cursor.waiting and not replaying:
        # The instants that came due while this run was in flight meet the overlap policy.
        mode = policy.overlap.mode
        every = instants.every is not None
        # `every` counts from the start of the run (as if not jittered: the offset is
        # the schedule's choice, the cadence stays the instants'); cron from its instant.
        offset = jittered(row.id, instant, policy, instants) - instant if every else 0.0
        anchor = start - offset if every else max(instant, start)
        following = instants.after_ok(anchor, notes)
        if mode != "allow" and following is not None and following <= end:
            # BUFFER_ONE keeps the first of them (n - 1 = 1), limit(n) the first n - 1,
            # SKIP none; the others, up to the end of the run, are skipped.
            keep = 1 if mode == "buffer_one" else int(policy.overlap.max_in_flight) - 1
            room = keep - len(cursor.queue)
            while following is not None and following <= end and room > 0:
                cursor.queue.append(following)
                room -= 1
                following = instants.after_ok(following)
            if following is not None and following <= end:
                skipped = following
                following = instants.not_before(anchor, end) if every else instants.after_ok(end)
                if notes is not None:
                    detail = f"came due while a run was in flight (overlap={policy.overlap!r})"
                    notes.append((skipped, Outcome.SKIPPED_OVERLAP, detail))
            horizon = max(horizon, end)
    else:
        # A kept or replayed instant ran: the live sequence goes on after the latest
        # instant dealt with.
        following = instants.after_ok(horizon, notes)
    if cursor.queue:
        rate = policy.misfire.rate if cursor.paced else None
        # WALL_TOLERANCE: the drain may run a row that early; a paced replay never runs
        # closer than 1/rate to the one before.
        queued_due = max(end, start + 1.0 / rate + WALL_TOLERANCE) if rate else end
        if following is not None:
            live_due = jittered(row.id, following, policy, instants)
            if live_due <= queued_due:
                # New instants stay on time while a replay is paced.
                cursor.instant, cursor.waiting, cursor.horizon = following, False, horizon
                return _write(row, policy, cursor, live_due)
        cursor.instant, cursor.waiting, cursor.horizon = cursor.queue.pop(0), True, horizon
        return _write(row, policy, cursor, queued_due)
    if following is None:
        return DeleteTask(row.kind, row.identity, row.id)
    cursor.instant, cursor.paced, cursor.waiting, cursor.horizon = following, False, False, None
    return _write(row, policy, cursor, jittered(row.id, following, policy, instants))


def retry_row(row: TaskRow, policy: TaskPolicy, cursor: Cursor, instant: float) -> TaskRow:
    """A failed run's row keeps the instant it was running (its retry carries it)."""
    cursor.instant = instant
    return _replace(row, policy=encode_policy(policy, cursor))
