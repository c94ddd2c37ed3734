# SPDX-License-Identifier: Apache-2.0
"""The scheduler's footprint, side by side in one run: this tree against another
checkout of tocsin (default: a worktree of 840edd1) and against ``loop.call_later`` plus
a dict by reference (what an author writes by hand).

Usage::

    git worktree add --detach /tmp/tree-840edd1 840edd1
    .venv/bin/python bench/footprint.py --before /tmp/tree-840edd1 --repeats 5

Measured, each in a fresh process (``PYTHONPATH=<tree>/src``), the trees interleaved
and alternating which goes first, so machine noise falls on all alike:

* ``memory``: bytes traced (``tracemalloc``) per pending ``schedule_once`` of 100,000
  (the references made beforehand, as a caller holds them), and ``create`` / ``cancel``
  microseconds of process CPU per call (``time.process_time``: the box is shared, and
  wall time there measures the neighbours);
* ``tick``: process CPU microseconds per delivered tick of 2,000 interval schedules
  (every second, to one actor that does nothing) on a ``ManualClock``, 20 simulated
  seconds, the minimum of 3 rounds: ``plain`` (no policy; runs on any tree) and ``skip``
  (``Overlap.SKIP``; this tree only).

Prints one Markdown table of medians (min-max) with the ratios the scheduler's bars are
stated in, then the raw runs as one JSON line. Only the public API is used, so the same
child code runs against any tree. Not run by ``bench/run_all.py`` (it needs the other
tree).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
THIS_TREE = HERE.parents[1]

N_MEMORY = 100_000
N_TICK = 2_000
SECONDS = 20
ROUNDS = 3


# -- children ---------------------------------------------------------------------------


async def _memory(system_name: str) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem

    class Drop(Actor):
        async def receive(self, ctx: Any) -> None:
            pass

    n = N_MEMORY
    delays = [60.0 + 60.0 * (i + 1) / n for i in range(n)]  # nothing fires meanwhile
    refs = [f"r{i}" for i in range(n)]
    async with ActorSystem() as system:
        pid = await system.spawn(Drop)
        loop = asyncio.get_running_loop()
        handles: dict[str, Any] = {}
        gc.collect()
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        t0 = time.process_time()
        if system_name == "call_later+dict":
            call_later, tell = loop.call_later, pid.tell
            for i in range(n):
                handles[refs[i]] = call_later(delays[i], tell, "tick")
        else:
            schedule_once = system.schedule_once
            for i in range(n):
                await schedule_once("tick", pid, delays[i], reference=refs[i])
        t1 = time.process_time()
        gc.collect()
        traced = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        t2 = time.process_time()
        if system_name == "call_later+dict":
            pop = handles.pop
            for ref in refs:
                pop(ref).cancel()
        else:
            cancel_schedule = system.cancel_schedule
            for ref in refs:
                await cancel_schedule(ref)
        await asyncio.sleep(0)
        t3 = time.process_time()
    # tracemalloc slows allocation: create is timed in a second pass without it.
    create = await _create_only(system_name)
    return {
        "bytes": traced / n,
        "create_us": create,
        "cancel_us": (t3 - t2) / n * 1e6,
        "create_traced_us": (t1 - t0) / n * 1e6,
    }


async def _create_only(system_name: str) -> float:
    from tocsin import Actor, ActorSystem

    class Drop(Actor):
        async def receive(self, ctx: Any) -> None:
            pass

    n = N_MEMORY
    delays = [60.0 + 60.0 * (i + 1) / n for i in range(n)]
    refs = [f"c{i}" for i in range(n)]
    async with ActorSystem() as system:
        pid = await system.spawn(Drop)
        loop = asyncio.get_running_loop()
        handles: dict[str, Any] = {}
        gc.collect()
        t0 = time.process_time()
        if system_name == "call_later+dict":
            call_later, tell = loop.call_later, pid.tell
            for i in range(n):
                handles[refs[i]] = call_later(delays[i], tell, "tick")
        else:
            schedule_once = system.schedule_once
            for i in range(n):
                await schedule_once("tick", pid, delays[i], reference=refs[i])
        t1 = time.process_time()
        for handle in handles.values():
            handle.cancel()
    return (t1 - t0) / n * 1e6


async def _tick(variant: str) -> dict[str, Any]:
    from tocsin import Actor, ActorSystem, ManualClock

    class Sink(Actor):
        async def receive(self, ctx: Any) -> None:
            pass

    kwargs: dict[str, Any] = {}
    if variant == "skip":
        from tocsin import Overlap

        kwargs["overlap"] = Overlap.SKIP
    best = float("inf")
    for _ in range(ROUNDS):
        clock = ManualClock()
        async with ActorSystem("bench", clock=clock) as system:
            pid = await system.spawn(Sink)
            for i in range(N_TICK):
                await system.schedule(i, pid, 1.0, reference=f"r{i}", **kwargs)
            await clock.advance(5)  # warm: history rings grown, caches hot
            gc.collect()
            before = system.scheduler_metrics().ticks_delivered
            t0 = time.process_time()
            await clock.advance(SECONDS)
            cpu = time.process_time() - t0
            ticks = system.scheduler_metrics().ticks_delivered - before
        best = min(best, cpu / max(1, ticks) * 1e6)
    return {"tick_us": best}


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params["test"] == "memory":
        return asyncio.run(_memory(params["system"]))
    return asyncio.run(_tick(params["variant"]))


# -- parent -----------------------------------------------------------------------------


def _run(tree: Path, params: dict[str, Any]) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    out = subprocess.run(
        [sys.executable, str(HERE), "--child", json.dumps(params)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def _med(values: list[float]) -> str:
    return f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, default=Path("/tmp/tree-840edd1"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(json.loads(args.child))))
        return 0
    before: Path = args.before
    cases: list[tuple[str, Path, dict[str, Any]]] = [
        ("call_later+dict", THIS_TREE, {"test": "memory", "system": "call_later+dict"}),
        ("this tree", THIS_TREE, {"test": "memory", "system": "tocsin"}),
        ("before", before, {"test": "memory", "system": "tocsin"}),
        ("tick plain, this tree", THIS_TREE, {"test": "tick", "variant": "plain"}),
        ("tick plain, before", before, {"test": "tick", "variant": "plain"}),
        ("tick skip, this tree", THIS_TREE, {"test": "tick", "variant": "skip"}),
    ]
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _, _ in cases}
    for rep in range(args.repeats):
        order = cases if rep % 2 == 0 else list(reversed(cases))
        for name, tree, params in order:
            runs[name].append(_run(tree, params))
            print(f"rep {rep + 1}/{args.repeats} {name}: {runs[name][-1]}", file=sys.stderr)

    def col(name: str, key: str) -> list[float]:
        return [float(r[key]) for r in runs[name]]

    base = "call_later+dict"
    print(f"| per pending schedule_once (n={N_MEMORY:,}) | bytes | create µs | cancel µs |")
    print("|---|---|---|---|")
    for name in (base, "this tree", "before"):
        print(
            f"| {name} | {_med(col(name, 'bytes'))} | {_med(col(name, 'create_us'))} "
            f"| {_med(col(name, 'cancel_us'))} |"
        )
    for name in ("this tree", "before"):
        ratios = [
            statistics.median(col(name, key)) / statistics.median(col(base, key))
            for key in ("bytes", "create_us", "cancel_us")
        ]
        print(f"| {name} / {base} | {ratios[0]:.2f}x | {ratios[1]:.2f}x | {ratios[2]:.2f}x |")
    plain = statistics.median(col("tick plain, this tree", "tick_us"))
    plain_before = statistics.median(col("tick plain, before", "tick_us"))
    skip = statistics.median(col("tick skip, this tree", "tick_us"))
    print()
    print(f"| CPU per tick ({N_TICK:,} interval schedules, ManualClock) | µs |")
    print("|---|---|")
    for name in ("tick plain, this tree", "tick plain, before", "tick skip, this tree"):
        print(f"| {name} | {_med(col(name, 'tick_us'))} |")
    print(f"| plain: this tree / before | {plain / plain_before:.2f}x |")
    print(f"| skip / plain (this tree) | {skip / plain:.2f}x |")
    print(json.dumps(runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
