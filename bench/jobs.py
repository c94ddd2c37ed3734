# SPDX-License-Identifier: Apache-2.0
"""Jobs from a web process: tocsin (Client -> workers) vs arq (Redis) vs Celery (Redis broker).

The question of issue 31: a producer process enqueues, a worker process runs; how long
from enqueue to the job's start (p50, p99), and how many jobs a second end to end, with 1
and with 10 producers (concurrent requests of one web worker process, sharing its
Client, arq pool or Celery app). Every configuration runs with fresh processes (one
worker process, one producer process) on fresh data (a new SQLite file, a new PostgreSQL schema, a
flushed Redis database), repetitions interleaved, medians reported.

* ``burst``: the producers enqueue JOBS as fast as they can; latency is under that load,
  jobs/s is JOBS over (last start - first enqueue).
* ``paced``: one producer, one job every 10 ms: the latency of a quiet system.

Stores and brokers as users run them: SQLite in WAL mode (``synchronous=NORMAL``),
PostgreSQL with ``fsync=on`` and ``synchronous_commit=on`` (``tocsin-postgres``: an
enqueue returns once its run is on disk), Redis with its defaults (no fsync per write: a
Redis broker may lose acknowledged jobs on a crash). ``tocsin-postgres-async`` is the same
PostgreSQL with ``synchronous_commit=off``, Redis' promise: a crash may lose the last
enqueues, never corrupt anything. Each system with its default worker settings: arq ``max_jobs=10`` and a 0.5 s
poll; Celery prefork, one process per core; tocsin one worker process (16 shards per job).

arq and Celery are not tocsin dependencies: each runs in its own interpreter (arq needs
redis-py < 6, Celery's kombu >= 6.1): ``--arq-python`` (default /tmp/jobs-bench-venv/bin/python,
``python3 -m venv /tmp/jobs-bench-venv && /tmp/jobs-bench-venv/bin/pip install arq``) and
``--celery-python`` (default /tmp/jobs-bench-celery/bin/python, ``pip install celery
redis packaging`` there); without one its rows say skipped.

Reproduce: ``.venv/bin/python bench/jobs.py`` (about 5 minutes on 2 cores); ``--quick``
for a smoke run (no number from it means anything).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

#: Real seconds a worker may take to start, and a configuration to finish.
START_WAIT = 60.0
RUN_WAIT = 300.0


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def _worker_ready(proc: subprocess.Popen[str], what: str) -> None:
    """Wait for the worker's ``ready`` line (Celery prints its banner first)."""
    from tests.procs import ready_line

    deadline = time.monotonic() + START_WAIT
    while True:
        left = deadline - time.monotonic()
        line = ready_line(proc, what, max(0.1, left))
        if line.strip() == "ready":
            return
        if not line or left <= 0:
            raise RuntimeError(f"{what} did not start (exit {proc.poll()})")


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()


def _commands(system: str, target: str, rivals: dict[str, str]) -> tuple[list[str], list[str]]:
    """(worker command, producer command prefix) of a system."""
    if system.startswith("tocsin"):
        script = str(HERE / "_jobs_tocsin.py")
        return [sys.executable, script, "worker", target], [sys.executable, script, "produce"]
    script = str(HERE / "_jobs_rivals.py")
    python = rivals[system]
    return [python, script, "worker", system, target], [python, script, "produce", system]


def run_one(
    system: str, target: str, producers: int, jobs: int, pace: float, rivals: dict[str, str]
) -> dict[str, Any]:
    """One configuration, fresh processes; the latencies (ms) and jobs/s."""
    with tempfile.TemporaryDirectory(prefix="bench-jobs-") as tmp:
        out = Path(tmp) / "runs.txt"
        out.touch()
        env = dict(os.environ, BENCH_JOBS_OUT=str(out), PYTHONPATH=str(ROOT / "src"))
        if system == "tocsin-sqlite":
            target = f"sqlite:///{tmp}/jobs.db"
        worker_cmd, produce_cmd = _commands(system, target, rivals)
        errors = Path(tmp) / "worker.err"
        with errors.open("w") as err:
            worker = subprocess.Popen(
                worker_cmd, cwd=HERE, env=env, stdout=subprocess.PIPE, stderr=err, text=True
            )
        try:
            try:
                _worker_ready(worker, f"{system} worker")
            except Exception as exc:
                raise RuntimeError(f"{exc}: {errors.read_text()[-2000:]}") from None
            if system.startswith("tocsin"):
                produce = [*produce_cmd, target, str(producers), str(jobs), str(pace)]
            else:
                produce = [*produce_cmd, target, str(producers), str(jobs), str(pace)]
            subprocess.run(produce, cwd=HERE, env=env, check=True, timeout=RUN_WAIT,
                           stdout=subprocess.DEVNULL)  # fmt: skip
            deadline = time.monotonic() + RUN_WAIT
            while True:
                lines = out.read_text().splitlines()
                if len(lines) >= jobs:
                    break
                if time.monotonic() > deadline or worker.poll() is not None:
                    raise RuntimeError(f"{system}: {len(lines)} of {jobs} jobs ran")
                time.sleep(0.05)
        finally:
            _stop(worker)
    pairs = [tuple(map(float, line.split())) for line in lines[:jobs]]
    latencies = [(start - enq) * 1000.0 for enq, start in pairs]
    span = max(s for _, s in pairs) - min(e for e, _ in pairs)
    return {
        "p50_ms": _percentile(latencies, 0.50),
        "p99_ms": _percentile(latencies, 0.99),
        "jobs_per_s": jobs / span if span > 0 else float("inf"),
    }


#: PostgreSQL servers: as we advise running it, and with commits that do not wait for
#: their WAL flush (what Redis' defaults promise: a crash may lose the last writes).
PG_SETTINGS = {
    "tocsin-postgres": {"fsync": "on", "synchronous_commit": "on"},
    "tocsin-postgres-async": {"fsync": "on", "synchronous_commit": "off"},
}


@contextlib.contextmanager
def _servers(need_pg: list[str], need_redis: bool) -> Iterator[tuple[dict[str, str], str | None]]:
    with contextlib.ExitStack() as stack:
        dsns: dict[str, str] = {}
        redis = None
        for system in need_pg:
            from tests.integration.pg import temporary_server

            server = stack.enter_context(temporary_server(PG_SETTINGS[system]))
            dsns[system] = server.dsn
        if need_redis:
            from tests.integration.redis_server import temporary_server as redis_server

            redis = stack.enter_context(redis_server())
        yield dsns, redis


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, once (smoke test)")
    parser.add_argument("--jobs", type=int, default=2000, help="jobs per burst run")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--arq-python", default="/tmp/jobs-bench-venv/bin/python")
    parser.add_argument("--celery-python", default="/tmp/jobs-bench-celery/bin/python")
    parser.add_argument("--only", default="", help="comma-separated systems to run")
    args = parser.parse_args()
    jobs, repeats, paced_jobs = (60, 1, 20) if args.quick else (args.jobs, args.repeats, 200)
    rivals = {"arq": args.arq_python, "celery": args.celery_python}
    systems = ["tocsin-sqlite", "tocsin-postgres", "tocsin-postgres-async", "arq", "celery"]
    if args.only:
        systems = [s for s in systems if s in args.only.split(",")]
    shapes = [("burst", 1, jobs, 0.0), ("burst", 10, jobs, 0.0), ("paced", 1, paced_jobs, 0.01)]
    skipped = {
        s: f"skipped: no {python}" for s, python in rivals.items() if not Path(python).exists()
    }
    need_pg = [s for s in systems if s in PG_SETTINGS]
    need_redis = any(s in systems and s not in skipped for s in ("arq", "celery"))
    raw: dict[str, list[dict[str, Any]]] = {}
    failed: list[str] = []
    with _servers(need_pg, need_redis) as (dsns, redis):
        for _ in range(repeats):
            for shape, producers, count, pace in shapes:
                for system in systems:
                    if system in skipped:
                        continue
                    key = f"{system} {shape} {producers}p"
                    if system in dsns:
                        target = f"{dsns[system]}?schema=bench_{uuid.uuid4().hex[:12]}"
                    elif system == "tocsin-sqlite":
                        target = ""
                    else:
                        assert redis is not None
                        target = redis
                        _flush(redis)
                    try:
                        result = run_one(system, target, producers, count, pace, rivals)
                    except Exception as exc:  # one failed run must not lose the others
                        print(f"{key}: failed: {exc}", file=sys.stderr)
                        failed.append(key)
                        continue
                    raw.setdefault(key, []).append(result)
    medians = {
        key: {m: statistics.median(r[m] for r in runs) for m in runs[0]}
        for key, runs in raw.items()
    }
    _print_tables(medians, systems, shapes, skipped)
    print(json.dumps({"quick": args.quick, "jobs": jobs, "repeats": repeats,
                      "medians": medians, "raw": raw, "failed": failed, "skipped": skipped}))  # fmt: skip


def _flush(redis_url: str) -> None:
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(redis_url)
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 5) as s:
        s.sendall(b"FLUSHALL\r\n")
        s.recv(64)


def _print_tables(
    medians: dict[str, dict[str, float]],
    systems: list[str],
    shapes: list[tuple[str, int, int, float]],
    skipped: dict[str, str],
) -> None:
    print("| system | shape | p50 ms | p99 ms | jobs/s |")
    print("|---|---|---:|---:|---:|")
    for shape, producers, _, _ in shapes:
        for system in systems:
            key = f"{system} {shape} {producers}p"
            row = medians.get(key)
            label = f"{shape}, {producers} producer{'s' if producers > 1 else ''}"
            if row is None:
                why = skipped.get(system, "failed")
                print(f"| {system} | {label} | {why} | | |")
                continue
            print(f"| {system} | {label} | {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | "
                  f"{row['jobs_per_s']:.0f} |")  # fmt: skip


if __name__ == "__main__":
    main()
