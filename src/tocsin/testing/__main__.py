# SPDX-License-Identifier: Apache-2.0
"""``python -m tocsin.testing``: run simulations of the built-in workload from a shell.

One seed (what a failure prints, to replay it)::

    python -m tocsin.testing --seed 7 --seconds 600 --nodes 3

Many seeds, in parallel processes (``make simulate SEEDS=10000``)::

    python -m tocsin.testing --seeds 10000 --jobs 2

Exit status 0 when every run kept the invariants, 1 otherwise (each failure printed with
its seed and its replay command), 2 for bad usage.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import sys
from concurrent.futures import ProcessPoolExecutor

from ..clock import SystemClock
from ..errors import SimulationViolation
from ._sim_values import Faults
from ._simulation import DEFAULT_LEASE, Simulation

#: Seeds a worker process runs per batch it reports.
CHUNK = 5

#: Real seconds one run may take before it counts as hung (it fails, naming its seed).
RUN_TIMEOUT = 300.0


async def _one(
    seed: int, seconds: float, nodes: int, faults: Faults, lease: float
) -> tuple[str, str]:
    """Run one seed: ("ok" | "fail" | "error", detail)."""
    sim = Simulation(nodes=nodes, seed=seed, faults=faults, lease=lease)
    try:
        await asyncio.wait_for(sim.run(seconds), RUN_TIMEOUT)
        sim.check()
    except SimulationViolation as exc:
        return "fail", str(exc)
    except Exception as exc:  # a crash of the run itself is a finding too
        replay = sim.replay_command()
        return "error", f"seed {seed}: {type(exc).__name__}: {exc}\nreplay: {replay}"
    digest = hashlib.sha256(repr(sim.record).encode()).hexdigest()[:16]
    return (
        "ok",
        f"seed {seed}: {len(sim.record)} entries, {len(sim.faults)} faults, record {digest}",
    )


def _chunk(
    seeds: list[int], seconds: float, nodes: int, faults: str, lease: float
) -> list[tuple[int, str, str]]:
    """Run ``seeds`` one after the other in this process (a worker of the pool)."""
    logging.disable(logging.ERROR)  # faults make nodes log; the verdict is the output
    rates = Faults.from_text(faults)
    results = []
    for seed in seeds:
        status, detail = asyncio.run(_one(seed, seconds, nodes, rates, lease))
        results.append((seed, status, detail))
    return results


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` (default: the command line), run, return the exit status."""
    import argparse  # only for the command line (importing tocsin.testing stays light)

    parser = argparse.ArgumentParser(
        prog="python -m tocsin.testing", description="Simulate a tocsin cluster under faults."
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--seed", type=int, help="run this one seed (and print its record)")
    which.add_argument("--seeds", type=int, help="run this many seeds, from --first on")
    parser.add_argument("--first", type=int, default=1, help="the first seed of --seeds")
    parser.add_argument("--seconds", type=float, default=600.0, help="simulated seconds")
    parser.add_argument("--nodes", type=int, default=3, help="nodes per simulation")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="processes")
    parser.add_argument(
        "--faults",
        default=Faults.default().to_text(),
        help="fault rates per simulated minute, KIND=RATE,... ('none': no faults; "
        "default: Faults.default())",
    )
    parser.add_argument("--lease", type=float, default=DEFAULT_LEASE, help="cluster lease")
    args = parser.parse_args(argv)
    if args.seconds <= 0 or args.nodes < 1 or args.jobs < 1 or (args.seeds or 1) < 1:
        parser.error("--seconds, --nodes, --jobs and --seeds must be positive")
    try:
        rates = Faults.from_text(args.faults)
    except ValueError as exc:
        parser.error(str(exc))
    if args.seed is not None:
        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        status, detail = asyncio.run(_one(args.seed, args.seconds, args.nodes, rates, args.lease))
        print(detail)
        return 0 if status == "ok" else 1
    seeds = list(range(args.first, args.first + args.seeds))
    # Small chunks, so failures print as they are found (and a worker's process is
    # reused across its chunks).
    chunks = [seeds[i : i + CHUNK] for i in range(0, len(seeds), CHUNK)]
    clock = SystemClock()  # only tocsin.clock reads time, the run's wall time too
    started = clock.monotonic()
    failed = 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for results in pool.map(
            _chunk,
            chunks,
            [args.seconds] * len(chunks),
            [args.nodes] * len(chunks),
            [rates.to_text()] * len(chunks),
            [args.lease] * len(chunks),
        ):
            for _seed, status, detail in results:
                if status != "ok":
                    failed += 1
                    print(f"{status.upper()}: {detail}", flush=True)
    elapsed = clock.monotonic() - started
    print(
        f"{len(seeds)} seeds of {args.seconds:g} simulated s on {args.nodes} nodes: "
        f"{len(seeds) - failed} passed, {failed} failed, in {elapsed:.1f} s "
        f"({len(seeds) / elapsed * 60:.0f} seeds per minute, {args.jobs} processes)"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
