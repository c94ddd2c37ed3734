# SPDX-License-Identifier: Apache-2.0
"""What a durable task with policies does at each step: which instant runs, which are
skipped, missed or replayed, and when the row is due next (issue 22).

Only rows whose ``policy`` column is set come here (a task that passes no option keeps
the drain's plain path, today's behaviour, unchanged). Pure but for the codec: no clock
(the drain passes its times), no store (it returns the row to write).

Vocabulary. A recurring task has *instants*: an ``every`` task's are its pending instant
plus whole intervals, a grid that is never re-anchored (a run that started at ``S``
makes the next one the first grid instant after ``S``: one interval after an on-time run,
and back on the grid after a catch-up run); a cron task's are its expression's
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
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Final

import msgspec

from .._codec import decode, encode
from ..clock import WALL_TOLERANCE
from ..cron._spi import zone
from ..errors import CodecError
from ..stores import DeleteTask, Op, TaskRow, UpsertTask
from ..triggers import (
    SCAN_LIMIT,
    CronTrigger,
    IntervalTrigger,
    Outcome,
    Trigger,
    grace_note,
    jitter_delay,
    past_grace,
    plan_misfire,
    run_waiting_room,
)
from ._policy import TaskPolicy

if TYPE_CHECKING:
    from datetime import tzinfo

    from ..cron import CronExpression

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
    "grid_after",
    "paused_step",
    "retry_row",
]

_replace = msgspec.structs.replace
_DEFAULT_POLICY: Final = TaskPolicy()
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


class Instants:
    """The instants of one task: its :class:`~tocsin.triggers.Trigger` (the policy
    engine's: an ``every`` task's grid through its pending instant, or its cron
    expression's fire times under its DST policy, with its calendar and jitter inside),
    and what the durable planner asks of them (which passed, which it noted)."""

    __slots__ = ("every", "trigger")

    def __init__(
        self,
        every: float | None,
        cron: str | None,
        zone_name: str,
        policy: TaskPolicy,
        *,
        anchor: float,
    ) -> None:
        self.every = every
        tz: tzinfo = zone(zone_name)
        jitter = policy.jitter or None
        self.trigger: Trigger | None
        if every is not None:
            self.trigger = IntervalTrigger(
                every, anchor, exclude=policy.exclude, jitter=jitter, zone=tz
            )
        elif cron is not None:
            self.trigger = CronTrigger(
                _parsed(cron), tz, dst=policy.dst, exclude=policy.exclude, jitter=jitter
            )
        else:
            self.trigger = None

    @classmethod
    def of(cls, row: TaskRow, policy: TaskPolicy, default_zone: str, anchor: float) -> Instants:
        """The instants of ``row``'s task; ``anchor``: one of them (its pending instant)."""
        return cls(row.every, row.cron, row.timezone or default_zone, policy, anchor=anchor)

    @property
    def recurring(self) -> bool:
        return self.trigger is not None

    def after(self, moment: float) -> float | None:
        """The first instant strictly after ``moment`` (calendar not applied)."""
        trigger = self.trigger
        return None if trigger is None else trigger.after(moment)

    def excluded(self, instant: float) -> bool:
        trigger = self.trigger
        return trigger is not None and trigger.excluded(instant)

    def delivery(self, row_id: str, instant: float) -> float:
        """When ``instant`` is delivered: plus its jitter offset (the trigger's rule)."""
        trigger = self.trigger
        return instant if trigger is None else trigger.delivery(row_id, instant)

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
        ``moment`` (for ``every``: its grid, ``pending`` plus whole intervals), calendar
        applied."""
        if self.every is not None:
            candidate = self.after(max(moment, pending - self.every))
            if candidate is None or not self.excluded(candidate):
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


def grid_after(instant: float, every: float, moment: float) -> float:
    """The first instant of the grid ``instant + k * every`` (k >= 1) after ``moment``:
    what follows a run of ``instant`` that started at ``moment`` (a durable ``every``
    keeps its grid; an on-time run makes it ``instant + every``)."""
    steps = max(1, math.floor((moment - instant) / every) + 1)
    following = instant + steps * every
    while following <= moment:  # float rounding
        following += every
    return following


def jittered(row_id: str, instant: float, policy: TaskPolicy, instants: Instants) -> float:
    """The due time of a live instant: plus its jitter offset, the same on every node
    (a hash of the task id and the instant), never past the next instant."""
    if not policy.jitter:
        return instant
    if instants.trigger is None:
        # A one-shot task: its own offset, with no next instant to stay before.
        return instant + jitter_delay(row_id, instant, policy.jitter, None)
    return instants.delivery(row_id, instant)


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
    What became of instants that will not run is appended to ``notes`` (the history).
    The misfire and grace rules are the policy engine's (:func:`~tocsin.triggers.
    plan_misfire`, :func:`~tocsin.triggers.past_grace`); this collects the instants
    they decide on and keeps the row's cursor."""
    assert row.policy is not None
    policy, cursor = decode_policy(row.policy)
    pending = cursor.instant if cursor.instant is not None else row.due
    instants = Instants.of(row, policy, default_zone, pending)
    misfire = policy.misfire
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
        if past_grace(misfire, late):
            note((pending, Outcome.MISSED, grace_note(misfire, late)))
            return skip()
        return Step(pending), policy, cursor
    need = misfire.keep()
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
        if past_grace(misfire, late):
            note((missed[0], Outcome.MISSED, grace_note(misfire, late)))
            return skip()
        cursor.instant = missed[0]
        return Step(missed[0]), policy, cursor
    # A misfire: two or more instants went by without a run. The live sequence goes on
    # after the most recent of them (an instant: `every` keeps its grid).
    cursor.horizon = missed[-1]
    first = pending if not instants.excluded(pending) else missed[0]
    plan = plan_misfire(misfire, first, count, missed)
    if not plan.deliver:  # skip
        note((first, Outcome.MISSED, f"{_many(count)} instants missed (misfire=skip)"))
        cursor.instant = missed[-1]
        step = Step(missed[-1], _advance(row, policy, cursor, instants, now, notes))
        return step, policy, cursor
    if plan.judged_by is not None:
        # `once`: coalesced into one run, which carries the first of them (the instant
        # it was due at, as a task without policies does); it is missed only when even
        # the most recent of them is older than grace.
        if past_grace(misfire, now - plan.judged_by):
            note((first, Outcome.MISSED, f"{_many(count)} instants, all later than grace"))
            return skip()
        note((first, Outcome.COALESCED, plan.coalesced + 1))
        cursor.instant = first
        return Step(first), policy, cursor
    if plan.missed:
        note((first, Outcome.MISSED, f"{_many(plan.missed)} older than max={need}"))
    replay = list(plan.deliver)
    kept = [instant for instant in replay if not past_grace(misfire, now - instant)]
    if len(kept) < len(replay):
        note((replay[0], Outcome.MISSED, f"{len(replay) - len(kept)} later than grace"))
    if not kept:
        return skip()
    cursor.instant, cursor.queue, cursor.paced, cursor.waiting = kept[0], kept[1:], True, True
    return Step(kept[0]), policy, cursor


def _ignore(_: Note) -> None:
    """``notes.append`` when nobody keeps them."""


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
    Instants skipped by the overlap policy are appended to ``notes``; how many wait is
    the policy engine's rule for runs that never overlap (``Overlap.waiting_room``)."""
    instants = Instants.of(row, policy, default_zone, instant)
    row = _replace(row, attempts=0, last_error=None)
    if not instants.recurring:
        return DeleteTask(row.kind, row.identity, row.id)
    horizon = max(instant, cursor.horizon if cursor.horizon is not None else instant)
    replaying = cursor.paced and bool(cursor.queue)
    following: float | None
    if not cursor.waiting and not replaying:
        # The instants that came due while this run was in flight meet the overlap policy.
        room = run_waiting_room(policy.overlap, len(cursor.queue))
        every = instants.every is not None
        # `every` keeps its grid (the instant plus whole intervals): the next instant is
        # the first grid one after the start of the run (as if not jittered: the offset
        # is the schedule's choice, the cadence stays the instants'), so a catch-up run
        # does not shift the grid; cron goes on from its instant.
        offset = jittered(row.id, instant, policy, instants) - instant if every else 0.0
        anchor = max(instant, start - offset) if every else max(instant, start)
        following = instants.not_before(instant, anchor, notes)
        if room is not None and following is not None and following <= end:
            # BUFFER_ONE keeps the first of them (n - 1 = 1), limit(n) the first n - 1,
            # SKIP none; the others, up to the end of the run, are skipped.
            while following is not None and following <= end and room > 0:
                cursor.queue.append(following)
                room -= 1
                following = instants.after_ok(following)
            if following is not None and following <= end:
                skipped = following
                following = instants.not_before(instant, end) if every else instants.after_ok(end)
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


def paused_step(row: TaskRow, default_zone: str, now: float, note: str | None) -> tuple[Op, Notes]:
    """A paused task's row that came due at ``now``: no run. Its instants up to ``now``
    (the most recent :data:`NOTED`, none its calendar excludes) are ``paused`` notes
    carrying ``note``, and the row goes on at its first instant after ``now`` (an
    ``every`` task on its grid), its attempts reset and any queued replay dropped; a
    one-shot task, or a cron with no further fire time, is deleted."""
    if row.policy is None:
        policy, cursor = _DEFAULT_POLICY, Cursor()
    else:
        policy, cursor = decode_policy(row.policy)
    pending = cursor.instant if cursor.instant is not None else row.due
    instants = Instants.of(row, policy, default_zone, pending)
    notes: Notes = []
    if not instants.recurring or cursor.of is not None:
        notes.append((pending, Outcome.PAUSED, note))
        return DeleteTask(row.kind, row.identity, row.id), notes
    horizon = cursor.horizon if cursor.horizon is not None else pending
    passed, _ = instants.missed(pending, horizon, now + WALL_TOLERANCE, NOTED)
    notes.extend((instant, Outcome.PAUSED, note) for instant in passed)
    following = instants.not_before(pending, max(now, horizon))
    if following is None:
        return DeleteTask(row.kind, row.identity, row.id), notes
    fresh = _replace(row, attempts=0, last_error=None)
    if row.policy is None:
        return UpsertTask(_replace(fresh, due=following)), notes
    step = Cursor(instant=following)
    return _write(fresh, policy, step, jittered(row.id, following, policy, instants)), notes
