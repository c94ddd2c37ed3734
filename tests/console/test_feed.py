# SPDX-License-Identifier: Apache-2.0
"""The shared refresh loop: one read per refresh for all subscribers, latest update wins,
a failed read does not end live updates."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from tocsin.clock import SystemClock
from tocsin.console._data import Snapshot
from tocsin.console._feed import Feed

#: Real seconds a test waits for an update (a bound for a busy machine, not a speed).
LIMIT = 30.0


class FlakySource:
    def __init__(self, failures: int) -> None:
        self.clock = SystemClock()
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


async def test_a_failed_read_is_retried_at_the_next_refresh() -> None:
    source = FlakySource(failures=2)
    feed = Feed(source, "csrf", 0.05)
    queue = feed.subscribe()
    update = json.loads(await asyncio.wait_for(queue.get(), LIMIT))
    assert "summary" in update
    assert source.reads == 3
    await feed.close()


async def test_subscribers_share_one_read_and_a_slow_one_keeps_only_the_latest() -> None:
    source = FlakySource(failures=0)
    feed = Feed(source, "csrf", 0.05)
    fast, slow = feed.subscribe(), feed.subscribe()
    for _ in range(3):
        await asyncio.wait_for(fast.get(), LIMIT)
    assert slow.qsize() == 1  # never more than one waiting update
    assert feed.refreshes == source.reads  # one read per refresh, whatever the subscribers
    feed.unsubscribe(fast)
    feed.unsubscribe(slow)
    assert feed.subscribers == 0
    await feed.close()
