# SPDX-License-Identifier: Apache-2.0
"""``bench/postgres.py --scale``: a million pending durable tasks per node (#24).

A store (SQLite file, or a fresh PostgreSQL database) is filled, untimed, with ``total``
pending tasks over 10,000 identities, due 1 h … 1 day out (written directly: ``COPY`` on
PostgreSQL, ``executemany`` on SQLite, in the store's own schema and row format), plus
1,000 tasks on 1,000 other identities due together a few seconds after the fill. Then, in
that same fresh process:

* ``start_s``: the time of ``await ActorSystem(store=...).start()`` (it returns after the
  first look-ahead poll has armed the alarms of identities due within 300 s);
* ``rss_delta_MB``: RSS after ``start()`` minus RSS before it;
* ``handles``: identities the runtime holds in memory after ``start()`` (only those with
  work due within the look-ahead: passivated identities cost nothing);
* ``due_1000_s``: from the moment the 1,000 come due until the last one ran.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from _common import Config, Runs, median_row, rss_bytes, table

IDENTITIES = 10_000
DUE_TOGETHER = 1_000
#: Seconds between the end of the fill and the moment the 1,000 come due.
DUE_MARGIN = 8.0
COLUMNS = (
    "kind", "identity", "id", "name", "payload", "due", "every", "attempts", "max_retries",
    "created_at", "state", "last_error", "timeout", "cron", "timezone",
)  # fmt: skip
KIND = "bench-scale"


def scale_configs(args: Any, start_server: Callable[[str], str]) -> list[Config]:
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else ([2_000] if args.quick else [10_000, 100_000, 1_000_000])
    )
    out = []
    for total in sizes:
        for store in args.stores.split(","):
            dsn = start_server("durable") if store == "postgres" else ""
            for tree in (None, args.before) if args.before else (None,):
                out.append(
                    Config(
                        f"scale/{store}/{total}" + ("@before" if tree else ""),
                        {"scale": True, "store": store, "total": total, "dsn": dsn, "tree": tree},
                        timeout=1800.0,
                    )
                )
    return out


def _rows(total: int, now: float) -> Iterator[tuple[Any, ...]]:
    from tocsin.durable import encode

    payload = encode(0)
    span = 86_400.0 - 3_600.0
    for i in range(total):
        due = now + 3_600.0 + span * ((i * 7919) % total) / total
        yield (KIND, f"a{i % IDENTITIES}", f"t{i:08d}", "work", payload, due, None, 0, 5,
               now, "pending", None, None, None, None)  # fmt: skip


def _due_rows(due: float, now: float) -> list[tuple[Any, ...]]:
    from tocsin.durable import encode

    payload = encode(0)
    step = IDENTITIES // DUE_TOGETHER
    row = ("work", payload, due, None, 0, 5, now, "pending", None, None, None, None)
    return [(KIND, f"a{k * step}", "due", *row) for k in range(DUE_TOGETHER)]


def scale_child(params: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(_scale(params))


async def _scale(params: dict[str, Any]) -> dict[str, Any]:
    from _pg_systems import DONE

    from tocsin import ActorSystem
    from tocsin.durable import DurableActor

    class Scale(DurableActor):
        kind = KIND

        async def work(self, payload: Any) -> None:
            DONE.hit()

    total, which = params["total"], params["store"]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        if which == "sqlite":
            store, cleanup = await _fill_sqlite(os.path.join(tmp, "scale.db"), total)
        else:
            store, cleanup = await _fill_postgres(params["dsn"], total)
        try:
            due_at = time.time() + DUE_MARGIN
            await _add_due(which, store, due_at)
            os.sync()  # the fill's dirty pages: else start()'s first fsync waits for them
            fill_end = time.time()
            gc.collect()
            rss0 = rss_bytes()
            system = ActorSystem("scale", store=_store_spec(which, store))
            DONE.expect(DUE_TOGETHER)
            t0 = time.perf_counter()
            await system.start()
            start_s = time.perf_counter() - t0
            rss1 = rss_bytes()
            runtime = system._durable  # type: ignore[attr-defined]
            handles = len(runtime.held())
            armed = len(runtime.held())
            await asyncio.sleep(max(0.0, due_at - time.time()))
            t_due = time.perf_counter()
            assert DONE.future is not None
            await asyncio.wait_for(DONE.future, 300.0)
            due_s = DONE.at - t_due
            await system.stop()
        finally:
            await cleanup()
    return {
        "total": total,
        "start_s": start_s,
        "rss_delta_MB": (rss1 - rss0) / 1e6,
        "handles": handles,
        "armed": armed,
        "due_1000_s": due_s,
        "due_tasks_per_s": DUE_TOGETHER / due_s,
        "late_start": fill_end > due_at,
        "load_1min": load,
    }


def _store_spec(which: str, store: str) -> Any:
    if which == "sqlite":
        return f"sqlite:///{store}"
    from tocsin.stores.postgres import PostgresStore

    pool = os.environ.get("BENCH_PG_POOL")  # experiments: another pool size
    return PostgresStore(store) if pool is None else PostgresStore(store, max_size=int(pool))


async def _fill_sqlite(path: str, total: int) -> tuple[str, Callable[[], Any]]:
    from tocsin.stores.sqlite import SQLiteStore

    store = SQLiteStore(path)
    await store.open()  # the schema, as the store makes it
    await store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    insert = f"INSERT INTO tocsin_tasks ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * 15)})"
    conn.execute("BEGIN")
    conn.executemany(insert, _rows(total, time.time()))
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()

    async def cleanup() -> None:
        return None

    return path, cleanup


async def _fill_postgres(base: str, total: int) -> tuple[str, Callable[[], Any]]:
    import asyncpg

    from tocsin.stores.postgres import PostgresStore

    name = "s_" + uuid.uuid4().hex[:10]
    admin = await asyncpg.connect(base)
    await admin.execute(f"CREATE DATABASE {name}")
    await admin.close()
    dsn = base.rsplit("/", 1)[0] + "/" + name
    store = PostgresStore(dsn)
    await store.open()
    await store.close()
    conn = await asyncpg.connect(dsn)
    await conn.copy_records_to_table(
        "tocsin_tasks", records=_rows(total, time.time()), columns=COLUMNS
    )
    await conn.execute("ANALYZE tocsin_tasks")  # what autovacuum does to a table this size
    await conn.close()

    async def cleanup() -> None:
        admin = await asyncpg.connect(base)
        await admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        await admin.close()

    return dsn, cleanup


async def _add_due(which: str, store: str, due: float) -> None:
    rows = _due_rows(due, time.time())
    insert = f"INSERT INTO tocsin_tasks ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * 15)})"
    if which == "sqlite":
        conn = sqlite3.connect(store, isolation_level=None)
        conn.execute("BEGIN")
        conn.executemany(insert, rows)
        conn.execute("COMMIT")
        conn.close()
        return
    import asyncpg

    conn = await asyncpg.connect(store)
    await conn.copy_records_to_table("tocsin_tasks", records=rows, columns=COLUMNS)
    await conn.close()


def scale_report(args: Any, runs: Runs) -> dict[str, Any]:
    rows = []
    for name, rs in runs.items():
        row = median_row(rs)
        rows.append(
            (
                name.split("/")[1] + (", before" if name.endswith("@before") else ""),
                row.get("total"),
                row.get("start_s"),
                row.get("rss_delta_MB"),
                row.get("handles"),
                row.get("due_1000_s"),
                row.get("load_1min"),
            )
        )
    print("\n### A million pending tasks: start-up and 1,000 coming due at once\n")
    print(
        table(
            [
                "store",
                "pending",
                "start() s",
                "RSS +MB",
                "identities in memory",
                "1,000 due: s",
                "load",
            ],
            rows,
        )
    )
    keys = ("store", "total", "start_s", "rss_MB", "handles", "due_s", "load")
    return {"scale": [dict(zip(keys, r, strict=True)) for r in rows]}
