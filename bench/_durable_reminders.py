# SPDX-License-Identifier: Apache-2.0
"""``bench/durable.py --reminders``: durable reminders across many identities (issue 32).

Each configuration runs in its own fresh process, on a fresh store (a SQLite file in a
temporary directory, or a fresh database on one throw-away local PostgreSQL server,
``tests/integration/pg.py``, ``fsync=on``):

* ``fire``: N = 100,000 one-shot reminders (one ``work`` task each), spread over
  ``identities`` identities (1,000, or 100,000: one reminder each), all due within one
  second. The rows are written untimed through the store's own ``apply`` (the format
  ``self.schedule`` writes), their due times then set to ``T + k/N`` (``T`` = 10 s after
  that write), and a fresh ``ActorSystem(store=...)`` started. Reported: ``fires_per_s``
  = N / (last run − T), ``start_s`` (its look-ahead poll arms every identity's alarm),
  the peak RSS growth over the whole run, the store calls made (``calls_per_fire``) and the
  process CPU per fire from the end of ``start()`` to the last run (``cpu_us_per_fire``:
  less sensitive than the rate to other processes sharing the cores), how late the runs
  were (``late_p50_ms``/``late_p99_ms``/``late_max_ms``: each run's wall time minus its
  task's due time), and
  ``committed_per_s`` = N / (the commit of the last completion − T): a run counts once its
  completion (the row's delete) is acknowledged by the store.
* ``memory``: the same store and start, run once with ``tracemalloc`` on during
  ``start()`` only (it slows it down), then stopped: ``bytes_per_identity`` is the Python
  memory ``start()`` keeps per identity (each passivated with due work).
* ``raw``: the floor on the same store: N rows of ``(id, due, payload)`` inserted (untimed)
  due within one second, then one loop claims up to 100 due rows, "runs" them (the same
  in-memory count) and deletes them, one transaction per batch, until none are left
  (SQLite: ``BEGIN IMMEDIATE; SELECT … LIMIT 100; DELETE; COMMIT``; PostgreSQL: one
  ``DELETE … WHERE id IN (SELECT … ORDER BY due LIMIT 100 FOR UPDATE SKIP LOCKED)
  RETURNING``). ``fires_per_s`` likewise from ``T``.
* ``register``: into a fresh store, a running system, ``identities`` identities each asked
  (1,000 asks in flight at a time) to ``await self.schedule(3600, "work", k)`` for its
  share of N; every ``schedule`` call is timed inside the actor: p50/p99/max ms; and
  every ask's round trip, from the send to the reply (``ask_p50_ms``/``ask_p99_ms``):
  since the output gate holds the reply until the schedules are committed, the call's
  figure alone would hide where the wait went.

Targets: >= 15.5k fires/s with 100,000 identities, >= 40k/s with 1,000; registration
p99 < 10 ms; <= 1 KB per identity.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sqlite3
import tempfile
import time
import tracemalloc
import uuid
from collections.abc import Callable
from typing import Any

from _common import Config, Runs, fmt, lateness_ms, median_row, percentile, rss_bytes, table

from tocsin import ActorSystem
from tocsin.durable import Call, DurableActor, encode
from tocsin.stores import DeleteTask, TaskRow, UpsertTask

perf_counter = time.perf_counter
wall = time.time

N = 100_000
#: Seconds between the due times' write and the first due time (start() ends before).
MARGIN = 10.0
#: Asks in flight at once in the registration test.
IN_FLIGHT = 1_000
KIND = "bench-reminder"
TARGETS = {100_000: 15_500.0, 1_000: 40_000.0}


class _Count:
    def __init__(self) -> None:
        self.count = 0
        self.target = -1
        self.at = 0.0
        self.cpu = 0.0
        self.future: asyncio.Future[None] | None = None

    def hit(self) -> None:
        self.count += 1
        if self.count == self.target:
            self.at = wall()
            self.cpu = time.process_time()
            if self.future is not None and not self.future.done():
                self.future.set_result(None)


FIRED = _Count()
#: Each fire's lateness (its run's wall time minus its due time), seconds.
LATE: list[float] = []
#: ``(first due time, N)`` of the fire test running: reminder ``k`` is due at
#: ``first + k / N``.
DUES = [0.0, 1.0]
LATENCIES: list[float] = []
ASKS: list[float] = []


class Reminder(DurableActor):
    kind = KIND

    def work(self, payload: Any) -> None:
        LATE.append(wall() - (DUES[0] + payload / DUES[1]))
        FIRED.hit()

    async def register(self, arg: list[int]) -> int:
        for k in arg:
            t0 = perf_counter()
            await self.schedule(3600.0, "work", k)
            LATENCIES.append(perf_counter() - t0)
        return len(arg)


def reminder_configs(args: Any, start_server: Callable[[], str]) -> list[Config]:
    n = 2_000 if args.quick else args.reminders_n
    id_counts = [n // 100, n] if args.quick else [1_000, n]
    out: list[Config] = []
    for store in args.stores.split(","):
        dsn = start_server() if store == "postgres" else ""
        base = {"store": store, "n": n, "dsn": dsn}
        for ids in id_counts:
            name = f"reminders/{store}/fire/{ids}"
            out.append(Config(name, {**base, "test": "fire", "identities": ids}, timeout=900))
        out.append(Config(f"reminders/{store}/raw", {**base, "test": "raw"}, timeout=900))
        name = f"reminders/{store}/memory/{n}"
        out.append(Config(name, {**base, "test": "memory", "identities": n}, once=True))
        for ids in id_counts:
            name = f"reminders/{store}/register/{ids}"
            out.append(Config(name, {**base, "test": "register", "identities": ids}, timeout=900))
    return out


def reminder_child(params: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(_child(params))


async def _child(params: dict[str, Any]) -> dict[str, Any]:
    with contextlib.ExitStack() as stack:
        if params["store"] == "sqlite":
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="tocsin-bench-"))
            path = os.path.join(tmp, "bench.db")
            url, cleanup = f"sqlite:///{path}", None
        else:
            url, cleanup = await _fresh_database(params["dsn"])
        try:
            test = params["test"]
            if test in ("fire", "memory"):
                return await _fire(url, params["n"], params["identities"], test == "memory")
            if test == "raw":
                if params["store"] == "sqlite":
                    return _raw_sqlite(path, params["n"])
                return await _raw_postgres(url, params["n"])
            if test == "register":
                return await _register(url, params["n"], params["identities"])
            raise ValueError(f"unknown test {test!r}")
        finally:
            if cleanup is not None:
                await cleanup()


async def _fresh_database(base: str) -> tuple[str, Callable[[], Any]]:
    import asyncpg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(base)
    await conn.execute(f"CREATE DATABASE {name}")
    await conn.close()
    url = base.rsplit("/", 1)[0] + "/" + name

    async def cleanup() -> None:
        conn = await asyncpg.connect(base)
        await conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await conn.close()

    return url, cleanup


def _rows(n: int, identities: int) -> list[TaskRow]:
    now = wall()
    far = now + 86_400.0
    return [
        TaskRow(KIND, f"r{k % identities}", f"t{k:08d}", "work", encode(k), far, None, 0, 5, now)
        for k in range(n)
    ]


async def _fire(url: str, n: int, identities: int, memory: bool = False) -> dict[str, Any]:
    from tocsin.stores import resolve_store

    store = resolve_store(url)
    assert store is not None
    await store.open()
    rows = _rows(n, identities)
    for start in range(0, n, 10_000):
        await store.apply([UpsertTask(r) for r in rows[start : start + 10_000]])
    del rows
    await store.close()
    first = wall() + MARGIN
    await _set_dues(url, first, n)
    FIRED.count, FIRED.target = 0, n
    DUES[:] = [first, float(n)]
    LATE.clear()
    FIRED.future = asyncio.get_running_loop().create_future()
    rss0 = rss_bytes()
    system = ActorSystem(store=url)
    if memory:
        # Python's allocations kept by start() (RSS would hide them behind the preload's
        # freed memory, which the process keeps); tracing slows start() down, so this
        # run measures nothing else.
        tracemalloc.start()
        await system.start()
        gc.collect()  # what start() keeps, not its garbage awaiting a collection
        kept, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        await system.stop()
        return {"n": n, "identities": identities, "bytes_per_identity": kept / identities}
    t0 = perf_counter()
    await system.start()
    start_s = perf_counter() - t0
    durable = system._durable
    assert durable is not None
    counting = _CallCounter(durable.store, n)
    durable.wrap_store(lambda s: counting)
    cpu0 = time.process_time()
    await asyncio.wait_for(FIRED.future, 600)
    elapsed = FIRED.at - first
    for _ in range(60_000):  # the completions still in flight: bounded (60 s)
        if counting.committed:
            break
        await asyncio.sleep(0.001)
    rss_peak = rss_bytes()
    await system.stop()
    return {
        "n": n,
        "identities": identities,
        "fires_per_s": n / elapsed,
        "s": elapsed,
        # Until the last completion was committed (the run is acknowledged in the store).
        "committed_per_s": n / (counting.committed - first) if counting.committed else 0.0,
        "start_s": start_s,
        # How late the runs were (run wall time minus due time): the order of due work
        # and its starvation, beside the rate.
        **{k: v for k, v in lateness_ms(LATE).items() if k != "late_min_ms"},
        "late_at_start_s": max(0.0, start_s - MARGIN),
        "peak_rss_delta_MB": (rss_peak - rss0) / 1e6,
        "calls_per_fire": counting.calls / n,
        # The process's CPU (every thread) from the end of start() to the last run: less
        # sensitive than the rate to other processes sharing the cores.
        "cpu_us_per_fire": (FIRED.cpu - cpu0) / n * 1e6,
        "calls": dict(counting.by_name),
    }


class _CallCounter:
    """Forwards every store method, counting the calls by name."""

    def __init__(self, inner: Any, target: int) -> None:
        self._inner = inner
        self.calls = 0
        self.by_name: dict[str, int] = {}
        self.deleted = 0
        self.target = target
        #: When the ``target``-th completion (a task's delete) was committed (0: not yet).
        self.committed = 0.0

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._inner, name)
        if not callable(value) or name.startswith("_"):
            return value

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            self.by_name[name] = self.by_name.get(name, 0) + 1
            return value(*args, **kwargs)

        if name != "apply":
            return counted

        async def apply(ops: Any) -> None:
            self.calls += 1
            self.by_name[name] = self.by_name.get(name, 0) + 1
            await value(ops)
            # A one-shot reminder's completion is its row's delete: counted once the
            # commit returned (the acknowledgement), for the committed rate.
            self.deleted += sum(1 for op in ops if op.__class__ is DeleteTask)
            if self.deleted >= self.target and not self.committed:
                self.committed = wall()

        return apply


async def _set_dues(url: str, first: float, n: int) -> None:
    """Every reminder due within one second from ``first``: task ``t<k>`` at ``first + k/n``."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute(
            "UPDATE tocsin_tasks SET due = ? + CAST(substr(id, 2) AS REAL) / ?", (first, n)
        )
        conn.close()
        return
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+", "postgresql"))
    await conn.execute(
        "UPDATE tocsin_tasks SET due = $1::float8 + substr(id, 2)::float8 / $2::float8",
        first,
        float(n),
    )
    await conn.close()


def _raw_sqlite(path: str, n: int) -> dict[str, Any]:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE tasks (id INTEGER PRIMARY KEY, due REAL NOT NULL, payload BLOB)")
    conn.execute("CREATE INDEX tasks_due ON tasks (due)")
    first = wall() + MARGIN
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO tasks (due, payload) VALUES (?, ?)",
        [(first + k / n, encode(k)) for k in range(n)],
    )
    conn.execute("COMMIT")
    FIRED.count, FIRED.target, FIRED.future = 0, n, None
    select = "SELECT id, payload FROM tasks WHERE due <= ? ORDER BY due LIMIT 100"
    pause = 0.0005
    while FIRED.count < n:
        conn.execute("BEGIN IMMEDIATE")
        rows = conn.execute(select, (wall(),)).fetchall()
        for _ in rows:
            FIRED.hit()
        conn.executemany("DELETE FROM tasks WHERE id = ?", [(r[0],) for r in rows])
        conn.execute("COMMIT")
        if not rows:
            time.sleep(pause)  # nothing due yet: the floor polls every 0.5 ms
    conn.close()
    elapsed = FIRED.at - first
    return {"n": n, "fires_per_s": n / elapsed, "s": elapsed}


async def _raw_postgres(url: str, n: int) -> dict[str, Any]:
    import asyncpg

    conn = await asyncpg.connect(url.replace("postgresql+", "postgresql"))
    await conn.execute(
        "CREATE TABLE tasks (id bigserial PRIMARY KEY, due float8 NOT NULL, payload bytea)"
    )
    await conn.execute("CREATE INDEX tasks_due ON tasks (due)")
    first = wall() + MARGIN
    await conn.copy_records_to_table(
        "tasks", records=[(first + k / n, encode(k)) for k in range(n)], columns=["due", "payload"]
    )
    FIRED.count, FIRED.target, FIRED.future = 0, n, None
    claim = (
        "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE due <= $1 ORDER BY due "
        "LIMIT 100 FOR UPDATE SKIP LOCKED) RETURNING id, payload"
    )
    while FIRED.count < n:
        rows = await conn.fetch(claim, wall())
        for _ in rows:
            FIRED.hit()
        if not rows:
            await asyncio.sleep(0.0005)
    await conn.close()
    elapsed = FIRED.at - first
    return {"n": n, "fires_per_s": n / elapsed, "s": elapsed}


async def _register(url: str, n: int, identities: int) -> dict[str, Any]:
    system = ActorSystem(store=url)
    await system.start()
    per = [list(range(i, n, identities)) for i in range(identities)]
    LATENCIES.clear()
    ASKS.clear()

    async def ask(pid: Any, share: list[int]) -> None:
        sent = perf_counter()
        await pid.ask(Call("register", share), timeout=None)
        ASKS.append(perf_counter() - sent)

    t0 = perf_counter()
    for start in range(0, identities, IN_FLIGHT):
        pids = [
            await system.durable(Reminder, f"r{i}")
            for i in range(start, min(identities, start + IN_FLIGHT))
        ]
        await asyncio.gather(*(ask(pid, per[start + j]) for j, pid in enumerate(pids)))
    elapsed = perf_counter() - t0
    await system.stop()
    lat = sorted(LATENCIES)
    assert len(lat) == n
    asks = sorted(ASKS)
    return {
        "n": n,
        "identities": identities,
        "s": elapsed,
        "per_s": n / elapsed,
        "p50_ms": percentile(lat, 0.50) * 1e3,
        "p99_ms": percentile(lat, 0.99) * 1e3,
        "max_ms": lat[-1] * 1e3,
        "ask_p50_ms": percentile(asks, 0.50) * 1e3,
        "ask_p99_ms": percentile(asks, 0.99) * 1e3,
    }


def reminder_report(args: Any, runs: Runs) -> dict[str, Any]:
    med = {name: median_row(rs) for name, rs in runs.items()}
    targets: dict[str, bool] = {}
    rows = []
    for name, row in med.items():
        _, store, test, *rest = name.split("/")
        if test in ("register", "memory"):
            continue
        label = f"tocsin, {int(rest[0]):,} identities" if rest else "raw claim/delete loop"
        rate = row.get("fires_per_s")
        raw = med.get(f"reminders/{store}/raw", {}).get("fires_per_s")
        rows.append(
            [
                store,
                label,
                fmt(rate, 0),
                fmt(row.get("committed_per_s"), 0) if rest else "–",
                fmt(rate / raw if rate and raw else None, 2),
                fmt(row.get("start_s"), 2),
                fmt(med.get(f"reminders/{store}/memory/{rest[0]}", {}).get("bytes_per_identity"), 0)
                if rest
                else "–",
                fmt(row.get("calls_per_fire"), 3),
                fmt(row.get("cpu_us_per_fire"), 0),
                fmt(row.get("late_p50_ms"), 0) + " / " + fmt(row.get("late_p99_ms"), 0)
                if rest
                else "–",
            ]
        )
        if rest:
            ids = int(rest[0])
            goal = TARGETS.get(ids)
            if goal is not None and rate is not None:
                targets[f"{store}, {ids:,} identities >= {goal:,.0f}/s ({rate:,.0f})"] = (
                    rate >= goal
                )
            per_id = med.get(f"reminders/{store}/memory/{ids}", {}).get("bytes_per_identity")
            if per_id is not None:
                targets[f"{store}, <= 1 KB per identity ({per_id:,.0f} B)"] = per_id <= 1024
    print("\n### Reminders: N one-shot tasks due within one second (median of runs)\n")
    print(
        table(
            [
                "store",
                "system",
                "fires/s",
                "committed/s",
                "of raw",
                "start() s",
                "B per identity",
                "store calls per fire",
                "CPU µs per fire",
                "late p50 / p99 ms",
            ],
            rows,
        )
    )
    reg = []
    for name, row in med.items():
        _, store, test, *rest = name.split("/")
        if test != "register":
            continue
        reg.append(
            [
                store,
                f"{int(rest[0]):,}",
                fmt(row.get("per_s"), 0),
                fmt(row.get("p50_ms"), 3),
                fmt(row.get("p99_ms"), 3),
                fmt(row.get("max_ms"), 1),
                fmt(row.get("ask_p50_ms"), 1),
                fmt(row.get("ask_p99_ms"), 1),
            ]
        )
        p99 = row.get("p99_ms")
        if p99 is not None:
            targets[f"{store}, {int(rest[0]):,} identities: registration p99 < 10 ms "
                    f"({p99:.2f} ms)"] = p99 < 10  # fmt: skip
    print(
        "\n### Registration: `await self.schedule(...)` timed inside the actor; the ask "
        "round trip (send to reply) around it\n"
    )
    headers = ["store", "identities", "schedules/s", "p50 ms", "p99 ms", "max ms"]
    print(table([*headers, "ask p50 ms", "ask p99 ms"], reg))
    print()
    print(
        table(["target (measured)", "met"], [(k, "yes" if v else "NO") for k, v in targets.items()])
    )
    return {"bench": "durable-reminders", "targets": targets}
