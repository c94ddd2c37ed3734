# SPDX-License-Identifier: Apache-2.0
"""The systems of ``bench/postgres.py``, one function per (system, test), run in a child.

Every function gets the DSN of a **fresh database** (created by the child, dropped after)
and returns one dict of figures. Two tests:

* ``enqueue``: N tasks that do not run (tocsin: ``self.schedule(3600, ...)``; raw: a row
  due in an hour; DBOS: ``SetEnqueueOptions(delay_seconds=3600)``; Procrastinate: no
  worker), one commit per task, by 1 producer or by 100 producers at once. µs per task is
  wall time / N (with 100 producers: the throughput's inverse, not a latency).
* ``e2e``: the worker runs; from the first enqueue until the last no-op task body ran.
  tasks/s, and the client process's CPU time (every thread) per task.

The task body of every system only counts completions in memory.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

perf_counter = time.perf_counter
process_time = time.process_time

#: tocsin: tasks per Call of the 1-producer shape (the drain runs between two Calls).
CALL_BATCH = 100
#: Raw floor: rows claimed per transaction.
CLAIM_BATCH = 100
#: Raw floor: connections its 100 producers share.
RAW_CONNECTIONS = 10
DELAY = 3600.0


class Done:
    """Counts task runs; ``future`` resolves (on the loop) once ``target`` is reached."""

    def __init__(self) -> None:
        self.count = 0
        self.target = -1
        self.at = 0.0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.future: asyncio.Future[None] | None = None
        self.lock = threading.Lock()

    def expect(self, target: int) -> asyncio.Future[None]:
        self.count, self.target = 0, target
        self.loop = asyncio.get_running_loop()
        self.future = self.loop.create_future()
        return self.future

    def hit(self) -> None:
        """Count one run (under a lock: DBOS may run bodies on its own threads)."""
        with self.lock:
            self.count += 1
            reached = self.count == self.target
        if reached:
            self.at = perf_counter()
            assert self.loop is not None
            assert self.future is not None
            self.loop.call_soon_threadsafe(_resolve, self.future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


DONE = Done()


async def _producers(n: int, producers: int, one: Callable[[int], Awaitable[Any]]) -> None:
    """Call ``one(i)`` for i in range(n): sequentially, or from ``producers`` coroutines."""
    if producers == 1:
        for i in range(n):
            await one(i)
        return

    async def run(k: int) -> None:
        for i in range(k, n, producers):
            await one(i)

    await asyncio.gather(*(run(k) for k in range(producers)))


def _figures(n: int, enqueued: float, t0: float, cpu0: float, e2e: bool) -> dict[str, Any]:
    cpu = process_time() - cpu0
    out: dict[str, Any] = {
        "n": n,
        "enqueue_us": enqueued / n * 1e6,
        "cpu_us_per_task": cpu / n * 1e6,
    }
    if e2e:
        elapsed = DONE.at - t0
        out.update({"s": elapsed, "tasks_per_s": n / elapsed})
    return out


# -- raw asyncpg floor ------------------------------------------------------------------


async def raw(dsn: str, test: str, n: int, producers: int) -> dict[str, Any]:
    """One autocommit ``INSERT`` per task; a ``FOR UPDATE SKIP LOCKED`` claim loop of
    :data:`CLAIM_BATCH` rows per transaction, deleting them once run (at least once)."""
    import asyncpg

    setup = await asyncpg.connect(dsn)
    await setup.execute(
        "CREATE TABLE tasks (id bigserial PRIMARY KEY, due float8 NOT NULL, payload bytea NOT NULL)"
    )
    await setup.execute("CREATE INDEX tasks_due ON tasks (due)")
    await setup.close()
    insert = "INSERT INTO tasks (due, payload) VALUES ($1, $2)"

    async def write(conn: Any, i: int, due: float) -> None:
        await conn.execute(insert, due, b"\x01")

    claim = (
        "SELECT id, payload FROM tasks WHERE due <= $1 ORDER BY due "
        f"LIMIT {CLAIM_BATCH} FOR UPDATE SKIP LOCKED"
    )

    async def delete(conn: Any, rows: list[Any]) -> None:
        await conn.execute("DELETE FROM tasks WHERE id = ANY($1::bigint[])", [r[0] for r in rows])

    return await _raw_loop(dsn, test, n, producers, write, claim, delete)


async def raw_row(dsn: str, test: str, n: int, producers: int) -> dict[str, Any]:
    """The floor's loop with tocsin's own row: the table ``PostgresStore`` creates (its
    key and indexes), its upsert statement with its 19 parameters, one autocommit
    statement per task; the claim loop reads pending rows ``FOR UPDATE SKIP LOCKED`` and
    deletes them by key. What is left between this and tocsin is tocsin's client path;
    between this and the floor, the row's shape."""
    from tocsin.stores import _queries as q
    from tocsin.stores._protocols import UpsertTask
    from tocsin.stores.postgres import PostgresStore

    store = PostgresStore(dsn)
    await store.open()  # the schema, exactly as tocsin makes it
    await store.close()
    upsert = q.numbered(q.WRITES[UpsertTask])

    async def write(conn: Any, i: int, due: float) -> None:
        await conn.execute(
            upsert, "bench-pg", f"p{i % producers}", f"{i:020d}", "work", b"\x01",
            due, None, 0, 5, time.time(), "pending", None, None, None, None, None,
            None, None, None,
        )  # fmt: skip

    claim = (
        "SELECT kind, identity, id, payload FROM tocsin_tasks WHERE state = 'pending' "
        f"AND due <= $1 ORDER BY due LIMIT {CLAIM_BATCH} FOR UPDATE SKIP LOCKED"
    )

    async def delete(conn: Any, rows: list[Any]) -> None:
        await conn.execute(
            "DELETE FROM tocsin_tasks WHERE (kind, identity, id) IN "
            "(SELECT * FROM unnest($1::text[], $2::text[], $3::text[]))",
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
        )

    return await _raw_loop(dsn, test, n, producers, write, claim, delete)


_Write = Callable[[Any, int, float], Awaitable[None]]
_Delete = Callable[[Any, list[Any]], Awaitable[None]]


async def _raw_loop(
    dsn: str, test: str, n: int, producers: int, write: _Write, claim: str, delete: _Delete
) -> dict[str, Any]:
    """The raw floors' one shape: producers share :data:`RAW_CONNECTIONS` connections (one
    with one producer), one autocommit ``write`` per task; for e2e a claim loop on its own
    connection runs ``claim`` and ``delete`` in one transaction per batch."""
    import asyncpg

    count = 1 if producers == 1 else RAW_CONNECTIONS
    conns = [await asyncpg.connect(dsn) for _ in range(count)]
    free: asyncio.Queue[Any] = asyncio.Queue()
    for conn in conns:
        free.put_nowait(conn)
    e2e = test == "e2e"
    delay = 0.0 if e2e else DELAY

    async def one(i: int) -> None:
        conn = free.get_nowait() if not free.empty() else await free.get()
        try:
            await write(conn, i, time.time() + delay)
        finally:
            free.put_nowait(conn)

    async def claim_loop(conn: Any) -> None:
        while True:
            async with conn.transaction():
                rows = await conn.fetch(claim, time.time())
                for _ in rows:
                    DONE.hit()
                if rows:
                    await delete(conn, rows)
            if not rows:
                await asyncio.sleep(0.002)  # idle: poll again soon

    worker = None
    if e2e:
        DONE.expect(n)
        claimer = await asyncpg.connect(dsn)
        worker = asyncio.get_running_loop().create_task(claim_loop(claimer))
    cpu0 = process_time()
    t0 = perf_counter()
    await _producers(n, producers, one)
    enqueued = perf_counter() - t0
    if worker is not None:
        assert DONE.future is not None
        await DONE.future
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)
        await claimer.close()
    out = _figures(n, enqueued, t0, cpu0, e2e)
    for conn in conns:
        await conn.close()
    return out


# -- tocsin -----------------------------------------------------------------------------


def _tocsin_actor() -> type:
    from tocsin.durable import DurableActor

    class BenchPG(DurableActor):
        kind = "bench-pg"

        async def work(self, payload: Any) -> None:
            DONE.hit()

        async def queue_loop(self, arg: list[int]) -> int:
            for i in arg:
                await self.queue("work", i)
            return len(arg)

        async def schedule_loop(self, arg: list[int]) -> int:
            for i in arg:
                await self.schedule(DELAY, "work", i)
            return len(arg)

    return BenchPG


async def tocsin(
    dsn: str, test: str, n: int, producers: int, *, clustered: bool, pool: int | None = None
) -> dict[str, Any]:
    """``ActorSystem(store=PostgresStore(dsn))``; producers are durable actors calling
    ``self.queue`` (e2e) or ``self.schedule`` (enqueue) once per task, one commit each.
    1 producer: one identity, Calls of :data:`CALL_BATCH`; 100: 100 identities, one Call
    each, all at once. Cluster mode: a one-node cluster on a PostgreSQL coordinator in
    the same database, so every write is fenced."""
    from tocsin import ActorSystem, Cluster, Remoting
    from tocsin.durable import Call
    from tocsin.stores.postgres import PostgresStore

    cls = _tocsin_actor()
    kwargs: dict[str, Any] = {} if pool is None else {"max_size": pool}
    store = PostgresStore(dsn, **kwargs)
    if clustered:
        system = ActorSystem(
            "bench",
            store=store,
            remoting=Remoting(
                listen="tcp://127.0.0.1:0", secret=b"bench-postgres-secret-0123456789!"
            ),
            cluster=Cluster(f"{dsn}?schema=coordinator", lease=30.0),
        )
    else:
        system = ActorSystem("bench", store=store)
    e2e = test == "e2e"
    method = "queue_loop" if e2e else "schedule_loop"
    async with system:
        pids = [await system.durable(cls, f"p{k}") for k in range(producers)]
        if e2e:
            DONE.expect(n)
        cpu0 = process_time()
        t0 = perf_counter()
        if producers == 1:
            for start in range(0, n, CALL_BATCH):
                chunk = list(range(start, min(n, start + CALL_BATCH)))
                await pids[0].ask(Call(method, chunk), timeout=None)
        else:
            await asyncio.gather(
                *(
                    pid.ask(Call(method, list(range(k, n, producers))), timeout=None)
                    for k, pid in enumerate(pids)
                )
            )
        enqueued = perf_counter() - t0
        if e2e:
            assert DONE.future is not None
            await DONE.future
        return _figures(n, enqueued, t0, cpu0, e2e)


# -- DBOS -------------------------------------------------------------------------------


async def dbos(dsn: str, test: str, n: int, producers: int, *, api: str) -> dict[str, Any]:
    """DBOS Transact: ``Queue("bench").enqueue_async(work, i)`` (``api="queue"``) or
    ``DBOS.start_workflow_async(work, i)`` (``api="start"``); ``work`` is a workflow whose
    body counts. Defaults otherwise (the queue polls every second)."""
    import logging

    from dbos import DBOS, SetEnqueueOptions

    DBOS(config={"name": "bench", "system_database_url": dsn, "log_level": "WARNING"})
    logging.getLogger("dbos").setLevel(logging.WARNING)

    @DBOS.workflow()
    async def work(i: int) -> None:
        DONE.hit()

    DBOS.launch()
    queue = await DBOS.register_queue_async("bench")
    e2e = test == "e2e"
    try:
        if api == "start":

            async def one(i: int) -> None:
                await DBOS.start_workflow_async(work, i)

        elif e2e:

            async def one(i: int) -> None:
                await queue.enqueue_async(work, i)

        else:

            async def one(i: int) -> None:
                with SetEnqueueOptions(delay_seconds=DELAY):
                    await queue.enqueue_async(work, i)

        if e2e:
            DONE.expect(n)
        cpu0 = process_time()
        t0 = perf_counter()
        await _producers(n, producers, one)
        enqueued = perf_counter() - t0
        if e2e:
            assert DONE.future is not None
            await DONE.future
        return _figures(n, enqueued, t0, cpu0, e2e)
    finally:
        DBOS.destroy(workflow_completion_timeout_sec=0)


# -- Procrastinate ----------------------------------------------------------------------


async def procrastinate(
    dsn: str, test: str, n: int, producers: int, *, concurrency: int
) -> dict[str, Any]:
    """Procrastinate: ``work.defer_async(i=i)``; the worker runs in the same process
    (``app.run_worker_async(concurrency=..., listen_notify=True)``)."""
    import logging

    import procrastinate as pc

    logging.getLogger("procrastinate").setLevel(logging.WARNING)
    app = pc.App(connector=pc.PsycopgConnector(conninfo=dsn))

    @app.task(name="work")
    async def work(i: int) -> None:
        DONE.hit()

    e2e = test == "e2e"
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        worker = None
        if e2e:
            DONE.expect(n)
            worker = asyncio.get_running_loop().create_task(
                app.run_worker_async(
                    concurrency=concurrency, wait=True, install_signal_handlers=False
                )
            )

        async def one(i: int) -> None:
            await work.defer_async(i=i)

        cpu0 = process_time()
        t0 = perf_counter()
        await _producers(n, producers, one)
        enqueued = perf_counter() - t0
        if worker is not None:
            assert DONE.future is not None
            await DONE.future
            out = _figures(n, enqueued, t0, cpu0, e2e)
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)
            return out
        return _figures(n, enqueued, t0, cpu0, e2e)
