# SPDX-License-Identifier: Apache-2.0
"""Time, read in one place: the :class:`Clock` ABC, :class:`SystemClock`, :class:`ManualClock`
and :class:`OffsetClock` (another clock's wall time plus an offset: a cluster node's time).

Every other module asks a clock. That is what lets one :class:`ManualClock` drive a whole
actor system in tests: schedules, passivation, ask timeouts, cron and durable tasks.

Two kinds of time:

* ``monotonic()``: seconds on a clock that never jumps; delays, intervals and every
  deadline in the shared heap use it.
* ``wall()``: epoch seconds (UTC); cron fire times and durable due times use it. Wall time
  can jump (NTP steps, DST does *not* change it); consumers subscribe with
  :meth:`Clock.on_wall_jump` to recompute what depends on it.

Prior art: trio's ``Clock`` ABC (three abstract methods) and ``MockClock`` (``advance``
refuses to go backwards; an opt-in autojump moves to the next deadline when everything is
idle), asyncio's ``TimerHandle``.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol, final

__all__ = [
    "OFFSET_JUMP_TOLERANCE",
    "WALL_TOLERANCE",
    "Clock",
    "ManualClock",
    "OffsetClock",
    "SystemClock",
    "TimerHandle",
]

#: Seconds by which a wall-clock instant counts as reached early. Wall times are armed as
#: monotonic deadlines through floats of epoch size (ulp ~2e-7 s), so a deadline can fire
#: a hair before its wall time; without this slack it would re-arm for that hair, forever.
WALL_TOLERANCE = 0.001


#: Seconds by which an :class:`OffsetClock`'s offset must move (since it last reported a
#: move) to count as a wall-clock jump. Below it the wall-time consumers are not re-armed:
#: measurement noise of a few milliseconds would otherwise re-arm every cron schedule at
#: each lease renewal; a deadline armed before such a move fires at most this much off
#: and then checks the wall clock again.
OFFSET_JUMP_TOLERANCE = 0.05


class TimerHandle(Protocol):
    """What :meth:`Clock.call_at` returns: something that can be cancelled."""

    def cancel(self) -> None: ...


class _ActivityTracker(Protocol):
    """How a :class:`ManualClock` learns whether the systems it drives are busy.

    An :class:`~tocsin.ActorSystem` registers one. ``progress`` grows with every unit of
    work done; ``wait_idle`` returns once nothing is pending or running.
    """

    def is_idle(self) -> bool: ...

    @property
    def progress(self) -> int: ...

    async def wait_idle(self) -> None: ...


class Clock(ABC):
    """The source of time for an actor system.

    Implementations must make ``monotonic()`` and the deadlines of ``call_at`` share one
    time base.
    """

    #: Whether this clock calls the :meth:`on_wall_jump` listeners itself. When it does
    #: not (a real clock cannot see an NTP step), each actor system polls the offset
    #: between wall and monotonic time and reports jumps (``_deadlines/_wallwatch.py``).
    reports_wall_jumps = False

    def __init__(self) -> None:
        self._wall_listeners: list[Callable[[float], None]] = []

    @abstractmethod
    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards (arbitrary origin)."""

    @abstractmethod
    def wall(self) -> float:
        """Current wall-clock time as epoch seconds (UTC)."""

    @abstractmethod
    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        """Call ``callback()`` once ``monotonic() >= deadline``; return a cancellable handle."""

    def wall_datetime(self) -> datetime:
        """:meth:`wall` as an aware UTC :class:`~datetime.datetime`."""
        return datetime.fromtimestamp(self.wall(), tz=UTC)

    def on_wall_jump(self, listener: Callable[[float], None]) -> Callable[[], None]:
        """Call ``listener(delta_seconds)`` whenever wall time jumps; returns an unsubscribe.

        :class:`ManualClock` reports jumps made by ``set_wall``/``jump_wall`` at once.
        :class:`SystemClock` cannot observe an NTP step directly; wall-time consumers
        (cron) also compare the expected and actual wall time whenever they fire.
        """
        self._wall_listeners.append(listener)

        def unsubscribe() -> None:
            if listener in self._wall_listeners:
                self._wall_listeners.remove(listener)

        return unsubscribe

    def report_wall_jump(self, seconds: float) -> None:
        """Tell every :meth:`on_wall_jump` listener that wall time moved by ``seconds``.

        Called by the clock itself when it sees a jump (:class:`ManualClock`), else by
        each actor system's wall watch (a clock with ``reports_wall_jumps`` False).
        """
        for listener in list(self._wall_listeners):
            listener(seconds)

    def attach(self, tracker: _ActivityTracker) -> None:
        """A hook: an actor system (or another user of this clock's timers, such as a
        cluster node's periodic work) starts using this clock; ``tracker`` tells whether
        it is busy. Called by :meth:`ActorSystem.start() <tocsin.ActorSystem.start>`,
        paired with :meth:`detach` when it stops.

        A no-op by default: only a clock that drives time itself needs to know
        (:class:`ManualClock` waits for every attached tracker to be idle before it
        lets time pass). A custom clock may override it; it must not raise.
        """

    def detach(self, tracker: _ActivityTracker) -> None:
        """The counterpart of :meth:`attach`: ``tracker`` no longer uses this clock.
        Detaching one that is not attached is a no-op."""


@final
class SystemClock(Clock):
    """Real time: the running event loop's monotonic clock and ``time.time()``.

    Args:
        offset: seconds added to ``monotonic()``. A large random offset in debug runs makes
            any code that bypasses the clock (``time.monotonic()`` directly) show up as
            wildly wrong deadlines, as trio's ``SystemClock.offset`` does.
    """

    def __init__(self, *, offset: float = 0.0) -> None:
        super().__init__()
        self.offset = offset

    def monotonic(self) -> float:
        # asyncio's loop.time() is time.monotonic(); reading it directly saves a
        # get_running_loop() per call (this runs on every schedule made).
        return time.monotonic() + self.offset

    def wall(self) -> float:
        return time.time()

    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        # Relative to now, so a loop whose time() has another origin (uvloop) still
        # fires at the right moment.
        loop = asyncio.get_running_loop()
        return loop.call_at(loop.time() + (deadline - self.monotonic()), callback)


@final
class OffsetClock(Clock):
    """Another clock with an offset on its wall time: ``wall() = inner.wall() + offset``.

    Monotonic time, timers and :meth:`attach` are the inner clock's, untouched. Wall jumps
    of the inner clock are passed on to this clock's listeners; so is a change of the
    offset (:meth:`set_offset`) once it has moved by more than ``jump_tolerance`` since it
    was last reported, as one jump of that size, so cron schedules and durable alarms
    re-arm on the new wall time.

    Cluster mode installs one on every node (``docs/cluster.md``, "Cluster time"): its
    offset is the node's measured offset to the coordinator's clock, so the node's wall
    time is the cluster's. Tests use one to give a node a clock that is off:
    ``OffsetClock(manual_clock, 30.0)`` is a node 30 s fast.

    Args:
        inner: the clock read for monotonic time, timers and the uncorrected wall time.
        offset: seconds added to ``inner.wall()``.
        jump_tolerance: seconds the offset must move before the move is reported as a
            wall jump (default :data:`OFFSET_JUMP_TOLERANCE`; ``math.inf``: never, a
            clock that steps silently, as a real one does between two wall watches).
    """

    def __init__(
        self,
        inner: Clock,
        offset: float = 0.0,
        *,
        jump_tolerance: float = OFFSET_JUMP_TOLERANCE,
    ) -> None:
        super().__init__()
        if not isinstance(inner, Clock):
            raise TypeError(f"`inner` must be a tocsin.Clock, got {inner!r}")
        self._inner = inner
        self._offset = _finite("offset", offset)
        #: The offset as last reported to the listeners (a move is measured from it).
        self._reported = self._offset
        if (
            isinstance(jump_tolerance, bool)
            or not isinstance(jump_tolerance, int | float)
            or not jump_tolerance >= 0
        ):
            raise ValueError(
                f"`jump_tolerance` must be a number of seconds >= 0, got {jump_tolerance!r}"
            )
        self._tolerance = float(jump_tolerance)
        # Jumps the inner clock reports (ManualClock) reach this clock's listeners; one
        # it cannot report (a real clock) is found by the wall watch of the inner clock.
        self.reports_wall_jumps = inner.reports_wall_jumps
        self._unforward: Callable[[], None] | None = None

    @property
    def inner(self) -> Clock:
        """The clock this one corrects."""
        return self._inner

    @property
    def offset(self) -> float:
        """Seconds added to the inner clock's wall time."""
        return self._offset

    def set_offset(self, offset: float) -> None:
        """Make ``wall()`` read ``inner.wall() + offset`` from now on.

        A move of more than ``jump_tolerance`` since the last reported one is reported to
        the :meth:`on_wall_jump` listeners (with its size, either sign).

        Raises:
            ValueError: ``offset`` is NaN or infinite.
        """
        self._offset = _finite("offset", offset)
        moved = self._offset - self._reported
        if abs(moved) > self._tolerance:
            self._reported = self._offset
            self.report_wall_jump(moved)

    # -- Clock -------------------------------------------------------------------------

    def monotonic(self) -> float:
        return self._inner.monotonic()

    def wall(self) -> float:
        return self._inner.wall() + self._offset

    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        return self._inner.call_at(deadline, callback)

    def on_wall_jump(self, listener: Callable[[float], None]) -> Callable[[], None]:
        """As :meth:`Clock.on_wall_jump`: jumps of the inner clock and moves of the offset.

        The inner clock is listened to only while this clock has listeners, so an inner
        clock shared by many systems (one ManualClock) keeps no listener of a system that
        stopped.
        """
        unsubscribe = super().on_wall_jump(listener)
        if self._unforward is None:
            self._unforward = self._inner.on_wall_jump(self.report_wall_jump)

        def unsubscribe_both() -> None:
            unsubscribe()
            if not self._wall_listeners and self._unforward is not None:
                self._unforward()
                self._unforward = None

        return unsubscribe_both

    def attach(self, tracker: _ActivityTracker) -> None:
        self._inner.attach(tracker)

    def detach(self, tracker: _ActivityTracker) -> None:
        self._inner.detach(tracker)


def _finite(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"`{name}` must be a number of seconds, got {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"`{name}` must be a finite number of seconds, got {value!r}")
    return float(value)


@final
class _ManualTimer:
    """One pending callback of a :class:`ManualClock` (slotted: tests make thousands)."""

    __slots__ = ("callback", "cancelled", "deadline", "seq")

    def __init__(self, deadline: float, seq: int, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.seq = seq
        self.callback = callback
        self.cancelled = False

    def __lt__(self, other: _ManualTimer) -> bool:
        return (self.deadline, self.seq) < (other.deadline, other.seq)

    def cancel(self) -> None:
        self.cancelled = True


#: Real seconds :meth:`ManualClock.advance` waits, per round, for a busy system to become
#: idle before it concludes the system is blocked on simulated time (an ask whose timeout
#: lies in the future, say) and moves on. Work in threads (SQLite commits) needs a few ms.
SETTLE_ROUND_SECONDS = 0.05
#: Rounds without any progress after which a busy system counts as blocked on time.
SETTLE_STALLED_ROUNDS = 2


@final
class ManualClock(Clock):
    """A clock that only moves when told to: the test double for everything timed.

    ``monotonic()`` starts at 0. ``wall()`` starts at ``wall`` (epoch seconds or an aware
    datetime; the real current time when omitted) and moves with monotonic time, except
    when :meth:`set_wall` / :meth:`jump_wall` move it alone.

    Guarantees:

    * :meth:`advance` fires every deadline ``<= now + seconds`` in deadline order, each with
      the clock reading its own deadline, and lets the actor systems on this clock process
      the messages that causes before the next deadline fires and before it returns.
    * :meth:`jump` is a stall: the clock moves at once, then whatever came due fires, late.
    * Autojump (``autojump=True``): whenever every attached system is idle, time moves to
      the next deadline on its own, so a test can simply ``await`` an outcome.

    Args:
        wall: initial wall time (epoch seconds or aware datetime).
        autojump: start with autojump enabled.
    """

    def __init__(self, wall: float | datetime | None = None, *, autojump: bool = False) -> None:
        super().__init__()
        self.reports_wall_jumps = True  # set_wall/jump_wall notify at once
        self._now = 0.0
        if wall is None:
            wall = self.real_wall()
        self._wall_at_zero = _to_epoch(wall)
        self._timers: list[_ManualTimer] = []
        self._seq = itertools.count()
        self._trackers: list[_ActivityTracker] = []
        self._autojump = False
        self._autojump_task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self.autojump = autojump

    #: Injectable source of the initial wall time (trio: "the real-time source is an
    #: injectable attribute").
    real_wall: Callable[[], float] = staticmethod(time.time)

    # -- Clock -------------------------------------------------------------------------

    def monotonic(self) -> float:
        return self._now

    def wall(self) -> float:
        return self._wall_at_zero + self._now

    def call_at(self, deadline: float, callback: Callable[[], None]) -> TimerHandle:
        timer = _ManualTimer(deadline, next(self._seq), callback)
        heapq.heappush(self._timers, timer)
        if self._wake is not None:
            self._wake.set()
        return timer

    # -- moving time -------------------------------------------------------------------

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: fire each due deadline at its own time, in order.

        Raises:
            ValueError: ``seconds`` is negative, NaN or infinite.
        """
        _check_advance(seconds)
        target = self._now + seconds
        await self.settle()
        while True:
            timer = self._pop_due(target)
            if timer is None:
                break
            self._now = max(self._now, timer.deadline)
            timer.callback()
            await self.settle()
        self._now = target
        await self.settle()

    async def jump(self, seconds: float) -> None:
        """A stall: time moves by ``seconds`` at once; whatever came due fires late, in order.

        Raises:
            ValueError: ``seconds`` is negative, NaN or infinite.
        """
        _check_advance(seconds)
        self._now += seconds
        await self.advance(0)

    def set_wall(self, wall: float | datetime) -> None:
        """Set wall time (epoch seconds or aware datetime) without moving monotonic time."""
        self.jump_wall(_to_epoch(wall) - self.wall())

    def jump_wall(self, seconds: float) -> None:
        """Move wall time by ``seconds`` (either sign) without moving monotonic time.

        This is an NTP step or a manual clock change, not a DST change (DST never moves
        epoch time). Wall-time consumers are told at once and re-arm.
        """
        if seconds != seconds or seconds in (float("inf"), float("-inf")):
            raise ValueError(f"`seconds` must be finite, got {seconds!r}")
        self._wall_at_zero += seconds
        self.report_wall_jump(seconds)

    def next_deadline(self) -> float | None:
        """The earliest pending deadline, or ``None`` when nothing is pending."""
        while self._timers and self._timers[0].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0].deadline if self._timers else None

    @property
    def autojump(self) -> bool:
        """Whether time jumps to the next deadline whenever everything is idle."""
        return self._autojump

    @autojump.setter
    def autojump(self, enabled: bool) -> None:
        self._autojump = enabled
        if not enabled and self._autojump_task is not None:
            self._autojump_task.cancel()
            self._autojump_task = None
        elif enabled:
            self._ensure_autojump()

    # -- quiescence --------------------------------------------------------------------

    async def settle(self) -> None:
        """Return once every attached system is idle, or blocked waiting on simulated time."""
        stalled = 0
        while True:
            for _ in range(4):
                await asyncio.sleep(0)
            busy = [t for t in self._trackers if not t.is_idle()]
            if not busy:
                return
            before = sum(t.progress for t in self._trackers)
            try:
                await asyncio.wait_for(
                    asyncio.gather(*(t.wait_idle() for t in busy)), SETTLE_ROUND_SECONDS
                )
            except TimeoutError:
                after = sum(t.progress for t in self._trackers)
                stalled = stalled + 1 if after == before else 0
                if stalled >= SETTLE_STALLED_ROUNDS:
                    return

    def attach(self, tracker: _ActivityTracker) -> None:
        self._trackers.append(tracker)
        self._ensure_autojump()

    def detach(self, tracker: _ActivityTracker) -> None:
        if tracker in self._trackers:
            self._trackers.remove(tracker)

    def _pop_due(self, target: float) -> _ManualTimer | None:
        while self._timers:
            head = self._timers[0]
            if head.cancelled:
                heapq.heappop(self._timers)
                continue
            if head.deadline <= target:
                return heapq.heappop(self._timers)
            return None
        return None

    def _ensure_autojump(self) -> None:
        if not self._autojump or self._autojump_task is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            # Not inside a running loop (autojump set at construction): the next attach,
            # made by a system starting on its loop, starts it. call_at never does.
            return
        self._wake = asyncio.Event()
        self._autojump_task = loop.create_task(self._autojump_loop())

    async def _autojump_loop(self) -> None:
        assert self._wake is not None
        while True:
            await self.settle()
            deadline = self.next_deadline()
            if deadline is None:
                self._wake.clear()
                await self._wake.wait()
                continue
            await self.advance(max(0.0, deadline - self._now))


def _check_advance(seconds: float) -> None:
    """One wording for each way ``advance``/``jump`` can be given a bad amount of time."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise TypeError(f"`seconds` must be a number of seconds, got {seconds!r}")
    if seconds != seconds:
        raise ValueError("`seconds` must be a number >= 0, got NaN")
    if seconds < 0:
        raise ValueError(f"time can't go backwards: `seconds` must be >= 0, got {seconds!r}")
    if seconds == float("inf"):
        raise ValueError("`seconds` must be finite, got inf")


def _to_epoch(value: float | datetime) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError(f"wall time must be an aware datetime, got naive {value!r}")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"wall time must be epoch seconds or an aware datetime, got {value!r}")
    return float(value)
