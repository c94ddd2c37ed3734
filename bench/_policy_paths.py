# SPDX-License-Identifier: Apache-2.0
"""CPU per tick of in-memory schedules with and without policies, in process, on a
ManualClock (issue 22), for comparing two checkouts.

Usage (one tree per process, interleave them)::

    PYTHONPATH=/tmp/before/src .venv/bin/python bench/_policy_paths.py none cron
    PYTHONPATH=src .venv/bin/python bench/_policy_paths.py

Each variant: 2,000 schedules ticking every second (interval 1 s, or cron ``* * * * * ?``)
to one actor that does nothing, 20 simulated seconds; prints one JSON line of process CPU
microseconds per delivered tick (``time.process_time``), the minimum of 3 rounds. The
variants ``none`` and ``cron`` pass no policy, so they run on a tree without policies too.
Jittered schedules tick at distinct instants, so each of their ticks also pays its own
timer wake-up (the price of spreading them). Not run by ``bench/run_all.py``.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from datetime import UTC, datetime
from typing import Any

from tocsin import Actor, ActorSystem, ManualClock

N = 2000
SECONDS = 20
ROUNDS = 3


class Sink(Actor):
    async def receive(self, ctx: Any) -> None:
        pass


def _kwargs(variant: str) -> dict[str, Any]:
    if variant in ("none", "cron"):
        return {}
    from tocsin import Calendar, Overlap

    if variant.endswith("skip"):
        return {"overlap": Overlap.SKIP}
    if variant.endswith("jitter"):
        return {"jitter": 0.5}
    if variant.endswith("calendar"):
        return {"exclude": Calendar.dates("2001-01-01") | Calendar.daily("03:00", "03:01")}
    raise ValueError(variant)


async def one(variant: str) -> float:
    clock = ManualClock(wall=datetime(2030, 1, 7, 12, tzinfo=UTC))
    kwargs = _kwargs(variant)
    async with ActorSystem(clock=clock, timezone="UTC") as system:
        pid = await system.spawn(Sink)
        for i in range(N):
            if variant.startswith("cron"):
                await system.schedule_cron(i, pid, "* * * * * ?", reference=f"p{i}", **kwargs)
            else:
                await system.schedule(i, pid, 1.0, reference=f"p{i}", **kwargs)
        await clock.advance(1.0)
        gc.collect()
        before = system.scheduler_metrics().ticks_delivered
        cpu = time.process_time()
        await clock.advance(SECONDS)
        cpu = time.process_time() - cpu
        ticks = system.scheduler_metrics().ticks_delivered - before
    return cpu / ticks * 1e6


def main(argv: list[str]) -> None:
    variants = argv or [
        "none",
        "skip",
        "jitter",
        "calendar",
        "cron",
        "cron+jitter",
        "cron+calendar",
    ]
    out = {v: round(min(asyncio.run(one(v)) for _ in range(ROUNDS)), 2) for v in variants}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
