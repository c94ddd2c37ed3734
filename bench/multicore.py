# SPDX-License-Identifier: Apache-2.0
"""Multi-core: ``tocsin run`` with 1 worker against 2 (or ``--workers``), side by side.

Configurations (each in a fresh process, interleaved, median of 3):

* ``durable/<W>w``: ``--tasks`` durable tasks of ~1 ms CPU each (a pure-Python loop
  calibrated once in the parent) on ``--identities`` durable identities of one cluster:
  the W workers share the run's SQLite store and rendezvous hashing places the
  identities over them (activated before the go signal; the activation time, directory
  claims on the SQLite coordinator, is reported apart). Each worker queues the tasks of
  its share of identities (a remote ask when another worker owns one); each task runs
  on its identity's owner. Throughput = tasks / (last task run − go signal).
* ``cpu/<P>p``: the ceiling, without tocsin: P plain forked processes run the same
  number of ~1 ms work units. On a shared machine its speedup says how much of a second
  core the scheduler gave this session during the run.
* ``actor/<W>w``: ``--messages`` tells to 16 counter actors per worker, split over W
  workers, timed from the go signal until the last worker processed its share.
* ``sqlite-shared/<P>p`` and ``sqlite-own/<P>p``: the shared store's single writer,
  measured without tocsin: P processes commit ``--commits`` one-row transactions (WAL,
  ``synchronous=NORMAL``), into one shared SQLite file or one file each.

What bounds the durable speedup, as reported: the cores the workers really got (other
processes share the machine), the placement split (the busiest worker's share of the
tasks), and the shared store's writer (one commit at a time across the workers).

Usage: ``.venv/bin/python bench/multicore.py [--quick] [--workers 2] [--tasks 4000]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import Config, Runs, median_row, run_main, table

HERE = Path(__file__).resolve().parent
#: Real seconds a configuration may take before it is failed.
LIMIT = 300.0


def calibrate(target_s: float = 0.001) -> int:
    """Loop iterations of ``_multicore_app.burn`` that take about ``target_s`` of CPU here.

    CPU time (``process_time``), not wall time: on a busy machine a descheduled
    calibration would otherwise shrink the work per task.
    """
    sys.path.insert(0, str(HERE))
    from _multicore_app import burn

    n = 1000
    while True:
        t0 = time.process_time()
        for _ in range(20):
            burn(n)
        took = (time.process_time() - t0) / 20
        if took > target_s / 2:
            return max(1, round(n * target_s / took))
        n *= 2


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workers", type=int, default=2, help="the many-worker side (default 2)")
    parser.add_argument("--tasks", type=int, default=4000, help="durable tasks (default 4000)")
    parser.add_argument("--messages", type=int, default=2_000_000, help="tells (default 2M)")
    parser.add_argument("--commits", type=int, default=4000, help="raw commits per process")
    parser.add_argument(
        "--identities", type=int, default=1024, help="durable identities (default 1024)"
    )


def configs(args: argparse.Namespace) -> list[Config]:
    tasks, messages, commits = args.tasks, args.messages, args.commits
    if args.quick:
        tasks, messages, commits = 200, 20_000, 200
    burn_n = calibrate()
    out = []
    for w in sorted({1, args.workers}):
        params = {"kind": "run", "mode": "durable", "workers": w, "total": tasks, "burn": burn_n}
        params["identities"] = args.identities
        out.append(Config(f"durable/{w}w", params, timeout=LIMIT))
    for w in sorted({1, args.workers}):
        params = {"kind": "run", "mode": "actor", "workers": w, "total": messages, "burn": 0}
        out.append(Config(f"actor/{w}w", params, timeout=LIMIT))
    for p in sorted({1, args.workers}):
        # The ceiling the machine allows right now: plain forked processes running the
        # same ~1 ms work units, no tocsin (same session, so the same CPU share).
        params = {"kind": "cpu", "procs": p, "units": tasks, "burn": burn_n}
        out.append(Config(f"cpu/{p}p", params, timeout=LIMIT))
    for p in sorted({1, args.workers}):
        for shared in (True, False):
            if p == 1 and not shared:
                continue
            name = f"sqlite-{'shared' if shared else 'own'}/{p}p"
            params = {"kind": "sqlite", "procs": p, "commits": commits, "shared": shared}
            out.append(Config(name, params, timeout=LIMIT))
    return out


# -- children ------------------------------------------------------------------------------


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params["kind"] == "sqlite":
        return _sqlite(params)
    if params["kind"] == "cpu":
        return _cpu(params)
    return _tocsin_run(params)


def _cpu(params: dict[str, Any]) -> dict[str, Any]:
    """P forked processes split ``units`` calls of ``burn`` (~1 ms each): units/s."""
    sys.path.insert(0, str(HERE))
    from _multicore_app import burn

    procs, units, n = params["procs"], params["units"], params["burn"]
    go_r, go_w = os.pipe()
    pids = []
    for i in range(procs):
        pid = os.fork()
        if pid == 0:
            os.close(go_w)
            os.read(go_r, 1)
            for _ in range(units // procs + (1 if i < units % procs else 0)):
                burn(n)
            os._exit(0)
        pids.append(pid)
    os.close(go_r)
    cpu0 = os.times()
    t0 = time.perf_counter()
    os.write(go_w, b"g" * procs)
    for pid in pids:
        os.waitpid(pid, 0)
    elapsed = time.perf_counter() - t0
    cpu1 = os.times()
    os.close(go_w)
    used = (cpu1.children_user - cpu0.children_user) + (cpu1.children_system - cpu0.children_system)
    return {
        "procs": procs,
        "per_s": units / elapsed,
        "elapsed_s": elapsed,
        "cores_used": used / elapsed,
        "loadavg": os.getloadavg()[0],
    }


def _tocsin_run(params: dict[str, Any]) -> dict[str, Any]:
    workers = params["workers"]
    with tempfile.TemporaryDirectory(prefix="tocsin-mc-") as tmp:
        bench_dir = Path(tmp)
        env = dict(
            os.environ,
            PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]),
            BENCH_DIR=tmp,
            BENCH_MODE=params["mode"],
            BENCH_TOTAL=str(params["total"]),
            BENCH_WORKERS=str(workers),
            BENCH_BURN=str(params["burn"]),
            BENCH_IDENTITIES=str(params.get("identities", 1024)),
        )
        log_path = bench_dir / "arbiter.log"
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "tocsin.cli", "run", "_multicore_app:main"),
                    *("--workers", str(workers), "--run-dir", str(bench_dir / "run")),
                ],
                cwd=HERE,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                # Every worker's main has returned (the arbiter logs "ready"); the go file
                # then starts them together.
                _wait(lambda: log_path.read_text().count(") ready") == workers, proc)
                load = os.getloadavg()[0]
                go = time.time()
                (bench_dir / "go").write_text("go")
                if params["mode"] == "durable":
                    _wait(lambda: _progress(bench_dir) >= params["total"], proc)
                    time.sleep(2 * 0.05)  # one more progress file each: their final CPU
                    pattern = "progress-*.json"
                else:
                    _wait(lambda: len(list(bench_dir.glob("result-*.json"))) == workers, proc)
                    pattern = "result-*.json"
                results = [json.loads(p.read_text()) for p in bench_dir.glob(pattern)]
            finally:
                proc.send_signal(signal.SIGTERM)
                code = proc.wait(60)
        if code != 0:
            raise SystemExit(f"tocsin run exited {code}:\n{log_path.read_text()[-3000:]}")
    elapsed = max(r["end"] for r in results) - go
    total = sum(r["done"] for r in results)
    return {
        "workers": workers,
        "done": total,
        "elapsed_s": elapsed,
        "per_s": total / elapsed,
        "slowest_worker_s": max(r["end"] - r["start"] for r in results),
        # CPU the workers used while measured / wall time: how many cores they really got.
        "cores_used": sum(r["cpu_s"] for r in results) / elapsed,
        # Work per CPU-second: flat from 1 to N workers means no per-worker overhead lost.
        "per_cpu_s": total / sum(r["cpu_s"] for r in results),
        # Cores the workers were runnable on but not given (waiting in the run queue,
        # /proc schedstat): cores used + this ~ W means the scheduler, not tocsin, held
        # them back (other processes on the machine).
        "cores_denied": sum(r.get("run_delay_s", 0.0) for r in results) / elapsed,
        # Tasks (or messages) each worker ran: placement by rendezvous hashing is uneven,
        # and the busiest worker bounds the speedup.
        "split": sorted(r["done"] for r in results),
        # Per worker: tasks run, seconds from go to its last, CPU seconds, run-queue wait,
        # the longest pause between two of its task runs and when (s after go) it ended.
        "per_worker": [
            [
                *(r["done"], r["end"] - go, r["cpu_s"], r.get("run_delay_s", 0.0)),
                *(r.get("max_gap_s", 0.0), r.get("gap_end", 0.0)),
            ]
            for r in sorted(results, key=lambda r: r["worker"])
        ],
        # Store commits by all workers while measured (durable mode).
        "commits": sum(r.get("commits", 0) for r in results),
        # Activating the identities (directory claims on the coordinator), before go.
        "activate_s": max((r.get("activate_s", 0.0) for r in results), default=0.0),
        "loadavg": load,
    }


def _progress(bench_dir: Path) -> int:
    """Durable tasks run so far, over every worker's latest progress file."""
    total = 0
    for path in bench_dir.glob("progress-*.json"):
        # Replaced between glob and read: the next poll sees the new one.
        with contextlib.suppress(OSError, ValueError):
            total += json.loads(path.read_text())["done"]
    return total


def _wait(condition: Any, proc: subprocess.Popen[bytes]) -> None:
    end = time.monotonic() + LIMIT
    while not condition():
        if proc.poll() is not None:
            raise SystemExit(f"tocsin run exited early ({proc.returncode})")
        if time.monotonic() > end:
            raise SystemExit("timed out")
        time.sleep(0.005)


def _sqlite(params: dict[str, Any]) -> dict[str, Any]:
    procs, commits, shared = params["procs"], params["commits"], params["shared"]
    with tempfile.TemporaryDirectory(prefix="tocsin-mc-sql-") as tmp:
        paths = [Path(tmp) / ("shared.db" if shared else f"own-{i}.db") for i in range(procs)]
        for path in set(paths):
            with sqlite3.connect(path) as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v BLOB)")
        go_r, go_w = os.pipe()
        pids = []
        for i in range(procs):
            pid = os.fork()
            if pid == 0:
                os.close(go_w)
                db = sqlite3.connect(paths[i], isolation_level=None, timeout=60)
                db.execute("PRAGMA synchronous=NORMAL")
                os.read(go_r, 1)
                for _ in range(commits):
                    db.execute("BEGIN IMMEDIATE")
                    db.execute("INSERT INTO t (v) VALUES (?)", (b"x" * 100,))
                    db.execute("COMMIT")
                os._exit(0)
            pids.append(pid)
        os.close(go_r)
        t0 = time.perf_counter()
        os.write(go_w, b"g" * procs)
        codes = [os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids]
        elapsed = time.perf_counter() - t0
        os.close(go_w)
    if any(codes):
        raise SystemExit(f"a writer failed: {codes}")
    return {
        "procs": procs,
        "commits": procs * commits,
        "elapsed_s": elapsed,
        "per_s": procs * commits / elapsed,
    }


# -- report --------------------------------------------------------------------------------


def report(args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    med = {name: median_row(rs) for name, rs in runs.items()}
    w = args.workers
    rows = []
    speedups: dict[str, float] = {}
    for group in ("cpu", "durable", "actor"):
        suffix = "p" if group == "cpu" else "w"
        one, many = med.get(f"{group}/1{suffix}", {}), med.get(f"{group}/{w}{suffix}", {})
        speedup = (many.get("per_s") or 0) / (one.get("per_s") or 1) if one and many else None
        # Per-repetition ratios (back to back) are steadier than a ratio of medians.
        pairs = zip(
            runs.get(f"{group}/1{suffix}", []), runs.get(f"{group}/{w}{suffix}", []), strict=False
        )
        ratios = sorted(b["per_s"] / a["per_s"] for a, b in pairs if a and b and "per_s" in a)
        if ratios:
            speedup = ratios[len(ratios) // 2]
            speedups[group] = speedup
        unit = {
            "cpu": "work units/s, plain processes (~1 ms CPU each)",
            "durable": "tasks/s (~1 ms CPU each)",
            "actor": "tells/s",
        }[group]
        cores = f"{one.get('cores_used', 0):.2f} / {many.get('cores_used', 0):.2f}"
        if group != "cpu":
            cores += (
                f" (denied {one.get('cores_denied', 0):.2f} / {many.get('cores_denied', 0):.2f})"
            )
        per_cpu = f"{one.get('per_cpu_s', 0):,.0f} / {many.get('per_cpu_s', 0):,.0f}"
        if group == "cpu":
            per_cpu = "–"
        split = many.get("split") or []
        # The speedup placement allows: all the work over the busiest worker's share.
        bound = sum(split) / max(split) if split else None
        load = f"{one.get('loadavg', 0):.2f} / {many.get('loadavg', 0):.2f}"
        row = [group, unit, one.get("per_s"), many.get("per_s"), speedup, cores, per_cpu]
        rows.append([*row, "/".join(map(str, split)), bound, load])
    print(f"\n### tocsin run: 1 worker vs {w} (medians of the runs)\n")
    headers = ["workload", "unit", "1 worker", f"{w} workers", "speedup"]
    headers += ["cores used (1 / N)", "per CPU-second (1 / N)", "split (N)"]
    headers += ["placement bound", "load 1 min (1 / N)"]
    print(table(headers, rows))
    srows = []
    for name in ("sqlite-shared/1p", f"sqlite-shared/{w}p", f"sqlite-own/{w}p"):
        m = med.get(name, {})
        srows.append([name, m.get("per_s")])
    print("\n### SQLite commits/s: one shared file vs one file per process\n")
    print(table(["configuration", "commits/s (all processes)"], srows))
    one, many = med.get("durable/1w", {}), med.get(f"durable/{w}w", {})
    print(f"\n### Activating {args.identities} durable identities (before go)\n")
    arows = [["1 worker", one.get("activate_s")], [f"{w} workers", many.get("activate_s")]]
    print(table(["configuration", "seconds (slowest worker)"], arows))
    print(f"\n### Durable, each repetition (1 worker then {w}, back to back)\n")
    prow = []
    pairs = zip(runs.get("durable/1w", []), runs.get(f"durable/{w}w", []), strict=False)
    for rep, (a, b) in enumerate(pairs, 1):
        if a and b:
            used = f"{a['cores_used']:.2f} / {b['cores_used']:.2f}"
            denied = f"{a.get('cores_denied', 0):.2f} / {b.get('cores_denied', 0):.2f}"
            prow.append([rep, a["per_s"], b["per_s"], b["per_s"] / a["per_s"], used, denied])
    headers = ["rep", "1 worker", f"{w} workers", "speedup", "cores used", "cores denied"]
    print(table(headers, prow))
    print("\n### Durable: store commits while measured (all workers)\n")
    crows = [["1 worker", one.get("commits")], [f"{w} workers", many.get("commits")]]
    print(table(["configuration", "commits"], crows))
    return {"speedups": speedups, "target": {"durable_speedup_2w": 1.7}}


def main(argv: list[str] | None = None) -> int:
    return run_main(
        argv,
        description=__doc__ or "",
        script=__file__,
        add_arguments=add_arguments,
        child=child,
        configs=configs,
        report=report,
    )


if __name__ == "__main__":
    sys.exit(main())
