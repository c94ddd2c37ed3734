# SPDX-License-Identifier: Apache-2.0
"""Firing stored schedules: every node that runs schedules computes the instants of every
stored schedule and claims each ``(id, instant)``; only the winner decides it, and writes
its one ledger row.

* **Claims.** In cluster mode through the node's cron claims (``cluster/_single_fire``):
  the same coordinator step, fence, ``delivery`` lease, cluster time and
  ``claim_retention`` as cluster cron, on every coordinator. On one node (no cluster)
  through the store (:class:`StoreClaims`: put-if-absent in ``tocsin_schedule_claims``),
  so processes sharing one store (``uvicorn --workers 4``) fire each instant once too.
  The claim key is ``schedule:<id>@<instant>``: a stored schedule never shares claims or
  fences with a cluster cron reference of the same name.
* **Deciding.** The winner re-reads the schedule (a pause made on another node a moment
  ago counts; the decisions of one timer batch read their rows in one store call, and
  the runs they write are announced to the other nodes once, not once each), then
  records ``paused`` (with the note and who), ``excluded``, ``missed`` (past
  ``misfire.grace``), ``skipped_overlap``, or stores the target's run and records
  ``delivered``. A job's run is a durable job run (``jobs.job_row`` with the
  instant's Tick). Under ``at_least_once`` it is at least once: retried with the job's
  backoff, then parked; a crash mid-run runs it again. Under ``at_most_once`` its worker
  marks it started in the store before the handler runs, and a run cut short or failing
  is not run again (``failed``, :data:`tocsin.jobs._worker.INTERRUPTED` for a cut one).
  The worker that runs it keeps the row up to date, ``delivered`` with the time it
  started, ``failed`` with the error's text, ``retried`` at a retry.
  A lost claim is not an outcome and writes nothing; ``coalesced`` and
  ``claim_error`` are written only where the instant has no row yet (they are decided
  without the claim, and never hide the winner's row).
* **Changes.** A change made through this node re-arms at once; one made elsewhere is
  pushed by the store's change watch (PostgreSQL ``NOTIFY``, which every change through
  ``system.schedules`` or the CLI sends; SQLite's ``data_version``, looked at every
  second; the memory store's announce), after which the node reads the store's schedule
  revision and, if it moved, the schedules. A backstop poll every
  :data:`BACKSTOP_SECONDS` covers a lost notification while schedules exist; a node
  whose store never held one does no periodic work. An add or an update arms the first
  instant strictly after the change: it never fires at once.
* **Policies.** Every decision is the policy engine's (``tocsin.triggers``), which this
  module only feeds: overlap (:func:`~tocsin.triggers.queue_admits`, over the
  schedule's stored runs not yet finished, queued on the deciding node: runs of one
  schedule run one after another, as a durable identity's tasks do and a job's run ids
  ``<id>@<instant>`` share one shard; instants asked for are queued whatever waits),
  misfire (:func:`~tocsin.triggers.plan_misfire` with the ledger's rule at start,
  :func:`~tocsin.triggers.goes_on_from_now` after a stall), grace
  (:func:`~tocsin.triggers.past_grace`), and every instant (the engine's trigger:
  calendar, DST, jitter). ``tests/test_one_policy_engine.py`` keeps it so.
* **Manual runs** (``trigger``) are claimed under ``schedule:<id>@manual`` and
  recorded in a ledger row of their own, so one at the instant of a decided tick runs.

Prior art: APScheduler 4's scheduler loop over a shared data store (acquire schedules,
release them), Temporal's schedule workflow (one decision and one record per action).
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
from collections.abc import Callable, Coroutine, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, final

from ..actor import Outcome, Tick, TickNotDelivered
from ..cluster._spi import Counters, CronClaims
from ..jobs import DEFAULT_MAX_RETRIES, job_row
from ..stores import ScheduleRow, ScheduleStore, ScheduleTickRow, UpsertTask
from ..triggers import (
    CronTrigger,
    goes_on_from_now,
    next_delivered,
    overdue,
    past_grace,
    plan_misfire,
    queue_admits,
)
from ._instants import trigger_of
from ._spec import decode_spec
from ._store_claims import MANUAL, PREFIX, StoreClaims
from ._targets import find_job, queue_durable, task_id
from ._values import Durable, Once, Schedule

if TYPE_CHECKING:
    from ..clock import Clock, TimerHandle
    from ..durable._spi import DurableRuntime

__all__ = [
    "BACKSTOP_SECONDS",
    "CLAIM_PREFIX",
    "LATENESS_RING",
    "PAGE",
    "SERVICE",
    "Runner",
    "runner_of",
]

_log = logging.getLogger("tocsin.schedules")

#: Claim references of stored schedules: ``schedule:<id>`` (cron references have no
#: such prefix, so the two never share a key or a fence counter).
CLAIM_PREFIX: Final = PREFIX
#: Observations each lateness ring keeps between two scrapes (``tocsin.metrics``).
LATENESS_RING: Final = 4096
#: The runtime service name the runner is registered under (:func:`runner_of`).
SERVICE: Final = "schedules"

#: Stored schedules read at once while loading (:meth:`Runner._reload`): one page.
PAGE: Final = 1000

#: Seconds between two looks at the store's schedule revision besides its change watch
#: (only while this node runs some stored schedule): a notification lost in a
#: reconnect is made up within this long.
BACKSTOP_SECONDS: Final = 60.0


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


@final
class _Entry:
    """One stored schedule as this node runs it: what the tick path needs, in slots.

    The stored row is not kept (its encoded spec is ``spec``, decoded; the deciding node
    reads the row afresh anyway): only its ``version`` and pause flag. At 100,000 stored
    schedules a row per schedule, with its own copy of the id, was a fifth of a node's
    memory for them.
    """

    __slots__ = (
        "armed",
        "deliver_at",
        "due",
        "id",
        "instant",
        "outstanding",
        "paused",
        "since",
        "spec",
        "trigger",
        "version",
    )

    def __init__(self, row: ScheduleRow, spec: Schedule) -> None:
        # One string for the id: the decoded spec's (the row's is its equal).
        self.id = spec.id if spec.id == row.id else row.id
        self.version = row.version
        self.paused = row.paused
        self.spec = spec
        #: The policy engine's trigger: every instant, calendar, DST and jitter of it.
        self.trigger = trigger_of(spec)
        #: Whether the entry is in the runner's timer heap: ``None`` not there, ``True``
        #: there and live, ``False`` there but cancelled (changed, removed). The entry
        #: is its own heap item (no tuple per schedule), so it is pushed only when not
        #: there (fresh, or just popped) and its ``due`` never changes while there.
        self.armed: bool | None = None
        #: The monotonic time the armed instant is due, and the instant.
        self.due = 0.0
        self.instant = 0.0
        #: Cluster mode: the monotonic delivery time of the armed instant when ``due``
        #: is ahead of it (its claim is asked then: ``CronClaims.lead``); else None.
        self.deliver_at: float | None = None
        #: Ids (kind, identity, id) of this schedule's task rows (job runs or durable
        #: tasks) queued here and not yet seen gone: what overlap is judged by (an
        #: empty tuple until the first: no list per idle schedule).
        self.outstanding: Sequence[tuple[str, str, str]] = ()
        #: The last instant fired here, or when it was armed first: what a DST change
        #: dropped since is looked for from there.
        self.since: float | None = None

    def __lt__(self, other: _Entry) -> bool:
        # The timer heap's order: by due time, then id.
        if self.due != other.due:
            return self.due < other.due
        return self.id < other.id


@final
class Runner:
    """Runs every stored schedule on this node (one per system).

    Args:
        store: the durable store (a ScheduleStore).
        clock: the system's clock (the cluster clock in cluster mode).
        node: this node's (system's) name, written in ledger rows and claims.
        claims: cluster mode: the node's cron claims; ``None``: claims in the store.
        durable: the durable runtime (durable targets are queued through it).
        system: what a job's context carries as ``system``.
        publish: ``system.events.publish``.
        poll_interval: the longest wait before a change pushed by the store is read
            (changes are read at once; this bounds the backstop poll from below).
    """

    def __init__(
        self,
        *,
        store: ScheduleStore,
        clock: Clock,
        node: str,
        claims: CronClaims | None,
        durable: DurableRuntime,
        system: Any,
        publish: Callable[[object], None],
        poll_interval: float = 1.0,
    ) -> None:
        self.store = store
        self.clock = clock
        self.node = node
        self.durable = durable
        self.system = system
        self.publish = publish
        self.poll_interval = poll_interval
        self._own_claims = claims is None
        self.claims = claims or CronClaims(
            StoreClaims(store, clock),  # type: ignore[arg-type]
            node=node,
            counters=Counters(),
            clock=clock,
            claim_retention=0.0,
        )
        self.entries: dict[str, _Entry] = {}
        self.revision = -1
        self.closed = False
        #: Outcomes decided here, by (id, outcome): ``tocsin_schedule_ticks_total``.
        self.counts: dict[tuple[str, str], int] = {}
        #: Lateness rings (the scheduler's convention: observation i at ring[i % size],
        #: a count of observations made): how late each delivered instant was decided
        #: (``decided``) and how late its handler started (``started``).
        self.decided = 0
        self.decided_lateness = [0.0] * LATENESS_RING
        self.started = 0
        self.started_lateness = [0.0] * LATENESS_RING
        self._tasks: set[asyncio.Task[None]] = set()
        #: Armed schedules, earliest ``due`` first (see ``_Entry.armed``).
        self._heap: list[_Entry] = []
        self._timer: TimerHandle | None = None
        self._timer_at = math.inf
        self._poll: TimerHandle | None = None
        self._polling = False
        self._poll_again = False
        self._announcing = False
        self._announce_again = False
        #: Rows wanted by decisions (``_fresh_row``) and whether a read is in flight.
        self._rows_wanted: dict[str, list[asyncio.Future[ScheduleRow | None]]] = {}
        self._reading_rows = False
        self._unwatch: Callable[[], None] | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._progress = 0
        self._attached = False

    # -- the ManualClock activity-tracker protocol ---------------------------------------

    def is_idle(self) -> bool:
        return not self._tasks

    @property
    def progress(self) -> int:
        return self._progress

    async def wait_idle(self) -> None:
        await self._idle.wait()

    # -- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        """Load every stored schedule and arm its next instant; poll for changes."""
        self.clock.attach(self)
        self._attached = True
        watch = getattr(self.store, "watch", None)
        if watch is not None:
            self._unwatch = await watch(self._changed_outside)
        await self._reload(catch_up=True)
        self._arm_poll()

    async def settle(self, until: float) -> None:
        """Stopping: wait until the background steps in flight are over (the decisions
        of instants won ahead and delivered while the node's stop waited for them), at
        most until ``until`` (this clock's monotonic); :meth:`close` cancels what is left."""
        clock = self.clock
        if not self._tasks or clock.monotonic() >= until:
            return
        idle = asyncio.get_running_loop().create_task(self._idle.wait())

        def cut() -> None:
            idle.cancel()

        handle = clock.call_at(until, cut)
        try:
            await asyncio.gather(idle, return_exceptions=True)
        finally:
            handle.cancel()

    async def close(self) -> None:
        """Stop arming, cancel runs in flight (their instants are not recorded here)."""
        self.closed = True
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self._poll is not None:
            self._poll.cancel()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._heap.clear()
        while self._tasks:
            tasks = list(self._tasks)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        if self._own_claims:
            await self.claims.close()
        if self._attached:
            self._attached = False
            self.clock.detach(self)

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run ``work`` in the background, counted while it runs (a ManualClock waits)."""
        if self.closed:
            work.close()
            return
        self._idle.clear()
        task = asyncio.get_running_loop().create_task(work, name=f"tocsin-schedule-{name}")
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        self._progress += 1
        if not task.cancelled() and (exc := task.exception()) is not None:
            _log.error("stored schedules: a background step failed", exc_info=exc)
        if not self._tasks:
            self._idle.set()

    # -- changes -------------------------------------------------------------------------

    def _arm_poll(self) -> None:
        if self.closed or self._poll is not None or not self.entries:
            return  # no schedule here: only the change watch wakes this node
        clock = self.clock
        every = max(BACKSTOP_SECONDS, self.poll_interval)
        self._poll = clock.call_at(clock.monotonic() + every, self._poll_due)

    def _poll_due(self) -> None:
        self._poll = None
        self._changed_outside()

    def _changed_outside(self) -> None:
        """The store says something changed (or the backstop is due): look once."""
        if self.closed:
            return
        if self._polling:
            self._poll_again = True  # the look in flight may predate this change
            return
        self._polling = True
        self.spawn(self._poll_once(), "poll")

    async def _poll_once(self) -> None:
        try:
            while True:
                self._poll_again = False
                try:
                    if await self.store.schedules_revision() != self.revision:
                        await self._reload()
                except Exception as exc:  # a store outage: the backstop looks again
                    _log.warning("stored schedules: reading the store failed: %s", exc)
                if not self._poll_again:
                    break
        finally:
            self._polling = False
            self._arm_poll()

    async def _reload(self, *, catch_up: bool = False) -> None:
        """Read every stored schedule, :data:`PAGE` rows at a time (a node holds one
        page of rows at once, never every row: the peak memory of a start stays near
        what the node keeps), re-arm the changed ones and forget the removed ones.
        ``catch_up`` (at start): each page's overdue instants follow their misfire
        policy (:meth:`_catch_up`)."""
        revision = await self.store.schedules_revision()
        self.revision = revision
        # The ids held before this read and not seen in it are removed (the set shares
        # the entries' id strings).
        unseen = set(self.entries)
        after = ""
        while True:
            rows = await self.store.schedule_page(after, PAGE)
            now = self.clock.wall()  # one float for the page: every entry's ``since``
            page = []
            for row in rows:
                unseen.discard(row.id)
                entry = self.changed(row, now)
                if catch_up and entry is not None:
                    page.append((entry, row.updated_at))
            if page:
                await self._catch_up(page, rows[0].id, rows[-1].id)
            if len(rows) < PAGE:
                break
            after = rows[-1].id
        for gone in unseen:
            self.removed(gone)
        for request in await self.store.schedule_requests():
            # Runs an operator asked for from another process: the node that sees one
            # first claims it (a claim decides who runs it, whoever else sees it too)
            # and forgets it, so it is asked for at most once.
            entry = self.entries.get(request.id)
            if entry is not None:
                self.claim(
                    entry, request.instant, manual=request.manual, backfill=not request.manual
                )
            await self.store.delete_schedule_request(request)

    def changed(self, row: ScheduleRow, now: float | None = None) -> _Entry | None:
        """``row`` was written (here or elsewhere): a new spec re-arms from ``now``
        (default: the clock's wall time); a pause or resume only changes what its next
        instants record. Returns the schedule's entry (``None``: its spec is
        unreadable, it is not run)."""
        entry = self.entries.get(row.id)
        if entry is not None and entry.version == row.version:
            entry.paused = row.paused
            return entry
        try:
            spec = decode_spec(row.spec)
        except Exception as exc:
            _log.error("stored schedule %r cannot be read, not run: %s", row.id, exc)
            return None
        if entry is not None and entry.armed:
            entry.armed = False
        fresh = _Entry(row, spec)
        if entry is not None:  # runs queued carry over
            fresh.outstanding = entry.outstanding
        self.entries[fresh.id] = fresh
        self._arm(fresh, self.clock.wall() if now is None else now)
        self._arm_poll()  # the first schedule here: the backstop starts looking
        return fresh

    async def _catch_up(self, page: list[tuple[_Entry, float]], low: str, high: str) -> None:
        """Instants that came due while no node ran a schedule (the whole system was
        down: nothing decided them) follow its ``misfire`` policy, once, at start:
        ``once`` claims the latest of them (the others coalesced: one ``coalesced`` row
        on the earliest, with how many), ``all(max=N, rate=r)`` claims the most recent N
        oldest first, at most ``r`` a second, ``skip`` claims none (one ``missed`` row on
        the latest, with how many). They are claimed like backfills (no lateness check),
        so the nodes starting together decide each once; ``grace`` still makes a
        too-late one ``missed``.

        ``page``: one page of schedules just loaded (ids ``low`` to ``high``), each
        with its stored ``updated_at``."""
        decided = await self.store.schedule_last_instants(low, high)
        now = self.clock.wall()
        for entry, updated_at in page:
            spec = entry.spec
            if not spec.enabled or isinstance(spec.trigger, Once):
                continue  # a Once due while down is armed at once by _arm
            since = max(decided.get(entry.id, -math.inf), updated_at)
            misfire = spec.misfire
            count, recent = overdue(entry.trigger, since, now, misfire.keep())
            if not count:
                continue
            first = entry.trigger.after(since)
            assert first is not None  # `recent` holds one after `since`
            # The ledger's rule (one row per instant, the newest marks how far the
            # schedule was decided): `once` delivers the latest, `skip` notes the latest.
            plan = plan_misfire(misfire, first, count, recent, ledger=True)
            noted = first if plan.noted is None else plan.noted
            if plan.coalesced:
                text = str(plan.coalesced)
                await self._record(entry, noted, Outcome.COALESCED, text, replace=False)
            if plan.missed:
                # Only `skip` (nothing delivered) and `all` (the older ones) miss some.
                why = (
                    f", older than the {len(plan.deliver)} replayed (Misfire.all)"
                    if plan.deliver
                    else " (Misfire.skip)"
                )
                text = f"{plan.missed} instants came due while no node ran it{why}"
                await self._record(entry, noted, Outcome.MISSED, text, replace=False)
            rate = plan.rate
            for i, instant in enumerate(plan.deliver):
                if not rate or i == 0:
                    self.claim(entry, instant, overdue=True)
                    continue
                # Misfire.all(rate=r): the replayed instants at most r a second.
                clock = self.clock
                clock.call_at(clock.monotonic() + i / rate, self._later(entry, instant))

    def _later(self, entry: _Entry, instant: float) -> Callable[[], None]:
        """The timer callback claiming overdue ``instant`` of ``entry`` (if still live)."""

        def due() -> None:
            if not self.closed and self.entries.get(entry.id) is entry:
                self.claim(entry, instant, overdue=True)

        return due

    def removed(self, schedule_id: str) -> None:
        """The schedule is gone: no instant of it is armed any more."""
        entry = self.entries.pop(schedule_id, None)
        if entry is not None and entry.armed:
            entry.armed = False

    # -- instants ------------------------------------------------------------------------

    def _arm(self, entry: _Entry, after: float, known: float | None = None) -> None:
        """Arm the first instant after ``after`` (``known``: it, computed already)."""
        if self.closed or not entry.spec.enabled:
            return
        trigger = entry.spec.trigger
        instant = known if known is not None else entry.trigger.after(after)
        if instant is None:
            if isinstance(trigger, Once) and trigger.at is not None and entry.armed is None:
                # Stored and still undecided, its instant passed while no node ran it:
                # decided now, under its misfire policy (grace makes it missed).
                self._push(entry, self.clock.monotonic(), trigger.at.timestamp())
            return
        clock = self.clock
        if entry.since is None:
            entry.since = after
        delay = entry.trigger.delivery(entry.id, instant) - clock.wall()
        # Cluster mode: fire ahead of the delivery time, so the claim's round trip is
        # paid before it (never more than the delay left). The gap from the instant it
        # is armed after (the previous one, or now) stands for the period: no second
        # next-instant computation per arm.
        lead = min(self.claims.lead(instant - after), delay) if delay > 0.0 else 0.0
        self._push(entry, clock.monotonic() + max(delay, 0.0), instant, lead)

    def _push(self, entry: _Entry, due: float, instant: float, lead: float = 0.0) -> None:
        """Arm ``instant`` of ``entry`` at monotonic ``due`` (fired ``lead`` seconds
        before it): one item in the runner's heap, and the one clock timer moved earlier
        if it must. One timer for every stored schedule, not one each: at 100,000
        schedules a timer per schedule was a fifth of a node's memory for them."""
        entry.armed = True
        entry.deliver_at = due if lead > 0.0 else None
        due -= lead
        entry.due = due
        entry.instant = instant
        heapq.heappush(self._heap, entry)
        if self._timer is None or due < self._timer_at:
            self._wind(due)

    def _wind(self, due: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = due
        self._timer = self.clock.call_at(due, self._pump)

    def _pump(self) -> None:
        """The timer is due: fire every armed instant due by now, then wind the timer
        for the next one."""
        self._timer = None
        heap = self._heap
        now = self.clock.monotonic()
        while heap and heap[0].due <= now and not self.closed:
            entry = heapq.heappop(heap)
            live, entry.armed = entry.armed, None
            if not live:
                continue  # cancelled (changed, removed) since it was armed
            instant = entry.instant
            try:
                self._fire(entry, instant, entry.deliver_at)
            except Exception:  # one schedule's failure never stops the others
                _log.exception("stored schedule %r: firing %s failed", entry.id, instant)
        if heap and not self.closed and self._timer is None:
            self._wind(heap[0].due)

    def next_fire_at(self, schedule_id: str, now: float) -> float | None:
        """The next instant of the schedule that will be delivered (calendar applied,
        jitter added), ``None`` when paused, disabled, unknown here or without one."""
        entry = self.entries.get(schedule_id)
        if entry is None or entry.paused or not entry.spec.enabled:
            return None
        instant = next_delivered(entry.trigger, now)
        return None if instant is None else entry.trigger.delivery(schedule_id, instant)

    def _fire(self, entry: _Entry, instant: float, deliver_at: float | None = None) -> None:
        """Claim ``instant`` of ``entry`` (decided at monotonic ``deliver_at`` if won
        ahead of it) and arm the next one."""
        if self.entries.get(entry.id) is not entry:
            return  # replaced or removed since it was armed
        trigger = entry.trigger
        nxt = trigger.after(instant)
        since, entry.since = entry.since, instant
        if since is not None and isinstance(trigger, CronTrigger):
            for at, outcome in trigger.dropped(since, instant):
                # Every node computes the same: the first to write it records it.
                self.spawn(self._record(entry, at, outcome, None, replace=False), "dst")
        self.claim(entry, instant, following=nxt, at=deliver_at)
        if isinstance(entry.spec.trigger, Once):
            return  # one instant: decided by its claim
        now = self.clock.wall()
        if goes_on_from_now(entry.spec.misfire, nxt, now):
            # The loop stalled past more instants (Misfire.once/skip): the overdue ones
            # coalesce into the one just claimed.
            self._arm(entry, now)
        else:
            self._arm(entry, instant, nxt)

    def claim(
        self,
        entry: _Entry,
        instant: float,
        *,
        manual: bool = False,
        backfill: bool = False,
        overdue: bool = False,
        following: float | None = None,
        at: float | None = None,
    ) -> None:
        """Claim ``instant`` of ``entry`` and decide it if this node wins (``overdue``:
        an instant found overdue at start, claimed without the lateness check). A manual
        run is claimed under a reference of its own (``schedule:<id>@manual``: no id holds
        an ``@``), so a trigger at the instant of a decided tick is not taken for it.
        ``at``: the monotonic delivery time, when the claim is asked ahead of it (a won
        instant is decided then, on a fresh read of its row: a pause or removal made
        meanwhile counts)."""
        if following is None:
            following = entry.trigger.after(instant)
        period = math.inf if following is None else following - instant
        reference = CLAIM_PREFIX + entry.id + (MANUAL if manual else "")

        def deliver(fence: int, finished: Callable[[], None] | None) -> bool:
            if self.closed:
                return False  # stopping: an at_least_once claim lapses to another node
            work = self._decide(entry, instant, fence or None, finished, manual, backfill, overdue)
            self.spawn(work, entry.id)
            return True

        def skipped(outcome: Outcome | None, detail: str | int | None) -> None:
            # dead_letter: won ahead, the node's stop cut it off before its time.
            if outcome in (Outcome.COALESCED, Outcome.CLAIM_ERROR, Outcome.DEAD_LETTER):
                text = None if detail is None else str(detail)
                work = self._record(entry, instant, outcome, text, replace=False, manual=manual)
                self.spawn(work, "record")

        self.claims.deliver_if_won(
            reference,
            instant,
            period,
            deliver,
            skipped,
            delivery=str(entry.spec.delivery),
            backfill=manual or backfill or overdue,
            at=at,
        )

    # -- deciding ------------------------------------------------------------------------

    async def _decide(
        self,
        entry: _Entry,
        instant: float,
        fence: int | None,
        finished: Callable[[], None] | None,
        manual: bool,
        backfill: bool,
        overdue: bool = False,
    ) -> None:
        sid = entry.id
        # Instants asked for (trigger, backfill, a misfire replay at start) are queued
        # whatever is in flight: they run after it, one after another.
        asked = manual or backfill or overdue
        try:
            row = await self._fresh_row(sid)
            if row is None:
                return  # removed meanwhile: nothing to decide
            if row.version == entry.version:
                entry.paused = row.paused
            spec = entry.spec
            # A manual run is never paused, excluded nor late: only its run's rows are
            # its own (``manual=``).
            if not manual and not backfill and row.paused:
                await self._record(entry, instant, Outcome.PAUSED, None, row=row)
            elif not manual and entry.trigger.excluded(instant):
                await self._record(entry, instant, Outcome.EXCLUDED, None)
            elif (
                not manual
                and not backfill
                and past_grace(spec.misfire, self.clock.wall() - instant)
            ):
                await self._record(entry, instant, Outcome.MISSED, None)
            elif isinstance(spec.target, Durable):
                await self._queue(entry, instant, spec.target, asked, manual)
            else:
                # Durable from here on: a lease (at_least_once) ends once it is stored.
                await self._enqueue_job(entry, instant, fence, manual, backfill, asked)
            if isinstance(spec.trigger, Once) and not manual and not backfill:
                await self.store.delete_schedule(sid)
                self.removed(sid)
                announce = getattr(self.store, "announce", None)
                if announce is not None:
                    await announce()
        finally:
            if finished is not None:
                finished()

    async def _fresh_row(self, sid: str) -> ScheduleRow | None:
        """The stored row of ``sid``, read after this call began (a pause made on another
        node before counts), together with every other row wanted meanwhile: the
        instants of one timer batch are decided on one read, not one round trip each
        (nor each waiting for a pooled connection behind the others)."""
        waiter: asyncio.Future[ScheduleRow | None] = asyncio.get_running_loop().create_future()
        self._rows_wanted.setdefault(sid, []).append(waiter)
        if not self._reading_rows:
            self._reading_rows = True
            self.spawn(self._read_rows(), "rows")
        return await waiter

    async def _read_rows(self) -> None:
        # A read in flight may have begun before a later wish: that one waits for the
        # next read (the loop), never takes an older answer.
        try:
            while self._rows_wanted:
                wanted, self._rows_wanted = self._rows_wanted, {}
                ids = list(wanted)
                try:
                    found: dict[str, ScheduleRow] = {}
                    for first in range(0, len(ids), PAGE):
                        found.update(await self.store.schedule_rows_of(ids[first : first + PAGE]))
                except Exception as exc:  # each decision fails as its own read would have
                    for waiters in wanted.values():
                        for waiter in waiters:
                            if not waiter.done():
                                waiter.set_exception(exc)
                    continue
                for sid, waiters in wanted.items():
                    for waiter in waiters:
                        if not waiter.done():
                            waiter.set_result(found.get(sid))
        finally:
            self._reading_rows = False

    async def _queue(
        self, entry: _Entry, instant: float, target: Durable, asked: bool, manual: bool
    ) -> None:
        store = self.durable.store
        alive = []
        for kind, identity, tid in entry.outstanding:
            if await store.get_task(kind, identity, tid) is not None:
                alive.append((kind, identity, tid))
        entry.outstanding = alive
        if not queue_admits(entry.spec.overlap, len(alive), asked=asked):
            await self._record(entry, instant, Outcome.SKIPPED_OVERLAP, None, manual=manual)
            return
        now = self.clock.wall()
        tid = await queue_durable(self.durable, target, entry.id, instant, now, manual=manual)
        entry.outstanding = [*alive, (target.kind, target.identity, tid)]
        # The decided row before the wake-up: a run that starts and ends at once (here,
        # or on the node its wake-up reaches) then rewrites it, never the other way round.
        await self._record(entry, instant, Outcome.DELIVERED, None, manual=manual)
        await self._wake(target.kind, target.identity, now)

    async def _enqueue_job(
        self,
        entry: _Entry,
        instant: float,
        fence: int | None,
        manual: bool,
        backfill: bool,
        asked: bool,
    ) -> None:
        """Write the durable run of ``instant`` (a job run: under at_least_once retried
        with the job's backoff, then parked; under at_most_once run at most once) and wake
        this node's worker; the worker keeps the instant's ledger row up to date as the run
        goes (``jobs._worker``)."""
        spec = entry.spec
        sid = entry.id
        store = self.durable.store
        alive = [key for key in entry.outstanding if await store.get_task(*key) is not None]
        entry.outstanding = alive
        # Runs of one schedule share a shard (their ids are ``<id>@<instant>``), so they
        # run one after another: the engine says how many wait behind the one running.
        if not queue_admits(spec.overlap, len(alive), asked=asked):
            await self._record(entry, instant, Outcome.SKIPPED_OVERLAP, None, manual=manual)
            return
        assert isinstance(spec.target, str)
        # The job's own retry budget when this process knows it. A job no module of
        # this node registered is queued all the same (a worker that imported it runs
        # it; until then it waits in the store), and its row says so.
        detail = None
        try:
            retries = find_job(spec.target).max_retries
        except LookupError:
            retries = DEFAULT_MAX_RETRIES
            detail = (
                f"job {spec.target!r} is registered by no module of node {self.node!r}: "
                "it waits for a worker that imported it (ActorSystem(jobs=[...]))"
            )
        # An at_least_once re-claim after the first winner let its delivery lease
        # lapse: the instant has its row already (the run's, kept by its worker); the
        # upsert of the same run id replaces a pending run, never adds one, and its
        # worker records it ``retried``.
        again = (
            spec.delivery == "at_least_once"
            and not manual
            and await self.store.schedule_tick(sid, instant) is not None
        )
        now = self.clock.wall()
        run_id = task_id(sid, instant, manual=manual)
        tick = Tick(sid, _utc(instant), 1, manual, backfill, fence)
        row = job_row(
            spec.target,
            run_id,
            now,
            spec.args,
            dict(spec.kwargs or {}),
            max_retries=retries,
            created_at=now,
            tick=tick,
            ledger=(entry.version, spec.history, again),
            at_most_once=spec.delivery == "at_most_once",
        )
        await store.apply([UpsertTask(row)])
        entry.outstanding = [*alive, (row.kind, row.identity, row.id)]
        # The decided row before the wake-up: the worker that runs it (this node's, or
        # the shard owner's that the announcement reaches) keeps the row from its start,
        # and a run that fails at once must not have its ``failed`` row overwritten by
        # this ``delivered``.
        if not again:
            await self._record(entry, instant, Outcome.DELIVERED, detail, manual=manual)
        await self._wake(row.kind, row.identity, now)

    async def _wake(self, kind: str, identity: str, now: float) -> None:
        """A task row of ``kind/identity`` due ``now`` was written: run it here, or in
        cluster mode tell every node's durable poll (the identity's owner may be another
        node: PostgreSQL ``NOTIFY``, the memory store's watchers; SQLite nodes see the
        file change), not only at its next look-ahead."""
        self.durable.wake(kind, identity, now)
        if not self._own_claims and getattr(self.durable.store, "announce", None):
            self._announce_soon()

    def _announce_soon(self) -> None:
        """Tell the other nodes that task rows were written: one announcement (a
        PostgreSQL ``NOTIFY``, a round trip) for every row written since the last one
        began, not one per row (a timer batch of 1,000 instants writes 1,000 rows). An
        announcement always begins after the write that asked for it ended: one asked
        for while another is in flight is sent again after it."""
        if self._announcing:
            self._announce_again = True
            return
        self._announcing = True
        self.spawn(self._announce_loop(), "announce")

    async def _announce_loop(self) -> None:
        announce = self.durable.store.announce
        try:
            while True:
                self._announce_again = False
                try:
                    await announce()
                except Exception as exc:  # the owner's durable poll finds the row anyway
                    _log.warning("stored schedules: announcing new runs failed: %s", exc)
                if not self._announce_again:
                    break
        finally:
            self._announcing = False

    def observe_outcome(self, schedule_id: str, outcome: str) -> None:
        """A run of a stored schedule's job ended ``outcome`` (``failed``) or a retry of
        it started (``retried``) on this node (told by the jobs worker: the outcome
        counts of ``tocsin_schedule_ticks_total``)."""
        key = (schedule_id, outcome)
        self.counts[key] = self.counts.get(key, 0) + 1

    def observe_start(self, late: float) -> None:
        """A run of a stored schedule's job started ``late`` seconds after its instant
        (told by the jobs worker: the start-lateness histogram)."""
        self._started(late)

    def _started(self, late: float) -> None:
        self.started_lateness[self.started % LATENESS_RING] = max(0.0, late)
        self.started += 1

    async def _record(
        self,
        entry: _Entry,
        instant: float,
        outcome: Outcome,
        detail: str | None,
        *,
        row: ScheduleRow | None = None,
        started: float | None = None,
        replace: bool = True,
        manual: bool = False,
    ) -> None:
        """Write the ledger row of ``instant`` (``manual``: of the run a trigger asked
        for at it, a row of its own), count it, and publish a non-delivery."""
        sid = entry.id
        paused = row if outcome is Outcome.PAUSED else None
        ledger = ScheduleTickRow(
            id=sid,
            instant=float(instant),
            at=self.clock.wall(),
            outcome=str(outcome),
            node=self.node,
            version=entry.version,
            detail=detail,
            note=None if paused is None else paused.note,
            by=None if paused is None else paused.paused_by,
            started=started,
            manual=manual,
        )
        try:
            await self.store.record_schedule_tick(ledger, entry.spec.history, replace=replace)
        except Exception as exc:
            _log.warning(
                "stored schedule %r: the ledger row of %s failed: %s", sid, _utc(instant), exc
            )
        key = (sid, str(outcome))
        self.counts[key] = self.counts.get(key, 0) + 1
        if outcome in (Outcome.DELIVERED, Outcome.RETRIED) and replace:
            self.decided_lateness[self.decided % LATENESS_RING] = max(0.0, ledger.at - instant)
            self.decided += 1
        if outcome not in (Outcome.DELIVERED, Outcome.RETRIED):
            self.publish(TickNotDelivered(sid, _utc(instant), outcome, detail, self.node))


def runner_of(runtime: Any) -> Runner | None:
    """The stored-schedule runner of a started system (None before its first use)."""
    services = getattr(runtime, "services", None)
    found = None if services is None else services.get(SERVICE)
    return found if isinstance(found, Runner) else None
