# SPDX-License-Identifier: Apache-2.0
"""One refresh loop shared by every open page: read a snapshot, render its sections once,
push them to every subscriber over server-sent events.

Fan-out costs one read and one render per refresh however many pages are open; a slow
client never holds the others up (each subscriber keeps only the latest update: an
update it has not sent yet is replaced, not queued). The loop runs only while someone
is subscribed.

Refreshes are paced by a :class:`~tocsin.SystemClock` of the console's own, also for a
system driven by a ``ManualClock``: the page is for people, who live in real time.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Final, final

from ..clock import Clock, SystemClock
from ._data import ConsoleSource, Snapshot
from ._render import render_sections

__all__ = ["DEFAULT_INTERVAL", "Feed"]

_log = logging.getLogger("tocsin.console")

#: Seconds between two refreshes of open pages.
DEFAULT_INTERVAL: Final = 1.0


@final
class Feed:
    """Snapshots of ``source``, rendered, fanned out to subscribers."""

    def __init__(self, source: ConsoleSource, csrf: str, interval: float) -> None:
        self.source = source
        self.csrf = csrf
        self.interval = interval
        self.pacer: Clock = SystemClock()
        self._subscribers: set[asyncio.Queue[str]] = set()
        self._task: asyncio.Task[None] | None = None
        self._last_dead: tuple[float, int] | None = None
        self.rate: float | None = None
        self.refreshes = 0

    async def sections(self) -> dict[str, str]:
        """Read the source now and render every section."""
        snapshot = await self.source.snapshot()
        self._rate(snapshot)
        return render_sections(snapshot, self.csrf, self.rate)

    def _rate(self, snapshot: Snapshot) -> None:
        if snapshot.dead_letters is None:
            return
        now = self.pacer.monotonic()
        if self._last_dead is not None:
            then, count = self._last_dead
            if now - then >= self.interval / 2:  # page loads in between do not jitter it
                self.rate = max(0, snapshot.dead_letters - count) / (now - then)
                self._last_dead = (now, snapshot.dead_letters)
        else:
            self._last_dead = (now, snapshot.dead_letters)

    def subscribe(self) -> asyncio.Queue[str]:
        """A queue that receives each update (JSON: section id -> inner HTML)."""
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=1)
        self._subscribers.add(queue)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        return queue

    def unsubscribe(self, queue: asyncio.Queue[str]) -> None:
        self._subscribers.discard(queue)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    async def close(self) -> None:
        self._subscribers.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while self._subscribers:
            try:
                payload = json.dumps(await self.sections())
            except Exception:
                # A failed read (a store that went away) must not end live updates for
                # good: log it, and try again at the next refresh.
                _log.exception("console refresh failed")
            else:
                self.refreshes += 1
                for queue in list(self._subscribers):
                    if queue.full():  # the client has not taken the last one: replace it
                        queue.get_nowait()
                    queue.put_nowait(payload)
            await self._pause()

    async def _pause(self) -> None:
        loop = asyncio.get_running_loop()
        done = loop.create_future()

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        handle = self.pacer.call_at(self.pacer.monotonic() + self.interval, wake)
        try:
            await done
        finally:
            handle.cancel()
