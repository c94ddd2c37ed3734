# SPDX-License-Identifier: Apache-2.0
"""Stored schedules (``system.schedules``) beside cluster cron today.

Questions:

1. **Sustained fires.** N schedules firing every second on three nodes of one cluster
   (three ``ActorSystem`` in one process on a ``memory://`` coordinator and one memory
   store, real clock): stored ``Interval(1)`` schedules to a job, against N cluster cron
   schedules ``* * * * * ?`` (``schedule_cron(reference=...)`` on every node) to an
   actor. Over the measured window: instants delivered per second, p50/p99 start
   lateness (handler start minus instant), duplicates (an instant run twice) and lost
   instants (none run). One process for three nodes: the numbers are the runtime's cost
   per instant (claim, decision, ledger row, run), not a database's.
2. **Start-up and memory.** N stored schedules in a SQLite store (``stored``) or a memory
   store (``stored-memory``, its rows made before the count): seconds from
   ``ActorSystem(...).start()`` until every one is armed, resident memory per stored
   schedule, and (a second, untimed pass under tracemalloc) the bytes the node keeps per
   schedule; beside N ``schedule_cron`` calls on a started cluster node (the schedules
   cluster cron keeps in memory).

Reproduce: ``.venv/bin/python bench/schedules.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import asyncio
import gc
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _common import Config, Runs, fmt, median_row, percentile, rss_bytes, run_main, table

#: Seconds of warm-up before the measured window, and of drain after it.
WARMUP = 3.0

#: (id, instant, node, start lateness): every run the stored bench's job saw.
RUNS: list[tuple[str, float, str, float]] = []


def add_arguments(parser: Any) -> None:
    parser.add_argument("--seconds", type=float, default=None, help="measured window")
    parser.add_argument("--fire-sizes", default=None, help="comma-separated N of the fire runs")
    parser.add_argument("--start-sizes", default=None, help="comma-separated N of start-up runs")


def _sizes(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    return default if text is None else tuple(int(x) for x in text.split(",") if x)


def configs(args: Any) -> list[Config]:
    seconds = args.seconds or (1.0 if args.quick else 20.0)
    settle = 1.0 if args.quick else WARMUP  # warm-up before the window, drain after it
    fire_sizes = _sizes(args.fire_sizes, (50,) if args.quick else (1_000, 10_000))
    start_sizes = _sizes(args.start_sizes, (200,) if args.quick else (10_000, 100_000))
    out = []
    for n in fire_sizes:
        for system in ("stored", "cron"):
            out.append(
                Config(
                    f"fire/{system}/{n}",
                    {
                        "test": "fire",
                        "system": system,
                        "n": n,
                        "seconds": seconds,
                        "settle": settle,
                    },
                    timeout=600,
                )
            )
    for n in start_sizes:
        for system in ("stored", "stored-memory", "cron"):
            out.append(
                Config(
                    f"start/{system}/{n}",
                    {"test": "start", "system": system, "n": n},
                    timeout=900,
                )
            )
    return out


async def bench_job(ctx: Any) -> None:
    """The stored schedules' job: record when it started."""
    tick = ctx.tick
    instant = tick.instant.timestamp()
    RUNS.append((tick.reference, instant, ctx.system.name, time.time() - instant))


def _register_job() -> str:
    from tocsin.jobs import job

    job(name="bench.schedules.record")(bench_job)
    return "bench.schedules.record"


async def _fire(system_kind: str, n: int, seconds: float, settle: float) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem, Cluster, ReceiveContext
    from tocsin.schedules import Interval, Schedule
    from tocsin.stores import MemoryStore

    runs = RUNS
    url = f"memory://{uuid.uuid4().hex}"
    store = MemoryStore()

    class Sink(Actor):
        def __init__(self, name: str) -> None:
            self.name = name

        async def receive(self, ctx: ReceiveContext) -> None:
            tick = ctx.tick
            if tick is not None:
                instant = tick.instant.timestamp()
                runs.append((tick.reference, instant, self.name, time.time() - instant))

    declared = None
    if system_kind == "stored":
        name = _register_job()
        declared = [Schedule(f"s{i}", Interval(1), name) for i in range(n)]
    systems = [
        ActorSystem(
            node,
            store=store,
            cluster=Cluster(url, lease=10.0, poll_interval=1.0),
            schedules=declared,
        )
        for node in ("a", "b", "c")
    ]
    for system in systems:
        await system.start()
    try:
        if system_kind == "cron":
            for system in systems:
                pid = await system.spawn(lambda s=system: Sink(s.name), "sink")
                for i in range(n):
                    await system.schedule_cron("t", pid, "* * * * * ?", reference=f"c{i}")
        await asyncio.sleep(settle)
        start = time.time()
        runs.clear()
        await asyncio.sleep(seconds)
        end = time.time()
        await asyncio.sleep(settle)
        window = [r for r in runs if start <= r[1] < end]
    finally:
        for system in systems:
            await system.stop()
    by_instant: dict[tuple[str, float], int] = {}
    for ref, instant, _node, _late in window:
        key = (ref, round(instant, 3))
        by_instant[key] = by_instant.get(key, 0) + 1
    duplicates = sum(c - 1 for c in by_instant.values() if c > 1)
    expected = n * len(range(int(start) + 1, int(end)))
    seen = {(ref, inst) for (ref, inst) in by_instant if int(start) + 1 <= inst < int(end)}
    late = sorted(r[3] for r in window)
    return {
        "n": n,
        "seconds": end - start,
        "fires_per_s": len(by_instant) / (end - start),
        "target_per_s": n,
        "late_p50_ms": percentile(late, 0.50) * 1e3 if late else None,
        "late_p99_ms": percentile(late, 0.99) * 1e3 if late else None,
        "duplicates": duplicates,
        "lost": max(0, expected - len(seen)),
    }


async def _seed(store: Any, n: int) -> None:
    """``n`` stored schedules (every hour: none comes due while measured) in ``store``."""
    from tocsin.schedules import Interval, Schedule
    from tocsin.schedules._instants import resolve
    from tocsin.schedules._spi import encode_spec
    from tocsin.stores import ScheduleRow

    name = _register_job()
    now = time.time()
    for i in range(n):
        spec = resolve(Schedule(f"s{i}", Interval(3600), name), now)
        await store.write_schedule(
            ScheduleRow(spec.id, encode_spec(spec), 1, now, now), expect=None
        )


async def _retained(store: Any, n: int) -> float:
    """Bytes a node keeps per stored schedule (tracemalloc: objects allocated by its start
    and alive after it, not the allocator's arenas), in a pass of its own (untimed)."""
    import tracemalloc

    from tocsin import ActorSystem

    system = ActorSystem("n2", store=store)
    gc.collect()
    tracemalloc.start(1)
    try:
        before = tracemalloc.get_traced_memory()[0]
        await system.start()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
        await system.stop()
    return (after - before) / n


async def _start(system_kind: str, n: int) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem, Cluster, ReceiveContext
    from tocsin.stores import MemoryStore
    from tocsin.stores.sqlite import SQLiteStore

    class Sink(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            pass

    retained = None
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "app.db"
        store: Any = f"sqlite:///{path}"
        if system_kind == "stored":
            seed = SQLiteStore(path)
            await seed.open()
            await _seed(seed, n)
            await seed.close()
        elif system_kind == "stored-memory":
            # The store's rows are made before the count: what is counted is the node's.
            store = MemoryStore()
            await _seed(store, n)
        gc.collect()
        before = rss_bytes()
        started = time.perf_counter()
        if system_kind != "cron":
            system = ActorSystem("n1", store=store)
            await system.start()
            armed = time.perf_counter() - started
        else:
            system = ActorSystem("n1", cluster=Cluster(f"memory://{uuid.uuid4().hex}"))
            await system.start()
            pid = await system.spawn(Sink, "sink")
            for i in range(n):
                await system.schedule_cron("t", pid, "0 * * * * ?", reference=f"c{i}")
            armed = time.perf_counter() - started
        gc.collect()
        after = rss_bytes()
        await system.stop()
        if system_kind != "cron":
            retained = await _retained(store, n)
    return {
        "n": n,
        "start_s": armed,
        "rss_mb": (after - before) / 2**20,
        "bytes_per_schedule": (after - before) / n,
        "retained_per_schedule": retained,
    }


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params["test"] == "fire":
        settle = params.get("settle", WARMUP)
        return asyncio.run(_fire(params["system"], params["n"], params["seconds"], settle))
    return asyncio.run(_start(params["system"], params["n"]))


def report(args: Any, runs: Runs) -> dict[str, Any]:
    rows = []
    for name in runs:
        if not name.startswith("fire/"):
            continue
        _, system, n = name.split("/")
        r = median_row(runs[name])
        rows.append(
            (system, n, r.get("fires_per_s"), r.get("target_per_s"), r.get("late_p50_ms"),
             r.get("late_p99_ms"), r.get("duplicates"), r.get("lost"))
        )  # fmt: skip
    print("\n### Sustained fires: N schedules every second on 3 nodes (one process)\n")
    headers = ["system", "N", "instants/s", "target/s", "start late p50 ms",
               "start late p99 ms", "duplicates", "lost"]  # fmt: skip
    print(table(headers, rows))
    rows = []
    for name in runs:
        if not name.startswith("start/"):
            continue
        _, system, n = name.split("/")
        r = median_row(runs[name])
        rows.append(
            (system, n, r.get("start_s"), r.get("rss_mb"), r.get("bytes_per_schedule"),
             r.get("retained_per_schedule"))
        )  # fmt: skip
    print("\n### Start-up and memory per schedule\n")
    headers = ["system", "N", "start s", "RSS MB", "RSS bytes/schedule", "retained bytes/schedule"]
    print(table(headers, rows))
    return {"bench": "schedules", "note": fmt(0)}


def main(argv: list[str] | None = None) -> int:
    return run_main(
        argv,
        description=__doc__.splitlines()[0],
        script=__file__,
        add_arguments=add_arguments,
        child=child,
        configs=configs,
        report=report,
    )


if __name__ == "__main__":
    sys.exit(main())
