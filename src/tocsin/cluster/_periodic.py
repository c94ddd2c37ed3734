# SPDX-License-Identifier: Apache-2.0
"""A coroutine run every ``period`` seconds on a :class:`~tocsin.clock.Clock`, and a sleep.

Both arm the clock's timer (``Clock.call_at``), never ``asyncio.sleep``, so one
:class:`~tocsin.ManualClock` drives membership in tests. A :class:`Periodic` also tells a
ManualClock when its run is in flight (the clock's activity-tracker protocol), so
``await clock.advance(s)`` returns only once every renewal it caused has finished.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import final

from ..clock import Clock, TimerHandle

__all__ = ["Periodic", "sleep"]

_log = logging.getLogger("tocsin.cluster")


async def sleep(clock: Clock, seconds: float) -> None:
    """Wait ``seconds`` on ``clock`` (a ManualClock's ``advance`` wakes it)."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not future.done():
            future.set_result(None)

    handle = clock.call_at(clock.monotonic() + seconds, wake)
    try:
        await future
    finally:
        handle.cancel()


@final
class Periodic:
    """Run ``fn()`` every ``period`` seconds (fixed rate; a late run is not repeated).

    A run that raises is logged and the next one happens on time; runs never overlap.
    """

    def __init__(
        self, clock: Clock, period: float, fn: Callable[[], Awaitable[None]], name: str
    ) -> None:
        self._clock = clock
        self._period = period
        self._fn = fn
        self._name = name
        self._next = 0.0
        self._handle: TimerHandle | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopped = True
        self._idle = asyncio.Event()
        self._idle.set()
        self._progress = 0
        self._attached = False

    # -- the ManualClock activity-tracker protocol ---------------------------------------

    def is_idle(self) -> bool:
        return self._task is None

    @property
    def progress(self) -> int:
        return self._progress

    async def wait_idle(self) -> None:
        await self._idle.wait()

    # -- running -------------------------------------------------------------------------

    def running(self) -> bool:
        """Whether runs are armed (started and not stopped)."""
        return not self._stopped

    def start(self) -> None:
        """Arm the first run one period from now."""
        self._stopped = False
        if not self._attached:
            self._attached = True
            self._clock.attach(self)
        self._next = self._clock.monotonic() + self._period
        self._arm()

    def _arm(self) -> None:
        self._handle = self._clock.call_at(self._next, self._fire)

    def _fire(self) -> None:
        self._handle = None
        if self._stopped:
            return
        self._idle.clear()
        self._task = asyncio.get_running_loop().create_task(self._run(), name=self._name)

    async def _run(self) -> None:
        try:
            await self._fn()
        except Exception:
            _log.exception("%s failed; the next run is on time", self._name)
        finally:
            self._task = None
            self._progress += 1
            self._idle.set()
            if not self._stopped:
                now = self._clock.monotonic()
                self._next += self._period
                if self._next <= now:  # a stall: skip the missed runs, keep the phase
                    missed = int((now - self._next) // self._period) + 1
                    self._next += missed * self._period
                self._arm()

    async def stop(self) -> None:
        """Stop: no further run starts; one in flight is cancelled and awaited."""
        self._stopped = True
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._attached:
            self._attached = False
            self._clock.detach(self)
