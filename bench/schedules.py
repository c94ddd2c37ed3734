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

3. **Three node processes.** N stored ``Interval(every)`` schedules to a job, in a
   PostgreSQL store (``fsync=on``), run by three node processes (``bench/_cluster_node.py
   stored``: remoting, ``Cluster(coordinator)``) on a PostgreSQL and on a Redis
   coordinator, side by side in one run. The anchors are spread over the interval (N /
   every instants each second, as schedules added over time are). Per coordinator: each
   node's start-up (``start()`` on a store already holding the N schedules: read, decode,
   arm, join) and RSS; over a window of T seconds, instants delivered per second, lost
   (an instant of the window without any ledger row), the ledger's outcomes (an instant
   ``skipped_overlap`` or ``missed`` was decided, not lost; late ones are waited for
   until no row comes for 20 s, at most 120 s), duplicated (run by more than
   one node, from the job's own records), p50/p99 start lateness (the job's start minus
   the instant) and CPU per fire (the three nodes' CPU over the window, per delivered
   instant: idle work included).

Reproduce: ``.venv/bin/python bench/schedules.py`` (``--quick`` for a smoke run);
``--only cluster/ --cluster-sizes 10000 --every 30 --seconds 60`` for the third alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import math
import os
import select
import subprocess
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
    parser.add_argument(
        "--cluster-sizes", default=None, help="comma-separated N of the three-process runs"
    )
    parser.add_argument(
        "--every", type=float, default=None, help="three-process runs: each schedule's interval"
    )
    parser.add_argument(
        "--coordinators", default="postgres,redis", help="three-process runs: coordinators"
    )


def _sizes(text: str | None, default: tuple[int, ...]) -> tuple[int, ...]:
    return default if text is None else tuple(int(x) for x in text.split(",") if x)


def configs(args: Any) -> list[Config]:
    seconds = args.seconds or (1.0 if args.quick else 20.0)
    settle = 1.0 if args.quick else WARMUP  # warm-up before the window, drain after it
    fire_sizes = _sizes(args.fire_sizes, (50,) if args.quick else (1_000, 10_000))
    start_sizes = _sizes(args.start_sizes, (200,) if args.quick else (10_000, 100_000))
    # Not in --quick (the smoke run's budget is two minutes; three node processes and two
    # servers take most of it on a busy machine) unless sizes are asked for.
    cluster_sizes = _sizes(args.cluster_sizes, () if args.quick else (10_000,))
    every = args.every or (2.0 if args.quick else 60.0)
    out = []
    for n in cluster_sizes:
        for coordinator in args.coordinators.split(","):
            out.append(
                Config(
                    f"cluster/{coordinator}/{n}",
                    {
                        "test": "cluster",
                        "coordinator": coordinator,
                        "n": n,
                        "every": every,
                        "seconds": args.seconds or (4.0 if args.quick else 60.0),
                    },
                    timeout=900,
                )
            )
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


#: Nodes of the three-process runs, and the real seconds one may take to start.
NODES = 3
READY_TIMEOUT = 300.0
#: Seconds without a new ledger row of the window after which its undecided instants
#: count as lost.
DRAIN_QUIET = 20.0
#: Most seconds waited after the window for its instants to be decided.
DRAIN_MAX = 120.0


def n_expected(anchors: list[float], every: float, start: float, end: float) -> int:
    """How many instants ``anchor + k * every`` lie in ``[start, end)``."""
    return sum(
        max(0, math.ceil((end - a) / every) - math.ceil((start - a) / every)) for a in anchors
    )


def _read_line(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    """The next JSON line of a node process (bounded)."""
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"node {proc.args!r} said nothing within {timeout} s")
        if select.select([proc.stdout], [], [], left)[0]:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"node {proc.args!r} exited ({proc.wait()})")
            if line.startswith("{"):
                parsed: dict[str, Any] = json.loads(line)
                return parsed


async def _seed_spread(store_url: str, n: int, every: float, now: float) -> list[float]:
    """``n`` stored ``Interval(every)`` schedules to the node's job, anchors spread over
    the interval; returns the anchors."""
    from datetime import UTC, datetime

    from _cluster_node import STORED_JOB

    from tocsin.schedules import Interval, Schedule
    from tocsin.schedules._spi import encode_spec
    from tocsin.stores import ScheduleRow
    from tocsin.stores.postgres import PostgresStore

    dsn, _, schema = store_url.partition("#")
    store = PostgresStore(dsn, schema=schema)
    await store.open()
    base = math.floor(now)
    anchors = [base + i * every / n for i in range(n)]
    try:
        for first in range(0, n, 200):
            rows = []
            for i in range(first, min(first + 200, n)):
                anchor = datetime.fromtimestamp(anchors[i], UTC)
                spec = Schedule(f"s{i}", Interval(every, anchor=anchor), STORED_JOB)
                rows.append(ScheduleRow(spec.id, encode_spec(spec), 1, now, now))
            await asyncio.gather(*(store.write_schedule(r, expect=None) for r in rows))
    finally:
        await store.close()
    return anchors


async def _decided_until(store_url: str, now: float) -> None:
    """Every stored schedule changed at ``now``: nothing before it is overdue for the nodes
    starting (as after a rolling restart, where the ledger says how far each was decided),
    so their start-up is the load of N schedules, not N catch-up decisions."""
    import asyncpg

    dsn, _, schema = store_url.partition("#")
    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(f"UPDATE {schema}.tocsin_schedules SET updated_at = $1", now)
    finally:
        await conn.close()


async def _ledger(store_url: str, start: float, end: float) -> list[tuple[str, float, str]]:
    """The ledger rows of the window: (id, instant, outcome)."""
    import asyncpg

    dsn, _, schema = store_url.partition("#")
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            f"SELECT id, instant, outcome FROM {schema}.tocsin_schedule_history "
            "WHERE instant >= $1 AND instant < $2",
            start,
            end,
        )
    finally:
        await conn.close()
    return [(r[0], float(r[1]), r[2]) for r in rows]


def _cluster(coordinator: str, n: int, every: float, seconds: float) -> dict[str, Any]:
    """N stored schedules on three node processes, one coordinator (see the docstring)."""
    from tests.integration.pg import temporary_server as pg_server
    from tests.integration.redis_server import temporary_server as redis_server

    tag = uuid.uuid4().hex[:8]
    script = Path(__file__).with_name("_cluster_node.py")
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(pg_server({"fsync": "on", "synchronous_commit": "on"}))
        store = f"{server.dsn}#s_{tag}"
        if coordinator == "redis":
            url = f"{stack.enter_context(redis_server())}?prefix=b{tag}:"
        else:
            url = f"{server.dsn}?schema=c_{tag}"
        seeded = time.perf_counter()
        anchors = asyncio.run(_seed_spread(store, n, every, time.time()))
        seed_s = time.perf_counter() - seeded
        asyncio.run(_decided_until(store, time.time()))
        command = [sys.executable, str(script), "stored", url, store]
        procs = [
            subprocess.Popen(
                [*command, f"n{k}", "10"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
            for k in range(NODES)
        ]
        try:
            ready = [_read_line(proc, READY_TIMEOUT) for proc in procs]
            load_before = os.getloadavg()[0]
            start = math.ceil(time.time()) + 3
            end = start + seconds
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write(f"{start} {end}\n")
                proc.stdin.flush()
            # The window's instants are decided late when the nodes fall behind: wait until
            # each has its ledger row, or until no row came for DRAIN_QUIET seconds.
            time.sleep(max(0.0, end + 5.0 - time.time()))
            ledger, quiet = asyncio.run(_ledger(store, start, end)), time.monotonic()
            while len(ledger) < n_expected(anchors, every, start, end):
                time.sleep(2.0)
                more = asyncio.run(_ledger(store, start, end))
                if len(more) > len(ledger):
                    quiet = time.monotonic()
                ledger = more
                if time.monotonic() - quiet > DRAIN_QUIET or time.time() - end > DRAIN_MAX:
                    break
            drain_s = time.time() - end
            for proc in procs:
                assert proc.stdin is not None
                proc.stdin.write("stop\n")
                proc.stdin.flush()
            results = [_read_line(proc, READY_TIMEOUT) for proc in procs]
            load_after = os.getloadavg()[0]
        finally:
            for proc in procs:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()
            for proc in procs:
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                for pipe in (proc.stdin, proc.stdout):
                    if pipe is not None:
                        with contextlib.suppress(OSError):
                            pipe.close()
    # The nominal instants of the window: anchor + k * every in [start, end).
    expected = set()
    for i, anchor in enumerate(anchors):
        k = math.ceil((start - anchor) / every)
        instant = anchor + k * every
        while instant < end:
            expected.add((f"s{i}", round(instant, 3)))
            k += 1
            instant = anchor + k * every
    outcomes: dict[str, int] = {}
    delivered = set()
    decided = set()
    for sid, instant, outcome in ledger:
        key = (sid, round(instant, 3))
        if key not in expected:
            continue
        decided.add(key)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if outcome == "delivered":
            delivered.add(key)
    runs: dict[tuple[str, float], int] = {}
    first_late: dict[tuple[str, float], float] = {}
    for result in results:
        for sid, instant, late in result["runs"]:
            key = (sid, round(instant, 3))
            runs[key] = runs.get(key, 0) + 1
            first_late[key] = min(first_late.get(key, math.inf), late)
    late = sorted(first_late.values())
    cpu = sum(r["cpu"] for r in results)
    return {
        "n": n,
        "every": every,
        "seconds": seconds,
        "drain_s": drain_s,
        "seed_s": seed_s,
        "start_s_max": max(r["start_s"] for r in ready),
        "rss_mb_max": max(r["rss"] for r in results) / 2**20,
        "rss_delta_mb_max": max(r["rss_delta"] for r in ready) / 2**20,
        "expected": len(expected),
        "target_per_s": n / every,
        # Delivered instants of the window over the window plus the drain they needed.
        "fires_per_s": len(delivered) / (seconds + drain_s),
        "lost": len(expected - decided),
        "not_delivered": len(expected - delivered),
        "not_run": len(expected - set(runs)),
        "duplicated": sum(1 for c in runs.values() if c > 1),
        "outcomes": outcomes,
        "late_p50_ms": percentile(late, 0.50) * 1e3 if late else None,
        "late_p99_ms": percentile(late, 0.99) * 1e3 if late else None,
        "cpu_us_per_fire": cpu / max(len(delivered), 1) * 1e6,
        "load_before": load_before,
        "load_after": load_after,
    }


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params["test"] == "cluster":
        return _cluster(params["coordinator"], params["n"], params["every"], params["seconds"])
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
    rows = []
    for name in runs:
        if not name.startswith("cluster/"):
            continue
        _, coordinator, n = name.split("/")
        r = median_row(runs[name])
        rows.append(
            (coordinator, n, r.get("every"), r.get("start_s_max"), r.get("rss_mb_max"),
             r.get("fires_per_s"), r.get("target_per_s"), r.get("lost"),
             r.get("not_delivered"), r.get("duplicated"),
             r.get("late_p50_ms"), r.get("late_p99_ms"), r.get("drain_s"),
             r.get("cpu_us_per_fire"),
             f"{r.get('load_before', 0):.1f}-{r.get('load_after', 0):.1f}")
        )  # fmt: skip
    if rows:
        print("\n### Stored schedules on three node processes (PostgreSQL store)\n")
        headers = ["coordinator", "N", "every s", "start s (slowest node)", "RSS MB (largest)",
                   "fires/s", "target/s", "lost", "not delivered", "duplicated",
                   "start late p50 ms",
                   "p99 ms", "drain s", "CPU µs/fire", "load"]  # fmt: skip
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
