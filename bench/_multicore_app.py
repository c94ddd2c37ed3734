# SPDX-License-Identifier: Apache-2.0
"""The application ``bench/multicore.py`` runs under ``tocsin run`` (one copy per worker).

Parameters come from the environment the bench sets for the arbiter (inherited by the
workers): ``BENCH_DIR`` (where the go file and results are), ``BENCH_MODE`` (``durable``
or ``actor``), ``BENCH_TOTAL`` (tasks or messages over all workers), ``BENCH_WORKERS``,
``BENCH_BURN`` (loop iterations of ~1 ms CPU per durable task), ``BENCH_ACTORS``.

Each worker waits for ``BENCH_DIR/go``, does its share of the work, and writes
``BENCH_DIR/result-<worker>.json`` with its wall-clock start and end.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.durable import Call, DurableActor

DIR = Path(os.environ.get("BENCH_DIR", "."))
MODE = os.environ.get("BENCH_MODE", "durable")
TOTAL = int(os.environ.get("BENCH_TOTAL", "1000"))
WORKERS = int(os.environ.get("BENCH_WORKERS", "1"))
BURN = int(os.environ.get("BENCH_BURN", "10000"))
ACTORS = int(os.environ.get("BENCH_ACTORS", "16"))


def burn(n: int) -> int:
    """About 1 ms of pure-Python CPU work for the calibrated ``n``."""
    total = 0
    for i in range(n):
        total += i * i
    return total


class _Done:
    def __init__(self) -> None:
        self.count = 0
        self.target = 0
        self.future: asyncio.Future[None] | None = None

    def hit(self) -> None:
        self.count += 1
        if self.count == self.target and self.future is not None and not self.future.done():
            self.future.set_result(None)


DONE = _Done()


class Burner(DurableActor):
    kind = "bench-multicore"

    def work(self, payload: int) -> None:
        burn(BURN)
        DONE.hit()

    async def queue_tx(self, count: int) -> int:
        async with self.transaction():
            for i in range(count):
                await self.queue("work", i)
        return count


class Counter(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        if ctx.message == "flush":
            ctx.respond(None)
        else:
            DONE.hit()


async def _bench(system: ActorSystem) -> None:
    number = int(system.name.rsplit("-", 1)[1])
    share = TOTAL // WORKERS
    go = DIR / "go"
    while not go.exists():
        await asyncio.sleep(0.002)
    DONE.target = share
    DONE.future = asyncio.get_running_loop().create_future()
    started, cpu0 = time.time(), time.process_time()
    if MODE == "durable":
        pids = [await system.durable(Burner, f"b{k}") for k in range(ACTORS)]
        per = [share // ACTORS + (1 if k < share % ACTORS else 0) for k in range(ACTORS)]
        await asyncio.gather(
            *(pid.ask(Call("queue_tx", n), timeout=None) for pid, n in zip(pids, per, strict=True))
        )
    else:
        pids = [await system.spawn(Counter, f"c{k}") for k in range(ACTORS)]
        for i in range(share):
            pids[i % ACTORS].tell(i)
            if i % 10_000 == 0:
                await asyncio.sleep(0)  # let the receivers run, as a real sender would
    await DONE.future
    ended, cpu = time.time(), time.process_time() - cpu0
    result: dict[str, Any] = {
        "worker": number,
        "start": started,
        "end": ended,
        "done": share,
        "cpu_s": cpu,
    }
    partial = DIR / f"partial-{number}.json"
    partial.write_text(json.dumps(result))
    partial.rename(DIR / f"result-{number}.json")  # atomic: the bench never reads half


_tasks: set[asyncio.Task[None]] = set()


async def main(system: ActorSystem) -> None:
    task = asyncio.get_running_loop().create_task(_bench(system))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
