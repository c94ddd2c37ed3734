# SPDX-License-Identifier: Apache-2.0
"""Cron single fire: every node runs the trigger; only the node that claims a tick delivers it.

The rule (GoAkt's ``claimClusterFire``, tightened):

* key ``f"{reference}@{fire_instant}"`` (the instant in ISO 8601 UTC, so every node, in
  any zone, builds the same key for the same tick);
* TTL = the cron period at that tick, clamped to [:data:`MIN_TTL`, :data:`MAX_TTL`]: it
  must outlive the worst lag between two nodes reaching the same tick;
* put-if-absent on the coordinator; claims are never deleted, they expire by TTL only;
* a tick reached more than the TTL late is skipped without claiming, and the lateness is
  judged on the *coordinator's* clock inside the same atomic step as the put (GoAkt checks
  it on the node's clock, which leaves a duplicate window when clocks disagree);
* a reference paused cluster-wide is never claimed;
* a claim that raises delivers nothing (its outcome is unknown: it may have been written,
  and another node may be delivering). The tick may then be lost, never doubled;
* one claim in flight per reference (issue 20, item 6): while a claim waits (a frozen
  coordinator), later ticks of that reference do not send claims of their own; they wait
  behind it and are claimed once it has answered, in instant order. ``at_most_once``:
  the latest one waits, the ones in between are coalesced into it
  (``claims_coalesced``), so a stall releases at most two, never a burst.
  ``at_least_once``: none is coalesced away; every tick that came due waits,
  and all are claimed in one batch when the claim in flight answers, each within its own
  window (the coordinator's lateness check); the winner then puts each through the
  schedule's policies (``misfire`` grace, ``overlap``), as any tick it won;
* claims go in batches: every claim asked for in one turn of the event loop
  (the references firing at one instant fire in one timer callback) is sent in one
  coordinator round trip per instant (``claim_ticks``, up to :data:`MAX_BATCH` ticks),
  each tick decided as a claim of its own would be; a batch that raises is a
  ``claim_error`` for each of its ticks, counted in ``claims_failed``.

Two delivery modes (``schedule_cron(..., delivery=...)``, issue 23):

* ``"at_most_once"`` (default, GoAkt's rule): the claim is done as soon as it is won. A
  winner that dies after claiming and before delivering loses that tick cluster-wide;
  delivery resumes at the next tick.
* ``"at_least_once"``: the claim is held with a short delivery lease
  (``Cluster(delivery_lease=5.0)``) that the winner renews every third of it while the
  target's ``receive`` runs, and marks done when it returns (the tick item's
  ``finished()``; at send for a target that reports no completion). A node that lost
  the claim watches it: once its lease has passed undone (the winner died or froze) it
  claims it again and delivers, with a larger fence. So no tick is lost while one node
  lives, and a tick can be delivered twice (a frozen winner that wakes up): the
  duplicate carries the smaller ``ctx.tick.fence``.

Every grant carries a fence, the coordinator's per-reference counter: it grows with every
claim granted for the reference, so ``ctx.tick.fence`` orders deliveries cluster-wide.
Claims are kept ``Cluster(claim_retention=86400)`` after their instant (at least their
TTL), so a backfill claiming an old instant with the same key (``backfill=True``: no
lateness check, no coalescing) never delivers again an instant whose claim is kept.

Prior art: GoAkt ``claimClusterFire``, procrastinate's ``periodic_defers`` unique key.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Coroutine
from datetime import UTC, datetime, tzinfo
from functools import partial
from typing import TYPE_CHECKING, Any, Final, Literal, final

from ..actor._spi import Outcome
from ..clock import Clock, TimerHandle
from ..durable._spi import Outage
from ..errors import ScheduleReferenceRequiredError
from ..triggers import cron_after, supersede
from ._protocol import ClaimOutcome, Coordinator, PauseNote, TickClaim, TickRequest, claim_ticks
from ._values import Counters

if TYPE_CHECKING:
    from ..cron import CronExpression

__all__ = [
    "DELIVERY_MODES",
    "MAX_TTL",
    "MIN_TTL",
    "CronClaims",
    "Deliver",
    "Delivery",
    "Skipped",
    "claim_ttl",
    "cron_period",
    "require_reference",
    "tick_key",
]

_log = logging.getLogger("tocsin.cluster")

#: Shortest claim TTL, seconds.
MIN_TTL: Final = 60.0
#: Longest claim TTL, seconds (a day).
MAX_TTL: Final = 86_400.0
#: Most ticks claimed in one coordinator round trip (a larger due set goes in several
#: batches, concurrently).
MAX_BATCH: Final = 512
#: Seconds before an ``at_least_once`` claim whose outcome is unknown (the coordinator
#: raised) is asked again, for as long as the tick's window (its claim TTL) lasts.
RECLAIM_AFTER_ERROR: Final = 1.0

#: The detail of a tick won ahead that a node's stop cut off before its delivery time.
_CUT_TICK: Final = "the node stopped before its delivery time (its wait was cut off)"

Delivery = Literal["at_most_once", "at_least_once"]
#: The values ``schedule_cron(delivery=...)`` accepts.
DELIVERY_MODES: Final = ("at_most_once", "at_least_once")

#: ``deliver(fence, finished)``: hand the won tick to its target with its fence; return
#: whether it was handed over. ``finished`` (``at_least_once`` only, else ``None``) must
#: be called once the target's ``receive`` for it has returned.
Deliver = Callable[[int, Callable[[], None] | None], bool]
#: ``skipped(outcome, detail)``: this node does not deliver the tick; ``outcome`` is what
#: its history records (``None``: nothing to record, the node is stopping).
Skipped = Callable[[Outcome | None, str | int | None], object]


def claim_ttl(period: float) -> float:
    """The TTL of a tick claim: the cron ``period`` clamped to [60 s, 24 h]."""
    if math.isnan(period):
        return MAX_TTL
    return min(MAX_TTL, max(MIN_TTL, period))


def cron_period(expression: CronExpression, fire_at: float, zone: tzinfo | None = None) -> float:
    """Seconds from the fire instant ``fire_at`` (epoch) to the next one (``inf`` if none).

    Evaluated in ``zone``, else the expression's own zone, else UTC (the cluster default).
    """
    zone = zone or expression.timezone or UTC
    nxt = cron_after(expression, zone, None, fire_at)
    return math.inf if nxt is None else nxt - fire_at


def tick_key(reference: str, fire_at: float) -> str:
    """``f"{reference}@{fire_instant}"`` with the instant in ISO 8601 UTC.

    Whole seconds print without a fraction (cron instants always are); anything finer
    keeps milliseconds, so two distinct instants never share a key.
    """
    return f"{reference}@{_instant_text(fire_at)}"


@functools.lru_cache(maxsize=256)
def _instant_text(fire_at: float) -> str:
    """The instant part of :func:`tick_key` (once per instant for a batch of claims).

    Cached: every node of a cluster in one process (a simulation, a test) claims the same
    instants, and a cron of every second asks for a new one each second (~5 µs each)."""
    moment = datetime.fromtimestamp(round(fire_at, 3), UTC)
    text = moment.isoformat(timespec="seconds" if moment.microsecond == 0 else "milliseconds")
    return text.replace("+00:00", "Z")


def require_reference(reference: str | None) -> str:
    """The check ``schedule_cron`` makes in cluster mode.

    Raises:
        ScheduleReferenceRequiredError: ``reference`` is ``None`` or empty.
    """
    if reference is None or reference == "":
        raise ScheduleReferenceRequiredError(
            "schedule_cron in cluster mode needs an explicit `reference` (got "
            f"{reference!r}): ticks are claimed cluster-wide by reference, and a generated "
            "one differs on every node, so each node would deliver. Pass the same "
            "reference=... on every node, e.g. reference='nightly-report'"
        )
    return reference


def _call(callback: Callable[..., object] | None, reference: str, *args: object) -> None:
    if callback is None:
        return
    try:
        callback(*args)
    except Exception:
        _log.exception("cron %r: the tick's callback failed", reference)


@final
class _Tick:
    """A tick to claim: one instant of one reference, and what to call with the answer."""

    __slots__ = (
        "at",
        "backfill",
        "deliver",
        "fire_at",
        "lease",
        "period",
        "reference",
        "skipped",
    )

    def __init__(
        self,
        reference: str,
        fire_at: float,
        period: float,
        deliver: Deliver,
        skipped: Skipped | None,
        lease: float | None,
        backfill: bool,
        at: float | None = None,
    ) -> None:
        self.reference = reference
        self.fire_at = fire_at
        self.period = period
        self.deliver = deliver
        self.skipped = skipped
        self.lease = lease  # at_least_once: the delivery lease; None: at_most_once
        self.backfill = backfill
        self.at = at  # claimed ahead: the monotonic time to deliver at if won; None: now


@final
class _Grant:
    """An ``at_least_once`` claim this node won: renewed every third of its lease until
    the target's ``receive`` returns (:meth:`finished`), then marked done."""

    __slots__ = ("_claims", "_handle", "_over", "fence", "key", "lease", "reference", "until")

    def __init__(self, claims: CronClaims, tick: _Tick, key: str, fence: int) -> None:
        self._claims = claims
        self.reference = tick.reference
        self.key = key
        self.fence = fence
        self.lease = tick.lease or 0.0
        # Past the instant's window no node claims it again (too late): holding it longer
        # is pointless, and a tick never finished (dropped as stale in the mailbox) must
        # not be renewed for ever.
        self.until = tick.fire_at + claim_ttl(tick.period)
        self._handle: TimerHandle | None = None
        self._over = False

    def hold(self) -> None:
        """Keep the claim held while the delivery runs (renew every ``lease / 3``), at
        most until the instant's window (its TTL) has passed."""
        if self._over or self._claims.closed:
            return
        clock = self._claims.clock
        if clock.wall() > self.until:
            self._over = True
            return
        self._handle = clock.call_at(clock.monotonic() + self.lease / 3, self._renew_due)

    def _renew_due(self) -> None:
        self._handle = None
        if not self._over and not self._claims.closed:
            self._claims.run(self.reference, self._renew())

    async def _renew(self) -> None:
        claims = self._claims
        try:
            held = await claims.coordinator.renew_tick(self.key, self.fence, self.lease)
        except Exception as exc:  # the lease may lapse: another node may deliver it too
            claims.outage.failed(exc, f"tick {self.key}: delivery lease not renewed")
            held = True
        if self._over:
            return
        if held:
            self.hold()
        else:
            self._over = True
            claims.counters.claims_superseded += 1
            _log.warning(
                "cron tick %s: re-claimed by another node while this one delivered it "
                "(fence %d; it was frozen or cut off past its delivery lease): the other "
                "delivery carries a larger fence",
                self.key,
                self.fence,
            )

    @property
    def over(self) -> bool:
        """Whether the claim is no longer renewed here (done, abandoned, past its
        window, or taken over by another node)."""
        return self._over

    def abandon(self) -> None:
        """Not handed to the target here: left to lapse, so another node delivers it."""
        self._over = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def __call__(self) -> None:
        """The done call a won tick carries (``TickItem``): :meth:`finished`."""
        self.finished()

    def lapse(self) -> None:
        """The tick may never have reached ``receive`` (a remote target's connection was
        lost, its frame never left): stop renewing, so the claim lapses and another node
        delivers the tick once the delivery lease has passed."""
        self.abandon()

    def finished(self) -> None:
        """The target's ``receive`` returned: mark the claim done (once)."""
        if self._over:
            return
        self.abandon()
        if not self._claims.closed:
            self._claims.run(self.reference, self._finish())

    async def _finish(self) -> None:
        claims = self._claims
        try:
            done = await claims.coordinator.finish_tick(self.key, self.fence)
        except Exception as exc:  # unknown: another node may deliver it again after
            claims.outage.failed(exc, f"tick {self.key}: not marked done")
            return
        if done:
            claims.counters.claims_finished += 1
        else:
            claims.counters.claims_superseded += 1


@final
class CronClaims:
    """Asked by the scheduler, before it delivers a cron tick in cluster mode, whether this
    node delivers it (one per node).

    Args:
        coordinator: an opened coordinator.
        node: this node's name (recorded as the claim's holder).
        counters: where outcomes are counted.
        clock: the system's clock; a ManualClock is told when claims are in flight, so
            ``await clock.advance(s)`` returns after the deliveries they decide.
        delivery_lease: ``at_least_once``: seconds a claim stays held without a renewal.
        claim_retention: seconds a claim is kept after its instant (at least its TTL).
        not_early: awaited with the fire instant before a tick of the scheduler is
            claimed; returns once the instant has come on the coordinator's clock
            (``ClusterTime.not_early``, ``cluster/_time.py``).
        ahead: seconds before a tick's delivery time its claim may be sent
            (:meth:`lead`; ``Cluster(claim_ahead=...)``, at most half of ``max_skew``:
            the node passes that bound); 0: claimed at the delivery time.
        trusted: whether claims may be asked ahead now (``ClusterTime.trusted``: the
            offset to the coordinator's clock is known well enough); ``None``: always.
    """

    def __init__(
        self,
        coordinator: Coordinator,
        *,
        node: str,
        counters: Counters,
        clock: Clock | None = None,
        delivery_lease: float = 5.0,
        claim_retention: float = 86_400.0,
        not_early: Callable[[float], Awaitable[None]] | None = None,
        ahead: float = 0.0,
        trusted: Callable[[], bool] | None = None,
    ) -> None:
        from ..clock import SystemClock

        self.coordinator = coordinator
        self._not_early = not_early
        self._node = node
        self.counters = counters
        self._clock = clock
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.delivery_lease = delivery_lease
        self.claim_retention = claim_retention
        self._ahead = ahead
        self._trusted = trusted
        self._attached = False
        self._closed = False
        #: A graceful stop began (:meth:`begin_stop`): nothing new is claimed.
        self._stopping = False
        #: The stop's wait for the ticks won ahead is over (:meth:`drain`): a claim
        #: answered after it is cut off like the ticks it left.
        self._drain_over = False
        #: Woken when nothing is left to wait for while the stop waits (:meth:`drain`).
        self._drained: asyncio.Future[None] | None = None
        #: Coordinator calls in flight, with the reference they are for.
        self._inflight: dict[asyncio.Task[None], str] = {}
        #: References with a claim in flight -> the ticks waiting behind it, in instant
        #: order: one claim in flight per reference. At most one ``at_most_once`` tick
        #: waits (a newer one coalesces it); every ``at_least_once`` tick waits.
        self._waiting: dict[str, list[_Tick]] = {}
        #: at_least_once ticks lost to a holder not done yet, waiting for its lease.
        self._watches: dict[TimerHandle, _Tick] = {}
        #: Ticks won ahead of their delivery time, waiting for it, by the millisecond
        #: it falls in: one timer per millisecond (the references of one instant, armed
        #: microseconds apart, share it: a few thousand timers a second cost more than
        #: a sub-millisecond error), set for the first tick's time; each tick with its
        #: fence and (at_least_once) the grant held meanwhile, in the order they were
        #: won.
        self._early: dict[int, tuple[TimerHandle, list[tuple[_Tick, int, _Grant | None]]]] = {}
        #: Claims asked for in this turn of the event loop, with whether each is a tick's
        #: first claim and the instant to wait for on the coordinator's clock before
        #: claiming it (``None``: none): claimed together, one round trip per instant.
        self._batch: list[tuple[_Tick, bool, float | None]] = []
        self._flush_handle: asyncio.Handle | None = None
        #: Batches in flight -> their regular ticks' first claims (close() tells them
        #: skipped; when one answers, the tick waiting behind its reference may go).
        self._batches: dict[asyncio.Task[None], list[_Tick]] = {}
        # References paused cluster-wide, with their note, as far as this node knows: read
        # from the coordinator when a claim answers "paused" for one it did not know,
        # dropped when a claim of it answers anything else (no polling: `pause_note`).
        self._notes: dict[str, PauseNote] = {}
        self._idle = asyncio.Event()
        self._idle.set()
        self._progress = 0
        #: Failed claims are logged once per outage (issue 20), not once per tick.
        self.outage = Outage(
            f"node {node}: cron tick claims",
            _log,
            "the ticks whose claim fails are not delivered (never doubled; counted in "
            "claims_failed)",
        )

    # -- cluster-wide pause notes -----------------------------------------------------------

    def pause_note(self, reference: str) -> PauseNote | None:
        """Why, when and by which node ``reference`` is paused cluster-wide, as this node
        last learned it (``ScheduleInfo.note`` on every node's ``list_schedules()``), or
        ``None``. Learned when a claim of it answers "paused" (the note is then read
        from the coordinator once) or when this node pauses it; forgotten when a claim of
        it answers anything else, or this node resumes it."""
        return self._notes.get(reference)

    def remember_pause(self, reference: str, note: PauseNote | None) -> None:
        """This node paused (``note``) or resumed (``None``) ``reference`` cluster-wide."""
        if note is None:
            self._notes.pop(reference, None)
        else:
            self._notes[reference] = note

    async def _learn_notes(self) -> None:
        """Read every pause note from the coordinator (a claim found a reference paused)."""
        try:
            notes = await self.coordinator.pause_notes()
        except Exception as exc:  # a failed read leaves the notes as they were, logged once
            self.outage.failed(exc, "reading the pause notes")
            return
        self._notes.update(notes)

    # -- the ManualClock activity-tracker protocol ---------------------------------------

    def is_idle(self) -> bool:
        return not self._inflight and not self._batch

    @property
    def progress(self) -> int:
        return self._progress

    async def wait_idle(self) -> None:
        await self._idle.wait()

    # -- the scheduler's hook ------------------------------------------------------------

    def lead(self, period: float) -> float:
        """Seconds before a tick's delivery time the scheduler may ask for its claim
        (``deliver_if_won(..., at=...)``): ``Cluster(claim_ahead=...)``, at most a
        quarter of the tick's ``period`` (so a tick is claimed after the one before it
        was delivered), 0 for none.

        A claim sent that much ahead is never refused as early: the node bounds
        ``ahead`` by half of ``max_skew``, and the offset to the coordinator's clock is
        known within the other half (else ``not_early`` reads that clock first). The
        won tick is delivered at its time from this node's timer. 0 while this node's
        offset is not known well enough (``trusted``)."""
        ahead = self._ahead
        if ahead <= 0.0 or math.isnan(period):
            return 0.0
        trusted = self._trusted
        if trusted is not None and not trusted():
            return 0.0
        return min(ahead, period / 4)

    def deliver_if_won(
        self,
        reference: str,
        fire_at: float,
        period: float,
        deliver: Deliver,
        skipped: Skipped | None = None,
        *,
        delivery: str = "at_most_once",
        backfill: bool = False,
        at: float | None = None,
    ) -> None:
        """Claim the tick in the background and call ``deliver(fence, finished)`` only
        if this node won, else ``skipped(outcome, detail)``.

        The call the scheduler makes from its (synchronous) timer callback in place of
        delivering a cron tick; it never blocks (the scheduling layer's ``CronGate``
        protocol documents the callbacks). A callback that raises is logged.

        Args:
            delivery: ``"at_least_once"``: hold the claim with the delivery lease until
                ``finished()``, and claim it again if its winner lets it lapse.
            backfill: an instant of the past (``backfill_schedule``): claimed with the
                same key, without the lateness check and without coalescing; a claim
                still kept (``claim_retention``) makes it ``claimed_elsewhere``.
            at: the time (this clock's monotonic) the tick is to be delivered at, when
                the claim is asked ahead of it (at most :meth:`lead` before): a won tick
                is handed over then, not at once. ``None``, or a time passed when the
                answer comes: at once. Between the win and ``at`` an ``at_least_once``
                claim is held (renewed); if another node took it over meanwhile (this
                one froze past its delivery lease) the tick is not delivered here
                (``claimed_elsewhere``). A graceful stop (:meth:`begin_stop`, :meth:`drain`)
                delivers an ``at_most_once`` tick waiting for ``at`` first; an
                ``at_least_once`` one, and any still waiting when :meth:`close` comes,
                is not delivered here: ``at_least_once``, its claim lapses and another
                node delivers it after the delivery lease; ``at_most_once``, it is
                lost, as is a tick whose winner dies between claim and delivery.
        """
        if self._stopping:
            # Stopping: claims nothing new; the other nodes claim this tick.
            _call(skipped, reference, None, None)
            return
        if self._clock is not None and not self._attached:
            self._attached = True
            self._clock.attach(self)
        lease = self.delivery_lease if delivery == "at_least_once" else None
        tick = _Tick(reference, fire_at, period, deliver, skipped, lease, backfill, at)
        if backfill:
            self._claim(tick, first=True)
            return
        waiting = self._waiting.get(reference)
        if waiting is not None:
            # A claim of this reference is in flight: this tick waits behind it. An
            # at_most_once tick already waiting is coalesced into a newer at_most_once one
            # (not claimed at all: the policy engine's rule for one tick waiting behind a
            # decision in flight). An at_least_once tick is never coalesced away here: all
            # of them wait, and are claimed together when the claim in flight answers,
            # each within its own window (the coordinator's lateness check); the winner
            # then puts each through the schedule's policies (grace, overlap).
            if tick.lease is None:
                _, older = supersede(next((t for t in waiting if t.lease is None), None), tick)
                if older is not None:
                    waiting.remove(older)
                    self.counters.claims_coalesced += 1
                    _call(older.skipped, reference, Outcome.COALESCED, 1)
            waiting.append(tick)
            return
        self._waiting[reference] = []
        self._claim(tick, first=True)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (nothing new starts)."""
        return self._closed

    def run(self, reference: str, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run one coordinator call in the background (counted while in flight)."""
        self._idle.clear()
        task = asyncio.get_running_loop().create_task(work, name=f"tocsin-cron-claim-{reference}")
        self._inflight[task] = reference
        task.add_done_callback(self._done)
        return task

    def _claim(self, tick: _Tick, *, first: bool, after: float | None = None) -> None:
        """Queue the tick's claim: every claim asked for in this turn of the event loop
        (a tick's due instants fire in one timer callback) goes in one batch. A first
        claim waits for ``after`` (default: its own instant) on the coordinator's clock.
        Once the node is stopping, nothing new is claimed (the tick is not delivered here)."""
        if self._stopping:
            _call(tick.skipped, tick.reference, None, None)
            return
        self._idle.clear()
        wait = (tick.fire_at if after is None else after) if first else None
        self._batch.append((tick, first, wait))
        if self._flush_handle is None:
            self._flush_handle = asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Claim the queued ticks: one batch per instant waited for (a regular tick waits
        for its instant on the coordinator's clock; a watch's re-claim waits for none),
        split at :data:`MAX_BATCH`."""
        self._flush_handle = None
        batch, self._batch = self._batch, []
        groups: dict[float | None, list[tuple[_Tick, bool]]] = {}
        for tick, first, wait in batch:
            groups.setdefault(wait, []).append((tick, first))
        for instant, group in groups.items():
            for at in range(0, len(group), MAX_BATCH):
                part = group[at : at + MAX_BATCH]
                task = self.run(part[0][0].reference, self._claim_batch(instant, part))
                self._batches[task] = [t for t, first in part if first and not t.backfill]
        if not self._inflight:
            self._idle.set()

    async def _claim_batch(self, instant: float | None, batch: list[tuple[_Tick, bool]]) -> None:
        if instant is not None and self._not_early is not None:  # cluster/_time.py
            await self._not_early(instant)
        # The keys as tick_key() spells them, the instant's text made once per instant
        # (a batch is most often one instant: ~5 µs a tick saved).
        texts: dict[float, str] = {}
        keep = self.claim_retention
        requests: list[TickRequest] = []
        for tick, _ in batch:
            at = tick.fire_at
            text = texts.get(at)
            if text is None:
                text = texts[at] = _instant_text(at)
            requests.append(
                TickRequest(
                    f"{tick.reference}@{text}",
                    tick.reference,
                    at,
                    claim_ttl(tick.period),
                    keep=keep,
                    lease=tick.lease,
                    backfill=tick.backfill,
                )
            )
        try:
            claims = await claim_ticks(self.coordinator, requests, self._node)  # cancelled: _done
            if len(claims) != len(requests):
                raise RuntimeError(
                    f"the coordinator answered {len(claims)} claims for {len(requests)} ticks"
                )
        except Exception as exc:  # CoordinatorError, or anything a custom coordinator raises
            # Unknown outcome for every tick of the batch: none is delivered here (never
            # doubled), each is a claim_error outcome, counted.
            self._count_failed(len(batch))
            first_key = requests[0].key
            more = f" and {len(batch) - 1} more" if len(batch) > 1 else ""
            self.outage.failed(exc, f"tick {first_key}{more} not delivered")
            detail = str(exc) or repr(exc)
            now = self.clock.wall()
            for tick, _ in batch:
                if (
                    tick.lease is not None
                    and not self._closed
                    and now + RECLAIM_AFTER_ERROR - tick.fire_at <= claim_ttl(tick.period)
                ):
                    # at_least_once: an unknown outcome is not a lost tick while its
                    # window lasts (a coordinator busy or locked, say by a frozen peer's
                    # transaction): ask again. A claim this node may have won unseen is
                    # its own: the coordinator answers it as any other winner's, so the
                    # tick is delivered once that delivery lease has passed, never twice.
                    self._watch(tick, RECLAIM_AFTER_ERROR)
                else:
                    _call(tick.skipped, tick.reference, Outcome.CLAIM_ERROR, detail)
            return
        self.outage.ok()
        for (tick, first), request, claim in zip(batch, requests, claims, strict=True):
            self._count(claim, first)
            self._answer(tick, request.key, claim)

    def _count_failed(self, ticks: int) -> None:
        self.counters.claims_failed += ticks

    def _count(self, claim: TickClaim, first: bool) -> None:
        counters = self.counters
        outcome = claim.outcome
        if outcome is ClaimOutcome.WON:
            counters.claims_won += 1
            if not first:
                counters.claims_reclaimed += 1
        elif not first:
            pass  # a watch looking again: the tick was counted when first lost
        elif outcome is ClaimOutcome.LOST:
            counters.claims_lost += 1
        elif outcome is ClaimOutcome.LATE:
            counters.claims_skipped_late += 1
        else:
            counters.claims_skipped_paused += 1

    def _answer(self, tick: _Tick, key: str, claim: TickClaim) -> None:
        """Act on the coordinator's answer for one tick: deliver, watch, or tell skipped."""
        reference = tick.reference
        outcome = claim.outcome
        if outcome is not ClaimOutcome.PAUSED:
            # Any other answer says it is not paused (checked in the claim's atomic step).
            self._notes.pop(reference, None)
        if outcome is ClaimOutcome.WON:
            grant = None if tick.lease is None else _Grant(self, tick, key, claim.fence)
            at = tick.at
            if at is not None and not self._closed:
                clock = self.clock
                if at > clock.monotonic():
                    if grant is not None and self._stopping:
                        # at_least_once, stopping: left to lapse, as at begin_stop().
                        grant.abandon()
                        _call(tick.skipped, reference, None, None)
                        return
                    if self._drain_over:
                        # at_most_once, answered once the stop's wait was over: cut off
                        # as the ticks that wait left (the others recorded it elsewhere).
                        _call(tick.skipped, reference, Outcome.DEAD_LETTER, _CUT_TICK)
                        return
                    # Won ahead: delivered at its time from this node's timer; an
                    # at_least_once claim is held meanwhile.
                    if grant is not None:
                        grant.hold()
                    bucket = math.floor(at * 1000.0)
                    slot = self._early.get(bucket)
                    if slot is None:
                        handle = clock.call_at(at, partial(self._at, bucket))
                        slot = self._early[bucket] = (handle, [])
                    slot[1].append((tick, claim.fence, grant))
                    return
            self._hand(tick, claim.fence, grant, held=False)
            return
        if outcome is ClaimOutcome.LOST and claim.retry_in is not None and not self._closed:
            # An at_least_once winner not done yet: look again when its lease ends.
            self._watch(tick, max(claim.retry_in, 0.01))
            return
        if outcome is ClaimOutcome.LOST:
            what: Outcome = Outcome.CLAIMED_ELSEWHERE
        elif outcome is ClaimOutcome.LATE:
            what = Outcome.CLAIM_LATE
        else:
            what = Outcome.PAUSED
            if reference not in self._notes and not self._closed:
                self.run(reference, self._learn_notes())
        detail = "paused cluster-wide" if what is Outcome.PAUSED else None
        _call(tick.skipped, reference, what, detail)

    def _hand(self, tick: _Tick, fence: int, grant: _Grant | None, *, held: bool) -> None:
        """Deliver a won tick now (``held``: its grant is renewed already)."""
        if grant is None:
            _call(tick.deliver, tick.reference, fence, None)
            return
        handed = False
        try:
            handed = bool(tick.deliver(fence, grant))
        except Exception:
            _log.exception("cron %r: the tick's callback failed", tick.reference)
        if not handed:
            grant.abandon()  # another node delivers it once the lease has passed
        elif not held:
            grant.hold()

    def _at(self, bucket: int) -> None:
        """The delivery time of the ticks won ahead in millisecond ``bucket`` has come:
        deliver them."""
        slot = self._early.pop(bucket, None)
        if slot is None:
            return
        notes = self._notes
        for tick, fence, grant in slot[1]:
            if tick.reference in notes:
                # Paused cluster-wide (by this node) since it was won: not delivered by
                # any node (an at_least_once claim is marked done, never re-claimed).
                if grant is not None:
                    grant.finished()
                _call(tick.skipped, tick.reference, Outcome.PAUSED, "paused cluster-wide")
                continue
            if grant is not None and grant.over:
                # Taken over while this node waited (it froze past its delivery lease):
                # the other winner delivers it, with a larger fence.
                _call(tick.skipped, tick.reference, Outcome.CLAIMED_ELSEWHERE, None)
                continue
            self._hand(tick, fence, grant, held=True)
        self._check_drained()

    def _watch(self, tick: _Tick, delay: float) -> None:
        """Claim ``tick`` again (not a first claim) ``delay`` seconds from now, unless
        :meth:`close` comes first."""
        clock = self.clock
        handle: TimerHandle | None = None

        def due() -> None:
            if handle is not None and self._watches.pop(handle, None) is not None:
                self._claim(tick, first=False)

        handle = clock.call_at(clock.monotonic() + delay, due)
        self._watches[handle] = tick

    async def _ask(self, tick: _Tick, key: str) -> TickClaim | None:
        """One claim on its own (:meth:`claim`), counted; ``None`` if it raised."""
        try:
            claim = await self.coordinator.claim_tick(
                key,
                tick.reference,
                tick.fire_at,
                claim_ttl(tick.period),
                self._node,
                keep=self.claim_retention,
                lease=tick.lease,
                backfill=tick.backfill,
            )
        except Exception as exc:  # CoordinatorError, or anything a custom coordinator raises
            self._count_failed(1)
            self.outage.failed(exc, f"tick {key} not delivered")
            return None
        self.outage.ok()
        self._count(claim, True)
        return claim

    def _done(self, task: asyncio.Task[None]) -> None:
        self._inflight.pop(task)
        firsts = self._batches.pop(task, ())  # regular ticks' first claims
        # A reference with first claims in another batch still in flight (a due set
        # split at MAX_BATCH) keeps its waiting ticks until that one answers too.
        busy = {t.reference for ts in self._batches.values() for t in ts} if firsts else set()
        if task.cancelled():  # by close(), perhaps before it even started
            for tick in firsts:
                _call(tick.skipped, tick.reference, None, None)
        for reference in dict.fromkeys(t.reference for t in firsts):
            if reference in busy:
                continue
            waiting = self._waiting.pop(reference, None)
            if not waiting:
                continue
            if task.cancelled():
                for late in waiting:
                    _call(late.skipped, reference, None, None)
                continue
            # After this one, in instant order, in one round trip: every waiting tick's
            # instant has come (the last one's is waited for on the coordinator's clock).
            self._waiting[reference] = []
            for late in waiting:
                self._claim(late, first=True, after=waiting[-1].fire_at)
        self._progress += 1
        if not self._inflight and not self._batch:
            self._idle.set()
        self._check_drained()

    # -- a graceful stop ---------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        """Whether a graceful stop began (:meth:`begin_stop`): nothing new is claimed."""
        return self._stopping

    @property
    def ahead(self) -> float:
        """The longest lead a claim is asked with (``Cluster(claim_ahead=...)``): no tick
        won ahead waits longer for its delivery time."""
        return self._ahead

    def begin_stop(self) -> bool:
        """A graceful stop begins: claim nothing new from now on; return whether
        :meth:`drain` has something to wait for.

        ``at_most_once`` ticks won ahead wait for their delivery time (:meth:`drain`): the
        other nodes recorded ``claimed_elsewhere`` for them, so no other node delivers
        them. ``at_least_once`` ticks won ahead are let go at once, as a winner that stops
        always did: their claims lapse and another node delivers them after the delivery
        lease (this node may not see ``receive`` return and mark the claim done before it
        leaves). A claim asked ahead and still in flight is waited for too (the tick it
        wins is delivered at its time); one still unanswered when the wait ends is
        cancelled when the node closes, as before (its tick is not delivered here).
        """
        self._stopping = True
        for bucket, (handle, ticks) in list(self._early.items()):
            kept: list[tuple[_Tick, int, _Grant | None]] = []
            for tick, fence, grant in ticks:
                if grant is None:
                    kept.append((tick, fence, grant))
                    continue
                grant.abandon()
                _call(tick.skipped, tick.reference, None, None)
            if kept:
                self._early[bucket] = (handle, kept)
            else:
                handle.cancel()
                del self._early[bucket]
        return self._pending()

    def _pending(self) -> bool:
        """Whether a tick won ahead waits for its time, or a claim asked ahead of its
        tick's time (not come yet) waits for its answer."""
        if self._early:
            return True
        now = self.clock.monotonic()
        ticks = [t for t, _, _ in self._batch]
        ticks.extend(t for batch in self._batches.values() for t in batch)
        return any(t.at is not None and t.at > now for t in ticks)

    def _check_drained(self) -> None:
        waiter = self._drained
        if waiter is not None and not waiter.done() and not self._pending():
            waiter.set_result(None)

    async def drain(self, end: float) -> None:
        """Stopping (after :meth:`begin_stop`): wait until every tick won ahead has been
        delivered at its time (a claim asked ahead and in flight: once answered), at
        most ``claim_ahead`` (the longest lead: no tick won ahead waits longer) and at
        most until ``end`` (this clock's monotonic: the stop's grace). What is left
        then is cut off: a tick whose time has come is
        delivered then; one whose time has not come is delivered by no node, and is
        recorded ``dead_letter`` here (detail: :data:`_CUT_TICK`).
        """
        clock = self.clock
        until = min(end, clock.monotonic() + self._ahead)
        if self._pending() and clock.monotonic() < until:
            waiter = self._drained = asyncio.get_running_loop().create_future()

            def wake() -> None:
                if not waiter.done():
                    waiter.set_result(None)

            handle = clock.call_at(until, wake)
            try:
                await waiter
            finally:
                handle.cancel()
                self._drained = None
        now = clock.monotonic()
        self._drain_over = True
        early, self._early = self._early, {}
        for bucket in sorted(early):
            handle, ticks = early[bucket]
            handle.cancel()
            if bucket <= math.floor(now * 1000.0):
                self._early[bucket] = (handle, ticks)
                self._at(bucket)  # its time has come (its timer is due in this instant)
                continue
            for tick, _, grant in ticks:
                if grant is not None:
                    grant.abandon()
                    _call(tick.skipped, tick.reference, None, None)
                else:
                    _call(tick.skipped, tick.reference, Outcome.DEAD_LETTER, _CUT_TICK)

    async def close(self) -> None:
        """Cancel claims in flight and watches (their ticks, and those waiting behind
        them, are not delivered here) and detach the clock."""
        self._closed = True
        for handle in list(self._watches):
            handle.cancel()
        self._watches.clear()
        early, self._early = self._early, {}
        for handle, ticks in early.values():
            handle.cancel()
            for tick, _, grant in ticks:
                if grant is not None:
                    grant.abandon()  # lapses: another node delivers it after the lease
                    _call(tick.skipped, tick.reference, None, None)
                else:  # at_most_once, won: no other node delivers it
                    _call(tick.skipped, tick.reference, Outcome.DEAD_LETTER, _CUT_TICK)
        if self._flush_handle is not None:  # queued, never asked: not delivered here
            self._flush_handle.cancel()
            self._flush_handle = None
        batch, self._batch = self._batch, []
        for tick, first, _ in batch:
            if first and not tick.backfill:
                waiting = self._waiting.pop(tick.reference, None) or []
                _call(tick.skipped, tick.reference, None, None)
                for late in waiting:
                    _call(late.skipped, tick.reference, None, None)
        while self._inflight:
            tasks = list(self._inflight)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        self._idle.set()
        if self._attached and self._clock is not None:
            self._attached = False
            self._clock.detach(self)

    async def claim(self, reference: str, fire_at: float, period: float) -> bool:
        """Claim the tick of ``reference`` at ``fire_at`` (epoch seconds, the instant the
        cron expression gives), ``at_most_once``; ``True`` means deliver it, ``False``
        means do not.

        ``period`` is the cron period at this tick (:func:`cron_period`); the claim's TTL
        is :func:`claim_ttl` of it. Never raises for a coordinator failure (whatever it
        raised): that is a ``False`` (nothing delivered) counted in ``claims_failed``.
        """
        tick = _Tick(reference, fire_at, period, lambda fence, done: True, None, None, False)
        claim = await self._ask(tick, tick_key(reference, fire_at))
        return claim is not None and claim.outcome is ClaimOutcome.WON
