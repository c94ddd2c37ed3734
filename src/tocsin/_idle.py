# SPDX-License-Identifier: Apache-2.0
"""When an asyncio event loop has nothing left to run: how a ManualClock knows it may move.

:class:`~tocsin.ManualClock` lets simulated time pass only when nothing can run without it:
every task on the loop is blocked on simulated time or on nothing, and no real I/O (a
store, coordinator or socket call, a job on a thread, a real ``asyncio.sleep``) is in
flight. This module answers that question exactly, from the event loop itself, with no
real-time polling.

How. The loop tells us. asyncio's ``_run_once`` computes how long it may block, then calls
``selector.select(timeout)``: a timeout of 0 means callbacks are ready to run; any other
timeout (``None`` or positive) means the ready queue is empty, so every task is suspended
on a future. :func:`watch` wraps the loop's selector once (:class:`_WatchedSelector`); when
``select`` is about to block it first polls the real selector without blocking (socket
data or a thread's completion already there is work, not idleness), then asks the
:class:`LoopWatch` whether the loop is idle:

* no real I/O in flight (:func:`real_io`, counted by the stores, coordinators and the
  SQLite worker thread around each call: a thread's work or a server's answer is
  invisible to the selector until it arrives);
* no real ``asyncio.sleep`` pending (a task sleeping real time is waiting on real time;
  asyncio's timeouts, such as a test's hang guard, are not sleeps and do not count).

If idle, the watch wakes whoever waits for idleness (:meth:`LoopWatch.wait_idle`, which
``ManualClock.settle`` awaits) or, failing that, lets an autojumping clock move to its
next deadline (:meth:`LoopWatch.add_idle_hook`); either makes callbacks ready, so the
loop polls instead of blocking. Otherwise ``select`` blocks exactly as it would have.

Rejected: waiting real time for "no progress" (what ``settle`` did, 50 ms rounds: most of
a ManualClock test's real time, and wrong under load when a slow store call outlasts the
guess); counting busy actors alone (an actor awaiting an ask whose timeout lies in
simulated time is busy yet idle); replacing the event loop (looptime patches the loop's
time; tocsin tests run on whatever loop pytest gives them, and a hang guard must stay in
real time). The price: the loop must be one of asyncio's selector loops (the default on
every platform but Windows' proactor); :func:`watch` raises ``TypeError`` for others.

Prior art: trio's run loop with ``MockClock(autojump_threshold=0)`` (``_core/_run.py``:
jump when no task is runnable), looptime (asyncio: fake time driven from the selector),
Tokio's paused clock (auto-advance when the runtime has no work).
"""

from __future__ import annotations

import asyncio
import asyncio.futures
import weakref
from collections.abc import Callable
from types import TracebackType
from typing import Any, Final, final

__all__ = ["LoopWatch", "real_io", "watch", "watch_of"]

#: The attribute under which a loop keeps its :class:`LoopWatch` (read on every
#: :func:`real_io`: a getattr is ~40 ns, a weak-keyed map ~300 ns).
_ATTRIBUTE: Final = "_tocsin_loop_watch"
#: The callback asyncio.sleep arms on the loop (``asyncio.tasks.sleep``): how a pending
#: real sleep is told from a pending timeout.
_SLEEP_CALLBACK: Final[object] = vars(asyncio.futures).get("_set_result_unless_cancelled")


@final
class LoopWatch:
    """What one event loop is doing, as far as a ManualClock needs to know.

    Made by :func:`watch`; not constructed directly.
    """

    __slots__ = ("_hooks", "_waiters", "clocks", "in_flight", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        #: Real I/O calls in flight on this loop (:func:`real_io`).
        self.in_flight = 0
        #: The clocks that drive systems on this loop (weakly: a test's clock dies with
        #: it), so a hang guard can say what they were waiting for.
        self.clocks: weakref.WeakSet[Any] = weakref.WeakSet()
        self._waiters: list[asyncio.Future[None]] = []
        self._hooks: tuple[Callable[[], bool], ...] = ()

    async def wait_idle(self) -> None:
        """Return once the loop is idle: nothing ready to run, no real I/O in flight.

        Exact: it returns at the first moment the loop would otherwise block, and never
        earlier, however long a store call or a thread takes.
        """
        await self.idle_future()

    def idle_future(self) -> asyncio.Future[None]:
        """A future that is done at the loop's next idle moment (what :meth:`wait_idle`
        awaits), for a caller that continues in a callback rather than a task."""
        waiter: asyncio.Future[None] = self.loop.create_future()
        self._waiters.append(waiter)
        return waiter

    def busy(self) -> bool:
        """Whether something other than a ready callback keeps the loop from being idle
        now, or another task waits for its next idle moment: real I/O in flight, a real
        ``asyncio.sleep`` pending, a waiter in :meth:`wait_idle`. Such a caller waits
        in :meth:`idle_future` rather than running the loop's turns itself."""
        return bool(self.in_flight or self._waiters) or self._real_sleeps()

    def add_idle_hook(self, hook: Callable[[], bool]) -> Callable[[], None]:
        """Call ``hook()`` whenever the loop is idle and nobody waits in :meth:`wait_idle`.

        ``hook`` returns whether it made something runnable (then the loop polls again
        instead of blocking). Returns the function that removes it.
        """
        self._hooks = (*self._hooks, hook)

        def remove() -> None:
            self._hooks = tuple(h for h in self._hooks if h is not hook)

        return remove

    def still_idle(self) -> bool:
        """Whether the loop, idle when its caller last woke from :meth:`wait_idle`, still
        is after the caller ran synchronous code: nothing was made ready to run, no real
        I/O is in flight and no real ``asyncio.sleep`` is pending.

        What a timer callback that only moved a timer of its own leaves (a lease expiry
        checked early, a paused node's timer put off): ``ManualClock.advance`` then fires
        the next deadline without a turn of the loop, which would only find it idle again.
        A callback that schedules anything (a task, a future's waiter) makes it false.
        """
        ready = getattr(self.loop, "_ready", None)
        if ready is None or ready or self.in_flight:
            return False
        return not self._real_sleeps()

    def busy_reason(self) -> str | None:
        """Why the loop is not idle though nothing is ready, or ``None`` when it is idle."""
        if self.in_flight:
            return f"{self.in_flight} real I/O call(s) in flight"
        if self._real_sleeps():
            return "a real asyncio.sleep is pending"
        return None

    def on_block(self) -> bool:
        """The loop is about to block: wake the idle waiters or hooks if it is idle.

        Returns whether something became runnable.
        """
        if not self._waiters and not self._hooks:
            return False
        if self.in_flight or self._real_sleeps():
            return False  # the loop's own wake-up (I/O, a timer) brings us back here
        if self._waiters:
            waiters, self._waiters = self._waiters, []
            woke = False
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)
                    woke = True
            if woke:
                return True
        return any(hook() for hook in self._hooks)

    def _real_sleeps(self) -> bool:
        if _SLEEP_CALLBACK is None:  # another asyncio: no way to tell sleeps apart
            return False
        scheduled: list[asyncio.TimerHandle] = getattr(self.loop, "_scheduled", [])
        if not scheduled:  # the common case in a simulation: no real timer at all
            return False
        return any(
            getattr(handle, "_callback", None) is _SLEEP_CALLBACK and not handle.cancelled()
            for handle in scheduled
        )


@final
class _WatchedSelector:
    """A loop's selector, unchanged except that ``select`` consults the watch first."""

    __slots__ = ("_inner", "_watch")

    def __init__(self, inner: Any, loop_watch: LoopWatch) -> None:
        self._inner = inner
        self._watch = loop_watch

    def select(self, timeout: float | None = None) -> Any:
        if timeout is None or timeout > 0:
            # About to block: the ready queue is empty. Work that already arrived (a
            # socket's bytes, a thread's wake-up byte) is not idleness: take it first.
            events = self._inner.select(0)
            if events or self._watch.on_block():
                return events  # (empty when on_block made callbacks ready: no 2nd poll)
        return self._inner.select(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def watch_of(loop: asyncio.AbstractEventLoop) -> LoopWatch | None:
    """The :class:`LoopWatch` of ``loop`` if one is installed, without installing one."""
    found: LoopWatch | None = getattr(loop, _ATTRIBUTE, None)
    return found


def watch(loop: asyncio.AbstractEventLoop) -> LoopWatch:
    """The :class:`LoopWatch` of ``loop``, installing it on first use.

    Raises:
        TypeError: ``loop`` is not one of asyncio's selector event loops (uvloop, the
            Windows proactor loop): a ManualClock cannot see when it is idle.
    """
    found: LoopWatch | None = getattr(loop, _ATTRIBUTE, None)
    if found is not None:
        return found
    selector = getattr(loop, "_selector", None)
    if selector is None or not hasattr(selector, "select"):
        raise TypeError(
            f"a ManualClock needs one of asyncio's selector event loops to see when the "
            f"system is idle, got {type(loop).__module__}.{type(loop).__qualname__}; run the "
            f"test on asyncio's default loop (asyncio.run / asyncio.Runner without a "
            f"loop_factory)"
        )
    created = LoopWatch(loop)
    # The one write into asyncio's internals: the loop calls its selector by this name.
    loop._selector = _WatchedSelector(selector, created)  # type: ignore[attr-defined]  # noqa: SLF001
    setattr(loop, _ATTRIBUTE, created)
    return created


@final
class real_io:
    """``with real_io(): await call()``: real I/O in flight on the running loop.

    A :class:`~tocsin.ManualClock` does not let time pass while any is in flight. Cheap
    where no ManualClock watches the loop (a getattr). Use it around each call whose
    answer comes from outside the loop's view: a thread, a server.
    """

    __slots__ = ("_watch",)

    def __init__(self) -> None:
        self._watch: LoopWatch | None = None

    def __enter__(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        found: LoopWatch | None = getattr(loop, _ATTRIBUTE, None)
        if found is not None:
            found.in_flight += 1
            self._watch = found

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._watch is not None:
            self._watch.in_flight -= 1
            self._watch = None
