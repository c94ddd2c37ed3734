# SPDX-License-Identifier: Apache-2.0
"""The scheduling service: one-shot, fixed-rate and cron schedules on the shared heap.

Prior art: GoAkt ``actor/scheduler.go`` (the API, references, pause/resume), Akka's
``TimerScheduler`` (keyed timers, stale ticks discarded), the asyncio/trio deadline heaps.

:class:`Scheduler` is the registry: it owns the schedules by reference and the calls that
make, pause, resume, cancel and list them. The rest is split by the state it writes:

* ``_record.py``: one schedule (:class:`~._record.ScheduleRecord`, its side state, the
  plain tick's fast path ``ScheduleRecord.fire``);
* ``_ticks.py``: the tick path (:class:`~._ticks.TickPath`: counters, lateness ring,
  history, ticks with policies, cron arming);
* ``_claims.py``: the cluster claims (:class:`~._claims.Claims`: the coordinator gate);
* ``_operating.py``: trigger, backfill, history (:class:`~._operating.Operating`).

The policies are decided by :mod:`tocsin.triggers`. Every schedule is a record armed in
the system's :class:`~tocsin._deadlines.DeadlineService`. Nothing here reads the clock on
the message path: a clock read happens when a schedule is made, paused, resumed, and when
the shared timer fires.
"""

from __future__ import annotations

import builtins
import itertools
from datetime import datetime
from typing import TYPE_CHECKING, Any, final

from .._deadlines import to_seconds
from ..actor._spi import (
    Misfire,
    NoSender,
    Outcome,
    Overlap,
    ScheduleInfo,
    SchedulerMetrics,
    TickOutcome,
)
from ..cron._spi import zone
from ..errors import (
    DeadActorError,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    ScheduleReferenceRequiredError,
)
from ..triggers import CronTrigger, IntervalTrigger, check_horizon, check_note, needs_policy
from ._claims import MANUAL_KEY, Claims, CronGate
from ._cron import CronState
from ._history import DEFAULT_HISTORY, History
from ._introspect import (
    SchedulerStatistics,
    schedule_info,
    scheduler_metrics,
    scheduler_statistics,
)
from ._operating import Operating
from ._policy import SchedulePolicy, check_dst, check_exclude, check_jitter, make_policy
from ._record import LATENESS_WINDOW, ScheduleRecord, TickItem, TrackedRecord
from ._ticks import TickPath

if TYPE_CHECKING:
    from ..actor._spi import PID, Cell, Runtime
    from ..cron import Calendar, DSTPolicy

__all__ = [
    "LATENESS_WINDOW",
    "MANUAL_KEY",
    "CronGate",
    "ScheduleRecord",
    "Scheduler",
    "TickItem",
]


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
        self._path = TickPath(
            runtime, History(history, runtime.name, runtime.clock, runtime.events), self.retire
        )
        self._claims = Claims(self._path, runtime.loop)
        self._path.attach_claims(self._claims)
        self._operating = Operating(runtime, self._path, self._claims, self._get, self._zone)
        self._unsubscribe_wall = runtime.clock.on_wall_jump(self._wall_jumped)
        self._unlisten = runtime.add_stop_listener(self.owner_stopped)

    # -- the parts, for the layers that read them ---------------------------------------

    @property
    def tick_path(self) -> TickPath:
        """The tick path (its ``outcome`` is the one not-delivered hook)."""
        return self._path

    @property
    def history(self) -> History:
        """What became of each schedule's instants (rings, events, counts)."""
        return self._path.history

    @property
    def cron_gate(self) -> CronGate | None:
        """Cluster mode: the coordinator's cron claims (``None`` outside a cluster)."""
        return self._claims.gate

    @cron_gate.setter
    def cron_gate(self, gate: CronGate | None) -> None:
        self._claims.set_gate(gate)

    @property
    def not_delivered(self) -> dict[Outcome, int]:
        """Instants not delivered, by outcome."""
        return self._path.not_delivered

    def outcome(
        self,
        record: ScheduleRecord,
        instant_wall: float,
        outcome: Outcome,
        detail: int | str | None = None,
    ) -> None:
        """An instant of ``record`` was not delivered (see ``TickPath.outcome``)."""
        self._path.outcome(record, instant_wall, outcome, detail)

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
            target = pid._target  # noqa: SLF001 (target_of inlined: ~50 ns of a ~3 µs create)
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
        # Tracked or not is the record's class (the turn loop reads a class attribute).
        kind = TrackedRecord if policy is not None and policy.tracked else ScheduleRecord
        record = kind(
            reference,
            message,
            target,
            sender,
            interval,
            cron,
            owner,
            self._clock.wall(),
            self._path,
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
        if needs_policy(overlap, misfire) or jitter is not None or exclude is not None:
            policy = make_policy(
                overlap,
                misfire,
                check_jitter(jitter, seconds),
                check_exclude(exclude),
                None,
                self._zone,
            )
            if policy is not None and policy.exclude is not None:
                # A calendar that leaves no instant in ten years: an error here, not a
                # schedule that silently never fires.
                wall = self._clock.wall()
                grid = IntervalTrigger(
                    seconds, wall + seconds, exclude=policy.exclude, zone=self._zone
                )
                check_horizon(grid, wall, f"schedule {reference!r}")
        record = self._register(
            message, pid, reference, sender, replace, owner, seconds, None, None, policy
        )
        if policy is not None:
            self._path.arm_interval(record, policy, self._clock.monotonic() + seconds)
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
        if needs_policy(overlap, misfire):
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
        if self._claims.clustered and (reference is None or reference == ""):
            raise ScheduleReferenceRequiredError(
                "schedule_cron in cluster mode needs an explicit `reference` (got "
                f"{reference!r}): ticks are claimed cluster-wide by reference, and a "
                "generated one differs on every node, so each node would deliver. Pass "
                "the same reference=... on every node, e.g. reference='nightly-report'"
            )
        policy = None
        if (
            needs_policy(overlap, misfire)
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
            if checked_exclude is not None:
                fires = CronTrigger(state.expr, state.tz, dst=checked_dst, exclude=checked_exclude)
                check_horizon(fires, clock.wall(), f"cron schedule {reference!r}")
        else:
            state = CronState.create(expression, zone_name, clock.wall(), delivery=delivery)
        record = self._register(
            message, pid, reference, sender, replace, owner, None, state, None, policy
        )
        self._path.arm_cron(record, state)
        return record.reference

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
        # ScheduleRecord.kill inlined (one slot store): cancel is the hot path of
        # timeout-style use (bench/footprint.py `cancel`, ~50 ns of a ~1 µs cancel).
        record.dead = True
        self._heap.cancel(record)
        owner = record.owner
        # Cell.disown inlined (the set is the cell's; discarding from it is its documented
        # use): cancel is the hot path of timeout-style use, and the call cost showed.
        if owner is not None and owner.owned is not None:
            owner.owned.discard(record)

    def pause(self, reference: str, note: str | None = None) -> None:
        record = self._get(reference)
        note = check_note(note)
        if record.paused:
            return
        record.pause(note, self._clock.wall(), self._runtime.name)
        if self.deadlines.remove(record) and record.interval is None and record.cron is None:
            record.set_due(max(0.0, record.due - self._clock.monotonic()))  # delay left
        if record.policy is not None:
            self._path.drop_waiting(record, record.policy, Outcome.PAUSED)

    def resume(self, reference: str) -> None:
        record = self._get(reference)
        if not record.paused:
            return
        self._operating.record_paused(record)
        record.unpause()
        clock = self._clock
        if record.final:
            return  # paused after its last fire: that tick is already on its way
        if record.cron is not None:
            self._path.arm_cron(record, record.cron, after=clock.wall())
            return
        # Not a misfire: the schedule goes on from now.
        if record.interval is not None:
            due = clock.monotonic() + record.interval
        else:
            due = clock.monotonic() + record.due  # the delay it had left
        if record.policy is not None and record.interval is not None:
            self._path.arm_interval(record, record.policy, due)
            return
        self.deadlines.add(due, record)

    def retire(self, record: ScheduleRecord) -> None:
        """Forget a schedule for good; its queued ticks become stale."""
        if record.dead:
            return
        record.kill()
        self.deadlines.remove(record)
        if record.policy is not None:
            self._path.drop_waiting(record, record.policy, None)
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

    def _wall_jumped(self, delta: float) -> None:
        self._path.wall_jumped(self._refs.values())

    # -- introspection -----------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._refs)

    def list(self) -> builtins.list[ScheduleInfo]:
        clock = self._clock
        now, wall = clock.monotonic(), clock.wall()
        here = self._runtime.address
        claims = self._claims
        clustered = claims.clustered
        return [
            schedule_info(
                record,
                now,
                wall,
                here,
                clustered,
                claims.pause_note(record.reference) if clustered and record.cron else None,
            )
            for record in self._refs.values()
        ]

    def metrics(self) -> SchedulerMetrics:
        path = self._path
        n = min(path.fired, LATENESS_WINDOW)
        return scheduler_metrics(path, len(self._refs), sorted(path.lateness[:n]))

    def statistics(self) -> SchedulerStatistics:
        """A frozen snapshot for operator tools (metrics, the console): ticks fired, a
        copy of the lateness ring, live schedules by kind, each one's last lateness."""
        path = self._path
        return scheduler_statistics(path.fired, path.lateness, self._refs.values())

    # -- operating schedules: history, trigger now, backfill ------------------------------

    def history_of(self, reference: str) -> builtins.list[TickOutcome]:
        """What became of the recent instants of ``reference``, oldest first.

        Raises:
            ScheduleNotFoundError: no live schedule holds ``reference``.
        """
        return self._operating.history_of(reference)

    async def trigger(self, reference: str) -> None:
        """One tick of ``reference`` now, through its overlap policy (``manual=True``);
        its next fire time is unchanged, paused or not (``Operating.trigger``)."""
        await self._operating.trigger(reference)

    async def backfill(
        self, reference: str, start: datetime, end: datetime, dry_run: bool
    ) -> builtins.list[datetime]:
        """The instants ``reference`` would have fired in ``[start, end)``, delivered
        oldest first unless ``dry_run`` (``Operating.backfill``)."""
        return await self._operating.backfill(reference, start, end, dry_run)
