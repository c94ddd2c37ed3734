# SPDX-License-Identifier: Apache-2.0
"""Durable tasks: tocsin (SQLite store) vs Huey (SqliteHuey) vs a raw sqlite3 loop.

Systems, every one on a fresh SQLite file in a fresh temporary directory (``/tmp``):

* ``tocsin``: :class:`~tocsin.DurableActor` tasks in the embedded default store
  (``ActorSystem(store="sqlite:////abs/path.db")``: WAL, ``synchronous=NORMAL``, one
  worker thread, group commit). Tasks are scheduled **from inside actors**: the driver
  sends ``Call("method", [start, count])`` with ``pid.ask`` and the method calls
  ``await self.schedule(delay, "work", i)`` (or ``self.queue("work", i)``) ``count`` times.
  Two paths:

  * ``loop``: a plain loop, so every ``schedule`` is its own ``store.apply`` (its own
    commit, unless group commit merges it with concurrent ones from other actors);
  * ``tx``: the same loop inside ``async with self.transaction():``, one commit per Call.

  And two shapes: **1 actor** receiving Calls of 1,000 tasks one after another, or
  **N/100 actors x 100 tasks**, one Call each, all asks in flight at once (activating
  the actors is done first and not timed; its time is reported as ``activate s``).
  The task body ``async def work(self, payload)`` only counts completions in memory.
* ``huey``: ``SqliteHuey`` with its defaults (WAL; ``fsync=None`` leaves SQLite's
  ``synchronous=FULL``, an fsync per commit), a ``@huey.task()`` counting completions in
  memory. The consumer is run **in-process**, as ``huey_consumer`` runs it by default:
  ``huey.create_consumer(workers=1, worker_type="thread", periodic=False)`` and
  ``consumer.start()`` (default polling: 0.1 s, backoff 1.15, max 10 s).
* ``raw``: the floor. ``tasks(id INTEGER PRIMARY KEY, due REAL, payload BLOB)`` plus an
  index on ``due``, WAL, ``synchronous=NORMAL``, autocommit connection with explicit
  transactions. Inserts: one transaction per row, or per 1,000 rows (schedule) or per
  100 rows (e2e run, the size of tocsin's N/100-actor transactions). The run loop: ``BEGIN
  IMMEDIATE; SELECT id, payload … WHERE due <= ? ORDER BY due LIMIT 100``, "run" each row
  (the same in-memory count), ``DELETE`` them by id, ``COMMIT``; until none are left.

Questions, each configuration in its own fresh process (``bench/_common.py``):

1. **schedule**: N (10,000 and 100,000) delayed tasks, delays shuffled and evenly
   spread over 1 hour starting 60 s out, so none runs. Time and µs per task.
2. **run**: N = 10,000 tasks that are due, throughput (tasks/s):

   * ``preloaded``: all N are already in the store, due, when the runner starts; the
     clock runs from starting the runner (tocsin: ``ActorSystem.start()``; Huey:
     ``consumer.start()``; raw: the loop) until the last task body ran. tocsin's rows
     are written beforehand through the store's own ``apply`` (the format ``schedule``
     writes), onto 1 identity or N/100 identities.
   * ``e2e``: from the first enqueue until the last task ran, runner already going
     (tocsin: ``self.queue`` inside Calls, ``loop`` or ``tx`` as above; Huey: ``work(i)``
     from the main thread with the consumer running; raw: inserts in transactions of 1
     or 100 rows, then the loop; a single thread does both, so raw never overlaps them).
3. **recovery**: a store holding 100,000 tasks over 1,000 identities, written
   beforehand (untimed) and closed. ``pending``: due 60 s .. 1 h from now; the time of
   ``await ActorSystem(store=url).start()`` (it returns after the first look-ahead poll:
   identities due within 300 s have their alarm armed). ``overdue``: all due in the
   past; the time until ``start()`` returns, and until all 100,000 have run. The raw
   loop's time to run 100,000 due rows is the floor for the latter.

Targets (from the issue): throughput >= 5x Huey's, within 3x of the raw sqlite floor,
recovery of 100,000 pending tasks < 2 s. The report states which are met, and for the
"within 3x" target compares each tocsin path with the raw variant of the same batching.

Reproduce: ``.venv/bin/python bench/durable.py`` (about 10 minutes on 2 cores;
``--quick`` for a smoke run, ``--only recovery`` for one group, ``--no-huey`` to skip
Huey). Huey needs ``pip install huey``; without it its column says "skipped".
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import os
import random
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.integration.pg

from _common import Config, Runs, fmt, median_row, ratio, rss_bytes, run_main, table
from _durable_reminders import reminder_child, reminder_configs, reminder_report

from tocsin import ActorSystem
from tocsin.durable import Call, DurableActor, encode
from tocsin.stores import TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore

perf_counter = time.perf_counter

#: Tasks per Call in the 1-actor shape, and per actor in the many-actor shape.
CALL_BATCH = 1_000
PER_ACTOR = 100
#: Raw loop: rows claimed per transaction (tocsin commits completions per 100 too).
CLAIM_BATCH = 100
#: Delays: evenly spread over this many seconds, starting DELAY_START seconds out.
DELAY_SPAN = 3600.0
DELAY_START = 60.0


# -- the completion counter shared by every system ----------------------------------------


class _Done:
    """Counts task runs; fires ``event`` (thread-safe) when ``target`` is reached."""

    def __init__(self) -> None:
        self.count = 0
        self.target = -1
        self.event = threading.Event()
        self.future: asyncio.Future[None] | None = None
        self.at = 0.0

    def expect(self, target: int, *, loop: bool = True) -> None:
        self.count, self.target = 0, target
        self.event.clear()
        self.future = asyncio.get_running_loop().create_future() if loop else None

    def hit(self) -> None:
        self.count += 1
        if self.count == self.target:
            self.at = perf_counter()
            self.event.set()
            if self.future is not None and not self.future.done():
                self.future.set_result(None)


DONE = _Done()


def _delays(n: int, seed: int = 42) -> list[float]:
    delays = [DELAY_START + DELAY_SPAN * i / n for i in range(n)]
    random.Random(seed).shuffle(delays)
    return delays


# -- tocsin ------------------------------------------------------------------------------


class BenchDurable(DurableActor):
    kind = "bench-durable"

    async def work(self, payload: Any) -> None:
        DONE.hit()

    async def sched_loop(self, arg: list[Any]) -> int:
        for delay, i in arg:
            await self.schedule(delay, "work", i)
        return len(arg)

    async def sched_tx(self, arg: list[Any]) -> int:
        async with self.transaction():
            for delay, i in arg:
                await self.schedule(delay, "work", i)
        return len(arg)

    async def queue_loop(self, arg: list[int]) -> int:
        for i in arg:
            await self.queue("work", i)
        return len(arg)

    async def queue_tx(self, arg: list[int]) -> int:
        async with self.transaction():
            for i in arg:
                await self.queue("work", i)
        return len(arg)


class BenchDurableSync(DurableActor):
    """Same, with a plain ``def`` task body (the runtime skips the task + budget timer)."""

    kind = "bench-durable-sync"

    def work(self, payload: Any) -> None:
        DONE.hit()


def _url(path: str) -> str:
    return f"sqlite:///{path}"  # path is absolute: sqlite:////tmp/...


def _tocsin_shape(shape: str, n: int) -> tuple[int, int]:
    """(actors, tasks per Call)."""
    if shape == "1 actor":
        return 1, min(CALL_BATCH, n)
    return max(1, n // PER_ACTOR), PER_ACTOR


async def _tocsin_schedule(path: str, n: int, shape: str, mode: str) -> dict[str, Any]:
    system = ActorSystem(store=_url(path))
    await system.start()
    actors, per_call = _tocsin_shape(shape, n)
    t0 = perf_counter()
    pids = [await system.durable(BenchDurable, f"a{k}") for k in range(actors)]
    activate_s = perf_counter() - t0
    delays = _delays(n)
    method = "sched_loop" if mode == "loop" else "sched_tx"
    store = system._durable.store  # type: ignore[union-attr]
    commits0 = store.commits
    t0 = perf_counter()
    if actors == 1:
        for start in range(0, n, per_call):
            chunk = [[delays[i], i] for i in range(start, min(n, start + per_call))]
            await pids[0].ask(Call(method, chunk), timeout=None)
    else:
        await asyncio.gather(
            *(
                pid.ask(
                    Call(method, [[delays[i], i] for i in range(k * per_call, (k + 1) * per_call)]),
                    timeout=None,
                )
                for k, pid in enumerate(pids)
            )
        )
    elapsed = perf_counter() - t0
    commits = store.commits - commits0
    stored = len(await store.list_tasks(state="pending"))
    rss = rss_bytes()
    await system.stop()
    assert DONE.count == 0, "a delayed task ran during the schedule test"
    return {
        "n": n,
        "s": elapsed,
        "us_per_op": elapsed / n * 1e6,
        "activate_s": activate_s,
        "commits": commits,
        "tasks_per_commit": n / max(commits, 1),
        "stored": stored,
        "rss_MB": rss / 1e6,
    }


def _rows(n: int, identities: int, due_of: Any, kind: str = BenchDurable.kind) -> list[TaskRow]:
    now = time.time()
    return [
        TaskRow(
            kind=kind,
            identity=f"a{i % identities}",
            id=f"t{i:08d}",
            name="work",
            payload=encode(i),
            due=due_of(i),
            every=None,
            attempts=0,
            max_retries=5,
            created_at=now,
            state="pending",
            last_error=None,
            timeout=None,
        )
        for i in range(n)
    ]


async def _preload(path: str, rows: list[TaskRow]) -> None:
    """Write task rows through the store's own ``apply`` (untimed), then close it."""
    store = SQLiteStore(path)
    await store.open()
    for start in range(0, len(rows), 10_000):
        await store.apply([UpsertTask(r) for r in rows[start : start + 10_000]])
    await store.close()


async def _tocsin_run_preloaded(path: str, n: int, identities: int, body: str) -> dict[str, Any]:
    kind = BenchDurable.kind if body == "async" else BenchDurableSync.kind
    now = time.time()
    await _preload(path, _rows(n, identities, lambda i: now - 1.0 + i * 1e-6, kind))
    DONE.expect(n)
    assert DONE.future is not None
    system = ActorSystem(store=_url(path))
    t0 = perf_counter()
    await system.start()
    started = perf_counter() - t0
    await DONE.future
    elapsed = DONE.at - t0
    await system.stop()
    return {
        "n": n,
        "s": elapsed,
        "tasks_per_s": n / elapsed,
        "us_per_task": elapsed / n * 1e6,
        "start_s": started,
    }


async def _tocsin_run_e2e(path: str, n: int, shape: str, mode: str) -> dict[str, Any]:
    system = ActorSystem(store=_url(path))
    await system.start()
    actors, per_call = _tocsin_shape(shape, n)
    pids = [await system.durable(BenchDurable, f"a{k}") for k in range(actors)]
    method = "queue_loop" if mode == "loop" else "queue_tx"
    DONE.expect(n)
    assert DONE.future is not None
    t0 = perf_counter()
    if actors == 1:
        for start in range(0, n, per_call):
            await pids[0].ask(
                Call(method, list(range(start, min(n, start + per_call)))), timeout=None
            )
    else:
        await asyncio.gather(
            *(
                pid.ask(Call(method, list(range(k * per_call, (k + 1) * per_call))), timeout=None)
                for k, pid in enumerate(pids)
            )
        )
    enqueued = perf_counter() - t0
    await DONE.future
    elapsed = DONE.at - t0
    await system.stop()
    return {
        "n": n,
        "s": elapsed,
        "tasks_per_s": n / elapsed,
        "us_per_task": elapsed / n * 1e6,
        "enqueue_s": enqueued,
    }


async def _tocsin_recovery(path: str, n: int, identities: int, overdue: bool) -> dict[str, Any]:
    now = time.time()
    if overdue:
        rows = _rows(n, identities, lambda i: now - 3600.0 + i * 1e-3)
    else:
        delays = _delays(n)
        rows = _rows(n, identities, lambda i: now + delays[i])
    await _preload(path, rows)
    del rows
    DONE.expect(n if overdue else -1)
    rss0 = rss_bytes()
    system = ActorSystem(store=_url(path))
    t0 = perf_counter()
    await system.start()
    start_s = perf_counter() - t0
    runtime = system._durable
    assert runtime is not None
    armed = len(runtime.held())
    out: dict[str, Any] = {
        "n": n,
        "identities": identities,
        "start_s": start_s,
        "armed_identities": armed,
        "rss_delta_MB": (rss_bytes() - rss0) / 1e6,
    }
    if overdue:
        assert DONE.future is not None
        await DONE.future
        out["all_run_s"] = DONE.at - t0
        out["tasks_per_s"] = n / out["all_run_s"]
    await system.stop()
    return out


# -- huey --------------------------------------------------------------------------------


def _huey(path: str) -> tuple[Any, Any]:
    import logging

    from huey import SqliteHuey

    logging.getLogger("huey").setLevel(logging.WARNING)
    huey = SqliteHuey("bench", filename=path)

    @huey.task()
    def work(i: int) -> None:
        DONE.hit()

    return huey, work


def _huey_consumer(huey: Any) -> Any:
    return huey.create_consumer(workers=1, worker_type="thread", periodic=False)


def _huey_schedule(path: str, n: int) -> dict[str, Any]:
    huey, work = _huey(path)
    delays = _delays(n)
    t0 = perf_counter()
    for i in range(n):
        work.schedule(args=(i,), delay=delays[i])
    elapsed = perf_counter() - t0
    stored = huey.pending_count()
    huey.storage.close()
    return {"n": n, "s": elapsed, "us_per_op": elapsed / n * 1e6, "stored": stored}


def _huey_run(path: str, n: int, e2e: bool) -> dict[str, Any]:
    huey, work = _huey(path)
    DONE.count, DONE.target = 0, n
    DONE.event.clear()
    DONE.future = None
    consumer = _huey_consumer(huey)
    if e2e:
        consumer.start()
        time.sleep(0.2)  # let the workers reach their first poll
        t0 = perf_counter()
        for i in range(n):
            work(i)
        enqueued = perf_counter() - t0
    else:
        for i in range(n):
            work(i)
        enqueued = float("nan")
        t0 = perf_counter()
        consumer.start()
    if not DONE.event.wait(timeout=600):
        raise RuntimeError(f"huey ran {DONE.count} of {n} tasks in 600 s")
    elapsed = DONE.at - t0
    consumer.stop(graceful=True)
    return {
        "n": n,
        "s": elapsed,
        "tasks_per_s": n / elapsed,
        "us_per_task": elapsed / n * 1e6,
        "enqueue_s": enqueued,
    }


# -- raw sqlite3 -------------------------------------------------------------------------


def _raw_connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS tasks "
        "(id INTEGER PRIMARY KEY, due REAL NOT NULL, payload BLOB NOT NULL)"
    )
    conn.execute("CREATE INDEX IF NOT EXISTS tasks_due ON tasks (due)")
    return conn


def _raw_insert(conn: sqlite3.Connection, dues: list[float], per_txn: int) -> None:
    sql = "INSERT INTO tasks (due, payload) VALUES (?, ?)"
    n = len(dues)
    for start in range(0, n, per_txn):
        conn.execute("BEGIN")
        for i in range(start, min(n, start + per_txn)):
            conn.execute(sql, (dues[i], str(i).encode()))
        conn.execute("COMMIT")


def _raw_drain(conn: sqlite3.Connection, batch: int) -> None:
    select = "SELECT id, payload FROM tasks WHERE due <= ? ORDER BY due LIMIT ?"
    while True:
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(select, (time.time(), batch)).fetchall()
        for _id, _payload in rows:
            DONE.hit()
        conn.executemany("DELETE FROM tasks WHERE id = ?", [(r[0],) for r in rows])
        conn.execute("COMMIT")
        if not rows:
            return


def _raw_schedule(path: str, n: int, per_txn: int) -> dict[str, Any]:
    conn = _raw_connect(path)
    now = time.time()
    dues = [now + d for d in _delays(n)]
    t0 = perf_counter()
    _raw_insert(conn, dues, per_txn)
    elapsed = perf_counter() - t0
    stored = conn.execute("SELECT count(*) FROM tasks").fetchone()[0]
    conn.close()
    return {"n": n, "s": elapsed, "us_per_op": elapsed / n * 1e6, "stored": stored}


def _raw_run(path: str, n: int, e2e: bool, per_txn: int = 1) -> dict[str, Any]:
    conn = _raw_connect(path)
    now = time.time()
    dues = [now - 1.0 + i * 1e-6 for i in range(n)]
    DONE.count, DONE.target = 0, n
    DONE.future = None
    if not e2e:
        _raw_insert(conn, dues, 10_000)
    t0 = perf_counter()
    if e2e:
        _raw_insert(conn, dues, per_txn)
    _raw_drain(conn, CLAIM_BATCH)
    elapsed = DONE.at - t0
    assert DONE.count == n
    conn.close()
    return {"n": n, "s": elapsed, "tasks_per_s": n / elapsed, "us_per_task": elapsed / n * 1e6}


# -- protocol ----------------------------------------------------------------------------


def child(params: dict[str, Any]) -> dict[str, Any]:
    if params.get("reminders"):
        return reminder_child(params)
    test, system, n = params["test"], params["system"], params["n"]
    with tempfile.TemporaryDirectory(prefix="tocsin-bench-") as tmp:
        path = os.path.join(tmp, "bench.db")
        if system == "huey":
            if test == "schedule":
                return _huey_schedule(path, n)
            return _huey_run(path, n, e2e=test == "run/e2e")
        if system.startswith("raw"):
            if test == "schedule":
                return _raw_schedule(path, n, params["per_txn"])
            return _raw_run(path, n, e2e=test == "run/e2e", per_txn=params.get("per_txn", 1))
        if test == "schedule":
            return asyncio.run(_tocsin_schedule(path, n, params["shape"], params["mode"]))
        if test == "run/preloaded":
            return asyncio.run(_tocsin_run_preloaded(path, n, params["identities"], params["body"]))
        if test == "run/e2e":
            return asyncio.run(_tocsin_run_e2e(path, n, params["shape"], params["mode"]))
        if test.startswith("recovery/"):
            return asyncio.run(
                _tocsin_recovery(path, n, params["identities"], test == "recovery/overdue")
            )
    raise ValueError(f"unknown test {test!r}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", default="10000,100000", help="N for the schedule test")
    parser.add_argument("--run-n", type=int, default=10_000, help="N for the run tests")
    parser.add_argument("--recovery-n", type=int, default=100_000, help="tasks for recovery")
    parser.add_argument("--identities", type=int, default=1_000, help="identities, recovery")
    parser.add_argument("--no-huey", action="store_true", help="skip the Huey configurations")
    parser.add_argument(
        "--reminders", action="store_true", help="the reminders question (issue 32) instead"
    )
    parser.add_argument("--stores", default="sqlite,postgres", help="--reminders: stores")
    parser.add_argument("--reminders-n", type=int, default=100_000, help="--reminders: N")


_servers: list[str] = []
_stack = contextlib.ExitStack()


def _pg_server() -> str:
    """One throw-away local PostgreSQL (fsync on) for every --reminders configuration."""
    if not _servers:
        from tests.integration.pg import temporary_server

        atexit.register(_stack.close)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a killed run stops it too
        settings = {"fsync": "on", "synchronous_commit": "on", "shared_buffers": "256MB"}
        _servers.append(_stack.enter_context(temporary_server(settings)).dsn)
    return _servers[0]


#: (name suffix, params) of the tocsin schedule/e2e variants.
TOCSIN_PATHS = [
    ("tocsin 1 actor, loop", {"shape": "1 actor", "mode": "loop"}),
    ("tocsin 1 actor, tx", {"shape": "1 actor", "mode": "tx"}),
    ("tocsin N/100 actors, loop", {"shape": "many", "mode": "loop"}),
    ("tocsin N/100 actors, tx", {"shape": "many", "mode": "tx"}),
]


def configs(args: argparse.Namespace) -> list[Config]:
    if args.reminders:
        return [
            Config(c.name, {**c.params, "reminders": True}, timeout=c.timeout)
            for c in reminder_configs(args, _pg_server)
        ]
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.quick:
        sizes, args.run_n, args.recovery_n, args.identities = [500], 500, 2_000, 20
    args.sizes_list = sizes
    huey = not args.no_huey
    out: list[Config] = []
    for n in sizes:
        for name, p in TOCSIN_PATHS:
            out.append(
                Config(
                    f"schedule/{n}/{name}", {"test": "schedule", "system": "tocsin", "n": n, **p}
                )
            )
        if huey:
            out.append(
                Config(
                    f"schedule/{n}/huey",
                    {"test": "schedule", "system": "huey", "n": n},
                    requires="huey",
                )
            )
        for per_txn in (1, 1000):
            out.append(
                Config(
                    f"schedule/{n}/raw txn/{per_txn}",
                    {"test": "schedule", "system": "raw", "n": n, "per_txn": per_txn},
                )
            )
    n = args.run_n
    for ids, body in ((1, "async"), (n // PER_ACTOR, "async"), (n // PER_ACTOR, "sync")):
        out.append(
            Config(
                f"run/preloaded/{n}/tocsin {ids} identities, {body} def",
                {
                    "test": "run/preloaded",
                    "system": "tocsin",
                    "n": n,
                    "identities": ids,
                    "body": body,
                },
            )
        )
    for name, p in TOCSIN_PATHS:
        out.append(
            Config(f"run/e2e/{n}/{name}", {"test": "run/e2e", "system": "tocsin", "n": n, **p})
        )
    for test in ("run/preloaded", "run/e2e"):
        if huey:
            out.append(
                Config(
                    f"{test}/{n}/huey", {"test": test, "system": "huey", "n": n}, requires="huey"
                )
            )
        if test == "run/preloaded":
            out.append(Config(f"{test}/{n}/raw", {"test": test, "system": "raw", "n": n}))
        else:
            for per_txn in (1, PER_ACTOR):
                out.append(
                    Config(
                        f"{test}/{n}/raw txn/{per_txn}",
                        {"test": test, "system": "raw", "n": n, "per_txn": per_txn},
                    )
                )
    rn, ids = args.recovery_n, args.identities
    for test in ("recovery/pending", "recovery/overdue"):
        out.append(
            Config(
                f"{test}/{rn}/tocsin",
                {"test": test, "system": "tocsin", "n": rn, "identities": ids},
            )
        )
    out.append(
        Config(f"recovery/overdue/{rn}/raw", {"test": "run/preloaded", "system": "raw", "n": rn})
    )
    return out


def _cell(row: dict[str, Any], key: str, digits: int = 2) -> str:
    if "skipped" in row:
        return f"skipped: {row['skipped']}"
    if row.get("failed"):
        return "failed"
    return fmt(row.get(key), digits)


def report(args: argparse.Namespace, runs: Runs) -> dict[str, Any]:
    if args.reminders:
        return reminder_report(args, runs)
    med = {name: median_row(rs) for name, rs in runs.items()}
    if not args.no_huey:
        for name, rs in runs.items():
            if name.endswith("/huey") and rs and "skipped" in (rs[0] or {}):
                med[name] = {"skipped": "huey not installed"}

    def get(name: str) -> dict[str, Any]:
        return med.get(name, {"failed": True})

    def spread(row: dict[str, Any], key: str) -> str:
        lo_hi = row.get(f"{key}_spread")
        return f"{fmt(lo_hi[0])}–{fmt(lo_hi[1])}" if lo_hi else "–"

    ratios: dict[str, float] = {}
    targets: dict[str, bool] = {}

    print("\n### 1. Schedule N delayed tasks (none runs; median of runs)\n")
    rows = []
    for n in args.sizes_list:
        for name in runs:
            if not name.startswith(f"schedule/{n}/"):
                continue
            row = get(name)
            system = name.split("/", 2)[2]
            rows.append(
                [
                    f"{n:,}",
                    system,
                    _cell(row, "s", 3),
                    _cell(row, "us_per_op"),
                    spread(row, "us_per_op"),
                    _cell(row, "tasks_per_commit", 1),
                    _cell(row, "activate_s", 3),
                ]
            )
        for name, _ in TOCSIN_PATHS:
            per_txn = 1000 if name.endswith("tx") else 1
            key = f"schedule_{n}_{name}_over_raw_txn{per_txn}"
            ratios[key] = ratio(
                runs, f"schedule/{n}/{name}", f"schedule/{n}/raw txn/{per_txn}", "us_per_op"
            )
            ratios[f"schedule_{n}_huey_over_{name}"] = ratio(
                runs, f"schedule/{n}/huey", f"schedule/{n}/{name}", "us_per_op"
            )
    print(
        table(
            [
                "N",
                "system / path",
                "time s",
                "µs per task",
                "µs (min–max)",
                "tasks per commit",
                "activate s (untimed)",
            ],
            rows,
        )
    )

    n = args.run_n
    print(f"\n### 2. Run {n:,} due tasks (throughput, median of runs)\n")
    rows = []
    for name in runs:
        if not name.startswith(("run/preloaded/", "run/e2e/")):
            continue
        row = get(name)
        test, _, system = name.split("/", 3)[1:]
        rows.append(
            [
                test,
                system,
                _cell(row, "s", 3),
                _cell(row, "tasks_per_s", 0),
                spread(row, "tasks_per_s"),
                _cell(row, "us_per_task"),
                _cell(row, "enqueue_s", 3),
            ]
        )
    print(
        table(
            [
                "test",
                "system / path",
                "time s",
                "tasks/s",
                "tasks/s (min–max)",
                "µs per task",
                "of which enqueue s",
            ],
            rows,
        )
    )
    for name in runs:
        if not name.startswith(("run/preloaded/", "run/e2e/")) or "tocsin" not in name:
            continue
        test, size, system = name.split("/", 3)[1:]
        base = f"run/{test}/{size}"
        ratios[f"{test}_{system}_over_huey"] = ratio(runs, name, f"{base}/huey", "tasks_per_s")
        raw = f"{base}/raw"
        if test == "e2e":
            raw += " txn/1" if system.endswith("loop") else f" txn/{PER_ACTOR}"
        ratios[f"{test}_raw_over_{system}"] = ratio(runs, raw, name, "tasks_per_s")

    rn = args.recovery_n
    print(f"\n### 3. Recovery: {rn:,} tasks over {args.identities:,} identities\n")
    pend, over = get(f"recovery/pending/{rn}/tocsin"), get(f"recovery/overdue/{rn}/tocsin")
    raw_over = get(f"recovery/overdue/{rn}/raw")
    print(
        table(
            [
                "case",
                "start() s",
                "start() s (min–max)",
                "all run s",
                "tasks/s",
                "armed identities",
            ],
            [
                [
                    "tocsin, pending (due 60 s .. 1 h)",
                    _cell(pend, "start_s", 3),
                    spread(pend, "start_s"),
                    "–",
                    "–",
                    _cell(pend, "armed_identities", 0),
                ],
                [
                    "tocsin, overdue",
                    _cell(over, "start_s", 3),
                    spread(over, "start_s"),
                    _cell(over, "all_run_s", 3),
                    _cell(over, "tasks_per_s", 0),
                    _cell(over, "armed_identities", 0),
                ],
                [
                    "raw loop, overdue (floor)",
                    "–",
                    "–",
                    _cell(raw_over, "s", 3),
                    _cell(raw_over, "tasks_per_s", 0),
                    "–",
                ],
            ],
        )
    )
    # Medians of each (the two are different child runs, not a per-repetition pair).
    ratios["recovery_overdue_tocsin_over_raw_s"] = _div(over.get("all_run_s"), raw_over.get("s"))

    # -- targets ------------------------------------------------------------------------
    if not args.no_huey and "skipped" not in get(f"run/preloaded/{n}/huey"):
        for test in ("preloaded", "e2e"):
            for name in runs:
                if name.startswith(f"run/{test}/") and "tocsin" in name:
                    system = name.split("/", 3)[3]
                    value = ratios.get(f"{test}_{system}_over_huey", float("nan"))
                    targets[f"run {test} [{system}] >= 5x huey ({fmt(value)}x)"] = value >= 5
        for n_s in args.sizes_list:
            for name, _ in TOCSIN_PATHS:
                value = ratios[f"schedule_{n_s}_huey_over_{name}"]
                targets[f"schedule {n_s} [{name}] >= 5x huey ({fmt(value)}x)"] = value >= 5
    for test in ("preloaded", "e2e"):
        for name in runs:
            if name.startswith(f"run/{test}/") and "tocsin" in name:
                system = name.split("/", 3)[3]
                value = ratios.get(f"{test}_raw_over_{system}", float("nan"))
                targets[f"run {test} [{system}] within 3x raw ({fmt(value)}x)"] = value <= 3
    for n_s in args.sizes_list:
        for name, _ in TOCSIN_PATHS:
            per_txn = 1000 if name.endswith("tx") else 1
            value = ratios[f"schedule_{n_s}_{name}_over_raw_txn{per_txn}"]
            targets[f"schedule {n_s} [{name}] within 3x raw txn/{per_txn} ({fmt(value)}x)"] = (
                value <= 3
            )
    value = ratios["recovery_overdue_tocsin_over_raw_s"]
    targets[f"recovery overdue all-run within 3x raw ({fmt(value)}x)"] = value <= 3
    start_s = pend.get("start_s", float("inf"))
    targets[f"recovery of {rn:,} pending < 2 s ({fmt(start_s, 3)} s)"] = start_s < 2
    print()
    print(
        table(["target (measured)", "met"], [(k, "yes" if v else "NO") for k, v in targets.items()])
    )
    return {"bench": "durable", "ratios": ratios, "targets": targets}


def _div(a: Any, b: Any) -> float:
    if isinstance(a, int | float) and isinstance(b, int | float) and b:
        return float(a) / float(b)
    return float("nan")


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
