# SPDX-License-Identifier: Apache-2.0
"""PostgreSQL round trips and node CPU per decided instant of stored schedules.

Usage (from a checkout; ``PYTHONPATH`` picks the tree measured)::

    PYTHONPATH=src .venv/bin/python bench/_stored_trips.py --schedules 500 --minutes 3

Three nodes in one process (a ``memory://`` coordinator, each node its own
``PostgresStore`` on one schema of a throw-away server), one ``ManualClock``: N stored
``Interval(60)`` schedules to a job, anchors spread over the minute. After a warm-up
second, the clock advances ``--minutes``; every statement the nodes send to PostgreSQL
(``BEGIN`` and ``COMMIT`` included: each is a round trip) is counted by its first
words, and the process's CPU time is divided by the runs the job saw. The coordinator
is in memory: its claims (one batched step per timer batch) are not counted. Prints one
line per statement kind and a last JSON line. Not run by ``bench/run_all.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import asyncpg
from tests.integration.pg import temporary_server
from tests.schedules import jobs_for_tests as jobs

from tocsin import ActorSystem, Cluster, ManualClock
from tocsin.schedules import Interval, Schedule
from tocsin.stores.postgres import PostgresStore

START = datetime(2030, 1, 1, 9, 0, tzinfo=UTC).timestamp()
RECORD = "tests.schedules.jobs_for_tests.record"
TRIPS: collections.Counter[str] = collections.Counter()


def _count(name: str) -> None:
    method = getattr(asyncpg.connection.Connection, name)

    async def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        sql = args[0] if args and isinstance(args[0], str) else name
        TRIPS[" ".join(sql.split()[:3])[:40]] += 1
        return await method(self, *args, **kwargs)

    setattr(asyncpg.connection.Connection, name, counted)


async def _run(dsn: str, n: int, minutes: int) -> dict[str, Any]:
    clock = ManualClock(wall=START)
    url = f"memory://{uuid.uuid4().hex}"
    declared = [
        Schedule(f"s{i}", Interval(60, anchor=datetime.fromtimestamp(START + i * 60 / n, UTC)), RECORD)
        for i in range(n)
    ]  # fmt: skip
    systems = [
        ActorSystem(
            name,
            clock=clock,
            store=PostgresStore(dsn, schema="s1"),
            cluster=Cluster(url, lease=30.0, poll_interval=1.0),
            schedules=declared if name == "a" else None,
        )
        for name in "abc"
    ]
    for system in systems:
        await system.start()
    try:
        await clock.advance(5)
        TRIPS.clear()
        jobs.RUNS.clear()
        cpu0 = time.process_time()
        await clock.advance(minutes * 60)
        cpu = time.process_time() - cpu0
        runs = len(jobs.RUNS)
    finally:
        for system in systems:
            await system.stop()
    return {
        "schedules": n,
        "runs": runs,
        "cpu_ms_per_instant": round(cpu / runs * 1e3, 3),
        "trips_per_instant": round(sum(TRIPS.values()) / runs, 2),
        "by_statement": {k: round(v / runs, 2) for k, v in TRIPS.most_common()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--schedules", type=int, default=500)
    parser.add_argument("--minutes", type=int, default=3)
    args = parser.parse_args()
    for name in ("execute", "fetch", "fetchrow", "fetchval", "executemany"):
        _count(name)
    with temporary_server() as server:
        out = asyncio.run(_run(server.dsn, args.schedules, args.minutes))
    for statement, per in out["by_statement"].items():
        print(f"  {statement:42s} {per:.2f}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
