# SPDX-License-Identifier: Apache-2.0
"""Does tocsin.metrics cost the hot paths anything? (issue 14: within 3%)

Three builds of the same workloads, side by side in one run, each configuration in a
fresh process, interleaved per repetition (bench/_common.py):

* ``main``    : the baseline build (``git archive REF``, default ``main``). Once the ops
                hooks were merged into main, main differs from ``off`` only by what this
                branch changes since, so ``off vs main`` mostly shows the machine's noise;
                ``--ref <commit before the hooks>`` measures the hooks themselves.
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

The issue's bar (within 3%) is the ``on vs off`` column.

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
    if params["workload"] == "hooks":
        return _hooks()
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


def _best_ns(stmt: str, setup: str, number: int) -> float:
    import timeit

    return min(timeit.repeat(stmt, setup, number=number, repeat=7)) / number * 1e9


def _hooks() -> dict[str, Any]:
    """The exact statements each hook adds, timed in isolation (best of 7): a figure that
    machine noise barely moves, to set beside the noisy end-to-end ratios."""
    drain = _best_ns(
        "if len(mb) > c.depth_high:\n    c.depth_high = len(mb)",
        "from collections import deque\n"
        "class C:\n    __slots__ = ('depth_high',)\n"
        "c = C(); c.depth_high = 600; mb = deque(range(512))",
        2_000_000,
    )
    # As inlined in durable/_drain.py, for a successful run (the common case): nobody
    # reads the metrics (``timed`` False) and someone does (the run is timed).
    drain_setup = (
        "from tocsin.clock import SystemClock\n"
        "from tocsin.durable._ops import DURATION_MASK as mask, RunCounters\n"
        "counters = RunCounters(); durations = counters.durations\n"
        "monotonic = SystemClock().monotonic; started = monotonic(); error = None\n"
    )
    run_hook = (
        "counters.runs += 1\n"
        "if timed:\n"
        "    ended = monotonic()\n    timed_runs = counters.timed_runs\n"
        "    durations[timed_runs & mask] = ended - started\n"
        "    counters.timed_runs = timed_runs + 1\n    started = ended\n"
        "if error is not None:\n    counters.ended_with(error)\n"
    )
    # The per-schedule lateness slot (console column) on the fire path: the same float
    # goes into the ring and the record.
    fire_setup = (
        "class R:\n    __slots__ = ('late',)\n"
        "r = R(); ring = [0.0] * 4096; fired = 12345; now = 10.5; deadline = 10.0"
    )
    ring_only = _best_ns("ring[fired & 4095] = now - deadline", fire_setup, 2_000_000)
    with_slot = _best_ns("r.late = ring[fired & 4095] = now - deadline", fire_setup, 2_000_000)
    durable = _best_ns(run_hook, drain_setup + "timed = False", 500_000)
    durable_timed = _best_ns(run_hook, drain_setup + "timed = True", 500_000)
    base = _best_ns("pass", "", 2_000_000)
    timed = asyncio.run(_timed_store_ns())
    return {
        "drain_hook_ns": drain - base,
        "late_slot_ns": with_slot - ring_only,
        "durable_hook_ns": durable - base,
        "durable_timed_hook_ns": durable_timed - base,
        **timed,
    }


async def _timed_store_ns() -> dict[str, float]:
    from tocsin.clock import SystemClock
    from tocsin.metrics import TimedStore
    from tocsin.stores import MemoryStore

    inner = MemoryStore()
    await inner.open()
    timed = TimedStore(inner, SystemClock())
    out = {}
    for name, store in (("plain", inner), ("timed", timed)):
        best = float("inf")
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(20_000):
                await store.next_due("k", "i")
            best = min(best, (time.perf_counter() - t0) / 20_000 * 1e9)
        out[name] = best
    return {
        "store_call_plain_ns": out["plain"],
        "timed_store_extra_ns": out["timed"] - out["plain"],
    }


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
    out = [Config("hooks", {"workload": "hooks", "mode": "off", "src": here}, once=True)]
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
            # "on vs off" is the bar (within 3%); "vs main" compares with the
            # baseline build (the same hooks once ops is on main: then it shows the noise).
            for mode, base in (("off", "main"), ("on", "main"), ("on", "off")):
                pairs = [
                    r[key] / b[key]
                    for r, b in zip(
                        runs.get(f"{workload}/{mode}", []),
                        runs.get(f"{workload}/{base}", []),
                        strict=False,
                    )
                    if r and b
                ]
                pairs.sort()
                ratio = pairs[len(pairs) // 2] if pairs else None
                summary[f"{workload}/{key}/{mode}_vs_{base}"] = ratio
                cells.append(f"{(ratio - 1) * 100:+.1f}%" if ratio is not None else "-")
            rows.append(cells)
    headers = ["workload", "measure (µs)", "main", "off", "on", "off vs main", "on vs main",
               "on vs off"]  # fmt: skip
    print(table(headers, rows))
    hooks = next((r for r in runs.get("hooks", []) if r), None)
    if hooks is not None:
        summary.update(hooks)
        # (hook, measure, ops sharing one hook run): the drain hook runs once per batch,
        # counted as once per tick for "fire" (worst case: one tick per batch) and once per
        # 256 messages for "tell" (its mailbox is full: every batch is THROUGHPUT long).
        per_op = {
            "fire": ("drain_hook_ns", "cpu_us_per_tick", 1),
            "tell": ("drain_hook_ns", "cpu_us_per_msg", 256),
            "durable": ("durable_hook_ns", "cpu_us_per_task", 1),
        }
        for workload, (hook, key, per) in per_op.items():
            values = sorted(r[key] for r in runs.get(f"{workload}/main", []) if r)
            if values:
                share = hooks[hook] / per / (values[len(values) // 2] * 1e3) * 100
                summary[f"{workload}/hook_share_pct"] = share
                print(f"{workload}: hook {hooks[hook] / per:.1f} ns per op = {share:.2f}% of "
                      "main's CPU per op")  # fmt: skip
        print(f"fire: per-schedule lateness slot {hooks['late_slot_ns']:.1f} ns per tick")
        print(f"durable, metrics attached: run timing {hooks['durable_timed_hook_ns']:.1f} ns "
              "per run")  # fmt: skip
        print(
            f"TimedStore: +{hooks['timed_store_extra_ns']:.0f} ns per store call "
            f"(a MemoryStore call takes {hooks['store_call_plain_ns']:.0f} ns)"
        )
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
