# SPDX-License-Identifier: Apache-2.0
"""One refresh loop shared by every open page: read a snapshot, render its sections once,
push the sections that changed to every subscriber over server-sent events.

Fan-out costs one read and one render per refresh however many pages are open. Only
changed sections are sent (a new subscriber first gets them all). A slow client never
holds the others up, and never falls behind by more than one version of each section:
what it has not sent yet is merged, section by section, with the newer update.
The loop runs only while someone is subscribed.

A new subscriber's first update is always read after it subscribed (issue 19): nothing
rendered earlier is replayed to it. The loop once kept the last sections it rendered and
handed them to a newcomer at once; after the last page closed, that copy stayed, so the
next page to open was first sent a snapshot as old as the gap (33 s in the report),
which overwrote the fresh page it had just loaded. Now a subscriber ends the loop's pause
(one read serves every newcomer waiting for it; one that joins during a read gets the
next, started at once), and the loop keeps no sections between runs.

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
        self._subscribers: set[Subscriber] = set()
        self._task: asyncio.Task[None] | None = None
        #: Reads started so far; a subscriber remembers the count when it joined.
        self._reads = 0
        self._pausing: asyncio.Future[None] | None = None
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

    def subscribe(self) -> Subscriber:
        """A subscriber whose :meth:`Subscriber.next` returns each update.

        Its first update is the whole page, from a read that started after this call
        (the loop's pause ends for it), never sections rendered earlier.
        """
        sub = Subscriber(self._reads)
        self._subscribers.add(sub)
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())
        else:
            self._wake()
        return sub

    def unsubscribe(self, sub: Subscriber) -> None:
        self._subscribers.discard(sub)

    @property
    def subscribers(self) -> int:
        return len(self._subscribers)

    async def close(self) -> None:
        """End every open stream (their :meth:`Subscriber.next` returns None) and the loop."""
        for sub in self._subscribers:
            sub.close()
        self._subscribers.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        # The last sections sent, to find what changed: local to one run of the loop, so
        # nothing rendered before the last page closed outlives it.
        previous: dict[str, str] = {}
        while self._subscribers:
            self._reads += 1
            read = self._reads  # subscribers that joined before this read may take it
            try:
                sections = await self.sections()
            except Exception:
                # A failed read (a store that went away) must not end live updates for
                # good: log it, and try again at the next refresh (after a pause, also
                # with newcomers waiting: a failing store is not read in a tight loop).
                _log.exception("console refresh failed")
            else:
                self.refreshes += 1
                changed = {k: v for k, v in sections.items() if previous.get(k) != v}
                previous = sections
                waiting = False
                for sub in list(self._subscribers):
                    if sub.started:
                        sub.offer(changed)
                    elif sub.joined < read:
                        sub.offer(sections)  # its first update: the whole page, fresh
                    else:
                        waiting = True  # joined during this read: the next one is its
                if waiting:
                    continue
            await self._pause()

    def _wake(self) -> None:
        """End the current pause (a newcomer wants a fresh read now)."""
        pausing = self._pausing
        if pausing is not None and not pausing.done():
            pausing.set_result(None)

    async def _pause(self) -> None:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._pausing = done

        def wake() -> None:
            if not done.done():
                done.set_result(None)

        handle = self.pacer.call_at(self.pacer.monotonic() + self.interval, wake)
        try:
            await done
        finally:
            handle.cancel()
            self._pausing = None


@final
class Subscriber:
    """One open page's pending update: section id -> inner HTML, merged until sent."""

    __slots__ = ("_ready", "closed", "joined", "pending", "started")

    def __init__(self, joined: int = 0) -> None:
        self.pending: dict[str, str] = {}
        self.started = False  # has it been offered a whole page yet?
        #: The feed's read count when it subscribed: its first update comes from a later read.
        self.joined = joined
        self.closed = False
        self._ready = asyncio.Event()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    def offer(self, sections: dict[str, str]) -> None:
        self.started = True
        self.pending.update(sections)
        # Also when nothing changed: its stream checks its session at every refresh, so a
        # page signed out (or expired) on a quiet system stops at the next refresh, not at
        # the next change, which may never come.
        self._ready.set()

    async def next(self) -> str | None:
        """The next refresh's update as JSON (waits for one; ``""`` when that refresh
        changed nothing this subscriber has not had), or None once the server is closing."""
        await self._ready.wait()
        if self.closed:
            return None
        self._ready.clear()
        update, self.pending = self.pending, {}
        return json.dumps(update) if update else ""
