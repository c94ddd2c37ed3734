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
import contextlib
import functools
import heapq
import itertools
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol, final

from . import _idle
from ._idle import real_io

__all__ = [
    "OFFSET_JUMP_TOLERANCE",
    "WALL_TOLERANCE",
    "Clock",
    "ManualClock",
    "OffsetClock",
    "SystemClock",
    "TimerHandle",
    "real_io",
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
    """What uses a clock's timers (an actor system, a cluster node's periodic work).

    An :class:`~tocsin.ActorSystem` registers one. ``progress`` grows with every unit of
    work done; ``wait_idle`` returns once nothing is pending or running. A
    :class:`ManualClock` does not need them to know when to move (the event loop tells
    it, ``tocsin._idle``); it keeps them so a test can say what is still busy.
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

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` on this clock's monotonic time (for code under test).

        The default arms :meth:`call_at` and waits for it; :class:`SystemClock` is
        ``asyncio.sleep``, :class:`ManualClock` waits simulated time.

        Raises:
            TypeError: ``seconds`` is not a number.
            ValueError: ``seconds`` is negative, NaN or infinite.
        """
        _check_sleep(seconds)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        handle = self.call_at(self.monotonic() + seconds, functools.partial(_wake, future))
        try:
            await future
        finally:
            handle.cancel()

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

    async def sleep(self, seconds: float) -> None:
        """``asyncio.sleep(seconds)``, with the argument checks of :meth:`Clock.sleep`."""
        _check_sleep(seconds)
        await asyncio.sleep(seconds)


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

    async def sleep(self, seconds: float) -> None:
        """The inner clock's :meth:`~Clock.sleep` (the offset moves wall time only)."""
        await self._inner.sleep(seconds)

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

    __slots__ = ("callback", "cancelled", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], None]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


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
    * Idle means exactly idle: every task on the event loop is blocked on simulated time
      or on nothing, and no store, coordinator, socket or thread call and no real
      ``asyncio.sleep`` is in flight. The loop reports it (``tocsin._idle``); no real
      time is spent guessing, so a test's real duration is its CPU work.
    * Autojump (``autojump=True``): whenever the loop is idle, time moves to the next
      deadline on its own, one deadline per idle moment, so a test can simply ``await``
      an outcome (or ``await clock.sleep(s)``). It never jumps while real I/O is in
      flight, nor while a task sleeps real time.

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
        #: A heap of ``(deadline, seq, timer)``: tuples compare in C, several times
        #: faster than a ``__lt__`` in Python (a simulated cluster pushes millions).
        self._timers: list[tuple[float, int, _ManualTimer]] = []
        self._seq = itertools.count()
        self._trackers: list[_ActivityTracker] = []
        self._autojump = False
        #: The loop autojump is hooked on, and how to unhook it.
        self._hooked: tuple[asyncio.AbstractEventLoop, Callable[[], None]] | None = None
        self._jump_pending = False
        #: The loop last noted in its watch's ``clocks`` (:meth:`_watched`).
        self._noted: asyncio.AbstractEventLoop | None = None
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
        seq = next(self._seq)
        timer = _ManualTimer(deadline, callback)
        heapq.heappush(self._timers, (deadline, seq, timer))
        return timer

    # -- moving time -------------------------------------------------------------------

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass: fire each due deadline at its own time, in order.

        Raises:
            ValueError: ``seconds`` is negative, NaN or infinite.
        """
        _check_advance(seconds)
        target = self._now + seconds
        loop = asyncio.get_running_loop()
        self._watched(loop)
        watch = _idle.watch(loop)
        await watch.wait_idle()
        done: asyncio.Future[None] = loop.create_future()
        _Advancing(self, target, watch, done).step()
        await done
        self._now = target
        await watch.wait_idle()

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
        while self._timers and self._timers[0][2].cancelled:
            heapq.heappop(self._timers)
        return self._timers[0][0] if self._timers else None

    @property
    def autojump(self) -> bool:
        """Whether time jumps to the next deadline whenever everything is idle."""
        return self._autojump

    @autojump.setter
    def autojump(self, enabled: bool) -> None:
        self._autojump = bool(enabled)
        if not self._autojump:
            self._unhook()
        else:
            # Outside a running loop (autojump set at construction), the first attach,
            # settle or sleep on a loop hooks it there.
            with contextlib.suppress(RuntimeError):
                self._hook(asyncio.get_running_loop())

    # -- quiescence --------------------------------------------------------------------

    async def settle(self) -> None:
        """Return once the event loop is idle: every task (of the attached systems and any
        other on this loop) is blocked on simulated time or on nothing, and no store,
        coordinator, socket or thread call and no real ``asyncio.sleep`` is in flight.

        Exact and without polling: the loop itself reports the moment it would block
        (``tocsin._idle``), so this takes the CPU time of the work it waits for, no more.
        A slow store call is waited for however long it takes.

        Raises:
            TypeError: the running loop is not one of asyncio's selector loops.
        """
        loop = asyncio.get_running_loop()
        self._watched(loop)
        await _idle.watch(loop).wait_idle()

    async def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of simulated time: until :meth:`advance` (or autojump) passes
        ``now + seconds``. ``sleep(0)`` still waits for the deadlines due now to fire.

        Raises:
            TypeError: ``seconds`` is not a number.
            ValueError: ``seconds`` is negative, NaN or infinite.
        """
        _check_sleep(seconds)
        loop = asyncio.get_running_loop()
        self._watched(loop)
        future: asyncio.Future[None] = loop.create_future()
        timer = self.call_at(self._now + seconds, functools.partial(_wake, future))
        try:
            await future
        finally:
            timer.cancel()

    def attach(self, tracker: _ActivityTracker) -> None:
        self._trackers.append(tracker)
        # Attached from outside a loop, the first settle or sleep hooks it. On a loop it
        # cannot watch (TypeError: uvloop), attach must still not raise: settle, advance
        # and sleep raise it where the clock is used.
        with contextlib.suppress(RuntimeError, TypeError):
            self._watched(asyncio.get_running_loop())

    def detach(self, tracker: _ActivityTracker) -> None:
        if tracker in self._trackers:
            self._trackers.remove(tracker)

    @property
    def trackers(self) -> tuple[_ActivityTracker, ...]:
        """What is attached now (each actor system, cluster node services): a snapshot."""
        return tuple(self._trackers)

    def _pop_due(self, target: float) -> _ManualTimer | None:
        while self._timers:
            deadline, _, head = self._timers[0]
            if head.cancelled:
                heapq.heappop(self._timers)
                continue
            if deadline <= target:
                heapq.heappop(self._timers)
                return head
            return None
        return None

    def _watched(self, loop: asyncio.AbstractEventLoop) -> None:
        """Note the loop this clock's users run on; hook autojump there if it is on."""
        if loop is not self._noted:  # once per loop, not per settle (a WeakSet add)
            _idle.watch(loop).clocks.add(self)
            self._noted = loop
        if self._autojump:
            self._hook(loop)

    def _hook(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._hooked is not None and self._hooked[0] is loop:
            return
        self._unhook()
        remove = _idle.watch(loop).add_idle_hook(functools.partial(self._on_idle, loop))
        self._hooked = (loop, remove)

    def _unhook(self) -> None:
        if self._hooked is not None:
            self._hooked[1]()
            self._hooked = None

    def _on_idle(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Autojump: the loop is idle; move to the next deadline and fire it.

        Called by the loop as it is about to block (``tocsin._idle``); the jump itself
        runs as a callback, so a timer's callback never runs inside the selector.
        """
        if not self._autojump or self._jump_pending or self.next_deadline() is None:
            return False
        self._jump_pending = True
        loop.call_soon(self._jump_to_next)
        return True

    def _jump_to_next(self) -> None:
        self._jump_pending = False
        deadline = self.next_deadline()
        if deadline is None or not self._autojump:
            return
        timer = self._pop_due(deadline)
        if timer is None:
            return
        # One timer per idle moment: what it causes runs before the next one fires, as
        # between two deadlines of advance().
        self._now = max(self._now, timer.deadline)
        timer.callback()


@final
class _Advancing:
    """The body of :meth:`ManualClock.advance` between its first and last idle moment:
    fire each due timer once the loop is idle, until none is due by ``target``.

    It runs as a loop callback, not in the awaiting task: while the work a timer made
    ready runs, it puts itself at the end of the ready queue, one turn at a time, and
    fires the next timer in the turn that finds nothing else ready. Waiting instead for
    the loop to block and be woken from its selector costs a turn, a selector poll and
    a future per timer; resuming the awaiting task each turn costs the resumption of
    its whole chain of coroutines. The moment is the same (nothing ready, no real I/O
    in flight, no real ``asyncio.sleep`` pending), so the timers fire in the same
    order with the same work between them. Whenever real I/O is in flight, a real
    sleep is pending or another task waits for idleness, it waits for the loop's idle
    moment (``LoopWatch.idle_future``) instead: a spin would burn CPU while a store call
    takes real time, and the other waiter must be woken at the same moment as before.

    What a timer's callback raises ends the advance with that error (``done``), as it
    did when the callbacks ran in the awaiting task.
    """

    __slots__ = ("_clock", "_done", "_ready", "_schedule", "_target", "_watch")

    def __init__(
        self,
        clock: ManualClock,
        target: float,
        watch: _idle.LoopWatch,
        done: asyncio.Future[None],
    ) -> None:
        self._clock = clock
        self._target = target
        self._watch = watch
        self._done = done
        loop = watch.loop
        self._ready = getattr(loop, "_ready", None)
        self._schedule = loop.call_soon

    def step(self, woken: object = None) -> None:
        """Fire what is due once the loop is idle; ``woken``: the idle moment's future,
        when called back from :meth:`LoopWatch.idle_future <tocsin._idle.LoopWatch>`."""
        done = self._done
        if done.done():  # the advance was cancelled
            return
        clock, watch, ready = self._clock, self._watch, self._ready
        # Woken at an idle moment, the next timer fires at once, whatever the tasks woken
        # at the same moment do first: a task that waits for idleness over and over must
        # not hold the advance back (each idle moment fires a timer, as it always did).
        fire_now = woken is not None
        try:
            while True:
                if not fire_now:
                    if ready is None or watch.busy():
                        watch.idle_future().add_done_callback(self.step)
                        return
                    if ready:  # the work the last timer made: let it run first
                        self._schedule(self.step)
                        return
                fire_now = False
                timer = clock._pop_due(self._target)  # noqa: SLF001  # the clock's own helper
                if timer is None:
                    done.set_result(None)
                    return
                clock._now = max(clock._now, timer.deadline)  # noqa: SLF001
                timer.callback()
        except BaseException as exc:  # the callback's error is the advance's
            done.set_exception(exc)


def _wake(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _check_sleep(seconds: float) -> None:
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise TypeError(f"`seconds` must be a number of seconds, got {seconds!r}")
    if not seconds >= 0 or seconds == float("inf"):
        raise ValueError(f"`seconds` must be a finite number of seconds >= 0, got {seconds!r}")


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
