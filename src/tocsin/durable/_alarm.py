# SPDX-License-Identifier: Apache-2.0
"""One durable identity's alarm: the single deadline its tasks ride in the shared heap.

It owns when the alarm rings (``due``, wall epoch seconds), whether a drain turn is
already queued for it (``queued``), and the backoff of a failing alarm path
(``retries``); nobody else writes them. Ringing queues a drain turn through its host
(the identity's handle, which activates the actor on demand); a failed store or
coordinator call of the alarm path arms it again after a capped backoff.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, final

from .._deadlines import Deadline
from ._outage import retry_delay

if TYPE_CHECKING:
    from ..actor._spi import Runtime
    from ._outage import Outage

__all__ = ["Alarm", "AlarmHost"]


class AlarmRuntime(Protocol):
    """What the alarm reads of the durable runtime (``DurableRuntime`` is the one)."""

    @property
    def stopping(self) -> bool: ...
    @property
    def retry_cap(self) -> float: ...
    @property
    def store_outage(self) -> Outage: ...
    def outage_of(self, exc: BaseException) -> Outage: ...


class AlarmHost(Protocol):
    """What the alarm uses of its identity (``DurableHandle`` is the one)."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def durable(self) -> AlarmRuntime: ...
    @property
    def path(self) -> str: ...
    def queue_drain(self) -> bool: ...


@final
class Alarm(Deadline):
    """A durable identity's single alarm in the shared heap (internal)."""

    __slots__ = ("due", "host", "queued", "retries")

    def __init__(self, host: AlarmHost) -> None:
        super().__init__()
        self.host = host
        #: The wall epoch the alarm is armed for (``None``: not armed).
        self.due: float | None = None
        #: A drain turn is queued in the actor's mailbox and has not started yet.
        self.queued = False
        #: Failed store or coordinator calls of the alarm path in a row (the next
        #: retry's backoff).
        self.retries = 0

    def arm(self, due: float) -> None:
        """Make sure the alarm rings no later than ``due`` (wall epoch seconds)."""
        # `due` is set exactly while the deadline is in the heap (ring, rearm and drained
        # clear it), so it answers "armed?" without a call into the heap's module.
        if self.due is not None and self.due <= due:
            return
        runtime = self.host.runtime
        clock = runtime.clock
        wait = due - clock.wall()
        if wait <= 0.0 and self.queued:
            # A queued drain that has not started reads every task due at its start
            # (this one too) and re-arms from the store when it ends: an alarm now would
            # only ring to find it queued. `queue` in a loop paid a timer and a ring per
            # task for nothing (#24).
            return
        self.due = due
        runtime.deadlines.add(clock.monotonic() + max(0.0, wait), self)

    def rearm(self, due: float | None) -> None:
        """Set the alarm to exactly ``due`` (or disarm it)."""
        if self.due is not None:  # armed (see arm): take it out of the heap first
            self.host.runtime.deadlines.remove(self)
            self.due = None
        if due is not None:
            self.arm(due)

    def fire(self, now: float, deadline: float) -> None:
        self.ring()

    def ring(self) -> None:
        """Run the due tasks inside the actor's turn (activating it): queue one drain."""
        self.due = None
        host = self.host
        if self.queued or not host.runtime.running or host.durable.stopping:
            return
        self.queued = True
        if not host.queue_drain():
            # Refused (suspended): without this reset no later alarm would ever drain.
            self.queued = False

    def drain_started(self) -> None:
        """The queued drain turn began (or will never run): a later ring queues the next."""
        self.queued = False

    def retry_later(self, exc: BaseException, during: str) -> None:
        """A store or coordinator call of the alarm path failed: keep the alarm, armed
        again after a capped backoff (the outage is logged once, counted)."""
        host = self.host
        host.durable.outage_of(exc).failed(exc, f"{during} of durable {host.path}")
        self.back_off()

    def back_off(self) -> None:
        """Arm the alarm again after the next capped backoff delay."""
        host = self.host
        durable = host.durable
        self.retries += 1
        if durable.stopping or not host.runtime.running:
            return
        self.rearm(host.runtime.clock.wall() + retry_delay(self.retries, durable.retry_cap))

    def calls_ok(self) -> None:
        """The alarm path's store calls succeeded: the backoff starts over."""
        if self.retries:
            self.retries = 0
        outage = self.host.durable.store_outage
        if outage.down:
            outage.ok()

    def drained(self, due: float | None) -> None:
        """A drain turn ended well: the backoff starts over (:meth:`calls_ok`) and the
        alarm is set to exactly ``due``, the identity's next due time (``None``: none).

        :meth:`calls_ok` and :meth:`rearm` in one call, written out: the end of every
        drain crosses into this module once (bench/_durable_trace.py)."""
        if self.retries:
            self.retries = 0
        host = self.host
        outage = host.durable.store_outage
        if outage.down:
            outage.ok()
        runtime = host.runtime
        deadlines = runtime.deadlines
        if self.due is not None:  # still armed (a task added during the drain armed it)
            deadlines.remove(self)
            self.due = None
        if due is None:
            return
        clock = runtime.clock
        wait = due - clock.wall()
        if wait <= 0.0 and self.queued:
            return  # see arm(): the queued drain reads it
        self.due = due
        deadlines.add(clock.monotonic() + max(0.0, wait), self)
