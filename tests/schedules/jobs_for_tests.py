# SPDX-License-Identifier: Apache-2.0
"""Module-level jobs the stored-schedule tests name (a job target is found by its name)."""

from __future__ import annotations

import asyncio
from typing import Any

from tocsin import Retry
from tocsin.jobs import job

#: (schedule id, instant ISO, manual, backfill, args) of every run, in order.
RUNS: list[tuple[str, str, bool, bool, tuple[Any, ...]]] = []


@job
async def record(ctx: Any, *args: Any) -> None:
    tick = ctx.tick
    RUNS.append((tick.reference, tick.instant.isoformat(), tick.manual, tick.backfill, args))


@job
async def explode(ctx: Any) -> None:
    raise RuntimeError("boom")


@job
async def slow(ctx: Any, seconds: float) -> None:
    """Runs ``seconds`` of simulated time (a handler slower than its schedule)."""
    tick = ctx.tick
    RUNS.append((tick.reference, tick.instant.isoformat(), tick.manual, tick.backfill, ()))
    clock = ctx.system.clock
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake() -> None:
        if not future.done():
            future.set_result(None)

    clock.call_at(clock.monotonic() + seconds, wake)
    await future


#: (instant ISO, attempt) of every start of ``flaky``.
ATTEMPTS: list[tuple[str, int]] = []


@job(retry=Retry(base=1.0, jitter=0.0))
async def flaky(ctx: Any) -> None:
    """Fails its first attempt, succeeds at the retry."""
    ATTEMPTS.append((ctx.tick.instant.isoformat(), ctx.attempt))
    if ctx.attempt == 1:
        raise ConnectionError("db away")


@job(retry=Retry(base=1.0, jitter=0.0), max_retries=1)
async def doomed(ctx: Any) -> None:
    """Fails every attempt: parked after one retry."""
    raise RuntimeError("still broken")


#: Runs of ``exclusive`` in progress now, and the most ever at once.
ACTIVE = [0, 0]


@job
async def exclusive(ctx: Any, seconds: float) -> None:
    """Runs ``seconds`` of simulated time, counting how many run at once."""
    ACTIVE[0] += 1
    ACTIVE[1] = max(ACTIVE[1], ACTIVE[0])
    try:
        await slow(ctx, seconds)
    finally:
        ACTIVE[0] -= 1
