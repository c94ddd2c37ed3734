# SPDX-License-Identifier: Apache-2.0
"""Does tocsin.metrics cost the hot paths anything? (issue 14: within 3%)

Three builds of the same workloads, side by side in one run, each configuration in a
fresh process, interleaved per repetition (bench/_common.py):

* ``main``    : the runtime without the ops hooks (``git archive main``): the baseline.
* ``off``     : this branch, nobody reads the metrics (the hooks count, nothing scrapes).
* ``on``      : this branch, ``Metrics.of(system)`` attached (store calls timed) and the
                Prometheus text rendered every second (15x Prometheus' default rate);
                the cost of one render is reported on its own.

Workloads (the hot paths the hooks touch):

* ``fire``    : 100k one-shot schedules due within 50 ms, to 100 actors; time until every
                tick is handled (scheduler fire + delivery + mailbox drain with its
                high-water sample).
* ``tell``    : 1M tells to one actor (the mailbox drain loop, sampled once per batch).
* ``durable`` : 20k durable tasks preloaded in SQLite over 100 identities; time until all
                ran (run counters, duration clock reads, timed store calls when on).

Usage: ``python bench/metrics.py [--repeats 5] [--quick] [--ref main]``.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import Config, Runs, fmt, run_main, table

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = ("fire", "tell", "durable")
MODES = ("main", "off", "on")


# -- child --------------------------------------------------------------------------------


def child(params: dict[str, Any]) -> dict[str, Any]:
    # Import the build under test: main's tree for "main", this checkout otherwise.
    sys.path.insert(0, params["src"])
    import tocsin

    assert Path(tocsin.__file__).resolve().is_relative_to(Path(params["src"]).resolve())
    if params["mode"] == "on":  # imports outside the timed region
        import prometheus_client  # noqa: F401

        import tocsin.metrics
    workload = {"fire": _fire, "tell": _tell, "durable": _durable}[params["workload"]]
    return asyncio.run(workload(params))


#: Seconds between two renders of the Prometheus text in mode "on" (Prometheus scrapes
#: every 15 s by default: this is 15x that).
SCRAPE_EVERY = 1.0
SCRAPES: list[float] = []


def _attach(system: Any, mode: str) -> Any:
    """For mode "on": metrics attached (store calls timed from here) and the Prometheus
    text rendered every SCRAPE_EVERY s by a background task. The imports happen before
    the timed region (``child`` imports the modules first)."""
    if mode != "on":
        return None
    from tocsin.metrics import Metrics, prometheus_endpoint

    expose = prometheus_endpoint(Metrics.of(system))
    expose()  # attach: wraps the store in TimedStore now

    async def scrape() -> None:
        while True:
            await asyncio.sleep(SCRAPE_EVERY)
            t0 = time.perf_counter()
            expose()
            SCRAPES.append(time.perf_counter() - t0)

    return asyncio.get_running_loop().create_task(scrape())


def _scrape_cost(system: Any) -> float:
    """Milliseconds one render of the Prometheus text takes on ``system`` (median of 21)."""
    from tocsin.metrics import Metrics, prometheus_endpoint

    expose = prometheus_endpoint(Metrics.of(system))
    times = []
    for _ in range(21):
        t0 = time.perf_counter()
        expose()
        times.append(time.perf_counter() - t0)
    return sorted(times)[10] * 1e3


async def _fire(params: dict[str, Any]) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem

    n, actors = params["n"], 100
    done = asyncio.get_running_loop().create_future()
    seen = [0]

    class Sink(Actor):
        async def receive(self, ctx: Any) -> None:
            seen[0] += 1
            if seen[0] == n and not done.done():
                done.set_result(time.perf_counter())

    async with ActorSystem() as system:
        pids = [await system.spawn(Sink) for _ in range(actors)]
        scraper = _attach(system, params["mode"])
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(n):
            await system.schedule_once(i, pids[i % actors], 0.001 + 0.05 * i / n)
        end = await done
        cpu = time.process_time() - c0
        if scraper is not None:
            scraper.cancel()
        extra = {"scrape_ms": _scrape_cost(system)} if params["mode"] == "on" else {}
    return {"n": n, "cpu_us_per_tick": cpu / n * 1e6, "us_per_tick": (end - t0) / n * 1e6,
            **extra}  # fmt: skip


async def _tell(params: dict[str, Any]) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem

    n = params["n"]
    done = asyncio.get_running_loop().create_future()
    seen = [0]

    class Sink(Actor):
        async def receive(self, ctx: Any) -> None:
            seen[0] += 1
            if seen[0] == n:
                done.set_result(time.perf_counter())

    async with ActorSystem() as system:
        pid = await system.spawn(Sink)
        scraper = _attach(system, params["mode"])
        c0, t0 = time.process_time(), time.perf_counter()
        for i in range(n):
            pid.tell(i)
        end = await done
        cpu = time.process_time() - c0
        if scraper is not None:
            scraper.cancel()
    return {"n": n, "cpu_us_per_msg": cpu / n * 1e6, "us_per_msg": (end - t0) / n * 1e6}


async def _durable(params: dict[str, Any]) -> dict[str, Any]:
    from tocsin import ActorSystem
    from tocsin.durable import DurableActor, encode
    from tocsin.stores import TaskRow, UpsertTask
    from tocsin.stores.sqlite import SQLiteStore

    n, identities = params["n"], 100
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    seen = [0]

    class MetricsBench(DurableActor):
        kind = "MetricsBench"

        async def work(self, payload: Any) -> None:
            seen[0] += 1
            if seen[0] == n and not done.done():
                done.set_result(time.perf_counter())

    path = Path(tempfile.mkdtemp(prefix="tocsin-bench-metrics-")) / "bench.db"
    try:
        now = time.time()
        rows = [
            TaskRow(kind=MetricsBench.kind, identity=f"a{i % identities}", id=f"t{i:08d}",
                    name="work", payload=encode(i), due=now - 1.0 + i * 1e-6, every=None,
                    attempts=0, max_retries=5, created_at=now)
            for i in range(n)
        ]  # fmt: skip
        store = SQLiteStore(path)
        await store.open()
        await store.apply([UpsertTask(r) for r in rows])
        await store.close()
        system = ActorSystem(store=f"sqlite:///{path}")
        c0, t0 = time.process_time(), time.perf_counter()
        await system.start()
        scraper = _attach(system, params["mode"])
        end = await done
        # CPU of every thread of the process: the SQLite worker thread included.
        cpu = time.process_time() - c0
        if scraper is not None:
            scraper.cancel()
        extra = {"scrape_ms": _scrape_cost(system)} if params["mode"] == "on" else {}
        await system.stop()
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
    return {"n": n, "cpu_us_per_task": cpu / n * 1e6, "us_per_task": (end - t0) / n * 1e6,
            **extra}  # fmt: skip


# -- parent -------------------------------------------------------------------------------


def add_arguments(parser: Any) -> None:
    parser.add_argument("--ref", default="main", help="git ref of the baseline (default main)")


def _export(ref: str) -> str | None:
    """``git archive REF src`` into a temp dir; None when git or the ref is unavailable."""
    target = tempfile.mkdtemp(prefix=f"tocsin-{ref}-")
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True
        )
        subprocess.run(["tar", "-x", "-C", target], input=archive.stdout, check=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"skipped: baseline {ref!r} unavailable ({exc})", file=sys.stderr)
        return None
    return str(Path(target) / "src")


def configs(args: Any) -> list[Config]:
    sizes = {"fire": 2_000, "tell": 20_000, "durable": 500} if args.quick else {
        "fire": 100_000, "tell": 1_000_000, "durable": 20_000}  # fmt: skip
    here = str(ROOT / "src")
    baseline = None if args.child else _export(args.ref)
    out = []
    for workload in WORKLOADS:
        for mode in MODES:
            src = baseline if mode == "main" else here
            if src is None:
                continue
            out.append(Config(f"{workload}/{mode}",
                              {"workload": workload, "mode": mode, "n": sizes[workload],
                               "src": src}))  # fmt: skip
    return out


def report(args: Any, runs: Runs) -> dict[str, Any]:
    """Per workload and measure: the median of each build, and the median over
    repetitions of the back-to-back ratio to main (noise falls on both sides alike)."""
    units = {"fire": "tick", "tell": "msg", "durable": "task"}
    rows, summary = [], {}
    for workload in WORKLOADS:
        for measure in ("cpu_us", "us"):
            key = f"{measure}_per_{units[workload]}"
            cells: list[str] = [workload, key]
            for mode in MODES:
                values = sorted(r[key] for r in runs.get(f"{workload}/{mode}", []) if r)
                cells.append(fmt(values[len(values) // 2]) if values else "-")
            for mode in ("off", "on"):
                pairs = [
                    r[key] / b[key]
                    for r, b in zip(
                        runs.get(f"{workload}/{mode}", []),
                        runs.get(f"{workload}/main", []),
                        strict=False,
                    )
                    if r and b
                ]
                pairs.sort()
                ratio = pairs[len(pairs) // 2] if pairs else None
                summary[f"{workload}/{key}/{mode}_vs_main"] = ratio
                cells.append(f"{(ratio - 1) * 100:+.1f}%" if ratio is not None else "-")
            rows.append(cells)
    headers = ["workload", "measure (µs)", "main", "off", "on", "off vs main", "on vs main"]
    print(table(headers, rows))
    for workload in ("fire", "durable"):
        costs = sorted(r["scrape_ms"] for r in runs.get(f"{workload}/on", []) if r)
        if costs:
            summary[f"{workload}/scrape_ms"] = costs[len(costs) // 2]
            print(f"one Prometheus render after {workload}: {costs[len(costs) // 2]:.2f} ms")
    return {"ratios": summary}


if __name__ == "__main__":
    sys.exit(
        run_main(
            None,
            description=__doc__ or "",
            script=__file__,
            add_arguments=add_arguments,
            child=child,
            configs=configs,
            report=report,
        )
    )
