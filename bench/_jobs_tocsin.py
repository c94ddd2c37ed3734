# SPDX-License-Identifier: Apache-2.0
"""bench/jobs.py's tocsin side: a worker process, and a producer process of Clients.

``worker URL OUT``: an ActorSystem on the store running ``bench.record``; prints
``ready`` once started, runs until SIGTERM. Each run appends ``<enqueued> <started>``
(epoch seconds) to OUT. ``produce URL PRODUCERS JOBS PACE``: one Client (a web worker's), PRODUCERS
concurrent producers on it, each enqueueing its share of JOBS one after another
(``PACE`` seconds apart, 0: at once).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import IO

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from tocsin import ActorSystem, Client, JobContext, job

_OUT: IO[str] | None = None


@job(name="bench.record")
async def record(ctx: JobContext, enqueued: float) -> None:
    global _OUT
    started = time.time()
    if _OUT is None:
        _OUT = open(os.environ["BENCH_JOBS_OUT"], "a", buffering=1)  # noqa: SIM115
    _OUT.write(f"{enqueued} {started}\n")


async def worker(url: str) -> None:
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with ActorSystem("bench-worker", store=url, jobs=[__name__]):
        print("ready", flush=True)
        await stop.wait()


async def produce(url: str, producers: int, jobs: int, pace: float) -> None:
    # One Client for the process, as a web worker holds one for all its requests: the
    # producers are concurrent requests (on PostgreSQL their writes share commits).
    async with Client(url) as client:

        async def one(count: int) -> None:
            for _ in range(count):
                await client.jobs.enqueue("bench.record", time.time())
                if pace:
                    await asyncio.sleep(pace)

        share = [jobs // producers + (1 if i < jobs % producers else 0) for i in range(producers)]
        await asyncio.gather(*(one(n) for n in share))


if __name__ == "__main__":
    role, url = sys.argv[1], sys.argv[2]
    if role == "worker":
        asyncio.run(worker(url))
    else:
        asyncio.run(produce(url, int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])))
