# SPDX-License-Identifier: Apache-2.0
"""The application ``bench/multicore.py`` runs under ``tocsin run`` (one copy per worker).

Parameters come from the environment the bench sets for the arbiter (inherited by the
workers): ``BENCH_DIR`` (where the go file and results are), ``BENCH_MODE`` (``durable``
or ``actor``), ``BENCH_TOTAL`` (tasks or messages over all workers), ``BENCH_WORKERS``,
``BENCH_BURN`` (loop iterations of ~1 ms CPU per durable task), ``BENCH_ACTORS``
(counter actors per worker), ``BENCH_IDENTITIES`` (durable identities in the cluster).

Durable mode is one cluster: the workers share the run's SQLite store, and the
BENCH_IDENTITIES durable identities are placed over them by rendezvous hashing (each
worker's ``main`` first waits until every worker is a member, then activates its share
of the identities with an ask, which activates each on its owner). After the go file,
worker w queues the tasks of identities k with k % W == w - 1 (a remote ask when another
worker owns k); each task runs on its identity's owner. Every worker writes
``BENCH_DIR/progress-<worker>.json`` (tasks it ran, the wall time of the last, its CPU)
and the bench waits until the sum reaches BENCH_TOTAL.

Actor mode: each worker tells its share to BENCH_ACTORS counter actors of its own and
writes ``BENCH_DIR/result-<worker>.json`` when they have all been processed.
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
IDENTITIES = int(os.environ.get("BENCH_IDENTITIES", "1024"))
#: Seconds between two progress files of a durable worker.
PROGRESS_EVERY = 0.05


def run_delay() -> float:
    """Seconds this process's main thread has been runnable but not running (waiting for
    a core: ``/proc/self/schedstat``, field 2); 0.0 where unavailable."""
    try:
        with open("/proc/self/schedstat") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


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

        self.last = 0.0
        self.max_gap = 0.0
        self.gap_end = 0.0

    def hit(self) -> None:
        self.count += 1
        now = time.time()
        if self.last and now - self.last > self.max_gap:
            # The longest pause between two task runs of this worker, and when it ended.
            self.max_gap, self.gap_end = now - self.last, now
        self.last = now
        if self.count == self.target and self.future is not None and not self.future.done():
            self.future.set_result(None)


DONE = _Done()
#: Seconds this worker took to activate its share of the identities (one entry).
ACTIVATION: list[float] = []


class Burner(DurableActor):
    kind = "bench-multicore"

    def work(self, payload: int) -> None:
        burn(BURN)
        DONE.hit()

    async def ping(self, payload: None) -> None:
        del payload

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


async def _wait_go() -> None:
    go = DIR / "go"
    while not go.exists():
        await asyncio.sleep(0.002)


def _write(name: str, result: dict[str, Any]) -> None:
    partial = DIR / f"partial-{name}"
    partial.write_text(json.dumps(result))
    partial.rename(DIR / name)  # atomic: the bench never reads half


async def _wait_members(system: ActorSystem) -> None:
    for _ in range(6000):
        if len(system.cluster.members()) >= WORKERS:
            return
        await asyncio.sleep(0.01)
    raise RuntimeError(f"fewer than {WORKERS} workers joined within 60 s")


async def _activate(system: ActorSystem, number: int) -> list[Any]:
    """This worker's share of the identities, activated on their owners (before go)."""
    await _wait_members(system)
    mine = [k for k in range(IDENTITIES) if k % WORKERS == number - 1]
    started = time.perf_counter()
    pids = [await system.durable(Burner, f"b{k}") for k in mine]
    await asyncio.gather(*(pid.ask(Call("ping"), timeout=60) for pid in pids))
    # Each activation is a directory claim on the coordinator (plus a fence write in the
    # store); the bench reports this as the coordinator's cost, outside the timed part.
    ACTIVATION.append(time.perf_counter() - started)
    return pids


async def _durable(system: ActorSystem, number: int, pids: list[Any]) -> None:
    await _wait_go()
    started, cpu0, delay0 = time.time(), time.process_time(), run_delay()
    mine = [k for k in range(IDENTITIES) if k % WORKERS == number - 1]
    per = {k: TOTAL // IDENTITIES + (1 if k < TOTAL % IDENTITIES else 0) for k in mine}

    # Store commits while measured (how hard the shared SQLite writer is used): a figure
    # the store counts; read through the system's internals, in this bench only.
    store = getattr(getattr(system, "_durable", None), "store", None)
    commits0 = getattr(store, "commits", 0)

    async def progress() -> None:
        while True:
            cpu = time.process_time() - cpu0
            result = {"worker": number, "start": started, "done": DONE.count}
            commits = getattr(store, "commits", 0) - commits0
            result |= {"end": DONE.last, "cpu_s": cpu, "activate_s": sum(ACTIVATION)}
            result["commits"] = commits
            result["max_gap_s"] = DONE.max_gap
            result["gap_end"] = DONE.gap_end - started if DONE.gap_end else 0.0
            if DONE.last:
                result["run_delay_s"] = run_delay() - delay0
            _write(f"progress-{number}.json", result)
            await asyncio.sleep(PROGRESS_EVERY)

    reporter = asyncio.get_running_loop().create_task(progress())
    _tasks.add(reporter)
    await asyncio.gather(
        *(
            pid.ask(Call("queue_tx", per[k]), timeout=None)
            for pid, k in zip(pids, mine, strict=True)
        )
    )


async def _actors(system: ActorSystem, number: int) -> None:
    share = TOTAL // WORKERS
    await _wait_go()
    DONE.target = share
    DONE.future = asyncio.get_running_loop().create_future()
    started, cpu0, delay0 = time.time(), time.process_time(), run_delay()
    pids = [await system.spawn(Counter, f"c{k}") for k in range(ACTORS)]
    for i in range(share):
        pids[i % ACTORS].tell(i)
        if i % 10_000 == 0:
            await asyncio.sleep(0)  # let the receivers run, as a real sender would
    await DONE.future
    ended, cpu = time.time(), time.process_time() - cpu0
    result = {"worker": number, "start": started, "end": ended, "done": share, "cpu_s": cpu}
    result["run_delay_s"] = run_delay() - delay0
    _write(f"result-{number}.json", result)


_tasks: set[asyncio.Task[None]] = set()


async def main(system: ActorSystem) -> None:
    number = int(system.name.rsplit("-", 1)[1])
    if MODE == "durable":
        pids = await _activate(system, number)  # before "ready": placement is done
        task = asyncio.get_running_loop().create_task(_durable(system, number, pids))
    else:
        task = asyncio.get_running_loop().create_task(_actors(system, number))
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
