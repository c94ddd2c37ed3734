# SPDX-License-Identifier: Apache-2.0
"""The scheduling service: one-shot, fixed-rate and cron schedules on the shared heap.

Prior art: GoAkt ``actor/scheduler.go`` (the API, references, pause/resume), Akka's
``TimerScheduler`` (keyed timers, stale ticks discarded), the asyncio/trio deadline heaps.

Every schedule is a :class:`ScheduleRecord` armed in the system's
:class:`~tocsin._deadlines.DeadlineService`. Nothing here reads the clock on
the message path: a clock read happens when a schedule is made, paused, resumed, and when
the shared timer fires.
"""

from __future__ import annotations

import asyncio
import builtins
import itertools
import math
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, final

from .._deadlines import Deadline, to_seconds
from ..actor._spi import (
    STALE,
    DeadLetterReason,
    Misfire,
    NoSender,
    Outcome,
    Overlap,
    RuntimeItem,
    ScheduleInfo,
    ScheduleKind,
    SchedulerMetrics,
    Tick,
    TickOutcome,
)
from ..clock import WALL_TOLERANCE
from ..cron._spi import zone
from ..errors import (
    DeadActorError,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    ScheduleReferenceRequiredError,
)
from ..triggers import jitter_offset
from ._cron import CronState
from ._history import DEFAULT_HISTORY, History
from ._instants import MAX_BACKFILL, cron_instants, interval_instants, kept
from ._introspect import (
    SchedulerStatistics,
    schedule_info,
    scheduler_metrics,
    scheduler_statistics,
    utc,
)
from ._policy import SchedulePolicy, check_dst, check_exclude, check_jitter, make_policy

if TYPE_CHECKING:
    from ..actor._spi import PID, Cell, Runtime, SendTarget
    from ..cron import Calendar, DSTPolicy

__all__ = ["LATENESS_WINDOW", "ScheduleRecord", "Scheduler"]

#: Lateness samples kept for the p50/p99 metrics (a ring buffer; a power of two).
LATENESS_WINDOW = 4096
_LATENESS_MASK = LATENESS_WINDOW - 1

_ONCE = ScheduleKind.ONCE
_INTERVAL = ScheduleKind.INTERVAL
_CRON = ScheduleKind.CRON
_DEAD_LETTER = Outcome.DEAD_LETTER
_PAUSED = Outcome.PAUSED


@final
class ScheduleRecord(Deadline, RuntimeItem):
    """One schedule (internal). ``due`` is its armed monotonic deadline.

    It is both a deadline in the shared heap and, as a tick, a
    :class:`~tocsin.actor._mailbox.RuntimeItem` in its target's mailbox.
    """

    # Slotted and lean: a system may hold a million pending schedules.
    __slots__ = (
        "created_at",
        "cron",
        "dead",
        "delay",
        "final",
        "history",
        "history_at",
        "interval",
        "late",
        "message",
        "note",
        "owner",
        "paused",
        "paused_at",
        "paused_by",
        "policy",
        "queued",
        "reference",
        "scheduler",
        "send_to",
        "sender",
        "target",
        "tick_at",
        "ticks",
    )

    def __init__(
        self,
        reference: str,
        message: Any,
        target: PID,
        send_to: SendTarget,
        sender: Any,
        interval: float | None,
        cron: CronState | None,
        owner: Cell | None,
        created_at: float,
        scheduler: Scheduler,
        delay: float | None = None,
        policy: SchedulePolicy | None = None,
    ) -> None:
        self._heap_key = None  # Deadline state, set here: this runs once per schedule
        self._heap_deadline = 0.0
        self.reference = reference
        self.message = message
        self.target = target
        # What `target` sends to, read once here: every tick delivers to it directly.
        self.send_to = send_to
        self.sender = sender
        self.interval = interval  # repeating interval, or None (once / cron)
        self.delay = delay  # a one-shot's delay as given (for ScheduleInfo), else None
        self.cron = cron
        self.owner = owner
        self.created_at = created_at
        self.scheduler = scheduler
        self.ticks = 0
        # Seconds its last tick fired after its deadline (None before the first): the
        # console's per-schedule lateness (issue 14). The float is the one the lateness
        # ring holds, so the hot path pays one slot store, no allocation.
        self.late: float | None = None
        self.paused = False
        self.dead = False
        # Its last tick is on its way: retire it when that tick is opened or rejected
        # (a one-shot once fired; a cron schedule past its last fire time).
        self.final = False
        # The history ring (scheduling/_history.py): made at the first entry, so a
        # schedule that never fires (a timeout cancelled in time) pays nothing for it.
        self.history: list[Any] | None = None
        self.history_at = 0
        # pause_schedule(note=...): why, when (wall seconds) and by which node.
        self.note: str | None = None
        self.paused_at: float | None = None
        self.paused_by: str | None = None
        # The schedule's non-default options and their state; None (the common case):
        # every option is its default and the ticks take the plain path.
        self.policy = policy
        # Ticks of this record in the target's mailbox (the record itself or TickItems),
        # and the nominal instant the record itself carries there: monotonic for once and
        # interval schedules, wall (epoch seconds) for cron (see Scheduler.wall_of).
        self.queued = 0
        self.tick_at = 0.0

    # One slot fewer per schedule (a system may hold a million): `due` is the heap's own
    # copy of the deadline, which also keeps a paused one-shot's remaining delay while
    # it is disarmed.
    @property
    def due(self) -> float:
        """The armed monotonic deadline (while paused: a one-shot's delay left)."""
        return self._heap_deadline

    @due.setter
    def due(self, value: float) -> None:
        self._heap_deadline = value

    def open(self) -> Any:
        """This record, taken from a mailbox as a tick: the message, or ``STALE``.

        The record itself is what travels through the mailbox (no wrapper per tick): a
        cancelled or replaced schedule is ``dead``, so a tick still queued is dropped here;
        a schedule's last tick retires it (Akka ``TimerSchedulerImpl.interceptTimerMsg``).
        """
        queued = self.queued = self.queued - 1
        if self.dead:
            return self.scheduler.stale(self)
        if self.final and not queued:
            self.scheduler.last_tick_taken(self)
        return self.message

    def rejected(self) -> Any:
        """A tick its target refused (stopped, suspended): the message for the dead
        letter, or ``STALE`` if the schedule was cancelled meanwhile (not lost)."""
        self.queued -= 1
        return self.scheduler.tick_rejected(self, self.tick_at)

    def tick(self) -> Tick:
        """``ctx.tick`` for the tick this record carries: its reference and nominal instant."""
        return Tick(self.reference, utc(self.scheduler.wall_of(self, self.tick_at)))

    def finished(self) -> None:
        """The target's ``receive`` for this tick is over: one tick fewer in flight."""
        policy = self.policy
        if policy is not None and policy.tracks:
            self.scheduler.settled(self, policy)

    @property
    def tracked(self) -> bool:  # type: ignore[override]
        """Whether the overlap policy counts this schedule's ticks in flight (a remote
        target then asks for a completion frame); False for ``Overlap.ALLOW``."""
        policy = self.policy
        return policy is not None and policy.tracks

    @property
    def kind(self) -> ScheduleKind:
        if self.cron is not None:
            return _CRON
        return _ONCE if self.interval is None else _INTERVAL

    def fire(self, now: float, deadline: float) -> None:
        # The hot path of every tick: attributes are read once, the lateness sample goes
        # straight into the scheduler's ring buffer, and the re-arm's push records the
        # new `due` itself.
        scheduler = self.scheduler
        fired = scheduler.fired
        self.late = scheduler.lateness[fired & _LATENESS_MASK] = now - deadline
        scheduler.fired = fired + 1
        cron = self.cron
        if cron is not None:
            scheduler.fire_cron(self, cron, now)
            return
        if self.policy is not None:
            scheduler.fire_with_policy(self, self.policy, now, deadline)
            return
        interval = self.interval
        at = deadline  # the instant this tick stands for (monotonic)
        if interval is None:
            # Retired when its tick is opened (or, if rejected, by `rejected`).
            self.final = True
            self.due = math.inf
            due = math.inf
        else:
            # Fixed rate without drift: the next grid point strictly after now.
            due = deadline + interval
            if due <= now:
                # A stall: the later overdue ticks are coalesced into this one, which
                # keeps its own (first overdue) instant, as before policies existed.
                due = scheduler.coalesce(self, deadline, interval, now)
        # The record itself is the mailbox item; only a tick sent while an earlier one
        # of this record still waits in a mailbox needs an item of its own (its instant).
        queued = self.queued
        self.queued = queued + 1
        if queued:
            item: RuntimeItem = TickItem(self, at)
        else:
            self.tick_at = at
            item = self
        # A rejected tick is dead-lettered and counted by `rejected`.
        if self.send_to.deliver(item, self.sender, None):
            self.ticks += 1
            scheduler.ticks_delivered += 1
            # History (issue 23): two floats that exist already, written into the ring;
            # no object per tick (see _history.py). No length check either: the rare
            # ends (no ring yet, the ring's end) raise, and a try costs nothing in 3.11.
            pos = self.history_at
            try:
                ring = self.history
                ring[pos] = at  # type: ignore[index]
                ring[pos + 1] = now  # type: ignore[index]
            except (TypeError, IndexError):
                ring, pos = self.grow_history()
                ring[pos] = at
                ring[pos + 1] = now
            self.history_at = pos + 2
        elif interval is not None and not self.send_to.alive():
            scheduler.retire(self)  # target fully stopped: drop after this tick
            return
        if interval is not None:
            scheduler.deadlines.add(due, self)

    # -- history (issue 23; scheduling/_history.py reads the ring) ----------------------

    def grow_history(self) -> tuple[list[Any], int]:
        """The ring and the write position for the next entry, when the ring is missing
        or the position is at its end: made (one entry), doubled up to the system's
        ``history`` size, or wrapped to the start once full. Runs ``log2(history)``
        times per schedule plus once per wrap."""
        ring = self.history
        if ring is None:
            ring = self.history = [None, None]
            self.history_at = 0
            return ring, 0
        limit = self.scheduler.history.slots
        size = len(ring)
        if size < limit:
            ring.extend([None] * min(size, limit - size))
            return ring, self.history_at
        self.history_at = 0
        return ring, 0

    def remember(self, first: Any, second: Any) -> None:
        """Write one entry (two slots) into the ring (as ``fire`` does inline)."""
        ring = self.history
        at = self.history_at
        if ring is None or at == len(ring):
            ring, at = self.grow_history()
        ring[at] = first
        ring[at + 1] = second
        self.history_at = at + 2


@final
class TickItem(RuntimeItem):
    """A tick of a schedule whose record is already queued in the target's mailbox (a
    slow actor under ``Overlap.ALLOW``), or a manual or backfilled tick, or a cluster cron
    tick this node won: the record cannot carry two instants (nor a claim's fence), so
    this small item carries this one's (internal)."""

    __slots__ = ("at", "backfill", "done", "fence", "manual", "record")

    def __init__(
        self,
        record: ScheduleRecord,
        at: float,
        manual: bool = False,
        backfill: bool = False,
        fence: int | None = None,
        done: Callable[[], None] | None = None,
    ) -> None:
        self.record = record
        self.at = at  # the nominal instant, in the record's units (see Scheduler.wall_of)
        self.manual = manual
        self.backfill = backfill
        # Cluster cron: the claim's fence (ctx.tick.fence), and for at_least_once what
        # marks the claim done once receive has returned.
        self.fence = fence
        self.done = done

    def open(self) -> Any:
        record = self.record
        queued = record.queued = record.queued - 1
        if record.dead:
            return record.scheduler.stale(record)
        if record.final and not queued:
            record.scheduler.last_tick_taken(record)
        return record.message

    def rejected(self) -> Any:
        record = self.record
        record.queued -= 1
        return record.scheduler.tick_rejected(record, self.at)

    def tick(self) -> Tick:
        record = self.record
        instant = utc(record.scheduler.wall_of(record, self.at))
        return Tick(
            record.reference,
            instant,
            manual=self.manual,
            backfill=self.backfill,
            fence=self.fence,
        )

    def finished(self) -> None:
        done, self.done = self.done, None
        if done is not None:
            done()  # at_least_once: the cluster claim is marked done
        self.record.finished()

    def lost(self) -> None:
        """Maybe never delivered (a remote target's connection was lost, its frame never
        left): no longer in flight for the overlap policy, but an ``at_least_once``
        claim is not marked done: it lapses, and another node delivers the tick."""
        done, self.done = self.done, None
        # The claim's grant (cluster/_single_fire.py) has a `lapse`; a bare done call
        # (a manual tick's, say) has nothing to let lapse.
        lapse = getattr(done, "lapse", None)
        if lapse is not None:
            lapse()
        self.record.finished()

    @property
    def tracked(self) -> bool:  # type: ignore[override]
        # A remote target asks for a completion frame when finished() matters.
        return self.done is not None or self.record.tracked


@final
class Replay(Deadline):
    """``Misfire.all(rate=...)``: the overdue instants still to replay, one every
    ``1/rate`` seconds on the shared heap, oldest first (internal)."""

    __slots__ = ("instants", "record", "start", "step", "taken")

    def __init__(self, record: ScheduleRecord, keep: int, rate: float, start: float) -> None:
        super().__init__()
        self.record = record
        # Bounded: a later stall adds its instants and the oldest fall out, so the
        # replay is always of the most recent `max` overdue instants.
        self.instants: deque[float] = deque(maxlen=keep)
        self.step = 1.0 / rate
        self.start = start
        self.taken = 0

    def fire(self, now: float, deadline: float) -> None:
        record = self.record
        scheduler = record.scheduler
        instants = self.instants
        if record.dead or record.paused or not instants:
            scheduler.replay_over(record, self)
            return
        scheduler.replay_one(record, instants.popleft())
        if not instants:
            scheduler.replay_over(record, self)
            return
        # k / rate from the start, not a running sum: no drift, and never more than
        # `rate` in any second (the k-th is at exactly start + k/rate).
        self.taken += 1
        scheduler.deadlines.add(self.start + self.taken * self.step, self)


class CronGate(Protocol):
    """Cluster mode: whether this node delivers a cron tick (``tocsin.cluster.CronClaims``).

    ``deliver_if_won`` never blocks: it claims the tick ``reference@fire_at`` (the
    *nominal* instant, whatever jitter delays its delivery: every node builds the same
    key) on the coordinator in the background, then calls ``deliver(fence, finished)``
    if this node won, else ``skipped(outcome, detail)`` (docs/cluster.md, "Cron single
    fire"):

    * ``deliver(fence, finished)`` hands the tick to its target, the claim's ``fence``
      in ``ctx.tick.fence``, and returns whether it was handed over (``False``: the
      schedule was cancelled meanwhile, or the target refused it; an ``at_least_once``
      claim is then left to lapse, so another node delivers it). ``finished`` is
      ``None`` for ``at_most_once``; for ``at_least_once`` it must be called once the
      target's ``receive`` for the tick has returned (the claim is marked done; until
      then it is renewed).
    * ``skipped(outcome, detail)``: this node does not deliver the tick. ``outcome`` is
      the :class:`~tocsin.Outcome` its history records: ``CLAIMED_ELSEWHERE`` (another
      node won; for ``at_least_once``, once that node marked it done),
      ``CLAIM_LATE`` (reached after the instant's window), ``CLAIM_ERROR`` (detail: the
      coordinator's error), ``PAUSED`` (paused cluster-wide), ``COALESCED`` (a later
      tick of the reference came while this one waited for a claim in flight), or
      ``None`` (the node is stopping: nothing to record).

    Keywords:
        delivery: ``"at_most_once"`` (default) or ``"at_least_once"``.
        backfill: an instant of the past, for ``backfill_schedule``: claimed with the
            same key as its regular tick, with no lateness check and never coalesced
            (call it once per instant, oldest first). A claim still kept on the
            coordinator (``Cluster(claim_retention=...)``, at least the TTL) makes it
            ``CLAIMED_ELSEWHERE``: an instant that fired within the retention is never
            delivered twice. Claims older than the retention may be gone: such an
            instant is delivered.
    """

    def deliver_if_won(
        self,
        reference: str,
        fire_at: float,
        period: float,
        deliver: Callable[[int, Callable[[], None] | None], bool],
        skipped: Callable[[Outcome | None, str | int | None], object] | None = None,
        *,
        delivery: str = "at_most_once",
        backfill: bool = False,
    ) -> None: ...


@final
class Scheduler:
    """All schedules of one system, addressable by reference (internal).

    ``ActorSystem`` and ``ReceiveContext`` expose its calls; see ``docs/scheduling.md``.
    """

    def __init__(self, runtime: Runtime, timezone: str, history: int = DEFAULT_HISTORY) -> None:
        self._runtime = runtime
        self._clock = runtime.clock
        self._timezone = timezone
        self._zone = zone(timezone)
        self.deadlines = runtime.deadlines
        self._heap = runtime.deadlines.heap
        self._refs: dict[str, ScheduleRecord] = {}
        self._ids = itertools.count(1)
        #: Ticks fired so far, and the ring of their lateness (seconds after the deadline;
        #: tick ``i`` at ``lateness[i % LATENESS_WINDOW]``): written by
        #: ``ScheduleRecord.fire`` on every tick, read through :meth:`statistics`.
        self.lateness = [0.0] * LATENESS_WINDOW
        self.fired = 0
        self.ticks_delivered = 0
        self.ticks_dead_lettered = 0
        self.ticks_discarded = 0
        #: Cluster mode (issue 12): set by the system when it joins a cluster.
        self.cron_gate: CronGate | None = None
        #: What became of each schedule's instants (issue 23): rings, events, counts.
        self.history = History(history, runtime.name, runtime.clock, runtime.events)
        #: Instants not delivered, by outcome (:meth:`outcome`).
        self.not_delivered: dict[Outcome, int] = {}
        self._unsubscribe_wall = runtime.clock.on_wall_jump(self._wall_jumped)
        self._unlisten = runtime.add_stop_listener(self.owner_stopped)

    # -- registering -------------------------------------------------------------------

    def _register(
        self,
        message: Any,
        pid: PID,
        reference: str | None,
        sender: Any,
        replace: bool,
        owner: Cell | None,
        interval: float | None,
        cron: CronState | None,
        delay: float | None = None,
        policy: SchedulePolicy | None = None,
    ) -> ScheduleRecord:
        # Every call comes through SchedulingCalls._live_scheduler, which checked that the
        # system is running.
        # The slot read directly, not through target_of(pid) (~25 ns against ~75 ns
        # measured, on a ~3 µs create): every schedule made pays it once. A non-PID has
        # no such attribute.
        try:
            target = pid._target  # noqa: SLF001
        except AttributeError:
            raise TypeError(
                f"`pid` must be a PID (from spawn, actor_of or durable), got {pid!r}"
            ) from None
        if owner is not None and not owner.schedulable():
            raise DeadActorError(
                f"cannot schedule through the context of {owner.pid}: it has stopped "
                f"(scheduling from post_stop is not allowed)"
            )
        target.check(message)  # a remote target: the message must cross the wire
        if not target.alive():
            raise DeadActorError(f"cannot schedule to {pid}: the target has stopped")
        refs = self._refs
        if reference is None:
            reference = f"$schedule-{next(self._ids)}"
            while reference in refs:
                reference = f"$schedule-{next(self._ids)}"
        elif not isinstance(reference, str) or not reference:
            raise TypeError(f"`reference` must be a non-empty str or None, got {reference!r}")
        else:
            old = refs.get(reference)
            if old is not None:
                if not replace:
                    raise ScheduleAlreadyExistsError(
                        f"a schedule with reference {reference!r} already exists; cancel it "
                        f"first or pass replace=True to replace it"
                    )
                self.retire(old)
        if sender is None:
            sender = owner.pid if owner is not None else NoSender
        record = ScheduleRecord(
            reference,
            message,
            pid,
            target,
            sender,
            interval,
            cron,
            owner,
            self._clock.wall(),
            self,
            delay,
            policy,
        )
        refs[reference] = record
        if owner is not None:
            owner.own(record)
        return record

    def schedule(
        self,
        message: Any,
        pid: PID,
        interval: Any,
        *,
        reference: str | None,
        sender: Any,
        replace: bool,
        owner: Cell | None,
        overlap: Overlap = Overlap.ALLOW,
        misfire: Misfire = Misfire.ONCE,
        jitter: Any = None,
        exclude: Calendar | None = None,
    ) -> str:
        seconds = to_seconds(interval, "interval")
        policy = None
        if (
            overlap is not Overlap.ALLOW
            or misfire is not Misfire.ONCE
            or jitter is not None
            or exclude is not None
        ):
            policy = make_policy(
                overlap,
                misfire,
                check_jitter(jitter, seconds),
                check_exclude(exclude),
                None,
                self._zone,
            )
        record = self._register(
            message, pid, reference, sender, replace, owner, seconds, None, None, policy
        )
        if policy is not None:
            self._arm_interval(record, policy, self._clock.monotonic() + seconds)
            return record.reference
        # The push records the deadline as the record's `due` (no property call here).
        self.deadlines.add(self._clock.monotonic() + seconds, record)
        return record.reference

    def schedule_once(
        self,
        message: Any,
        pid: PID,
        delay: Any,
        *,
        reference: str | None,
        sender: Any,
        replace: bool,
        owner: Cell | None,
        overlap: Overlap = Overlap.ALLOW,
        misfire: Misfire = Misfire.ONCE,
    ) -> str:
        seconds = to_seconds(delay, "delay")
        policy = None
        if overlap is not Overlap.ALLOW or misfire is not Misfire.ONCE:
            policy = make_policy(overlap, misfire, None, None, None, self._zone)
        record = self._register(
            message, pid, reference, sender, replace, owner, None, None, seconds, policy
        )
        # The push records the deadline as the record's `due` (no property call here).
        self.deadlines.add(self._clock.monotonic() + seconds, record)
        return record.reference

    def schedule_cron(
        self,
        message: Any,
        pid: PID,
        expression: str,
        *,
        reference: str | None,
        sender: Any,
        timezone: str | None,
        replace: bool,
        owner: Cell | None,
        overlap: Overlap = Overlap.ALLOW,
        misfire: Misfire = Misfire.ONCE,
        jitter: Any = None,
        exclude: Calendar | None = None,
        dst: DSTPolicy | None = None,
        delivery: str = "at_most_once",
    ) -> str:
        clock = self._clock
        zone_name = timezone if timezone is not None else self._timezone
        # Cluster mode: ticks are claimed by reference. Every node computes the same
        # instants because every member has the system's zone (checked at join).
        if self.cron_gate is not None and (reference is None or reference == ""):
            raise ScheduleReferenceRequiredError(
                "schedule_cron in cluster mode needs an explicit `reference` (got "
                f"{reference!r}): ticks are claimed cluster-wide by reference, and a "
                "generated one differs on every node, so each node would deliver. Pass "
                "the same reference=... on every node, e.g. reference='nightly-report'"
            )
        policy = None
        if (
            overlap is not Overlap.ALLOW
            or misfire is not Misfire.ONCE
            or jitter is not None
            or exclude is not None
            or dst is not None
        ):
            checked_dst = check_dst(dst)
            checked_jitter = check_jitter(jitter, None)
            checked_exclude = check_exclude(exclude)
            state = CronState.create(expression, zone_name, clock.wall(), checked_dst, delivery)
            policy = make_policy(
                overlap, misfire, checked_jitter, checked_exclude, checked_dst, state.tz
            )
        else:
            state = CronState.create(expression, zone_name, clock.wall(), delivery=delivery)
        record = self._register(
            message, pid, reference, sender, replace, owner, None, state, None, policy
        )
        self._arm_cron(record, state)
        return record.reference

    # -- what became of an instant -----------------------------------------------------

    def outcome(
        self,
        record: ScheduleRecord,
        instant_wall: float,
        outcome: Outcome,
        detail: int | str | None = None,
    ) -> None:
        """An instant of ``record`` was not delivered: the one place every such outcome
        goes through (``skipped_overlap``, ``coalesced`` with how many, ``missed``,
        ``excluded``, ``paused``, ``dead_letter``), called where it happens.

        ``instant_wall`` is the nominal instant (epoch seconds). Behind it: the record's
        history ring, the ``TickNotDelivered`` event and ``tocsin_schedule_ticks_total``
        (``scheduling/_history.py``, DESIGN.md "Operating schedules").
        """
        counts = self.not_delivered
        counts[outcome] = counts.get(outcome, 0) + 1
        self.history.outcome(record, instant_wall, outcome, detail)

    # -- managing ----------------------------------------------------------------------

    def _get(self, reference: str) -> ScheduleRecord:
        record = self._refs.get(reference)
        if record is None:
            if not isinstance(reference, str):  # checked on the miss path only: free
                raise TypeError(f"`reference` must be a str, got {reference!r}")
            raise ScheduleNotFoundError(f"no schedule with reference {reference!r}")
        return record

    def cancel(self, reference: str) -> None:
        # _retire inlined: cancel is as hot as create in timeout-style use.
        record = self._refs.pop(reference, None)
        if record is None:
            self._get(reference)  # raises ScheduleNotFoundError
            return
        record.dead = True
        self._heap.cancel(record)
        owner = record.owner
        # Cell.disown inlined (the set is the cell's; discarding from it is its documented
        # use): cancel is the hot path of timeout-style use, and the call cost showed.
        if owner is not None and owner.owned is not None:
            owner.owned.discard(record)

    def pause(self, reference: str, note: str | None = None) -> None:
        record = self._get(reference)
        if record.paused:
            return
        if note is not None and not isinstance(note, str):
            raise TypeError(f"`note` must be a str or None, got {note!r}")
        record.paused = True
        record.note = note
        record.paused_at = self._clock.wall()
        record.paused_by = self._runtime.name
        if self.deadlines.remove(record) and record.interval is None and record.cron is None:
            record.due = max(0.0, record.due - self._clock.monotonic())  # delay left
        if record.policy is not None:
            self._drop_waiting(record, record.policy, Outcome.PAUSED)

    def resume(self, reference: str) -> None:
        record = self._get(reference)
        if not record.paused:
            return
        self._record_paused(record)
        record.paused = False
        record.note = record.paused_at = record.paused_by = None
        clock = self._clock
        if record.final:
            return  # paused after its last fire: that tick is already on its way
        if record.cron is not None:
            self._arm_cron(record, record.cron, after=clock.wall())
            return
        # Not a misfire: the schedule goes on from now.
        if record.interval is not None:
            record.due = clock.monotonic() + record.interval
        else:
            record.due = clock.monotonic() + record.due
        if record.policy is not None and record.interval is not None:
            self._arm_interval(record, record.policy, record.due)
            return
        self.deadlines.add(record.due, record)

    def retire(self, record: ScheduleRecord) -> None:
        """Forget a schedule for good; its queued ticks become stale."""
        if record.dead:
            return
        record.dead = True
        self.deadlines.remove(record)
        if record.policy is not None:
            self._drop_waiting(record, record.policy, None)
        if self._refs.get(record.reference) is record:
            del self._refs[record.reference]
        owner = record.owner
        if owner is not None:
            owner.disown(record)

    def owner_stopped(self, owner: Cell) -> None:
        """Cancel every schedule owned by an actor that has fully stopped."""
        for record in list(owner.release_owned()):
            self.retire(record)

    def close(self) -> None:
        for record in list(self._refs.values()):
            self.retire(record)
        self._unsubscribe_wall()
        self._unlisten()

    # -- the tick path: what the record and its items call ----------------------------

    def wall_of(self, record: ScheduleRecord, at: float) -> float:
        """A tick's nominal instant ``at`` as epoch seconds: a cron tick's is a wall time
        already; a once or interval tick's is the monotonic deadline it stood for, read
        as wall time through the clock's current offset (read only when asked)."""
        if record.cron is not None:
            return at
        clock = self._clock
        return clock.wall() + (at - clock.monotonic())

    def stale(self, record: ScheduleRecord) -> Any:
        """A tick of a cancelled, replaced or retired schedule, taken from a mailbox."""
        self.ticks_discarded += 1
        policy = record.policy
        if policy is not None and policy.tracks:
            policy.settle()
        return STALE

    def last_tick_taken(self, record: ScheduleRecord) -> None:
        """The last tick of a schedule with no further instant was taken: retire it,
        unless ``BUFFER_ONE`` still holds a tick for it."""
        policy = record.policy
        if policy is None or policy.held is None:
            self.retire(record)

    def tick_rejected(self, record: ScheduleRecord, at: float) -> Any:
        """A tick its target refused (stopped, suspended, full): no longer in flight."""
        if record.dead:
            return self.stale(record)
        self.ticks_dead_lettered += 1
        policy = record.policy
        if policy is not None and policy.tracks:
            policy.settle()
        reason = _refusal(record.send_to)
        self.outcome(record, self.wall_of(record, at), Outcome.DEAD_LETTER, reason)
        if record.final and not record.queued:
            self.last_tick_taken(record)
        return record.message

    def send(
        self,
        record: ScheduleRecord,
        at: float,
        claim: tuple[int, Callable[[], None] | None, bool] | None = None,
    ) -> bool:
        """Hand one tick (nominal instant ``at``) to the record's target: the record
        itself when none of its ticks waits in that mailbox, else a :class:`TickItem`.

        ``claim``: a cluster cron tick this node won, ``(fence, done, backfill)``; it
        always travels as a :class:`TickItem` carrying them."""
        queued = record.queued
        record.queued = queued + 1
        if claim is not None:
            fence, done, backfill = claim
            item: RuntimeItem = TickItem(record, at, False, backfill, fence, done)
        elif queued:
            item = TickItem(record, at)
        else:
            record.tick_at = at
            item = record
        if record.send_to.deliver(item, record.sender, None):
            record.ticks += 1
            self.ticks_delivered += 1
            record.remember(at, self._native_now(record))  # history: no object per tick
            return True
        return False

    def coalesce(
        self, record: ScheduleRecord, deadline: float, interval: float, now: float
    ) -> float:
        """An interval schedule fired after later instants of its own came due (a stall):
        the next deadline strictly after ``now``; the later instants are coalesced into
        this tick (recorded on its instant, with how many)."""
        count = math.floor((now - deadline) / interval)
        due = deadline + (count + 1) * interval
        if due <= now:
            # Float absorption (a monotonic time so large that 1 ms no longer moves
            # it): re-arming at `now` would fire forever at one instant.
            due = math.nextafter(now, math.inf)
        if count > 0:
            self.outcome(record, self.wall_of(record, deadline), Outcome.COALESCED, count)
        return due

    def offer(
        self,
        record: ScheduleRecord,
        policy: SchedulePolicy,
        at: float,
        late: float,
        claim: tuple[int, Callable[[], None] | None, bool] | None = None,
    ) -> bool | None:
        """One tick through the schedule's policies: excluded by its calendar, missed
        past its grace (``late``: seconds after its instant), held or skipped by its
        overlap policy, or sent (``claim``: see :meth:`send`; a tick held by
        ``BUFFER_ONE`` goes later without it). True: delivered; False: refused; None: not
        sent."""
        exclude = policy.exclude
        if exclude is not None and exclude.excludes(utc(self.wall_of(record, at)), policy.zone):
            self.outcome(record, self.wall_of(record, at), Outcome.EXCLUDED)
            return None
        grace = policy.misfire.grace
        if grace is not None and late > grace:
            self.outcome(record, self.wall_of(record, at), Outcome.MISSED)
            return None
        if policy.tracks and not policy.admit():
            if policy.buffer and policy.hold(at):
                return None  # delivered when the tick in flight finishes
            self.outcome(record, self.wall_of(record, at), Outcome.SKIPPED_OVERLAP)
            return None
        return self.send(record, at, claim)

    def settled(self, record: ScheduleRecord, policy: SchedulePolicy) -> None:
        """A tick of a tracked schedule finished: one fewer in flight, and a tick held
        by ``BUFFER_ONE`` goes now."""
        policy.settle()
        if not policy.buffer:
            return
        held = policy.take_held()
        if held is None or record.dead or record.paused:
            return
        late = self._native_now(record) - held if policy.misfire.grace is not None else 0.0
        delivered = self.offer(record, policy, held, late)
        if delivered is not True and not record.send_to.alive():
            self.retire(record)
        elif delivered is None and record.final and not record.queued:
            self.retire(record)  # the held one was its last, and it did not go

    def _native_now(self, record: ScheduleRecord) -> float:
        """Now, in the units of the record's instants (wall for cron, else monotonic)."""
        clock = self._clock
        return clock.wall() if record.cron is not None else clock.monotonic()

    def _drop_waiting(
        self, record: ScheduleRecord, policy: SchedulePolicy, outcome: Outcome | None
    ) -> None:
        """Paused or retired: the held tick and a replay under way are dropped."""
        replay = policy.replay
        if replay is not None:
            self.deadlines.remove(replay)
            policy.set_replay(None)
            if outcome is not None:
                for at in replay.instants:
                    self.outcome(record, self.wall_of(record, at), outcome)
        held = policy.take_held()
        if held is not None and outcome is not None:
            self.outcome(record, self.wall_of(record, held), outcome)

    def misfire(
        self,
        record: ScheduleRecord,
        policy: SchedulePolicy,
        first: float,
        count: int,
        recent: list[float],
        now: float,
    ) -> bool | None:
        """``count`` instants of ``record`` came due at once (the first ``first``, the
        most recent ones in ``recent``, oldest first), ``now`` in the same units: apply
        the misfire policy. Returns how the last tick sent went (see :meth:`offer`)."""
        misfire = policy.misfire
        mode = misfire.mode
        if mode == "once":
            # One tick, on the first overdue instant (as without a policy); it stands for
            # all of them, so its grace is judged by the most recent one.
            self.outcome(record, self.wall_of(record, first), Outcome.COALESCED, count - 1)
            return self.offer(record, policy, first, now - recent[-1])
        if mode == "skip":
            self.outcome(record, self.wall_of(record, first), Outcome.MISSED, count)
            return None
        # all: the most recent `max`, oldest first; older ones are missed.
        replayed = recent[-misfire.max :]
        if count > len(replayed):
            self.outcome(record, self.wall_of(record, first), Outcome.MISSED, count - len(replayed))
        rate = misfire.rate
        if rate is None:
            delivered: bool | None = None
            for at in replayed:
                delivered = self.offer(record, policy, at, now - at)
            return delivered
        replay = policy.replay
        if replay is None:
            replay = Replay(record, misfire.max, rate, self._clock.monotonic())
            policy.set_replay(replay)
            replay.instants.extend(replayed)
            at = replay.instants.popleft()
            delivered = self.offer(record, policy, at, now - at)
            if replay.instants:
                self.deadlines.add(replay.start + replay.step, replay)
                replay.taken = 1
            else:
                policy.set_replay(None)
            return delivered
        # A replay is under way: it takes these too (its oldest fall out past `max`).
        replay.instants.extend(replayed)
        return None

    def replay_one(self, record: ScheduleRecord, at: float) -> None:
        """A replay's next overdue instant is due (a :class:`Replay` calls it)."""
        policy = record.policy
        assert policy is not None
        delivered = self.offer(record, policy, at, self._native_now(record) - at)
        if delivered is False and not record.send_to.alive():
            self.retire(record)

    def replay_over(self, record: ScheduleRecord, replay: Replay) -> None:
        """A replay has nothing left (or its schedule is paused or gone)."""
        policy = record.policy
        if policy is not None and policy.replay is replay:
            policy.set_replay(None)

    # -- interval and once schedules with a policy --------------------------------------

    def _arm_interval(self, record: ScheduleRecord, policy: SchedulePolicy, nominal: float) -> None:
        """Arm an interval schedule's tick due at ``nominal``, plus its jitter."""
        jitter = policy.jitter
        if jitter is None:
            self.deadlines.add(nominal, record)
            return
        policy.set_nominal(nominal)
        instant = utc(self.wall_of(record, nominal))
        interval = record.interval
        self.deadlines.add(
            nominal + jitter_offset(record.reference, instant, jitter, interval), record
        )

    def fire_with_policy(
        self, record: ScheduleRecord, policy: SchedulePolicy, now: float, deadline: float
    ) -> None:
        """A once or interval tick of a schedule with a policy (see :meth:`offer`,
        :meth:`misfire`)."""
        interval = record.interval
        nominal = policy.nominal if policy.jitter is not None else deadline
        if interval is None:
            record.final = True
            record.due = math.inf
            delivered = self.offer(record, policy, nominal, now - nominal)
            if delivered is None and not record.queued:
                self.last_tick_taken(record)  # excluded, missed or skipped: it is over
            return
        later = math.floor((now - nominal) / interval)  # instants due after this one
        if later <= 0:
            # Late by `now - deadline`: grace counts from the (jittered) armed deadline.
            delivered = self.offer(record, policy, nominal, now - deadline)
            due = nominal + interval
        else:
            keep = policy.misfire.max if policy.misfire.mode == "all" else 1
            recent = [nominal + i * interval for i in range(max(0, later + 1 - keep), later + 1)]
            delivered = self.misfire(record, policy, nominal, later + 1, recent, now)
            due = nominal + (later + 1) * interval
        if due <= now:
            due = math.nextafter(now, math.inf)  # float absorption, as in `coalesce`
        if delivered is not True and not record.send_to.alive():
            self.retire(record)  # target fully stopped: drop after this tick
            return
        if not record.dead:
            self._arm_interval(record, policy, due)

    # -- cron --------------------------------------------------------------------------

    def _arm_cron(
        self, record: ScheduleRecord, state: CronState, after: float | None = None
    ) -> None:
        clock = self._clock
        wall = clock.wall()
        if after is not None and not state.advance(after):
            self.retire(record)
            return
        policy = record.policy
        if policy is not None and policy.jitter is not None:
            self._jitter_cron(record, state, policy.jitter)
        record.due = clock.monotonic() + max(0.0, state.next_wall + state.offset - wall)
        if not record.paused:
            self.deadlines.add(record.due, record)

    def _jitter_cron(self, record: ScheduleRecord, state: CronState, jitter: float) -> None:
        """Set the offset of the cron tick due next: a hash of (reference, instant),
        capped at the gap to the instant after it."""
        following = state.following(state.next_wall)
        gap = None if following is None else following - state.next_wall
        instant = utc(state.next_wall)
        state.set_offset(jitter_offset(record.reference, instant, jitter, gap))

    def fire_cron(self, record: ScheduleRecord, state: CronState, now: float) -> None:
        wall = self._clock.wall()
        if wall + WALL_TOLERANCE < state.next_wall + state.offset:
            # Wall time went back since this was armed: not due yet in wall terms.
            record.due = now + (state.next_wall + state.offset - wall)
            self.deadlines.add(record.due, record)
            return
        fire_at = state.next_wall  # the instant this tick stands for (the cluster claim key)
        jittered = state.offset  # this tick's jitter (the next one's is computed below)
        previous = state.last_wall
        if previous is not None and state.dst_watch:
            # What a DST change kept from firing since the last fire time (history):
            # two offset reads unless a change lies between them.
            for at, dropped in state.dst_dropped(previous, fire_at):
                self.outcome(record, at, dropped)
        policy = record.policy
        # One next-fire computation per tick, as before policies: when the fire time
        # after this one is still ahead, there is no misfire.
        nxt = state.following(fire_at)
        count = 1
        recent: list[float] = [fire_at]
        if nxt is not None and nxt <= wall:
            # Overdue fire times (a stall, a forward wall jump): how many, and the most
            # recent ones (as many as the misfire policy may replay).
            keep = policy.misfire.max if policy is not None and policy.misfire.mode == "all" else 1
            count, recent, nxt = state.overdue(fire_at, wall, keep)
        if nxt is None:
            # No further fire time: deliver this last tick, then retire the schedule when
            # the tick is opened (retiring it now would make that very tick stale).
            record.final = True
            record.due = math.inf
        else:
            state.move_to(nxt)
        gate = self.cron_gate
        if policy is None:
            # The later overdue fire times are coalesced into this one (its own instant:
            # the cluster claim key is the fire time the tick was armed for).
            if count > 1:
                self.outcome(record, fire_at, Outcome.COALESCED, count - 1)
            if gate is not None:
                # Cluster mode: the first overdue instant is the one claimed (DESIGN.md
                # "Cluster"): every node that did not stall claimed that same key, and a
                # later one may still be ahead on the coordinator's clock.
                self._deliver_if_claimed(gate, record, state, fire_at)
            elif not self.send(record, fire_at) and not record.send_to.alive():
                self.retire(record)  # target fully stopped: drop after this tick
                return
        else:
            if gate is not None:
                # Cluster mode: one tick per firing, claimed cluster-wide by its instant;
                # the claim's winner applies the policies as it delivers. The first
                # overdue instant is the one claimed (as above).
                self._deliver_if_claimed(gate, record, state, fire_at)
            else:
                if count == 1:
                    # Grace counts from the tick's (jittered) delivery time.
                    late = wall - fire_at - jittered
                    delivered = self.offer(record, policy, fire_at, late)
                else:
                    delivered = self.misfire(record, policy, fire_at, count, recent, wall)
                if delivered is not True and not record.send_to.alive():
                    self.retire(record)
                    return
                if record.final and delivered is None and not record.queued:
                    self.last_tick_taken(record)
            if policy.jitter is not None and not record.final:
                self._jitter_cron(record, state, policy.jitter)
        if record.final or record.dead:
            return
        record.due = now + (state.next_wall + state.offset - wall)
        self.deadlines.add(record.due, record)

    def _claimed(
        self,
        record: ScheduleRecord,
        fire_at: float,
        claim: tuple[int, Callable[[], None] | None, bool] | None = None,
    ) -> bool | None:
        """Cluster mode: this node won the claim of the tick ``fire_at``: deliver it
        (``claim``: its fence, done call and backfill flag; see :meth:`send`). Returns
        how it went (see :meth:`offer`)."""
        policy = record.policy
        delivered: bool | None
        if policy is None:
            delivered = self.send(record, fire_at, claim)
        else:
            delivered = self.offer(record, policy, fire_at, self._clock.wall() - fire_at, claim)
        if delivered is not True and not record.send_to.alive():
            self.retire(record)
        return delivered

    def _deliver_if_claimed(
        self,
        gate: CronGate,
        record: ScheduleRecord,
        state: CronState,
        fire_at: float,
        *,
        backfill: bool = False,
    ) -> None:
        """Cluster mode: deliver this tick only if this node claims it (the claim runs in
        the background; the schedule is re-armed meanwhile, as without a cluster).

        ``fire_at`` is the nominal instant (the claim key on every node). The won tick
        goes through the schedule's policies and travels as a :class:`TickItem` carrying
        the claim's fence (``ctx.tick.fence``) and, for ``at_least_once``, the call that
        marks the claim done once ``receive`` has returned (every target calls
        ``finished()`` on a tracked item: a local cell when ``receive`` returns, a remote
        target on the completion frame)."""
        nxt = state.expr.next_after(datetime.fromtimestamp(fire_at, state.tz), dst=state.dst)
        period = math.inf if nxt is None else nxt.timestamp() - fire_at

        def deliver(fence: int, finished: Callable[[], None] | None) -> bool:
            if record.dead:
                return False  # cancelled, replaced or retired while the claim ran
            delivered = self._claimed(record, fire_at, (fence, finished, backfill))
            if delivered is None and finished is not None:
                # The policies decided (excluded, missed, skipped, held): nothing is in
                # flight, so the claim is done; no other node delivers it either.
                finished()
            return delivered is not False

        def skipped(outcome: Outcome | None, detail: str | int | None) -> None:
            if outcome is not None and not record.dead:
                self.outcome(record, fire_at, outcome, detail)
            if record.final:
                self.retire(record)  # its last tick was another node's to deliver

        gate.deliver_if_won(
            record.reference,
            fire_at,
            period,
            deliver,
            skipped,
            delivery=state.delivery,
            backfill=backfill,
        )

    def _wall_jumped(self, delta: float) -> None:
        clock = self._clock
        now, wall = clock.monotonic(), clock.wall()
        for record in self._refs.values():
            state = record.cron
            if state is None or record.paused or record.dead or record.final:
                continue
            # A backward jump leaves next_wall where it was, so a tick never fires twice;
            # a forward jump makes it due now, once: later overdue ones go through the
            # misfire policy when it fires.
            record.due = now + max(0.0, state.next_wall + state.offset - wall)
            self.deadlines.add(record.due, record)

    # -- introspection -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._refs)

    def list(self) -> list[ScheduleInfo]:
        clock = self._clock
        now, wall = clock.monotonic(), clock.wall()
        here = self._runtime.address
        clustered = self.cron_gate is not None
        return [schedule_info(record, now, wall, here, clustered) for record in self._refs.values()]

    def metrics(self) -> SchedulerMetrics:
        n = min(self.fired, LATENESS_WINDOW)
        return scheduler_metrics(self, sorted(self.lateness[:n]))

    def statistics(self) -> SchedulerStatistics:
        """A frozen snapshot for operator tools (metrics, the console): ticks fired, a
        copy of the lateness ring, live schedules by kind, each one's last lateness."""
        return scheduler_statistics(self.fired, self.lateness, self._refs.values())

    # -- operating schedules (issue 23): history, outcomes ------------------------------

    def history_of(self, reference: str) -> builtins.list[TickOutcome]:
        """What became of the recent instants of ``reference``, oldest first.

        Raises:
            ScheduleNotFoundError: no live schedule holds ``reference``.
        """
        return self.history.read(self._get(reference))

    def _record_paused(self, record: ScheduleRecord) -> None:
        """On resume: every instant that came due while ``record`` was paused is
        recorded as ``paused`` (the most recent ``history`` of them: the ring keeps no
        more, and an operator asking "why didn't it run" needs the latest)."""
        clock = self._clock
        size = self.history.size
        if record.final:
            return
        state = record.cron
        if state is not None:
            # Up to now included: resume arms the first fire time after now.
            end = math.nextafter(clock.wall(), math.inf)
            instants = cron_instants(state, state.next_wall, end, keep=size)
        elif record.interval is not None:
            now = clock.monotonic()
            due, interval = record.due, record.interval
            if due > now:
                return
            count = math.floor((now - due) / interval) + 1
            offset = clock.wall() - now
            first = max(0, count - size)
            instants = [due + k * interval + offset for k in range(first, count)]
        else:
            return  # a one-shot keeps the delay it had left: it missed nothing
        for instant in instants:
            self.outcome(record, instant, _PAUSED)

    # -- operating schedules (issue 23): trigger now, backfill ---------------------------

    async def trigger(self, reference: str) -> None:
        """One tick of ``reference`` now, through its overlap policy (``manual=True``);
        its next fire time is unchanged, paused or not. Cluster mode, cron: claimed
        cluster-wide under a manual key of its own, so it is delivered once."""
        record = self._get(reference)
        clock = self._clock
        wall = clock.wall()
        gate = self.cron_gate
        if gate is not None and record.cron is not None:
            await self._claim_then(gate, f"{reference}{MANUAL_KEY}", wall, math.inf, record, wall)
            return
        at = wall if record.cron is not None else clock.monotonic()
        self._by_hand(record, at, backfill=False)

    async def backfill(
        self, reference: str, start: datetime, end: datetime, dry_run: bool
    ) -> builtins.list[datetime]:
        """The instants ``reference`` would have fired in ``[start, end)`` (not after
        now, not excluded by its calendar), delivered oldest first through its overlap
        policy at most ``misfire.rate`` per second (``backfill=True``) unless
        ``dry_run``; returns them once every one was handed over (cluster mode, cron:
        each claimed with the regular tick's key, so an instant some node delivered is
        not delivered again while its claim is kept).

        Raises:
            ScheduleNotFoundError: no schedule holds ``reference``.
            TypeError: ``start`` or ``end`` is not a datetime.
            ValueError: naive datetimes, ``start`` after ``end``, or more than
                ``MAX_BACKFILL`` instants in the range.
        """
        record = self._get(reference)
        lo, hi = _aware(start, "start"), _aware(end, "end")
        if lo > hi:
            raise ValueError(f"`start` ({start.isoformat()}) is after `end` ({end.isoformat()})")
        clock = self._clock
        wall, mono = clock.wall(), clock.monotonic()
        hi = min(hi, math.nextafter(wall, math.inf))  # the past only: now included
        state, policy = record.cron, record.policy
        if state is not None:
            instants = cron_instants(state, lo, hi, cap=MAX_BACKFILL)
            zone = state.tz
        elif record.interval is not None:
            anchor = record.due if policy is None or policy.jitter is None else policy.nominal
            anchor_wall = wall + (anchor - mono)
            # One more than allowed at most: enough to refuse a range too wide.
            instants = interval_instants(anchor_wall, record.interval, lo, hi, MAX_BACKFILL + 1)
            zone = self._zone
        else:
            instants = []  # a live one-shot's instant is still ahead of it
            zone = self._zone
        if len(instants) > MAX_BACKFILL:
            raise ValueError(
                f"backfill of {reference!r} from {start.isoformat()} to {end.isoformat()} "
                f"would deliver more than {MAX_BACKFILL:,} instants: split the range"
            )
        if policy is not None:
            instants = kept(instants, policy.exclude, zone)
        listed = [utc(t) for t in instants]
        if dry_run or not instants:
            return listed
        rate = None
        if policy is not None and policy.misfire.mode == "all":
            rate = policy.misfire.rate
        gate = self.cron_gate if state is not None else None
        step = 0.0 if rate is None else 1.0 / rate
        began = clock.monotonic()
        for k, instant in enumerate(instants):
            if record.dead:
                break  # cancelled or replaced meanwhile: the rest is not delivered
            if k and step:
                await self._runtime.sleep(max(0.0, began + k * step - clock.monotonic()))
            if gate is not None and state is not None:
                # The gate's backfill claim: the regular tick's key, no lateness check,
                # never coalesced; one call per instant, oldest first.
                self._deliver_if_claimed(gate, record, state, instant, backfill=True)
            else:
                at = instant if state is not None else instant - wall + mono
                self._by_hand(record, at, backfill=True)
        return listed

    async def _claim_then(
        self,
        gate: CronGate,
        key: str,
        fire_at: float,
        period: float,
        record: ScheduleRecord,
        at: float,
    ) -> None:
        """Claim the manual tick ``key@fire_at`` through the cluster gate and, if this
        node won, deliver it (``at`` in the record's units); return once decided."""
        decided: asyncio.Future[None] = self._runtime.loop.create_future()

        def won(fence: int, finished: Callable[[], None] | None) -> bool:
            try:
                delivered = not record.dead and self._by_hand(record, at, backfill=False)
                if finished is not None:
                    finished()  # a manual tick is not re-delivered by another node
                return delivered is True
            finally:
                if not decided.done():
                    decided.set_result(None)

        def lost(outcome: Outcome | None, detail: str | int | None) -> None:
            if outcome is not None and not record.dead:
                self.outcome(record, fire_at, outcome, "manual" if detail is None else detail)
            if not decided.done():
                decided.set_result(None)

        gate.deliver_if_won(key, fire_at, period, won, lost)
        await decided

    def _by_hand(self, record: ScheduleRecord, at: float, *, backfill: bool) -> bool | None:
        """Deliver one manual or backfilled tick of ``record`` (instant ``at`` in its
        own units) through its overlap policy, as a :class:`TickItem` carrying its flag.
        True: delivered; False: refused by the target (a dead letter, recorded by
        ``tick_rejected``); None: skipped, or held by ``BUFFER_ONE`` (then delivered as
        the schedule's waiting tick once the one in flight is done)."""
        how = "backfill" if backfill else "manual"
        wall = self.wall_of(record, at)
        policy = record.policy
        if policy is not None and policy.tracks and not policy.admit():
            if policy.buffer and policy.hold(at):
                return None
            self.outcome(record, wall, Outcome.SKIPPED_OVERLAP, how)
            return None
        record.queued += 1
        item = TickItem(record, at, manual=not backfill, backfill=backfill)
        if record.send_to.deliver(item, record.sender, None):
            record.ticks += 1
            self.ticks_delivered += 1
            self.history.outcome(record, wall, Outcome.DELIVERED, how)
            return True
        return False


#: Suffix of the claim key of a manual tick in cluster mode (``trigger_schedule``): its
#: own key space, so it never takes a regular tick's claim.
MANUAL_KEY = "#manual"


def _refusal(target: SendTarget) -> str:
    """Why a local target refused a tick, as its dead letter says: it has stopped, its
    bounded mailbox is full (it still runs), or it is suspended."""
    if not target.alive():
        return str(DeadLetterReason.STOPPED)
    running = getattr(target, "alive_running", None)
    if running is not None and running():
        return str(DeadLetterReason.OVERFLOW)
    return str(DeadLetterReason.SUSPENDED)


def _aware(value: object, name: str) -> float:
    if not isinstance(value, datetime):
        raise TypeError(f"`{name}` must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"`{name}` must be an aware datetime (give it a tzinfo, e.g. "
            f"datetime(..., tzinfo=UTC)), got naive {value.isoformat()}"
        )
    return value.timestamp()
