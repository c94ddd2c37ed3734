# SPDX-License-Identifier: Apache-2.0
"""The tick path: what happens when a schedule's deadline fires, and what its ticks call
back when they are taken, refused or finished (internal).

:class:`TickPath` owns the per-system tick counters (ticks fired and the lateness ring,
delivered, dead-lettered, discarded, not delivered by outcome), the history log, and the
arming of cron and jittered schedules. The plain tick (no policy) runs in
``ScheduleRecord.fire`` itself; a tick with policies asks the policy engine
(:mod:`tocsin.triggers`: :func:`~tocsin.triggers.admit`, :func:`~tocsin.triggers.settle`,
:func:`~tocsin.triggers.plan_misfire`, :func:`~tocsin.triggers.past_grace`) and applies
its decision here: nothing in this module decides a policy.

Nothing here reads the clock on the message path: a clock read happens when the shared
timer fires, and on the rare paths (a stall, a policy's grace).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, final

from .._deadlines import Deadline
from ..actor._spi import STALE, DeadLetterReason, Outcome
from ..clock import WALL_TOLERANCE
from ..triggers import (
    Admission,
    admit,
    calendar_excludes,
    jitter_delay,
    leave,
    past_grace,
    plan_misfire,
    release,
)
from ._history import History
from ._record import LATENESS_WINDOW

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..actor._spi import Runtime, SendTarget
    from ._cron import CronState
    from ._policy import SchedulePolicy
    from ._record import ScheduleRecord

__all__ = ["Claim", "ClaimPath", "Replay", "TickPath"]

#: A cluster cron tick this node won: ``(fence, done, backfill)`` (see ``_claims.py``).
Claim = tuple[int, Callable[[], None] | None, bool]


class ClaimPath(Protocol):
    """Cluster mode: what the tick path asks of the cluster claims (``_claims.py``)."""

    @property
    def clustered(self) -> bool:
        """Whether cron ticks are claimed cluster-wide (a gate is set)."""
        ...

    def lead(self, state: CronState) -> float:
        """Seconds before the delivery time of ``state``'s next tick to claim it."""
        ...

    def deliver_if_claimed(
        self,
        record: ScheduleRecord,
        state: CronState,
        fire_at: float,
        *,
        backfill: bool = False,
        at: float | None = None,
    ) -> None:
        """Deliver the tick ``fire_at`` only if this node claims it (at ``at``)."""
        ...


@final
class Replay(Deadline):
    """``Misfire.all(rate=...)``: the overdue instants still to replay, one every
    ``1/rate`` seconds on the shared heap, oldest first (internal)."""

    __slots__ = ("instants", "path", "record", "start", "step", "taken")

    def __init__(
        self, path: TickPath, record: ScheduleRecord, keep: int, rate: float, start: float
    ) -> None:
        super().__init__()
        self.path = path
        self.record = record
        # Bounded: a later stall adds its instants and the oldest fall out, so the
        # replay is always of the most recent `max` overdue instants.
        self.instants: deque[float] = deque(maxlen=keep)
        self.step = 1.0 / rate
        self.start = start
        self.taken = 0

    def first(self, instants: Iterable[float]) -> float:
        """Take ``instants`` and return the first, to deliver now; arms the next."""
        self.instants.extend(instants)
        at = self.instants.popleft()
        if self.instants:
            self.taken = 1
            self.path.deadlines.add(self.start + self.step, self)
        return at

    def fire(self, now: float, deadline: float) -> None:
        record = self.record
        path = self.path
        instants = self.instants
        if record.dead or record.paused or not instants:
            path.replay_over(record, self)
            return
        path.replay_one(record, instants.popleft())
        if not instants:
            path.replay_over(record, self)
            return
        # k / rate from the start, not a running sum: no drift, and never more than
        # `rate` in any second (the k-th is at exactly start + k/rate).
        self.taken += 1
        path.deadlines.add(self.start + self.taken * self.step, self)


@final
class TickPath:
    """Fires schedules and hears back from their ticks (internal; see the module).

    Args:
        runtime: the system's shared services (clock, deadlines, events, name).
        history: the system's history log (``ActorSystem(history=N)``).
        retire: forgets a schedule for good (the registry's, ``Scheduler.retire``).
    """

    def __init__(
        self, runtime: Runtime, history: History, retire: Callable[[ScheduleRecord], None]
    ) -> None:
        self._clock = runtime.clock
        self.deadlines = runtime.deadlines
        #: The deadline heap itself: ``ScheduleRecord.fire`` re-arms with a push, since
        #: it runs inside the service's batch (which arms the timer once it is over).
        self.heap = runtime.deadlines.heap
        self.retire = retire
        #: Ticks fired so far, and the ring of their lateness (seconds after the deadline;
        #: tick ``i`` at ``lateness[i % LATENESS_WINDOW]``): written by
        #: ``ScheduleRecord.fire`` on every tick, read through ``Scheduler.statistics``.
        self.lateness = [0.0] * LATENESS_WINDOW
        self.fired = 0
        self.ticks_delivered = 0
        self.ticks_dead_lettered = 0
        self.ticks_discarded = 0
        #: What became of each schedule's instants: rings, events, counts.
        self.history = history
        #: Instants not delivered, by outcome (:meth:`outcome`).
        self.not_delivered: dict[Outcome, int] = {}
        self.claims: ClaimPath | None = None

    def attach_claims(self, claims: ClaimPath) -> None:
        """The cluster claims this path hands cron ticks to in cluster mode."""
        self.claims = claims

    def lead(self, state: CronState) -> float:
        """Seconds before its delivery time a cron tick's timer fires: in cluster mode
        the claim is asked that much ahead (``Cluster(claim_ahead=...)``) and the won
        tick delivered at its time; else 0."""
        claims = self.claims
        if claims is None or not claims.clustered:
            return 0.0
        return claims.lead(state)

    def cron_deadline(self, state: CronState, now: float, wall: float) -> float:
        """The monotonic time ``state``'s next tick fires (``now``, ``wall``: one reading
        of the clock): its delivery time, less the lead its claim is asked with (never
        more than the time left); the delivery time is kept in ``state.deliver_at``
        when it is ahead of that (``None`` if not)."""
        left = state.next_wall + state.offset - wall
        lead = min(self.lead(state), left) if left > 0.0 else 0.0
        due = now + left
        state.set_deliver_at(due if lead > 0.0 else None)
        return due - lead

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

    # -- what the record and its items call ---------------------------------------------

    def wall_of(self, record: ScheduleRecord, at: float) -> float:
        """A tick's nominal instant ``at`` as epoch seconds: a cron tick's is a wall time
        already; a once or interval tick's is the monotonic deadline it stood for, read
        as wall time through the clock's current offset (read only when asked)."""
        if record.cron is not None:
            return at
        clock = self._clock
        return clock.wall() + (at - clock.monotonic())

    def native_now(self, record: ScheduleRecord) -> float:
        """Now, in the units of the record's instants (wall for cron, else monotonic)."""
        clock = self._clock
        return clock.wall() if record.cron is not None else clock.monotonic()

    def stale(self, record: ScheduleRecord) -> Any:
        """A tick of a cancelled, replaced or retired schedule, taken from a mailbox."""
        self.ticks_discarded += 1
        policy = record.policy
        if policy is not None and policy.tracked:
            leave(policy)
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
        if policy is not None and policy.tracked:
            leave(policy)  # a held tick keeps waiting for the next finish
        reason = _refusal(record.send_to)
        self.outcome(record, self.wall_of(record, at), Outcome.DEAD_LETTER, reason)
        if record.final and not record.queued:
            self.last_tick_taken(record)
        return record.message

    def send(self, record: ScheduleRecord, at: float, claim: Claim | None = None) -> bool:
        """Hand one tick (nominal instant ``at``) to the record's target
        (``ScheduleRecord.send``; ``claim``: a cluster cron tick this node won)."""
        clock = self._clock
        now = clock.wall() if record.cron is not None else clock.monotonic()
        return record.send(at, now, claim)

    def send_by_hand(self, record: ScheduleRecord, at: float, wall: float, backfill: bool) -> bool:
        """Hand a manual or backfilled tick (instant ``at``, ``wall`` as epoch seconds) to
        the record's target as a ``TickItem`` carrying its flag; its history entry says
        how it came. False: refused (a dead letter, recorded by ``tick_rejected``)."""
        if not record.send_by_hand(at, backfill):
            return False
        self.ticks_delivered += 1
        how = "backfill" if backfill else "manual"
        self.history.outcome(record, wall, Outcome.DELIVERED, how)
        return True

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

    # -- ticks with policies: the engine decides, this applies ----------------------------

    def offer(
        self,
        record: ScheduleRecord,
        policy: SchedulePolicy,
        at: float,
        late: float,
        claim: Claim | None = None,
        how: str | None = None,
    ) -> bool | None:
        """One tick through the schedule's policies: excluded by its calendar, missed
        past its grace (``late``: seconds after its instant), held or skipped by its
        overlap policy, or sent (``claim``: see :meth:`send`; a tick held by
        ``BUFFER_ONE`` goes later without it). True: delivered; False: refused; None: not
        sent."""
        exclude = policy.exclude
        if exclude is not None and calendar_excludes(
            exclude, self.wall_of(record, at), policy.zone
        ):
            self.outcome(record, self.wall_of(record, at), Outcome.EXCLUDED)
            return None
        misfire = policy.misfire
        if past_grace(misfire, late):
            self.outcome(record, self.wall_of(record, at), Outcome.MISSED)
            return None
        admission = admit(policy.overlap, policy, at)
        if admission is Admission.HOLD:
            return None  # delivered when the tick in flight finishes
        if admission is Admission.SKIP:
            self.outcome(record, self.wall_of(record, at), Outcome.SKIPPED_OVERLAP, how)
            return None
        return self.send(record, at, claim)

    def offer_held(self, record: ScheduleRecord, policy: SchedulePolicy, held: float) -> None:
        """A tick of a ``BUFFER_ONE`` schedule finished and released the tick it held
        (instant ``held``): offer it now."""
        if record.dead or record.paused:
            return
        late = self.native_now(record) - held
        delivered = self.offer(record, policy, held, late)
        if delivered is not True and not record.send_to.alive():
            self.retire(record)
        elif delivered is None and record.final and not record.queued:
            self.retire(record)  # the held one was its last, and it did not go

    def skipped(self, record: ScheduleRecord, at: float) -> None:
        """The overlap policy skipped the tick of instant ``at`` (the plain path's)."""
        self.outcome(record, self.wall_of(record, at), Outcome.SKIPPED_OVERLAP)

    def drop_waiting(
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
        held = release(policy)
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
        the misfire policy's plan. Returns how the last tick sent went (see :meth:`offer`)."""
        plan = plan_misfire(policy.misfire, first, count, recent)
        first_wall = self.wall_of(record, first)
        if plan.coalesced:
            self.outcome(record, first_wall, Outcome.COALESCED, plan.coalesced)
        if plan.missed:
            self.outcome(record, first_wall, Outcome.MISSED, plan.missed)
        if plan.judged_by is not None:
            # One tick stands for all of them: its grace is judged by the most recent.
            return self.offer(record, policy, plan.deliver[0], now - plan.judged_by)
        if not plan.deliver:
            return None
        rate = plan.rate
        if rate is None:
            delivered: bool | None = None
            for at in plan.deliver:
                delivered = self.offer(record, policy, at, now - at)
            return delivered
        replay = policy.replay
        if replay is not None:
            # A replay is under way: it takes these too (its oldest fall out past `max`).
            replay.instants.extend(plan.deliver)
            return None
        replay = Replay(self, record, policy.misfire.max, rate, self._clock.monotonic())
        policy.set_replay(replay)
        at = replay.first(plan.deliver)
        delivered = self.offer(record, policy, at, now - at)
        if not replay.instants:
            policy.set_replay(None)
        return delivered

    def replay_one(self, record: ScheduleRecord, at: float) -> None:
        """A replay's next overdue instant is due (a :class:`Replay` calls it)."""
        policy = record.policy
        assert policy is not None
        delivered = self.offer(record, policy, at, self.native_now(record) - at)
        if delivered is False and not record.send_to.alive():
            self.retire(record)

    def replay_over(self, record: ScheduleRecord, replay: Replay) -> None:
        """A replay has nothing left (or its schedule is paused or gone)."""
        policy = record.policy
        if policy is not None and policy.replay is replay:
            policy.set_replay(None)

    # -- interval and once schedules with a policy --------------------------------------

    def arm_interval(self, record: ScheduleRecord, policy: SchedulePolicy, nominal: float) -> None:
        """Arm an interval schedule's tick due at ``nominal``, plus its jitter."""
        jitter = policy.jitter
        if jitter is None:
            self.deadlines.add(nominal, record)
            return
        policy.set_nominal(nominal)
        wall = self.wall_of(record, nominal)
        following = None if record.interval is None else wall + record.interval
        self.deadlines.add(
            nominal + jitter_delay(record.reference, wall, jitter, following), record
        )

    def fire_with_policy(
        self, record: ScheduleRecord, policy: SchedulePolicy, now: float, deadline: float
    ) -> None:
        """A once or interval tick of a schedule with a policy (see :meth:`offer`,
        :meth:`misfire`)."""
        interval = record.interval
        nominal = policy.nominal if policy.jitter is not None else deadline
        if interval is None:
            record.last_fired()
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
            keep = policy.misfire.keep()
            recent = [nominal + i * interval for i in range(max(0, later + 1 - keep), later + 1)]
            delivered = self.misfire(record, policy, nominal, later + 1, recent, now)
            due = nominal + (later + 1) * interval
        if due <= now:
            due = math.nextafter(now, math.inf)  # float absorption, as in `coalesce`
        if delivered is not True and not record.send_to.alive():
            self.retire(record)  # target fully stopped: drop after this tick
            return
        if not record.dead:
            self.arm_interval(record, policy, due)

    # -- cron --------------------------------------------------------------------------

    def arm_cron(
        self, record: ScheduleRecord, state: CronState, after: float | None = None
    ) -> None:
        """Arm ``record``'s next cron tick (``after``: first move past that wall time;
        a schedule with no fire time left is retired)."""
        clock = self._clock
        wall = clock.wall()
        if after is not None and not state.advance(after):
            self.retire(record)
            return
        policy = record.policy
        if policy is not None and policy.jitter is not None:
            self.jitter_cron(record, state, policy.jitter)
        now = clock.monotonic()
        due = max(now, self.cron_deadline(state, now, wall))
        if record.paused:
            record.set_due(due)
        else:
            self.deadlines.add(due, record)

    def jitter_cron(self, record: ScheduleRecord, state: CronState, jitter: float) -> None:
        """Set the offset of the cron tick due next: a hash of (reference, instant),
        capped at the gap to the instant after it."""
        following = state.following(state.next_wall)
        state.set_offset(jitter_delay(record.reference, state.next_wall, jitter, following))

    def fire_cron(
        self, record: ScheduleRecord, state: CronState, now: float, deadline: float
    ) -> None:
        """A cron schedule's deadline fired: deliver (or claim, or decide by its
        policies) the tick of its next fire time, and arm the one after.

        ``now`` is when the timer's batch began: the next tick is armed from a monotonic
        reading taken with the wall one, so a record fired late in a long batch is not
        armed early by the batch's length (it would fire before its wall instant and be
        re-armed once more: two timer visits per tick). ``deadline``: the monotonic time
        it was armed for; in cluster mode it may be before the tick's delivery time
        (``state.deliver_at``), and a claim asked ahead is delivered then if won."""
        clock = self._clock
        now = clock.monotonic()
        wall = clock.wall()
        at = state.deliver_at  # the delivery time, if this tick was armed ahead of it
        lead = 0.0 if at is None else at - deadline
        if wall + WALL_TOLERANCE < state.next_wall + state.offset - lead:
            # Wall time went back since this was armed: not due yet in wall terms.
            self.deadlines.add(self.cron_deadline(state, now, wall), record)
            return
        fire_at = state.next_wall  # the instant this tick stands for (the cluster claim key)
        jittered = state.offset  # this tick's jitter (the next one's is computed below)
        previous = state.last_wall
        if previous is not None and state.dst_watch:
            # What a DST change kept from firing since the last fire time (history):
            # two offset reads unless a change lies between them.
            for at, dropped in state.dropped(previous, fire_at):
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
            keep = policy.misfire.keep() if policy is not None else 1
            count, recent, nxt = state.overdue(fire_at, wall, keep)
        if nxt is None:
            # No further fire time: deliver this last tick, then retire the schedule when
            # the tick is opened (retiring it now would make that very tick stale).
            record.last_fired()
        else:
            state.move_to(nxt)
        claims = self.claims
        clustered = claims is not None and claims.clustered
        if policy is None:
            # The later overdue fire times are coalesced into this one (its own instant:
            # the cluster claim key is the fire time the tick was armed for).
            if count > 1:
                self.outcome(record, fire_at, Outcome.COALESCED, count - 1)
            if clustered:
                # Cluster mode: the first overdue instant is the one claimed (DESIGN.md
                # "Cluster"): every node that did not stall claimed that same key, and a
                # later one may still be ahead on the coordinator's clock.
                claims.deliver_if_claimed(  # type: ignore[union-attr]
                    record, state, fire_at, at=at
                )
            elif not self.send(record, fire_at) and not record.send_to.alive():
                self.retire(record)  # target fully stopped: drop after this tick
                return
        else:
            if clustered:
                # Cluster mode: one tick per firing, claimed cluster-wide by its instant;
                # the claim's winner applies the policies as it delivers. The first
                # overdue instant is the one claimed (as above); a claim asked ahead
                # (`lead`) is delivered at the tick's jittered time.
                claims.deliver_if_claimed(  # type: ignore[union-attr]
                    record, state, fire_at, at=at
                )
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
                self.jitter_cron(record, state, policy.jitter)
        if record.final or record.dead:
            return
        self.deadlines.add(self.cron_deadline(state, now, wall), record)

    def wall_jumped(self, records: Iterable[ScheduleRecord]) -> None:
        """Wall time jumped: re-arm every live cron schedule on its next fire time (in
        cluster mode, brought back first to the earliest instant after the new wall time
        that this node has not fired: :meth:`CronState.rewind`)."""
        clock = self._clock
        now, wall = clock.monotonic(), clock.wall()
        claims = self.claims
        clustered = claims is not None and claims.clustered
        for record in records:
            state = record.cron
            if state is None or record.paused or record.dead or record.final:
                continue
            # Alone, a backward jump leaves next_wall where it was, so a tick never fires
            # twice; a forward jump makes it due now, once: later overdue ones go through the
            # misfire policy when it fires.
            # Cluster mode: a backward jump is most often the cluster correcting a
            # forward step of this node's clock (the offset is measured again at once).
            # The instants that step skipped are the coordinator's future, which this
            # node would otherwise claim none of for the step's length; the claim keeps
            # each single cluster-wide, and ``rewind`` never reaches back to an instant
            # this node has fired.
            if clustered and state.rewind(wall):
                policy = record.policy
                if policy is not None and policy.jitter is not None:
                    self.jitter_cron(record, state, policy.jitter)
                else:
                    state.set_offset(0.0)
            self.deadlines.add(max(now, self.cron_deadline(state, now, wall)), record)


def _refusal(target: SendTarget) -> str:
    """Why a local target refused a tick, as its dead letter says: it has stopped, its
    bounded mailbox is full (it still runs), or it is suspended."""
    if not target.alive():
        return str(DeadLetterReason.STOPPED)
    running = getattr(target, "alive_running", None)
    if running is not None and running():
        return str(DeadLetterReason.OVERFLOW)
    return str(DeadLetterReason.SUSPENDED)


def aware(value: object, name: str) -> float:
    """``value`` as epoch seconds if it is an aware datetime, else a typed error naming
    ``name``."""
    if not isinstance(value, datetime):
        raise TypeError(f"`{name}` must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"`{name}` must be an aware datetime (give it a tzinfo, e.g. "
            f"datetime(..., tzinfo=UTC)), got naive {value.isoformat()}"
        )
    return value.timestamp()
