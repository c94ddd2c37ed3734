# SPDX-License-Identifier: Apache-2.0
"""Cluster time: this node's offset to the coordinator's clock, measured at each renewal.

Every lease renewal (and join) is one round trip whose answer carries the coordinator's
clock at the step (``LeaseRow.renewed``: PostgreSQL ``clock_timestamp()``, Redis ``TIME``,
the SQLite and memory coordinators' clock). The step happened somewhere inside the round
trip, so with the node's own wall time ``w`` read as the call was sent and the round trip
``rtt`` (on the monotonic clock, so a wall step during the call cannot distort it):

    offset = coordinator_time - (w + rtt / 2),   error <= rtt / 2   (the sample's bound)

(Cristian's algorithm, as NTP's offset/delay on one exchange). In cluster mode the
system's clock is an :class:`~tocsin.clock.OffsetClock` over the clock it was given, and
each accepted sample becomes its offset: cron instants, the claim's earliness and durable
due times then use the coordinator's time, within the bound.

Which samples are applied: one no worse than the applied one's (its bound aged by
:data:`DRIFT` per second), or, once the applied one is older than a lease, one whose bound
is within ``max_skew / 2``, or the first after this node's own wall clock jumped (the old
offset is then wrong by the jump). So a renewal that waited 20 s on a frozen coordinator
(bound 10 s) does not move the schedule by up to 10 s, and a renewal whose answer sat
unread while the node's event loop was busy (delivering a burst of ticks: the step then
happened early in the round trip, and the estimate is off by up to half of it) does not
make the node fire late by that much: the smallest round trip wins, as in NTP's filter.

Earliness (DESIGN "Cluster time"): right before a tick is claimed, the node checks that
the instant has come on the coordinator's clock, within ``max_skew``. The last applied
sample, carried forward on the *monotonic* clock (so a step of this node's wall clock
that nobody has reported yet cannot fool it), gives a lower bound of the coordinator's
time now (the time it read, plus the age of its answer less :data:`DRIFT` per second);
when that proves the instant reached within ``max_skew`` (the sample not older than a
lease) nothing is asked. Otherwise the
node reads the coordinator's clock (``Coordinator.now()``) and, when the instant is more
than ``max_skew`` away, waits for it and asks again (at most :data:`EARLY_RETRIES` times).

A reported jump of this node's own wall clock (a ManualClock's ``jump_wall``, the wall
watch's finding) marks the offset stale and measures it again at once with one
``Coordinator.now()`` round trip, not at the next renewal.

An offset beyond ``max_skew`` is corrected all the same; the node warns once a minute
(``tocsin.cluster`` logger), as it does while its samples are too uncertain to keep it
within ``max_skew``: the machine's clock (NTP) or the coordinator's latency needs fixing.

Prior art: Cristian's probabilistic clock synchronisation (1989); NTP's clock filter
(prefer the sample with the smallest delay); Spanner's TrueTime (act only once the
uncertainty interval has passed the instant).
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Final, final

from ..clock import Clock, OffsetClock
from ._periodic import sleep
from ._values import Counters

__all__ = ["DRIFT", "EARLY_RETRIES", "WARN_EVERY", "ClusterTime"]

_log = logging.getLogger("tocsin.cluster")

#: Seconds between two warnings about this node's clock (offset beyond ``max_skew``, or
#: samples too uncertain to stay within it).
WARN_EVERY: Final = 60.0
#: How fast (seconds per second) an applied sample's bound is taken to grow with age: a
#: generous clock-rate difference (100 ppm; quartz is within tens).
DRIFT: Final = 1e-4
#: Times a claim waits for its instant on the coordinator's clock before it claims anyway
#: (a coordinator clock that keeps stepping back must not hold the schedule forever).
EARLY_RETRIES: Final = 3


@final
class ClusterTime:
    """One node's measure of the coordinator's clock (``system.cluster.offset``).

    Args:
        clock: the node's clock. An :class:`~tocsin.clock.OffsetClock` (what cluster mode
            installs) is corrected: its offset is set to each applied sample, measured
            against its inner clock. Any other clock is only measured.
        node: this node's name (for the warnings).
        max_skew: seconds of offset, or of uncertainty, beyond which the node warns, and
            of earliness on the coordinator's clock beyond which a claim waits.
        lease: seconds; a sample older than a lease is not trusted for earliness.
        coordinator_now: reads the coordinator's clock (``Coordinator.now``).
        counters: ``claims_early`` is counted there.
    """

    def __init__(
        self,
        clock: Clock,
        *,
        node: str,
        max_skew: float,
        lease: float,
        coordinator_now: Callable[[], Awaitable[float]],
        counters: Counters,
    ) -> None:
        self._clock = clock
        self._corrected = clock if isinstance(clock, OffsetClock) else None
        #: The node's own (uncorrected) clock: what the offset is measured against.
        self._own = clock.inner if isinstance(clock, OffsetClock) else clock
        self._node = node
        self.max_skew = max_skew
        self._lease = lease
        self._coordinator_now = coordinator_now
        self._counters = counters
        self._offset = 0.0 if self._corrected is None else self._corrected.offset
        self._bound = math.inf
        self._measured_at: float | None = None
        #: The coordinator's clock read by the applied sample: at its answer (monotonic
        #: ``_measured_at``) the coordinator's clock was at least this (the step it was
        #: read in lay inside the round trip).
        self._coordinator_at = 0.0
        #: This node's own wall clock jumped since the applied sample was taken.
        self._stale = False
        self._remeasure: asyncio.Task[None] | None = None
        self._warned_at = -math.inf
        self._unsubscribe: Callable[[], None] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Listen for jumps of this node's own wall clock (they make the offset stale)."""
        if self._unsubscribe is None:
            self._unsubscribe = self._own.on_wall_jump(self._own_jumped)

    def stop(self) -> None:
        """Stop listening; a measurement in flight is cancelled."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        task, self._remeasure = self._remeasure, None
        if task is not None:
            task.cancel()

    def _own_jumped(self, seconds: float) -> None:
        # The coordinator's clock did not jump with ours: the applied offset is off by the
        # jump. Measure again now rather than at the next renewal (up to lease/3 away).
        self._stale = True
        if self._unsubscribe is None or self._remeasure is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a jump made outside the loop: the next renewal measures
            return
        self._remeasure = loop.create_task(
            self._measure_now(), name=f"tocsin-cluster-time-{self._node}"
        )

    async def _measure_now(self) -> None:
        try:
            begun = self.begin()
            try:
                coordinator_time = await self._coordinator_now()
            except Exception as exc:  # the next renewal measures (and reports the outage)
                _log.info("node %s: measuring the clock offset failed: %s", self._node, exc)
                return
            self.sample(begun, coordinator_time)
        finally:
            self._remeasure = None

    # -- reading -----------------------------------------------------------------------

    @property
    def offset(self) -> float:
        """Seconds to add to this node's own wall clock to read the coordinator's
        (negative: this node is fast). 0.0 until the first renewal has answered."""
        return self._offset

    @property
    def bound(self) -> float:
        """The applied sample's error bound (half its round trip), seconds; ``inf`` before
        the first sample."""
        return self._bound

    def trusted(self) -> bool:
        """Whether this node's offset to the coordinator's clock is known within half of
        ``max_skew``: measured, and not made stale by a jump of its own clock since.
        Only then are cron claims asked ahead of their time (``Cluster(claim_ahead=...)``):
        a node whose clock stepped forward, not yet measured again, fires at instants
        still in the coordinator's future, and claiming them ahead would only widen
        that gap."""
        return (
            self._measured_at is not None and not self._stale and self._bound <= self.max_skew / 2
        )

    def now(self) -> float:
        """The coordinator's clock as this node estimates it (epoch seconds)."""
        return self._own.wall() + self._offset

    # -- measuring ---------------------------------------------------------------------

    def begin(self) -> tuple[float, float]:
        """Read as a coordinator call carrying its clock is sent: (monotonic, own wall)."""
        return self._clock.monotonic(), self._own.wall()

    def sample(self, begun: tuple[float, float], coordinator_time: float) -> None:
        """One answered round trip, started at ``begun`` (:meth:`begin`), that read
        ``coordinator_time`` on the coordinator's clock: apply it if it is good enough
        (see the module docstring), then warn (once a minute) if this node is off by
        more than ``max_skew`` or cannot tell within it."""
        sent, wall = begun
        received = self._clock.monotonic()
        half = max(0.0, received - sent) / 2
        estimate = coordinator_time - (wall + half)
        if self._accepts(half, received):
            self._offset, self._bound = estimate, half
            self._measured_at, self._stale = received, False
            self._coordinator_at = coordinator_time
            if self._corrected is not None:
                self._corrected.set_offset(estimate)
        self._warn_if_off(received)

    def _accepts(self, half: float, now: float) -> bool:
        measured = self._measured_at
        if self._stale or measured is None:
            return True
        if half <= self._bound + (now - measured) * DRIFT:
            return True
        return now - measured > self._lease and half <= self.max_skew / 2

    def _warn_if_off(self, now: float) -> None:
        offset, bound = self._offset, self._bound
        if abs(offset) <= self.max_skew and bound <= self.max_skew:
            return
        if now - self._warned_at < WARN_EVERY:
            return
        self._warned_at = now
        if abs(offset) > self.max_skew:
            side = "behind" if offset > 0 else "ahead of"
            _log.warning(
                "node %s: its clock is %.3f s %s the cluster coordinator's (max_skew %g s); "
                "cron instants, claims and durable due times follow the coordinator's "
                "clock (corrected by the offset measured at each lease renewal, within "
                "%.3f s). Fix this machine's clock (NTP)",
                self._node,
                abs(offset),
                side,
                self.max_skew,
                bound,
            )
        else:
            _log.warning(
                "node %s: its offset to the cluster coordinator's clock is known only "
                "within %.3f s (half a lease renewal's round trip), more than max_skew "
                "(%g s); its cron claims read the coordinator's clock first",
                self._node,
                bound,
                self.max_skew,
            )

    # -- earliness ---------------------------------------------------------------------

    def _proves_reached(self, fire_at: float) -> bool:
        """Whether the last sample, carried forward on the monotonic clock, shows
        ``fire_at`` reached on the coordinator's clock within ``max_skew``."""
        measured = self._measured_at
        if measured is None:
            return False
        age = self._clock.monotonic() - measured
        if age > self._lease:
            return False
        earliest = self._coordinator_at + age * (1 - DRIFT)  # its clock now, at the least
        return fire_at - earliest <= self.max_skew

    async def not_early(self, fire_at: float) -> None:
        """Return once ``fire_at`` (epoch seconds) is reached on the coordinator's clock,
        within ``max_skew``: at once when this node's measure proves it, else after
        reading the coordinator's clock and waiting out what is left (each wait counted
        in ``claims_early``, at most :data:`EARLY_RETRIES`).

        Never raises for a coordinator failure: the claim that follows meets the same
        coordinator and is counted as it fails.
        """
        if self._proves_reached(fire_at):
            return
        for _ in range(EARLY_RETRIES):
            try:
                early = fire_at - await self._coordinator_now()
            except Exception:  # CoordinatorError, or anything a custom coordinator raises
                return
            if early <= self.max_skew:
                return
            self._counters.claims_early += 1
            _log.info(
                "node %s: a cron tick came %.3f s before its instant on the coordinator's "
                "clock; claimed at the instant",
                self._node,
                early,
            )
            await sleep(self._clock, early)
