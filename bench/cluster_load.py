# SPDX-License-Identifier: Apache-2.0
"""Cluster load: N references firing every second on three node processes, one coordinator.

Question: does a cluster deliver every tick of N every-second cron schedules exactly once,
on time, at a cost near one process's? Three node processes (real ``ActorSystem``s with
remoting and ``Cluster(coordinator)``) each schedule the same N references
(``schedule_cron(..., "0/1 * * * * ?", reference=f"load-{i}")``) to a local actor that
records, per delivered tick, the instant it stands for and the wall time it arrived. Over
a window of T seconds (instants ``[start, start + T)``, fixed by the parent once every
node is ready) the parent counts per instant:

* **delivered**: delivered by exactly one node; **duplicated**: by more than one;
  **lost**: by none (every reference, every instant of the window);
* **lateness** p50/p99 (ms): arrival wall time minus the instant, first delivery;
* **CPU per fire** (µs): user + system CPU of the three processes from half a second
  before the window to the end of its tail, divided by the fires delivered in that same
  time (the tail's instants included: dividing by the window's fires alone counted the
  tail's work for nothing, 1.15x too high at 20 s, 1.3x at 10 s);
* the nodes' ``claims_failed`` (claims that raised: the ticks they did not deliver).

Beside it, the same N schedules in one process without a cluster (``one process``).
Load (``os.getloadavg()``) is recorded before and after each run: the machine is shared.

Coordinators: PostgreSQL (a throw-away server, ``fsync=on``, ``synchronous_commit=on``:
a claim is on disk when won), Redis (a throw-away ``redis-server``, defaults) and, with
``--backends sqlite``, a SQLite file (the nodes of one machine).

Side by side: ``--before TREE`` runs every configuration on another checkout too (its
``src`` first on the node processes' path, this script's node code), ``--repeats`` times,
alternating which tree goes first, and prints each run and the medians per tree.

Reproduce: ``.venv/bin/python bench/cluster_load.py --n 10 100 500 --seconds 20``
(``--json`` for a machine-readable line; ``--backends postgres redis one``;
``--before /tmp/before --repeats 3``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import select
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
#: The tree whose tocsin a node process runs (``--before``: the other checkout's src).
sys.path.insert(
    0, os.environ.get("TOCSIN_BENCH_SRC", str(Path(__file__).resolve().parent.parent / "src"))
)

from _common import percentile

SECRET = b"bench-cluster-load-secret-0123456789"
NODES = 3
#: Real seconds a node may take to start and schedule its N references.
READY_TIMEOUT = 120.0
#: Seconds after the window's last instant the nodes keep running (late deliveries).
TAIL = 3.0


# -- the node process ---------------------------------------------------------------------


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


#: Stored mode: the ticks the job saw (reference index, instant, arrival wall time).
_STORED_SEEN: list[tuple[int, int, float]] = []


async def _record(ctx: Any) -> None:
    """The stored schedules' job: records the tick it runs for."""
    tick = ctx.tick
    assert tick is not None
    arrived = time.time()  # bench measurement, not runtime time
    index = int(tick.reference.rsplit("-", 1)[1])
    _STORED_SEEN.append((index, round(tick.instant.timestamp()), arrived))


async def node_main(url: str, name: str, count: int, store: str | None = None) -> None:
    from tocsin import Actor, ActorSystem, Cluster, Interval, ReceiveContext, Remoting, Schedule
    from tocsin import job as register_job

    seen: list[tuple[int, int, float]] = []

    class Job(Actor):
        async def receive(self, ctx: ReceiveContext) -> None:
            tick = ctx.tick
            assert tick is not None
            arrived = time.time()  # bench measurement, not runtime time
            seen.append((int(ctx.message), round(tick.instant.timestamp()), arrived))

    cluster = None if url == "none" else Cluster(url, lease=10.0)
    remoting = None if cluster is None else Remoting(listen="tcp://127.0.0.1:0", secret=SECRET)
    schedules = None
    if store is not None:  # stored Interval(1) schedules running a job, in `store`
        record = register_job(name="bench.cluster_load.record")(_record)
        schedules = [Schedule(f"load-{i}", Interval(1), record) for i in range(count)]
        seen = _STORED_SEEN
    system = ActorSystem(name, remoting=remoting, cluster=cluster, store=store, schedules=schedules)
    async with system:
        if store is None:
            pid = await system.spawn(Job, "job")
            for i in range(count):
                await system.schedule_cron(i, pid, "0/1 * * * * ?", reference=f"load-{i}")
        print(json.dumps({"ready": name}), flush=True)
        line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        start, end = (float(x) for x in line.split())
        await asyncio.sleep(max(0.0, start - 0.5 - time.time()))
        cpu0, window0 = _cpu(), time.time()
        await asyncio.sleep(max(0.0, end + TAIL - time.time()))
        cpu, window1 = _cpu() - cpu0, time.time()
        # Every fire this node delivered while its CPU was measured (the tail's too).
        fires = sum(1 for _, _, a in seen if window0 <= a <= window1)
        failed = 0 if cluster is None else system.cluster.metrics().claims_failed
        rows = [(i, s, round((a - s) * 1000.0, 3)) for i, s, a in seen if start <= s < end]
        offset = 0.0 if cluster is None else system.cluster.offset
        print(
            json.dumps(
                {"cpu": cpu, "fires": fires, "failed": failed, "offset": offset, "seen": rows}
            ),
            flush=True,
        )


# -- the parent ---------------------------------------------------------------------------


def _spawn(
    url: str, name: str, count: int, store: str | None, src: str | None = None
) -> subprocess.Popen[str]:
    env = None if src is None else {**os.environ, "TOCSIN_BENCH_SRC": src}
    return subprocess.Popen(
        [sys.executable, __file__, "node", url, name, str(count), *([store] if store else [])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


def _read_line(proc: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"node {proc.args!r} said nothing within {timeout} s")
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if ready:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"node {proc.args!r} exited ({proc.wait()})")
            parsed: dict[str, Any] = json.loads(line)
            return parsed


def run_once(
    url: str,
    count: int,
    seconds: int,
    nodes: int,
    store: str | None = None,
    *,
    src: str | None = None,
) -> dict[str, Any]:
    """One run: ``nodes`` processes on coordinator ``url`` (``"none"``: no cluster), N
    every-second cron schedules each, or with a ``store`` N stored ``Interval(1)``
    schedules running a job; ``src``: the tocsin sources the nodes run (else this
    tree's)."""
    procs = [_spawn(url, f"n{k}", count, store, src) for k in range(nodes)]
    try:
        for proc in procs:
            _read_line(proc, READY_TIMEOUT)
        load_before = os.getloadavg()[0]
        start = math.ceil(time.time()) + 2
        end = start + seconds
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write(f"{start} {end}\n")
            proc.stdin.flush()
        results = [_read_line(proc, seconds + READY_TIMEOUT) for proc in procs]
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
                    with contextlib.suppress(OSError):  # a node gone: its pipe is broken
                        pipe.close()
    counts: dict[tuple[int, int], int] = {}
    first: dict[tuple[int, int], float] = {}
    for result in results:
        for i, second, late in result["seen"]:
            key = (i, second)
            counts[key] = counts.get(key, 0) + 1
            first[key] = min(first.get(key, math.inf), late)
    expected = count * seconds
    delivered = len(counts)
    lateness = sorted(first.values())
    cpu = sum(result["cpu"] for result in results)
    cpu_fires = sum(result["fires"] for result in results)
    return {
        "n": count,
        "seconds": seconds,
        "expected": expected,
        "delivered": delivered,
        "duplicated": sum(1 for c in counts.values() if c > 1),
        "lost": expected - delivered,
        "p50_ms": percentile(lateness, 0.50) if lateness else math.nan,
        "p99_ms": percentile(lateness, 0.99) if lateness else math.nan,
        "cpu_s": round(cpu, 3),
        "cpu_us_per_fire": round(cpu / max(cpu_fires, 1) * 1e6, 1),
        "claims_failed": sum(result["failed"] for result in results),
        "load_before": round(load_before, 2),
        "load_after": round(load_after, 2),
    }


def _line(row: dict[str, Any]) -> str:
    return (
        f"{row['tree']:6} {row['backend']:16} N={row['n']:<5}"
        f" delivered {row['delivered']}/{row['expected']}"
        f" dup {row['duplicated']} lost {row['lost']}"
        f" p50 {row['p50_ms']:.1f} ms p99 {row['p99_ms']:.1f} ms"
        f" cpu {row['cpu_us_per_fire']:.0f} µs/fire"
        f" claims_failed {row['claims_failed']}"
        f" load {row['load_before']}->{row['load_after']}"
    )


def _medians(rows: list[dict[str, Any]]) -> None:
    """One line per (backend, N, tree): the medians of its runs, and their spread."""
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["backend"], row["n"], row["tree"]), []).append(row)
    print("| backend | N | tree | runs | p50 ms | p99 ms | CPU µs/fire | lost | dup | load |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (backend, count, tree), runs in groups.items():

        def cell(key: str, runs: list[dict[str, Any]] = runs) -> str:
            values = [r[key] for r in runs]
            return f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})"

        loads = [r[k] for r in runs for k in ("load_before", "load_after")]
        print(
            f"| {backend} | {count} | {tree} | {len(runs)} | {cell('p50_ms')} |"
            f" {cell('p99_ms')} | {cell('cpu_us_per_fire')} | {sum(r['lost'] for r in runs)} |"
            f" {sum(r['duplicated'] for r in runs)} | {min(loads)}-{max(loads)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--backends", nargs="+", default=["one", "postgres", "redis"])
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--stored",
        action="store_true",
        help="stored Interval(1) schedules running a job (store: the PostgreSQL server)",
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="another checkout, run side by side"
    )
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    trees: dict[str, str | None] = {"after": None}
    if args.before is not None:
        trees = {"before": str(args.before.resolve() / "src"), "after": None}

    from tests.integration.pg import temporary_server as pg_server
    from tests.integration.redis_server import temporary_server as redis_server

    rows: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        urls: dict[str, str] = {"one": "none"}
        store_dsn = None
        if "postgres" in args.backends or args.stored:
            server = stack.enter_context(pg_server({"fsync": "on", "synchronous_commit": "on"}))
            urls["postgres"] = server.dsn
            store_dsn = server.dsn
        if "redis" in args.backends:
            urls["redis"] = stack.enter_context(redis_server())
        if "sqlite" in args.backends:
            folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="tocsin-load-"))
            urls["sqlite"] = f"sqlite:///{folder}/coordinator.db"
        for rep in range(args.repeats):
            # Alternate which tree goes first, so the machine's noise falls on both alike.
            order = list(trees) if rep % 2 == 0 else list(reversed(trees))
            for count in args.n:
                for backend in args.backends:
                    for tree in order:
                        nodes = 1 if backend == "one" else NODES
                        store = None
                        if args.stored:  # a fresh schema per run: no schedule left from the last
                            assert store_dsn is not None
                            store = f"{store_dsn}?schema=s{uuid.uuid4().hex[:12]}"
                        row = {
                            "tree": tree,
                            "backend": backend + (" stored" if store else ""),
                            **run_once(
                                urls[backend], count, args.seconds, nodes, store, src=trees[tree]
                            ),
                        }
                        rows.append(row)
                        print(_line(row), flush=True)
    if len(trees) > 1 or args.repeats > 1:
        _medians(rows)
    if args.json:
        print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "node":
        store_arg = sys.argv[5] if len(sys.argv) > 5 else None
        asyncio.run(node_main(sys.argv[2], sys.argv[3], int(sys.argv[4]), store_arg))
    else:
        main()
