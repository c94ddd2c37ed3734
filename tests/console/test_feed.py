# SPDX-License-Identifier: Apache-2.0
"""The shared refresh loop: one read per refresh for all subscribers, latest update wins,
a failed read does not end live updates."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from tocsin.clock import Clock, SystemClock
from tocsin.console._data import Snapshot
from tocsin.console._feed import Feed, Subscriber

#: Real seconds a test waits for an update (a bound for a busy machine, not a speed).
LIMIT = 30.0


class FlakySource:
    def __init__(self, failures: int) -> None:
        self.clock: Clock = SystemClock()
        self.reads = 0
        self.failures = failures

    async def snapshot(self) -> Snapshot:
        self.reads += 1
        if self.reads <= self.failures:
            raise OSError("store went away")
        return Snapshot(
            taken_at=datetime.now(UTC), mode="test", schedules=None, lateness=None, tasks=(),
            tasks_total=0, parked=(), actors=None, members=None, dead_letters=self.reads,
        )  # fmt: skip

    async def retry(self, *args: Any) -> Any:
        raise NotImplementedError

    async def discard(self, *args: Any) -> Any:
        raise NotImplementedError


async def next_update(sub: Subscriber) -> Any:
    """The subscriber's next update, decoded (the feed is open: never None here)."""
    text = await asyncio.wait_for(sub.next(), LIMIT)
    assert text is not None
    return json.loads(text)


async def test_a_failed_read_is_retried_at_the_next_refresh() -> None:
    source = FlakySource(failures=2)
    feed = Feed(source, "csrf", 0.05)
    sub = feed.subscribe()
    update = await next_update(sub)
    assert "summary" in update
    assert source.reads == 3
    await feed.close()


async def test_subscribers_share_one_read_get_only_changed_sections_and_never_lag() -> None:
    source = FlakySource(failures=0)
    feed = Feed(source, "csrf", 0.05)
    fast, slow = feed.subscribe(), feed.subscribe()
    first = await next_update(fast)
    assert set(first) == {"summary", "schedules", "parked", "tasks", "actors", "members"}
    # The summary changes each refresh (dead letters = reads here); the rest does not.
    second = await next_update(fast)
    assert set(second) == {"summary"}
    await asyncio.wait_for(fast.next(), LIMIT)
    # The slow one never took anything: one merged update holds every section, newest.
    merged = await next_update(slow)
    assert set(merged) == set(first)
    assert feed.refreshes == source.reads  # one read per refresh, whatever the subscribers
    late = feed.subscribe()  # joins later: gets the whole page at once
    assert set(await next_update(late)) == set(first)
    for sub in (fast, slow, late):
        feed.unsubscribe(sub)
    assert feed.subscribers == 0
    await feed.close()
