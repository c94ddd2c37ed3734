"""A local flood into a bounded mailbox keeps memory bounded (issue 20 item 7).

Real time, bounded: a producer tells 2,000,000 messages to an actor that handles each one
more slowly than it is told (it yields to the loop per message), in bursts of 1,000 with
a yield in between, as a busy producer task would. Without a bound its mailbox grew to
1.49 M messages (168 MB); with ``mailbox_bound=10_000`` it never holds more than that,
the rest are ``overflow`` dead letters, and delivered + overflowed add up to 2 M.
"""

from __future__ import annotations

import asyncio
import os
import resource
import time
from typing import Any

import pytest

from tocsin import Actor, ActorSystem, DeadLetter, DeadLetterReason, ReceiveContext

TOTAL = 2_000_000
BURST = 1_000
BOUND = 10_000
#: The receiver's RSS may grow this much over its level before the flood (MiB). What
#: the flood may legitimately hold: 10,000 queued ints (well under 1 MiB) and transient
#: dead-letter objects; the unbounded run grew by 168 MB. Generous for allocator noise.
RSS_GROWTH_MIB = 48


def rss_mib() -> float:
    """This process's resident set now (Linux ``/proc/self/statm``; else the peak)."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Slow(Actor):
    def __init__(self, seen: list[int]) -> None:
        self.seen = seen

    async def receive(self, ctx: ReceiveContext) -> None:
        self.seen[0] += 1
        await asyncio.sleep(0)  # slower than the producer: one loop turn per message


@pytest.mark.slow  # a long run: two million tells
async def test_a_two_million_tell_flood_keeps_rss_bounded() -> None:
    seen = [0]
    overflow = [0]
    other: list[Any] = []

    def count(letter: DeadLetter) -> None:
        if letter.reason is DeadLetterReason.OVERFLOW:
            overflow[0] += 1
        else:
            other.append(letter)

    async with ActorSystem("flood") as system:
        system.events.subscribe(count, DeadLetter)
        pid = await system.spawn(lambda: Slow(seen), "slow", mailbox_bound=BOUND)
        before = rss_mib()
        peak = before
        started = time.monotonic()
        tell = pid.tell
        for burst in range(TOTAL // BURST):
            for i in range(BURST):
                tell(i)
            await asyncio.sleep(0)
            if burst % 100 == 0:
                peak = max(peak, rss_mib())
        # What is still queued is at most BOUND messages: wait for it (bounded).
        for _ in range(2_000):
            if seen[0] + overflow[0] >= TOTAL:
                break
            await asyncio.sleep(0.01)
        peak = max(peak, rss_mib())
        elapsed = time.monotonic() - started
    assert other == []
    assert seen[0] + overflow[0] == TOTAL, (seen[0], overflow[0])
    assert overflow[0] > 0  # the producer was faster: the bound did shed load
    assert seen[0] >= BOUND
    assert peak - before < RSS_GROWTH_MIB, (before, peak, elapsed)
