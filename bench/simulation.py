# SPDX-License-Identifier: Apache-2.0
"""How fast a simulated cluster runs: simulated seconds per real second, seeds per minute.

Two questions (docs/performance.md, "Simulation"):

* **Throughput of simulated time**: three ``memory://`` nodes on one ManualClock, each
  with 100 schedules, no faults, for a simulated day (``--quick``: an hour). Two kinds of
  100 schedules: node-local ``schedule`` intervals of 60 s (each node fires its own), and
  cluster cron ``0 * * * * ?`` with 100 references (every node claims, one delivers).
  Simulated seconds per real second and per CPU second.
* **Seeds**: the built-in workload (``Simulation(seed=...)``, default faults, ten
  simulated minutes on three nodes), seeds per minute of one process.

Run: ``.venv/bin/python bench/simulation.py [--quick]``; the last line is JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable

from tocsin import Actor, ActorSystem, ReceiveContext
from tocsin.testing import Faults, Simulation

SCHEDULES = 100


class Sink(Actor):
    async def receive(self, ctx: ReceiveContext) -> None:
        pass


async def local_intervals(system: ActorSystem) -> None:
    sink = await system.spawn(Sink, "sink")
    for i in range(SCHEDULES):
        await system.schedule("tick", sink, 60.0, reference=f"interval-{i}", replace=True)


async def cluster_cron(system: ActorSystem) -> None:
    sink = await system.spawn(Sink, "sink")
    for i in range(SCHEDULES):
        await system.schedule_cron("tick", sink, "0 * * * * ?", reference=f"cron-{i}", replace=True)


async def throughput(
    setup: Callable[[ActorSystem], Awaitable[None]], seconds: float
) -> dict[str, float]:
    sim = Simulation(nodes=3, seed=1, faults=Faults.none(), setup=setup)
    real, cpu = time.perf_counter(), time.process_time()
    await sim.run(seconds)
    real, cpu = time.perf_counter() - real, time.process_time() - cpu
    return {
        "simulated_s": seconds,
        "real_s": round(real, 2),
        "cpu_s": round(cpu, 2),
        "simulated_per_real_s": round(seconds / real),
        "simulated_per_cpu_s": round(seconds / cpu),
    }


async def seeds(count: int) -> dict[str, float]:
    real, cpu = time.perf_counter(), time.process_time()
    for seed in range(1, count + 1):
        sim = Simulation(nodes=3, seed=seed, faults=Faults.default())
        await sim.run(600)
        sim.check()
    real, cpu = time.perf_counter() - real, time.process_time() - cpu
    return {
        "seeds": count,
        "real_s": round(real, 2),
        "cpu_s": round(cpu, 2),
        "seeds_per_minute": round(count / real * 60, 1),
        "seeds_per_cpu_minute": round(count / cpu * 60, 1),
    }


async def main(quick: bool) -> dict[str, object]:
    logging.disable(logging.ERROR)
    seconds = 3600.0 if quick else 86_400.0
    results: dict[str, object] = {}
    results["local_intervals"] = await throughput(local_intervals, seconds)
    results["cluster_cron"] = await throughput(cluster_cron, seconds / 4)
    results["builtin_seeds"] = await seeds(2 if quick else 20)
    for name, row in results.items():
        print(f"{name:16} {row}")
    return results


if __name__ == "__main__":
    quick = "--quick" in sys.argv[1:]
    results = asyncio.run(main(quick))
    medians = {
        "local_intervals_simulated_per_real_s": results["local_intervals"]["simulated_per_real_s"],  # type: ignore[index]
    }
    print(json.dumps({"quick": quick, "failed": [], "medians": medians, "results": results}))
