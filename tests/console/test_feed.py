# SPDX-License-Identifier: Apache-2.0
"""The shared refresh loop: one read per refresh for all subscribers, latest update wins,
a failed read does not end live updates."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from tocsin.clock import Clock, ManualClock, SystemClock
from tocsin.console._data import Snapshot
from tocsin.console._feed import Feed, Subscriber
from tocsin.console._render import SECTIONS

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

    async def history(self, reference: str) -> Any:
        return None

    async def stored_history(self, schedule_id: str) -> Any:
        return None

    async def task_history(self, *args: Any) -> Any:
        return None

    async def stored_action(self, *args: Any) -> None:
        raise NotImplementedError


async def next_text(sub: Subscriber) -> str:
    """The subscriber's next update as sent (the feed is open: never None here)."""
    text = await asyncio.wait_for(sub.next(), LIMIT)
    assert text is not None
    return text


async def next_update(sub: Subscriber) -> Any:
    """The subscriber's next update, decoded."""
    return json.loads(await next_text(sub))


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
    assert set(first) == {
        "summary",
        "stored",
        "schedules",
        "parked",
        "tasks",
        "actors",
        "members",
    }
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


class CountingSource:
    """A source whose dead-letter count is set by the test; a read takes ``value`` when
    it starts, then waits for ``gate`` (open unless a test closes it)."""

    def __init__(self) -> None:
        self.clock: Clock = SystemClock()
        self.value = 0
        self.reads = 0
        self.gate = asyncio.Event()
        self.gate.set()
        self.reading = asyncio.Event()

    async def snapshot(self) -> Snapshot:
        self.reads += 1
        value = self.value
        self.reading.set()
        await self.gate.wait()
        return Snapshot(
            taken_at=datetime(2030, 1, 1, tzinfo=UTC), mode="test", schedules=None,
            lateness=None, tasks=(), tasks_total=0, parked=(), actors=None, members=None,
            dead_letters=value,
        )  # fmt: skip

    async def retry(self, *args: Any) -> Any:
        raise NotImplementedError

    async def discard(self, *args: Any) -> Any:
        raise NotImplementedError

    async def history(self, reference: str) -> Any:
        return None

    async def stored_history(self, schedule_id: str) -> Any:
        return None

    async def task_history(self, *args: Any) -> Any:
        return None

    async def stored_action(self, *args: Any) -> None:
        raise NotImplementedError


def dead_letters(update: str) -> int:
    summary: str = json.loads(update)["summary"]
    return int(summary.split("Dead letters</dt><dd>", 1)[1].split(" total", 1)[0])


async def test_a_page_opened_after_the_last_one_closed_is_not_sent_the_old_snapshot() -> None:
    source = CountingSource()
    feed = Feed(source, "csrf", 1.0)
    feed.pacer = ManualClock()  # no refresh happens by the passing of time
    first = feed.subscribe()
    source.value = 1
    assert dead_letters(await next_text(first)) == 1
    feed.unsubscribe(first)  # the last page closes ...
    source.value = 2  # ... and the system moves on (33 s in issue 19)
    again = feed.subscribe()
    assert dead_letters(await next_text(again)) == 2
    await feed.close()


async def test_a_page_that_joins_a_running_feed_first_gets_a_read_made_after_it_joined() -> None:
    source = CountingSource()
    feed = Feed(source, "csrf", 1.0)
    feed.pacer = ManualClock()  # the loop pauses until something ends the pause
    watching = feed.subscribe()
    assert dead_letters(await next_text(watching)) == 0
    reads = source.reads
    source.value = 5
    late = feed.subscribe()  # ends the pause: not the sections read before it joined
    update = await next_update(late)
    assert set(update) == set(SECTIONS)
    assert dead_letters(json.dumps(update)) == 5
    assert source.reads == reads + 1
    # The page already watching gets only what changed, from the same read.
    assert (await next_update(watching)).keys() == {"summary"}
    await feed.close()


async def test_a_page_that_joins_during_a_read_gets_the_next_read_at_once() -> None:
    source = CountingSource()
    feed = Feed(source, "csrf", 1.0)
    feed.pacer = ManualClock()
    source.gate.clear()
    first = feed.subscribe()
    await asyncio.wait_for(source.reading.wait(), LIMIT)  # read 1 took value 0, held
    source.value = 7
    during = feed.subscribe()
    source.gate.set()
    assert dead_letters(await next_text(during)) == 7  # read 2, not 1
    assert source.reads == 2  # with no time passing on the pacer
    # The first page had not taken read 1 yet: merged with read 2, it is as fresh.
    assert dead_letters(await next_text(first)) == 7
    await feed.close()


async def test_a_refresh_that_changed_nothing_still_wakes_the_stream_with_an_empty_update() -> None:
    # The stream checks its session at each refresh: a page signed out on a quiet system
    # must end at the next refresh, not wait for a change that may never come.
    source = CountingSource()
    feed = Feed(source, "csrf", 1.0)
    feed.pacer = pacer = ManualClock()
    sub = feed.subscribe()
    assert dead_letters(await next_text(sub)) == 0
    await pacer.advance(1.0)  # the second read adds the dead-letter rate to the summary
    assert "0.00 per second" in await next_text(sub)
    reads = source.reads
    await pacer.advance(1.0)  # the next refresh: the same page
    assert await next_text(sub) == ""
    assert source.reads == reads + 1
    source.value = 3
    await pacer.advance(1.0)
    assert dead_letters(await next_text(sub)) == 3
    await feed.close()
