# SPDX-License-Identifier: Apache-2.0
"""One schedule: :class:`ScheduleRecord` (a deadline in the shared heap and, as a tick, a
runtime item in its target's mailbox), its lazily made :class:`RecordState`, and
:class:`TickItem` (a tick the record itself cannot carry).

What a *pending* schedule holds is what it needs to fire once: a system may hold a million
pending one-shots (timeouts), so everything a schedule needs only once it has fired, been
paused or been given a policy lives in one side object, :class:`RecordState`, made the
first time it is needed (``ScheduleRecord.state``). A timeout cancelled before it fires
never makes one (bench/scheduler.py ``create``: the bytes per pending ``schedule_once``).

This module owns both classes' fields: the tick path (``_ticks.py``), the registry
(``_scheduler.py``), the cluster claims (``_claims.py``) and the operating verbs
(``_operating.py``) change a record through its methods.

Prior art: Akka ``TimerSchedulerImpl`` (keyed timers; a tick of a cancelled timer is
dropped when taken), asyncio ``TimerHandle`` (slotted, lean).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Generic, Protocol, TypeVar, final, overload

from .._deadlines import Deadline
from ..actor._spi import RuntimeItem, ScheduleKind, Tick
from ..triggers import Admission, admit, settle
from ._times import utc

if TYPE_CHECKING:
    from ..actor._spi import PID, Cell, SendTarget
    from ._cron import CronState
    from ._policy import SchedulePolicy

__all__ = [
    "LATENESS_MASK",
    "LATENESS_WINDOW",
    "RecordState",
    "ScheduleRecord",
    "TickItem",
    "TickSink",
    "TrackedRecord",
]

#: Lateness samples kept for the p50/p99 metrics (a ring buffer; a power of two).
LATENESS_WINDOW: Final = 4096
LATENESS_MASK: Final = LATENESS_WINDOW - 1

_ONCE = ScheduleKind.ONCE
_INTERVAL = ScheduleKind.INTERVAL
_CRON = ScheduleKind.CRON
_SEND = Admission.SEND
_SKIP = Admission.SKIP


class TickSink(Protocol):
    """What a record and its items ask of the tick path (``_ticks.TickPath``): a protocol
    declared here, so the record's module does not import the tick path's."""

    fired: int
    ticks_delivered: int

    @property
    def lateness(self) -> list[float]: ...

    @property
    def deadlines(self) -> Any: ...

    @property
    def heap(self) -> Any: ...

    @property
    def history(self) -> Any: ...

    def fire_cron(
        self, record: ScheduleRecord, state: CronState, now: float, deadline: float
    ) -> None: ...

    def fire_with_policy(
        self, record: ScheduleRecord, policy: SchedulePolicy, now: float, deadline: float
    ) -> None: ...

    def coalesce(
        self, record: ScheduleRecord, deadline: float, interval: float, now: float
    ) -> float: ...

    def retire(self, record: ScheduleRecord) -> None: ...

    def stale(self, record: ScheduleRecord) -> Any: ...

    def last_tick_taken(self, record: ScheduleRecord) -> None: ...

    def tick_rejected(self, record: ScheduleRecord, at: float) -> Any: ...

    def wall_of(self, record: ScheduleRecord, at: float) -> float: ...

    def offer_held(self, record: ScheduleRecord, policy: SchedulePolicy, held: float) -> None: ...

    def skipped(self, record: ScheduleRecord, at: float) -> None: ...


_T = TypeVar("_T")


@final
class _SideRead(Generic[_T]):
    """A field of a record's :class:`RecordState`, read as an attribute of the record:
    the state's value once the state is made, ``default`` before (read-only)."""

    def __init__(self, default: _T, doc: str) -> None:
        self.default = default
        self.name = ""
        self.doc = doc  # what the field is (the record's docs)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, record: None, owner: type | None = None) -> _SideRead[_T]: ...

    @overload
    def __get__(self, record: ScheduleRecord, owner: type | None = None) -> _T: ...

    def __get__(self, record: ScheduleRecord | None, owner: type | None = None) -> Any:
        if record is None:
            return self
        state = record.state
        return self.default if state is None else getattr(state, self.name)


@final
class RecordState:
    """What a schedule holds once it has fired, been paused or been given a policy
    (internal; see the module docstring). Written only through :class:`ScheduleRecord`.

    Attributes:
        queued: ticks of the record in its target's mailbox (the record itself or
            :class:`TickItem`\\ s).
        tick_at: the nominal instant the record itself carries there: monotonic for once
            and interval schedules, wall (epoch seconds) for cron.
        final: its last tick is on its way: retire it when that tick is opened or
            rejected (a one-shot once fired; a cron schedule past its last fire time).
        ticks: ticks delivered.
        late: seconds its last tick fired after its deadline (the console's lateness).
        policy: the non-default options and their state (``None``: the plain path).
        history, history_at: the history ring and its write position (``_history.py``).
        paused: paused (``pause_schedule``): it does not fire until resumed.
        note, paused_at, paused_by: ``pause_schedule(note=...)``: why, when (wall
            seconds) and by which node.
    """

    # Slotted: one per schedule that has fired (or is paused, or has a policy).
    __slots__ = (
        "final",
        "history",
        "history_at",
        "late",
        "note",
        "paused",
        "paused_at",
        "paused_by",
        "policy",
        "queued",
        "tick_at",
        "ticks",
    )

    def __init__(self, policy: SchedulePolicy | None = None) -> None:
        self.queued = 0
        self.tick_at = 0.0
        self.final = False
        self.ticks = 0
        self.late: float | None = None
        self.policy = policy
        self.history: list[Any] | None = None
        self.history_at = 0
        self.paused = False
        self.note: str | None = None
        self.paused_at: float | None = None
        self.paused_by: str | None = None


class ScheduleRecord(Deadline, RuntimeItem):
    """One schedule (internal). ``due`` is its armed monotonic deadline.

    It is both a deadline in the shared heap and, as a tick, a
    :class:`~tocsin.actor._mailbox.RuntimeItem` in its target's mailbox. Its ticks are
    not ``tracked``: nothing waits for their ``receive`` to end, so the turn loop does
    not call ``finished()`` for them. A schedule whose overlap policy counts ticks in
    flight is a :class:`TrackedRecord` (the class, fixed when the record is made, says
    so: no slot, no property call per tick).
    """

    # Slotted and lean: a system may hold a million pending schedules. Fourteen slots
    # with the heap's two (bench/footprint.py `memory`, traced bytes per schedule_once);
    # everything a schedule needs only once fired, paused or given a policy is in
    # its RecordState.
    __slots__ = (
        "created_at",
        "cron",
        "dead",
        "delay",
        "interval",
        "message",
        "owner",
        "reference",
        "scheduler",
        "send_to",
        "sender",
        "state",
    )

    def __init__(
        self,
        reference: str,
        message: Any,
        send_to: SendTarget,
        sender: Any,
        interval: float | None,
        cron: CronState | None,
        owner: Cell | None,
        created_at: float,
        scheduler: TickSink,
        delay: float | None = None,
        policy: SchedulePolicy | None = None,
    ) -> None:
        self.heap_key = None  # Deadline state, set here: this runs once per schedule
        self.heap_deadline = 0.0
        self.reference = reference
        self.message = message
        # What the target PID sends to, read once at the call: every tick delivers to it
        # directly (the PID itself is `send_to.pid`, read only for ScheduleInfo).
        self.send_to = send_to
        self.sender = sender
        self.interval = interval  # repeating interval, or None (once / cron)
        self.delay = delay  # a one-shot's delay as given (for ScheduleInfo), else None
        self.cron = cron
        self.owner = owner
        self.created_at = created_at
        self.scheduler = scheduler
        self.dead = False
        self.state: RecordState | None = None if policy is None else RecordState(policy)

    # -- reads (cold paths: the tick path reads `state` itself) --------------------------

    # One slot fewer per schedule: `due` is the heap's own copy of the deadline, which
    # also keeps a paused one-shot's remaining delay while it is disarmed.
    @property
    def due(self) -> float:
        """The armed monotonic deadline (while paused: a one-shot's delay left)."""
        return self.heap_deadline

    @property
    def target(self) -> PID:
        """The PID this schedule sends to."""
        return self.send_to.pid  # type: ignore[attr-defined, no-any-return]

    # What a record keeps in its side state, read as attributes of the record: the
    # default below until the state is made (one descriptor, not a property each).
    policy: _SideRead[SchedulePolicy | None] = _SideRead(
        None, "The non-default options and their state, or ``None``."
    )
    paused: _SideRead[bool] = _SideRead(False, "Whether it is paused (no tick until resumed).")
    final: _SideRead[bool] = _SideRead(False, "Whether its last tick is on its way.")
    queued: _SideRead[int] = _SideRead(0, "Ticks of this record in its target's mailbox.")
    ticks: _SideRead[int] = _SideRead(0, "Ticks delivered.")
    late: _SideRead[float | None] = _SideRead(
        None, "Seconds its last tick fired after its deadline, ``None`` before the first."
    )
    history: _SideRead[list[Any] | None] = _SideRead(
        None, "The history ring (``_history.py`` reads it), ``None`` before its first entry."
    )
    history_at: _SideRead[int] = _SideRead(0, "The ring's next write position.")
    note: _SideRead[str | None] = _SideRead(
        None, "``pause_schedule(note=...)``'s note while paused."
    )
    paused_at: _SideRead[float | None] = _SideRead(
        None, "When it was paused (wall seconds), while paused."
    )
    paused_by: _SideRead[str | None] = _SideRead(
        None, "The node (or system) that paused it, while paused."
    )

    @property
    def kind(self) -> ScheduleKind:
        if self.cron is not None:
            return _CRON
        return _ONCE if self.interval is None else _INTERVAL

    # -- writes: every change of a record's fields is one of these ----------------------

    def made_state(self) -> RecordState:
        """The side state, made now if this is its first use."""
        state = self.state
        if state is None:
            state = self.state = RecordState()
        return state

    def kill(self) -> None:
        """Cancelled, replaced or retired: a tick still queued is dropped when taken."""
        self.dead = True

    def set_due(self, due: float) -> None:
        """Record ``due`` without arming it (a paused one-shot's delay left)."""
        self.heap_deadline = due

    def pause(self, note: str | None, at: float, by: str) -> None:
        """Paused ``at`` (wall seconds) by ``by``, with ``note``."""
        state = self.made_state()
        state.paused = True
        state.note = note
        state.paused_at = at
        state.paused_by = by

    def unpause(self) -> None:
        """Resumed: the pause and its note are gone."""
        state = self.state
        if state is not None:
            state.paused = False
            state.note = state.paused_at = state.paused_by = None

    def last_fired(self) -> None:
        """Its last tick is on its way (no instant after it): disarmed for good."""
        self.made_state().final = True
        self.heap_deadline = math.inf

    def send(
        self,
        at: float,
        now: float,
        claim: tuple[int, Callable[[], None] | None, bool] | None = None,
    ) -> bool:
        """Hand one tick of nominal instant ``at`` to the target as a :class:`TickItem`
        (``now`` in the record's units, for its history entry); ``claim`` (a cluster
        cron tick this node won: ``(fence, done, backfill)``) travels with it. The
        general path (cron, policies, claims), beside ``fire``'s plain one, which sends
        the record itself when it can. False: refused (a dead letter, recorded when the
        target rejects it)."""
        state = self.made_state()
        state.queued += 1
        if claim is None:
            item = TickItem(self, at)
        else:
            fence, done, backfill = claim
            item = TickItem(self, at, False, backfill, fence, done)
        if not self.send_to.deliver(item, self.sender, None):
            return False
        state.ticks += 1
        self.scheduler.ticks_delivered += 1
        self.remember(at, now)
        return True

    def send_by_hand(self, at: float, backfill: bool) -> bool:
        """Hand a manual or backfilled tick (instant ``at``) to the target as a
        :class:`TickItem` carrying its flag (its history entry is the caller's)."""
        state = self.made_state()
        state.queued += 1
        if not self.send_to.deliver(TickItem(self, at, not backfill, backfill), self.sender, None):
            return False
        state.ticks += 1
        return True

    # -- the mailbox item -----------------------------------------------------------------

    def open(self) -> Any:
        """This record, taken from a mailbox as a tick: the message, or ``STALE``.

        The record itself is what travels through the mailbox (no wrapper per tick): a
        cancelled or replaced schedule is ``dead``, so a tick still queued is dropped here;
        a schedule's last tick retires it (Akka ``TimerSchedulerImpl.interceptTimerMsg``).
        """
        state = self.state
        assert state is not None  # queued: made by `fire`, `send` or `send_by_hand`
        queued = state.queued = state.queued - 1
        if self.dead:
            return self.scheduler.stale(self)
        if state.final and not queued:
            self.scheduler.last_tick_taken(self)
        return self.message

    def rejected(self) -> Any:
        """A tick its target refused (stopped, suspended): the message for the dead
        letter, or ``STALE`` if the schedule was cancelled meanwhile (not lost)."""
        return self.refused(self.made_state().tick_at)

    def refused(self, at: float) -> Any:
        """:meth:`rejected` for the tick of instant ``at`` (the record's own or a
        :class:`TickItem`'s)."""
        state = self.made_state()
        state.queued -= 1
        return self.scheduler.tick_rejected(self, at)

    def tick(self) -> Tick:
        """``ctx.tick`` for the tick this record carries: its reference and nominal instant."""
        state = self.made_state()
        return Tick(self.reference, utc(self.scheduler.wall_of(self, state.tick_at)))

    # -- the hot path ---------------------------------------------------------------------

    def fire(self, now: float, deadline: float) -> None:
        # The hot path of every tick: attributes are read once, the lateness sample goes
        # straight into the tick path's ring buffer, and the re-arm's push records the
        # new `due` itself.
        scheduler = self.scheduler
        fired = scheduler.fired
        late = scheduler.lateness[fired & LATENESS_MASK] = now - deadline
        scheduler.fired = fired + 1
        state = self.state
        if state is None:
            state = self.state = RecordState()
        state.late = late
        cron = self.cron
        if cron is not None:
            scheduler.fire_cron(self, cron, now, deadline)
            return
        policy = state.policy
        if policy is not None and not policy.overlap_only:
            scheduler.fire_with_policy(self, policy, now, deadline)
            return
        interval = self.interval
        at = deadline  # the instant this tick stands for (monotonic)
        if interval is None:
            # Retired when its tick is opened (or, if rejected, by `rejected`).
            state.final = True
            self.heap_deadline = math.inf
            due = math.inf
        else:
            # Fixed rate without drift: the next grid point strictly after now.
            due = deadline + interval
            if due <= now:
                # A stall: the later overdue ticks are coalesced into this one, which
                # keeps its own (first overdue) instant, as before policies existed.
                due = scheduler.coalesce(self, deadline, interval, now)
        if policy is not None:
            # Only an overlap policy (the rest default): the engine admits the tick here,
            # on the plain path, instead of the tick path's general one (fewer calls per
            # tick; bench/footprint.py `skip`).
            admission = admit(policy.overlap, policy, at)
            if admission is not _SEND:
                if admission is _SKIP:
                    scheduler.skipped(self, at)
                if interval is None:
                    if not state.queued:
                        scheduler.last_tick_taken(self)  # it is over
                elif not self.send_to.alive():
                    scheduler.retire(self)  # target fully stopped: drop after this tick
                else:
                    scheduler.heap.push(due, self)  # inside the batch, as below
                return
        # The record itself is the mailbox item; only a tick sent while an earlier one
        # of this record still waits in a mailbox needs an item of its own (its instant).
        queued = state.queued
        state.queued = queued + 1
        if queued:
            item: RuntimeItem = TickItem(self, at)
        else:
            state.tick_at = at
            item = self
        # A rejected tick is dead-lettered and counted by `rejected`.
        if self.send_to.deliver(item, self.sender, None):
            state.ticks += 1
            scheduler.ticks_delivered += 1
            # History: two floats that exist already, written into the ring; no object
            # per tick (see _history.py). No length check either: the rare ends (no ring
            # yet, the ring's end) raise, and a try costs nothing in 3.11.
            pos = state.history_at
            try:
                ring = state.history
                ring[pos] = at  # type: ignore[index]
                ring[pos + 1] = now  # type: ignore[index]
            except (TypeError, IndexError):
                ring, pos = self.grow_history(state)
                ring[pos] = at
                ring[pos + 1] = now
            state.history_at = pos + 2
        elif interval is not None and not self.send_to.alive():
            scheduler.retire(self)  # target fully stopped: drop after this tick
            return
        if interval is not None:
            # Re-armed from inside the deadline service's batch, which arms its timer once
            # the batch is over (DeadlineService._on_timer): a push is all `add` would do.
            scheduler.heap.push(due, self)

    # -- history (scheduling/_history.py reads the ring) ----------------------------------

    def grow_history(self, state: RecordState) -> tuple[list[Any], int]:
        """The ring and the write position for the next entry, when the ring is missing
        or the position is at its end: made with one entry (all a one-shot ever writes),
        grown to the system's ``history`` size at the second entry (a repeating schedule
        fills it anyway), or wrapped to the start once full. Runs twice per repeating
        schedule plus once per wrap."""
        ring = state.history
        if ring is None:
            ring = state.history = [None, None]
            state.history_at = 0
            return ring, 0
        limit = self.scheduler.history.slots
        size = len(ring)
        if size < limit:
            # Straight to full size, not by doubling: each growth is a caught IndexError
            # and a copy on the fire path, and doubling made six of them in a repeating
            # schedule's first 64 ticks (two inside bench/footprint.py's `tick` window).
            ring.extend([None] * (limit - size))
            return ring, state.history_at
        state.history_at = 0
        return ring, 0

    def remember(self, first: Any, second: Any) -> None:
        """Write one entry (two slots) into the ring (as ``fire`` does inline)."""
        state = self.made_state()
        ring = state.history
        at = state.history_at
        if ring is None or at == len(ring):
            ring, at = self.grow_history(state)
        ring[at] = first
        ring[at + 1] = second
        state.history_at = at + 2


@final
class TrackedRecord(ScheduleRecord):
    """A schedule whose overlap policy counts its ticks in flight (``Overlap.SKIP``,
    ``BUFFER_ONE``, ``limit(n)``; internal): the turn loop, or a remote target's
    completion frame, tells it when the ``receive`` for each tick is over. Made with
    its policy (``Scheduler._register``); a record's policy never changes."""

    __slots__ = ()

    tracked = True

    def finished(self) -> None:
        """The target's ``receive`` for this tick is over: one tick fewer in flight."""
        # Made with its state and policy (no None checks: this runs once per tick).
        policy: SchedulePolicy = self.state.policy  # type: ignore[union-attr, assignment]
        held = settle(policy.overlap, policy)
        if held is not None:  # BUFFER_ONE's waiting tick goes now
            self.scheduler.offer_held(self, policy, held)


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
        self.at = at  # the nominal instant, in the record's units (see TickSink.wall_of)
        self.manual = manual
        self.backfill = backfill
        # Cluster cron: the claim's fence (ctx.tick.fence), and for at_least_once what
        # marks the claim done once receive has returned.
        self.fence = fence
        self.done = done

    def open(self) -> Any:
        return self.record.open()  # the same taking as the record's own tick

    def rejected(self) -> Any:
        return self.record.refused(self.at)

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
