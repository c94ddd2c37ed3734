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
  coordinator), later ticks of that reference do not queue more claims; the latest one
  waits behind it, the ones in between are coalesced into it (``claims_coalesced``), and
  it is claimed once the first claim has answered: ticks are delivered in instant order,
  a stall releases at most two, never a burst.

What is not guaranteed (as in GoAkt): a winner that dies after claiming and before
delivering loses that tick cluster-wide; delivery resumes at the next tick.

Prior art: GoAkt ``claimClusterFire``, procrastinate's ``periodic_defers`` unique key.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Final, final

from ..clock import Clock
from ..durable._spi import Outage
from ..errors import ScheduleReferenceRequiredError
from ._protocol import ClaimOutcome, Coordinator
from ._values import Counters

if TYPE_CHECKING:
    from ..cron import CronExpression

__all__ = [
    "MAX_TTL",
    "MIN_TTL",
    "CronClaims",
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
    nxt = expression.next_after(datetime.fromtimestamp(fire_at, zone))
    return math.inf if nxt is None else nxt.timestamp() - fire_at


def tick_key(reference: str, fire_at: float) -> str:
    """``f"{reference}@{fire_instant}"`` with the instant in ISO 8601 UTC.

    Whole seconds print without a fraction (cron instants always are); anything finer
    keeps milliseconds, so two distinct instants never share a key.
    """
    moment = datetime.fromtimestamp(round(fire_at, 3), UTC)
    text = moment.isoformat(timespec="seconds" if moment.microsecond == 0 else "milliseconds")
    return f"{reference}@{text.replace('+00:00', 'Z')}"


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


def _call(callback: Callable[[], object] | None, reference: str) -> None:
    if callback is None:
        return
    try:
        callback()
    except Exception:
        _log.exception("cron %r: the tick's callback failed", reference)


@final
class _Tick:
    """A tick waiting for its reference's claim in flight."""

    __slots__ = ("deliver", "fire_at", "period", "skipped")

    def __init__(
        self,
        fire_at: float,
        period: float,
        deliver: Callable[[], object],
        skipped: Callable[[], object] | None,
    ) -> None:
        self.fire_at = fire_at
        self.period = period
        self.deliver = deliver
        self.skipped = skipped


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
        not_early: awaited with the fire instant before a tick of the scheduler is
            claimed; returns once the instant has come on the coordinator's clock
            (``ClusterTime.not_early``, ``cluster/_time.py``).
    """

    def __init__(
        self,
        coordinator: Coordinator,
        *,
        node: str,
        counters: Counters,
        clock: Clock | None = None,
        not_early: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self._coordinator = coordinator
        self._not_early = not_early
        self._node = node
        self._counters = counters
        self._clock = clock
        self._attached = False
        #: Claims in flight, with what to call if they are cancelled (close).
        self._inflight: dict[asyncio.Task[None], tuple[str, Callable[[], object] | None]] = {}
        #: References with a claim in flight -> the latest tick waiting behind it (None:
        #: none): one claim in flight per reference.
        self._waiting: dict[str, _Tick | None] = {}
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

    # -- the ManualClock activity-tracker protocol ---------------------------------------

    def is_idle(self) -> bool:
        return not self._inflight

    @property
    def progress(self) -> int:
        return self._progress

    async def wait_idle(self) -> None:
        await self._idle.wait()

    # -- the scheduler's hook ------------------------------------------------------------

    def deliver_if_won(
        self,
        reference: str,
        fire_at: float,
        period: float,
        deliver: Callable[[], object],
        skipped: Callable[[], object] | None = None,
    ) -> None:
        """Claim the tick in the background and call ``deliver()`` only if this node won,
        else ``skipped()`` (lost, late, paused, failed, or cancelled by :meth:`close`).

        The call the scheduler makes from its (synchronous) timer callback in place of
        delivering a cron tick; it never blocks. ``deliver`` should re-check that the
        schedule is still live (a cancel during the claim drops the tick); ``skipped``
        lets it retire a schedule whose last tick another node delivered. A callback
        that raises is logged.
        """
        if self._clock is not None and not self._attached:
            self._attached = True
            self._clock.attach(self)
        tick = _Tick(fire_at, period, deliver, skipped)
        if reference in self._waiting:
            # A claim of this reference is in flight: this tick waits behind it, and an
            # older one already waiting is coalesced into it (not claimed at all).
            older = self._waiting[reference]
            self._waiting[reference] = tick
            if older is not None:
                self._counters.claims_coalesced += 1
                _call(older.skipped, reference)
            return
        self._start(reference, tick)

    def _start(self, reference: str, tick: _Tick) -> None:
        self._waiting[reference] = None
        self._idle.clear()
        task = asyncio.get_running_loop().create_task(
            self._deliver_if_won(reference, tick.fire_at, tick.period, tick.deliver, tick.skipped),
            name=f"tocsin-cron-claim-{reference}",
        )
        self._inflight[task] = (reference, tick.skipped)
        task.add_done_callback(self._done)

    async def _deliver_if_won(
        self,
        reference: str,
        fire_at: float,
        period: float,
        deliver: Callable[[], object],
        skipped: Callable[[], object] | None,
    ) -> None:
        if self._not_early is not None:  # claim earliness (cluster/_time.py)
            await self._not_early(fire_at)
        won = await self.claim(reference, fire_at, period)  # cancelled: see _done
        _call(deliver if won else skipped, reference)

    def _done(self, task: asyncio.Task[None]) -> None:
        reference, skipped = self._inflight.pop(task)
        waiting = self._waiting.pop(reference, None)
        if task.cancelled():  # by close(), perhaps before it even started: not delivered
            _call(skipped, reference)
            if waiting is not None:
                _call(waiting.skipped, reference)
        elif waiting is not None:
            self._start(reference, waiting)  # after this one: in instant order
        self._progress += 1
        if not self._inflight:
            self._idle.set()

    async def close(self) -> None:
        """Cancel claims in flight (their ticks, and those waiting behind them, are not
        delivered) and detach the clock."""
        tasks = list(self._inflight)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._attached and self._clock is not None:
            self._attached = False
            self._clock.detach(self)

    async def claim(self, reference: str, fire_at: float, period: float) -> bool:
        """Claim the tick of ``reference`` at ``fire_at`` (epoch seconds, the instant the
        cron expression gives); ``True`` means deliver it, ``False`` means do not.

        ``period`` is the cron period at this tick (:func:`cron_period`); the claim's TTL
        is :func:`claim_ttl` of it. Never raises for a coordinator failure (whatever it
        raised): that is a ``False`` (nothing delivered) counted in ``claims_failed``.
        """
        counters = self._counters
        try:
            outcome = await self._coordinator.claim_tick(
                tick_key(reference, fire_at), reference, fire_at, claim_ttl(period), self._node
            )
        except Exception as exc:  # CoordinatorError, or anything a custom coordinator raises
            counters.claims_failed += 1
            self.outage.failed(exc, f"tick {tick_key(reference, fire_at)} not delivered")
            return False
        self.outage.ok()
        if outcome is ClaimOutcome.WON:
            counters.claims_won += 1
            return True
        if outcome is ClaimOutcome.LOST:
            counters.claims_lost += 1
        elif outcome is ClaimOutcome.LATE:
            counters.claims_skipped_late += 1
        else:
            counters.claims_skipped_paused += 1
        return False
