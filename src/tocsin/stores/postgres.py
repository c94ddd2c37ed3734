# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL store, on asyncpg: for several processes or nodes sharing one database.

One small connection pool, and group commit: one :meth:`PostgresStore.apply` is one
transaction, and the batches that arrive while one is in flight are committed together in
the next (one WAL flush for many identities' writes: with ``synchronous_commit=on`` a flush
costs milliseconds, and the server's own grouping of concurrent commits is bounded by the
pool's few connections; #24). Upserts
are ``INSERT … ON CONFLICT DO UPDATE``. Times are ``double precision`` epoch seconds, as
in the Python API, so no time zone conversion ever happens between store and scheduler.

Schema creation runs on every :meth:`~PostgresStore.open` under a transaction-scoped
advisory lock: ``CREATE TABLE IF NOT EXISTS`` alone is not safe when two nodes start at
once (both see "missing", one fails on a unique-violation in the catalog).

Prior art: procrastinate's ``schema.sql`` and asyncpg connector.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import re
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from functools import partial
from importlib import resources
from typing import Any, Final, final

import msgspec

from .._idle import real_io
from ..clock import SystemClock, TimerHandle
from ..errors import FencedError, InvalidStoreURLError, StoreError
from . import _queries as q
from . import _schedule_sql as sq
from ._dsn import (
    CONNECT_TIMEOUT,
    PG_OPTIONS,
    check_connect_timeout,
    no_answer,
    redact,
    split_options,
    unknown_message,
)
from ._postgres_session import CHANGES_CHANNEL, Session, driver_errors
from ._protocols import (
    DeleteHistory,
    DeleteTask,
    DueActor,
    DueWork,
    Fence,
    Op,
    PauseTask,
    PutState,
    RecordTick,
    TaskRow,
    TaskState,
    TickRow,
    UpsertTask,
)
from ._schedule_rows import SchedulePause, ScheduleRequest, ScheduleRow, ScheduleTickRow
from ._validate import validate_ops

try:
    import asyncpg
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("the PostgreSQL store needs asyncpg: pip install 'tocsin[postgres]'") from exc

__all__ = ["PostgresStore"]

#: Key of the advisory lock held while creating the schema ("tocsin" in ASCII).
SCHEMA_LOCK_KEY: Final = 0x746F6373696E
_SCHEMA_NAME: Final = re.compile(r"[a-z_][a-z0-9_]{0,62}")
#: Most ops one group commit puts in one transaction (the batches are kept whole).
GROUP_OPS: Final = 2000
#: Seconds without a write after which the write connection goes back to the pool.
WRITER_IDLE: Final = 0.05
#: Seconds (of the callers' ``now``) between two purges of expired schedule claims
#: made by a won claim (:meth:`PostgresStore.claim_schedule_tick`): a claim that
#: finds its key taken purges at once.
CLAIM_PURGE_EVERY: Final = 10.0
#: The write connection's idle check runs in real time whatever clock a system uses.
_CLOCK: Final = SystemClock()


# The shared SQL, numbered for asyncpg once.
_WRITES: Final = {cls: q.numbered(sql) for cls, sql in q.WRITES.items()}
_GET_STATE: Final = q.numbered(q.GET_STATE)
_GET_TASK: Final = q.numbered(q.GET_TASK)
_FIND_TASKS: Final = q.numbered(q.FIND_TASKS)
_DUE_TASKS: Final = q.numbered(q.DUE_TASKS)
_NEXT_DUE: Final = q.numbered(q.NEXT_DUE)
_FENCE_EPOCH: Final = q.numbered(q.FENCE_EPOCH)
#: Most ``due_tasks`` calls one combined read answers.
GROUP_READS: Final = 500
#: Many identities' ``due_tasks`` and ``due_work`` in one query: parameters are four arrays
#: (kind, identity, before, limit), one element per call; the first column numbers the
#: call (1-based), the second is its ``later`` (the earliest pending due after its
#: ``before``), and each call's rows come in its own query's order, limit applied per
#: call; a call with no due task has one row whose task columns are all NULL.
_DUE_WORK_MANY: Final = (
    f"SELECT w.n, a.later, t.* FROM unnest($1::text[], $2::text[], $3::float8[], "
    "$4::bigint[]) WITH ORDINALITY AS w(kind, identity, before, lim, n) CROSS JOIN LATERAL ("
    "SELECT MIN(x.due) AS later FROM tocsin_tasks AS x WHERE x.kind = w.kind "
    "AND x.identity = w.identity AND x.state = 'pending' AND x.due > w.before) AS a "
    f"LEFT JOIN LATERAL (SELECT {q.COLUMNS} FROM tocsin_tasks AS t WHERE t.kind = w.kind "
    "AND t.identity = w.identity AND t.state = 'pending' AND t.due <= w.before "
    "ORDER BY t.due, t.id, t.kind, t.identity LIMIT w.lim) AS t ON true "
    "ORDER BY w.n, t.due, t.id, t.kind, t.identity"
)
#: Seconds any one store call may take, pool acquire included (issue 20, item 6).
CALL_TIMEOUT: Final = 10.0
_DUE_ACTORS: Final = q.numbered(q.DUE_ACTORS)
_TASK_HISTORY: Final = q.numbered(q.TASK_HISTORY)
_GET_CLUSTER: Final = "SELECT value FROM tocsin_meta WHERE key = 'cluster'"
_SET_CLUSTER: Final = (
    "INSERT INTO tocsin_meta (key, value) VALUES ('cluster', $1) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


async def _no_reset(connection: Any) -> None:
    """The pool's ``reset``: nothing to undo (see :meth:`PostgresStore._open`)."""


def _params(op: Op) -> tuple[Any, ...]:
    if isinstance(op, UpsertTask):
        r = op.row
        # asyncpg's float8 codec wants floats; the protocol allows int epoch seconds. The
        # tuple is spelled out: a struct replace and astuple cost twice as much per write.
        every, timeout = r.every, r.timeout
        return (
            r.kind, r.identity, r.id, r.name, r.payload, float(r.due),
            None if every is None else float(every), r.attempts, r.max_retries,
            float(r.created_at), r.state, r.last_error,
            None if timeout is None else float(timeout), r.cron, r.timezone, r.policy,
            None if r.paused_at is None else float(r.paused_at), r.pause_note, r.paused_by,
        )  # fmt: skip
    if isinstance(op, DeleteTask):
        return (op.kind, op.identity, op.id)
    if isinstance(op, PutState):
        return (op.kind, op.identity, op.key, op.value)
    if isinstance(op, Fence):
        return (op.kind, op.identity, op.epoch, op.owner)
    if isinstance(op, RecordTick):
        return msgspec.structs.astuple(
            msgspec.structs.replace(op, instant=float(op.instant), at=float(op.at))
        )
    if isinstance(op, DeleteHistory):
        return (op.kind, op.identity, op.id)
    if isinstance(op, PauseTask):
        at = op.paused_at
        return (None if at is None else float(at), op.note, op.by, op.kind, op.identity, op.id)
    return (op.kind, op.identity, op.key)


@final
class PostgresStore:
    """A :class:`~tocsin.stores.Store` in a PostgreSQL database (asyncpg pool).

    Gives every guarantee of the Store protocol; ``apply`` returns once its transaction
    has committed (durable per the server's ``synchronous_commit``). Any number of
    processes may share the database.

    Args:
        dsn: ``postgresql://user:password@host:port/database`` (``postgres://`` too). The
            ``schema=NAME`` and ``connect_timeout=SECONDS`` query options are read by
            tocsin (not sent to the server); any option not in
            :data:`~tocsin.stores._dsn.PG_OPTIONS` is refused.
        schema: the PostgreSQL schema holding tocsin's tables, created if missing;
            lets several applications (or tests) share one database. Lower-case
            identifier; default: the DSN's ``schema=``, else ``"public"``.
        min_size: connections kept open by the pool.
        max_size: connections the pool may open.
        connect_timeout: seconds opening a connection may take, server startup and login
            included (default: the DSN's ``connect_timeout=``, else 10): a server that
            accepts TCP but never answers fails ``open()`` after that long, and the
            :class:`StoreError` names the server and the bound.

    Raises:
        InvalidStoreURLError: an unknown query option or a bad ``connect_timeout``.
        ValueError: a bad ``schema``, ``min_size`` or ``max_size``.
    """

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 4,
        connect_timeout: float | None = None,
    ) -> None:
        given = dsn
        dsn, options, unknown = split_options(dsn, PG_OPTIONS, ("schema", "connect_timeout"))
        if unknown:
            raise InvalidStoreURLError("store URL " + unknown_message(given, unknown, PG_OPTIONS))
        try:
            self.connect_timeout = check_connect_timeout(
                connect_timeout
                if connect_timeout is not None
                else options.get("connect_timeout", CONNECT_TIMEOUT)
            )
        except ValueError as exc:
            raise InvalidStoreURLError(f"store URL {redact(given)!r}: {exc}") from None
        schema = schema or options.get("schema") or "public"
        if not _SCHEMA_NAME.fullmatch(schema):
            raise ValueError(
                f"`schema` must be a lower-case SQL identifier ([a-z_][a-z0-9_]*), got {schema!r}"
            )
        if not 0 <= min_size <= max_size or max_size < 1:
            raise ValueError(
                f"need 0 <= `min_size` <= `max_size` and `max_size` >= 1, "
                f"got min_size={min_size!r}, max_size={max_size!r}"
            )
        self._dsn = dsn
        self.schema = schema
        self.url = redact(given)
        self._min_size = min_size
        self._max_size = max_size
        self._pool: Any = None
        #: What :meth:`_failure` turns into StoreError: timeouts and every driver error.
        self._caught: tuple[type[BaseException], ...] = (TimeoutError, *driver_errors())
        #: ``now`` of the last purge of expired schedule claims (claim_schedule_tick).
        self._claims_purged = -math.inf
        #: Group commit: a write is in flight; batches that came meanwhile, in order.
        self._committing = False
        self._waiting: deque[tuple[Sequence[Op], asyncio.Future[None]]] = deque()
        self._flusher: asyncio.Task[None] | None = None
        #: The pool connection writes go through while they keep coming (see _write), the
        #: writes made on it (the idle check compares), the idle check's timer, and the
        #: task giving it back to the pool.
        self._writer: tuple[Any, Any] | None = None  # (pool, connection)
        #: A writer is held only when the pool has room for reads beside it.
        self._hold_writer = max_size >= 2
        #: close(): resolved when the write in flight (a caller's own) has ended.
        self._quiet: asyncio.Future[None] | None = None
        self._writes = 0
        self._idle_check: TimerHandle | None = None
        self._releaser: asyncio.Task[None] | None = None
        #: Read-combining of due_tasks (see there): a read is in flight; calls meanwhile.
        self._reading = False
        self._read_waiting: list[tuple[tuple[str, str, float, int], asyncio.Future[Any], bool]] = []
        self._reader: asyncio.Task[None] | None = None
        #: Transactions committed by :meth:`apply` (a group of batches counts once).
        self.commits = 0
        #: The one connection outside the pool: ownership lock and LISTEN.
        self._session = Session(
            dsn, schema, self.url, self._errors, connect_timeout=self.connect_timeout
        )

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r}, schema={self.schema!r})"

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self, *, exclusive: bool = False) -> None:
        """Create the pool and, under an advisory lock, the schema. Idempotent.

        With ``exclusive=True`` also take ownership: a session advisory lock on a
        dedicated connection, which the server drops when that session ends, however it
        ends (see :mod:`tocsin.stores._ownership`).

        Raises:
            StoreError: the server is unreachable, refuses the login, or the schema
                cannot be created; or ``exclusive`` and another session owns this
                schema's tables (the message names its host and pid).
        """
        if not exclusive:
            await self._open()
            return
        opened_here = self._pool is None
        await self._open()
        try:
            await self._session.take_ownership()
        except BaseException:
            if opened_here:
                await self.close()
            raise

    async def _open(self) -> None:
        if self._pool is not None:
            return
        try:
            async with self._errors("open"):
                pool = await asyncpg.create_pool(
                    self._dsn,
                    min_size=self._min_size,
                    max_size=self._max_size,
                    timeout=self.connect_timeout,
                    server_settings={"search_path": self.schema},
                    # No reset query on release (asyncpg's default is a round trip per
                    # store call: RESET ALL, UNLISTEN, advisory unlocks). Pooled
                    # connections carry no session state: LISTEN and the ownership lock
                    # live on the Session's own connection, the schema lock is
                    # transaction-scoped, search_path is a startup setting; asyncpg still
                    # rolls back a transaction left open before calling this (#24).
                    reset=_no_reset,
                )
        except StoreError as exc:
            if isinstance(exc.__cause__, TimeoutError):  # asyncpg's says nothing at all
                raise StoreError(
                    f"PostgreSQL store {self.url}: open failed: "
                    f"{no_answer(self._dsn, self.connect_timeout)}"
                ) from exc.__cause__
            raise
        try:
            async with self._errors("create schema"), pool.acquire() as conn, conn.transaction():
                await conn.execute("SELECT pg_advisory_xact_lock($1)", SCHEMA_LOCK_KEY)
                await conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                sql = resources.files("tocsin.stores").joinpath("sql/postgres_schema.sql")
                await conn.execute(sql.read_text("utf-8"))
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def close(self) -> None:
        """Close the pool, waiting for calls in progress, and release ownership and
        watchers. Idempotent."""
        await self._session.close()
        flusher, self._flusher = self._flusher, None
        if flusher is not None:
            await asyncio.wait({flusher})  # the waiting writes land first
        reader, self._reader = self._reader, None
        if reader is not None:
            await asyncio.wait({reader})
        if self._committing:  # a caller's own write is in flight on the write connection
            self._quiet = asyncio.get_running_loop().create_future()
            await asyncio.wait({self._quiet})
        self._give_back_writer()
        releaser, self._releaser = self._releaser, None
        if releaser is not None:
            await asyncio.wait({releaser})
        pool, self._pool = self._pool, None
        if pool is not None:
            async with self._errors("close", bounded=False):
                await pool.close()

    # --- changes made by other processes -----------------------------------------------

    async def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` when :meth:`announce` runs anywhere on this schema.

        The first watch ``LISTEN``s on the dedicated connection; notices arrive on the
        loop as the server pushes them (no polling). Returns the unwatch function.
        """
        self._require()
        return await self._session.watch(callback)

    def check_changes(self) -> None:
        """Nothing to look at: the server pushes :meth:`announce` to :meth:`watch`."""

    async def announce(self) -> None:
        """``NOTIFY`` the systems watching this schema that tasks changed."""
        pool = self._require()
        async with self._errors("announce"):
            await pool.execute("SELECT pg_notify($1, $2)", CHANGES_CHANNEL, self.schema)

    async def swap_cluster(self, expected: str | None, new: str | None) -> str | None:
        """Compare-and-set the recorded cluster fingerprint in one transaction; the
        table lock makes two first joins at once take turns (it is taken only when a
        node starts)."""
        pool = self._require()
        async with self._errors("record the cluster"), pool.acquire() as conn:
            if expected == new:  # a pure read (or a no-op write): no lock
                current: str | None = await conn.fetchval(_GET_CLUSTER)
                return current
            async with conn.transaction():
                await conn.execute("LOCK TABLE tocsin_meta IN SHARE ROW EXCLUSIVE MODE")
                current = await conn.fetchval(_GET_CLUSTER)
                if current == expected:
                    if new is None:
                        await conn.execute("DELETE FROM tocsin_meta WHERE key = 'cluster'")
                    else:
                        await conn.execute(_SET_CLUSTER, new)
            return current

    # --- Store protocol --------------------------------------------------------------------

    async def apply(self, ops: Sequence[Op]) -> None:
        """Apply a batch in one transaction (all ops in order, or none and StoreError).

        Group commit: while one write is in flight, batches from other callers wait and
        then go in together, in arrival order, as one transaction (one WAL flush for
        all). If that transaction fails, each of its batches is applied again alone, so
        a batch fails only for its own reason (a fenced batch is refused; the others
        land) and each caller gets its own outcome.
        """
        validate_ops(ops)
        if not ops:
            return
        pool = self._require()
        if self._committing:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append((ops, done))
            await done
            return
        self._committing = True
        try:
            await self._write(pool, ops)
        finally:
            if self._waiting:  # arrived meanwhile: commit them together, off this caller
                self._flusher = asyncio.get_running_loop().create_task(self._flush(pool))
            else:
                self._end_writes()

    async def _flush(self, pool: Any) -> None:
        """Commit the waiting batches, up to :data:`GROUP_OPS` ops per transaction."""
        try:
            while self._waiting:
                group: list[tuple[Sequence[Op], asyncio.Future[None]]] = []
                count = 0
                while self._waiting and count < GROUP_OPS:
                    ops, done = self._waiting.popleft()
                    if not done.done():  # not cancelled while it waited
                        group.append((ops, done))
                        count += len(ops)
                if len(group) > 1:
                    try:
                        await self._write(pool, [op for ops, _ in group for op in ops])
                    except StoreError:
                        pass  # some batch failed: each alone, below
                    except BaseException as exc:  # cancelled (close) or a bug: all fail
                        for _, done in group:
                            _fail(done, exc)
                        raise
                    else:
                        for _, done in group:
                            if not done.done():
                                done.set_result(None)
                        # One loop turn before the next group: the callers just answered
                        # come back with their next batches first, so a steady stream
                        # goes as one group per commit, not as a group and a straggler
                        # that went alone.
                        await asyncio.sleep(0)
                        continue
                for ops, done in group:
                    try:
                        await self._write(pool, ops)
                    except BaseException as exc:
                        _fail(done, exc)
                        if not isinstance(exc, Exception):
                            raise
                    else:
                        if not done.done():
                            done.set_result(None)
        finally:
            self._end_writes()
            for _, done in self._waiting:  # only if this task was cancelled (close)
                if not done.done():
                    done.set_exception(StoreError(f"{self!r}: closed before this write"))
            self._waiting.clear()

    async def _write(self, pool: Any, ops: Sequence[Op]) -> None:
        """One batch (or one group of batches) in one atomic step, in as few round trips
        as its shape allows: a run of ops of one kind, fences included, is one
        ``executemany`` (atomic on its own: asyncpg pipelines the rows before one Sync, an
        implicit transaction), and only a batch of several kinds of ops pays BEGIN and
        COMMIT around its runs (#24).

        Group commit keeps one write in flight, so writes need one connection: the first
        write of a burst takes one from the pool and the burst keeps it until
        :data:`WRITER_IDLE` seconds pass without a write (then it goes back, so an idle
        store holds nothing). That saves a pool acquire and release per write while
        writes keep coming (one producer's one-commit writes: two loop iterations and
        ~50 µs of client CPU each, docs/performance.md), and the idle check is one timer
        per :data:`WRITER_IDLE`, not a callback per write. A write that fails gives its
        connection back (it may be broken: the pool replaces it); the next write takes
        another."""
        with real_io():
            bound = self._bound
            writer = self._writer
            if writer is not None:
                if _ended(writer[1]):  # closed under us: take another, as the pool's own
                    self._give_back_writer()  # acquire reconnects a closed connection
                elif len(ops) <= 2 and (one := _one_statement(ops)) is not None:
                    # The common write, one task with or without its fence, on the held
                    # connection: one statement, bounded by asyncpg itself (no timeout
                    # context of our own, no runs to build).
                    try:
                        await writer[1].execute(one[0], *one[1], timeout=bound)
                    except self._caught as exc:
                        self._give_back_writer()
                        raise self._failure("apply", bound, exc) from exc
                    except BaseException:
                        self._give_back_writer()
                        raise
                    self.commits += 1
                    self._writes += 1
                    return
                writer = self._writer
            runs = _runs(ops)
            try:
                async with asyncio.timeout(bound):
                    if writer is not None:
                        conn = writer[1]
                    elif self._hold_writer:
                        conn = await pool.acquire()
                        self._writer = (pool, conn)
                        self._arm_idle_check()
                    else:
                        conn = pool
                    if len(runs) == 1:
                        await _execute(conn, *runs[0])
                    elif conn is pool:
                        async with pool.acquire() as one, one.transaction():
                            for run in runs:
                                await _execute(one, *run)
                    else:
                        async with conn.transaction():
                            for run in runs:
                                await _execute(conn, *run)
            except self._caught as exc:
                self._give_back_writer()
                raise self._failure("apply", bound, exc) from exc
            except BaseException:  # cancelled mid-write: the pool sorts the connection out
                self._give_back_writer()
                raise
            self.commits += 1
            self._writes += 1

    def _end_writes(self) -> None:
        """No write is in flight any more (and none waits)."""
        self._committing = False
        quiet, self._quiet = self._quiet, None
        if quiet is not None and not quiet.done():
            quiet.set_result(None)

    def _release_if_idle(self, writes: int) -> None:
        """Give the write connection back if no write was made on it since the last
        check and none is in flight; else look again in :data:`WRITER_IDLE`."""
        if self._writes == writes and not self._committing:
            self._idle_check = None
            self._give_back_writer()
        else:
            self._arm_idle_check()

    def _arm_idle_check(self) -> None:
        """Look at the write connection again in :data:`WRITER_IDLE` (real time, through
        :mod:`tocsin.clock`: a resource's release, which no simulated clock should hold)."""
        self._idle_check = _CLOCK.call_at(
            _CLOCK.monotonic() + WRITER_IDLE, partial(self._release_if_idle, self._writes)
        )

    def _give_back_writer(self) -> None:
        if self._idle_check is not None:
            self._idle_check.cancel()
            self._idle_check = None
        writer, self._writer = self._writer, None
        if writer is None:
            return
        previous = self._releaser
        self._releaser = asyncio.get_running_loop().create_task(self._release(*writer, previous))

    async def _release(self, pool: Any, conn: Any, previous: asyncio.Task[None] | None) -> None:
        if previous is not None:
            await asyncio.wait({previous})
        # A broken connection: the pool has terminated it and will open another.
        with contextlib.suppress(*self._caught):
            await pool.release(conn)

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None:
        """The value of ``storage[key]``, or ``None``."""
        rows = await self._fetch(_GET_STATE, kind, identity, key)
        return bytes(rows[0][0]) if rows else None

    async def list_state(
        self, kind: str, identity: str, prefix: str = ""
    ) -> list[tuple[str, bytes]]:
        """Keys starting with ``prefix`` and their values, sorted by key (code points)."""
        # left() rather than LIKE, whose % and _ in the prefix would be wildcards.
        sql = (
            "SELECT key, value FROM tocsin_state WHERE kind = $1 AND identity = $2 "
            "AND left(key, char_length($3::text)) = $3::text ORDER BY key"
        )
        rows = await self._fetch(sql, kind, identity, prefix)
        return [(row[0], bytes(row[1])) for row in rows]

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None:
        """One task by primary key, or ``None``."""
        rows = await self._fetch(_GET_TASK, kind, identity, task_id)
        return _row(rows[0]) if rows else None

    async def list_tasks(
        self,
        kind: str | None = None,
        identity: str | None = None,
        state: TaskState | None = None,
    ) -> list[TaskRow]:
        """Tasks matching the filters, ordered by ``(due, id, kind, identity)``."""
        sql, args = q.list_tasks(kind, identity, state)
        return [_row(r) for r in await self._fetch(q.numbered(sql), *args)]

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        """Every task with this id, across actors, ordered like :meth:`list_tasks`."""
        return [_row(r) for r in await self._fetch(_FIND_TASKS, task_id)]

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        """This actor's pending tasks due at or before ``before``, by ``(due, id)``.

        Read-combining (the read side of group commit, #24): while one ``due_tasks`` (or
        ``due_work``) is in flight, the calls that arrive wait and then go together as
        one query (one round trip for many identities' drains: a thousand alarms ringing
        at once read their tasks in a few queries, not a thousand). Each caller gets
        exactly the rows its own query would have read."""
        rows: list[TaskRow] = await self._combined_read(kind, identity, before, limit, False)
        return rows

    async def due_work(self, kind: str, identity: str, before: float, limit: int) -> DueWork:
        """``due_tasks`` and the earliest pending ``due`` after ``before``, in the same
        combined read (saving the drain's ``next_due`` round trip after its commit, one
        identity at a time, folded into the batch)."""
        work: DueWork = await self._combined_read(kind, identity, before, limit, True)
        return work

    async def _combined_read(
        self, kind: str, identity: str, before: float, limit: int, work: bool
    ) -> Any:
        key = (kind, identity, float(before), max(limit, 0))
        if self._reading:
            done: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            self._read_waiting.append((key, done, work))
            return await done
        self._reading = True
        try:
            if work:
                return _answers(await self._fetch(_DUE_WORK_MANY, *_columns([key])), [True])[0]
            return [_row(r) for r in await self._fetch(_DUE_TASKS, *key)]
        finally:
            if self._read_waiting:
                self._reader = asyncio.get_running_loop().create_task(self._read_flush())
            else:
                self._reading = False

    async def _read_flush(self) -> None:
        """Answer the waiting reads, up to :data:`GROUP_READS` a query."""
        try:
            while self._read_waiting:
                group = [w for w in self._read_waiting[:GROUP_READS] if not w[1].done()]
                del self._read_waiting[:GROUP_READS]
                if not group:
                    continue
                try:
                    rows = await self._fetch(_DUE_WORK_MANY, *_columns([w[0] for w in group]))
                except BaseException as exc:
                    for _, done, _ in group:
                        _fail(done, exc)
                    if not isinstance(exc, Exception):
                        raise
                    continue
                answers = _answers(rows, [work for _, _, work in group])
                for (_, done, _), answer in zip(group, answers, strict=True):
                    if not done.done():
                        done.set_result(answer)
        finally:
            self._reading = False
            for _, done, _ in self._read_waiting:  # only if this task was cancelled (close)
                if not done.done():
                    done.set_exception(StoreError(f"{self!r}: closed before this read"))
            self._read_waiting.clear()

    async def next_due(self, kind: str, identity: str) -> float | None:
        """The earliest ``due`` among this actor's pending tasks, or ``None``."""
        rows = await self._fetch(_NEXT_DUE, kind, identity)
        value = rows[0][0]
        return None if value is None else float(value)

    async def task_history(self, kind: str, identity: str, task_id: str) -> list[TickRow]:
        """One task's history, oldest first (at most ``HISTORY_LIMIT`` entries)."""
        rows = await self._fetch(_TASK_HISTORY, kind, identity, task_id)
        return [TickRow(*row) for row in rows]

    async def fence_epoch(self, kind: str, identity: str) -> int:
        """The highest epoch fenced for ``(kind, identity)`` (0 if none)."""
        rows = await self._fetch(_FENCE_EPOCH, kind, identity)
        return int(rows[0][0]) if rows else 0

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        """Actors with a pending task due at or before ``before``, earliest first.

        Ties are broken by ``(kind, identity)``; at most ``limit`` actors.
        """
        rows = await self._fetch(_DUE_ACTORS, float(before), max(limit, 0))
        return [DueActor(row[0], row[1], float(row[2])) for row in rows]

    # --- stored schedules (ScheduleStore) -----------------------------------------------

    async def schedule_rows(self) -> list[ScheduleRow]:
        """Every stored schedule, by id."""
        return [sq.schedule_from_sql(r) for r in await self._fetch(_SQ["SELECT_ALL"])]

    async def schedule_page(self, after: str, limit: int) -> list[ScheduleRow]:
        """At most ``limit`` stored schedules with ids after ``after``, by id."""
        rows = await self._fetch(_SQ["SELECT_PAGE"], after, max(limit, 0))
        return [sq.schedule_from_sql(r) for r in rows]

    async def schedule_row(self, schedule_id: str) -> ScheduleRow | None:
        """One stored schedule, or ``None``."""
        rows = await self._fetch(_SQ["SELECT_ONE"], schedule_id)
        return sq.schedule_from_sql(rows[0]) if rows else None

    async def schedule_rows_of(self, schedule_ids: Sequence[str]) -> dict[str, ScheduleRow]:
        """The stored schedules of ``schedule_ids`` by id (the missing left out), in one
        statement (``id = ANY($1)``)."""
        rows = await self._fetch(_SELECT_SOME, list(dict.fromkeys(schedule_ids)))
        return {row.id: row for row in map(sq.schedule_from_sql, rows)}

    async def write_schedule(self, row: ScheduleRow, *, expect: int | None) -> bool:
        """Insert if absent (``expect=None``) or compare-and-set on ``version``."""
        if expect is None:
            return await self._change(_SQ["INSERT"], sq.schedule_params(row), "write a schedule")
        args = (row.spec, row.version, float(row.updated_at), row.id, expect)
        return await self._change(_SQ["UPDATE"], args, "write a schedule")

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Remove one schedule (its ledger stays); whether it existed."""
        return await self._change(_SQ["DELETE"], (schedule_id,), "remove a schedule")

    async def pause_schedule_row(self, schedule_id: str, pause: SchedulePause) -> bool:
        """Set the pause state (not the version); whether the schedule exists."""
        args = sq.pause_params(schedule_id, pause)
        return await self._change(_SQ["PAUSE"], args, "pause a schedule")

    async def schedules_revision(self) -> int:
        """Moves at every change of a stored schedule."""
        rows = await self._fetch(_SQ["REVISION"])
        return int(rows[0][0]) if rows else 0

    async def record_schedule_tick(
        self, row: ScheduleTickRow, keep: int, *, replace: bool = True
    ) -> None:
        """Write the ledger row of ``(id, instant, manual)``, keep the newest ``keep``.

        Each statement is its own transaction (no ``BEGIN``/``COMMIT`` round trips:
        every decided instant writes its row, and its run's worker writes it again),
        and only a row that was added trims (a row rewritten adds none: the worker's
        write is one round trip). The row is written first; the trim is housekeeping
        that the schedule's next added row redoes, so a trim that fails leaves at most
        a row too many, never a row missing."""
        pool = self._require()
        sql = _RECORD_ADDED if replace else _RECORD_IF_ABSENT_ADDED
        async with self._errors("record a schedule tick"), pool.acquire() as conn:
            added = await conn.fetchval(sql, *sq.ledger_params(row))
            if added:
                await conn.execute(_SQ["TRIM"], row.id, row.id, max(keep, 1) - 1)

    async def schedule_ticks(
        self, schedule_id: str, limit: int | None = None
    ) -> list[ScheduleTickRow]:
        """One schedule's ledger, oldest first (the newest ``limit`` with a limit)."""
        if limit is None:
            return [sq.tick_from_sql(r) for r in await self._fetch(_SQ["LEDGER"], schedule_id)]
        rows = await self._fetch(_SQ["LEDGER_NEWEST"], schedule_id, max(limit, 0))
        return [sq.tick_from_sql(r) for r in reversed(rows)]

    async def schedule_last_instants(
        self, first: str | None = None, last: str | None = None
    ) -> dict[str, float]:
        """The newest instant of each schedule's ledger, manual runs aside, by id (from
        ``first`` to ``last`` when given)."""
        if first is None or last is None:
            rows = await self._fetch(_SQ["LAST_INSTANTS"])
        else:
            rows = await self._fetch(_SQ["LAST_INSTANTS_RANGE"], first, last)
        return {sid: float(instant) for sid, instant in rows}

    async def schedule_tick(
        self, schedule_id: str, instant: float, *, manual: bool = False
    ) -> ScheduleTickRow | None:
        """The ledger row of one instant (a manual run's: ``manual``), or ``None``."""
        rows = await self._fetch(_SQ["LEDGER_ONE"], schedule_id, float(instant), manual)
        return sq.tick_from_sql(rows[0]) if rows else None

    async def claim_schedule_ticks(
        self, claims: Sequence[tuple[str, float]], node: str, now: float
    ) -> list[bool]:
        """:meth:`claim_schedule_tick` for each ``(key, expires)`` of ``claims``, in order,
        in one transaction: the purge, then one ``INSERT … SELECT unnest(…) ON CONFLICT DO
        NOTHING RETURNING key`` (a key given twice is won at most once, first)."""
        pool = self._require()
        async with self._errors("claim schedule ticks"), pool.acquire() as conn:
            transaction = conn.transaction()
            async with transaction:
                await conn.execute(_SQ["PURGE_CLAIMS"], float(now))
                rows = await conn.fetch(
                    _CLAIM_MANY, [key for key, _ in claims], node, [float(e) for _, e in claims]
                )
        fresh = {row[0] for row in rows}
        won: list[bool] = []
        for key, _ in claims:
            won.append(key in fresh)
            fresh.discard(key)
        return won

    async def claim_schedule_tick(self, key: str, node: str, now: float, expires: float) -> bool:
        """Put-if-absent ``key`` until ``expires`` (an expired claim is replaced).

        One round trip when the key is free (every run's start mark is a fresh key):
        the insert goes first; only when it finds the key taken are the expired claims
        purged and the insert tried again, so an expired claim is still replaced. The
        claims of other keys expire away by a purge at most every
        :data:`CLAIM_PURGE_EVERY` seconds of ``now``. Each statement commits alone:
        the purge drops only claims expired by ``now`` and the insert is put-if-absent,
        so two claimants of one key still find one winner (the primary key's)."""
        pool = self._require()
        async with self._errors("claim a schedule tick"), pool.acquire() as conn:
            status: str = await conn.execute(_SQ["CLAIM"], key, node, float(expires))
            if not status.endswith(" 1"):
                await conn.execute(_SQ["PURGE_CLAIMS"], float(now))
                self._claims_purged = now
                status = await conn.execute(_SQ["CLAIM"], key, node, float(expires))
            elif now - self._claims_purged >= CLAIM_PURGE_EVERY:
                self._claims_purged = now
                await conn.execute(_SQ["PURGE_CLAIMS"], float(now))
        return status.endswith(" 1")

    async def request_schedule_run(self, request: ScheduleRequest) -> None:
        """Record a run asked for (once) and move the revision."""
        args = (request.id, float(request.instant), request.manual, float(request.at))
        await self._change(_SQ["REQUEST"], args, "request a schedule run")

    async def schedule_requests(self) -> list[ScheduleRequest]:
        """The requests not yet done, oldest instant first."""
        rows = await self._fetch(_SQ["REQUESTS"])
        return [ScheduleRequest(i, float(t), bool(m), float(a)) for i, t, m, a in rows]

    async def delete_schedule_request(self, request: ScheduleRequest) -> None:
        """Forget a request."""
        pool = self._require()
        args = (request.id, float(request.instant), request.manual)
        async with self._errors("forget a schedule request"):
            await pool.execute(_SQ["DELETE_REQUEST"], *args)

    async def _change(self, sql: str, args: tuple[Any, ...], what: str) -> bool:
        """One change of ``tocsin_schedules`` and, if it changed a row, the revision
        bump, in one transaction; whether a row changed."""
        pool = self._require()
        async with self._errors(what), pool.acquire() as conn, conn.transaction():
            status: str = await conn.execute(sql, *args)
            done = status.endswith(" 1")
            if done:
                await conn.execute(_SQ["BUMP_REVISION"])
        return done

    # --- plumbing --------------------------------------------------------------------------

    def _require(self) -> Any:
        if self._pool is None:
            raise StoreError(f"{self!r} is not open; call `await store.open()` first")
        return self._pool

    async def _fetch(self, sql: str, *args: Any) -> list[Any]:
        pool = self._require()
        bound = self._bound
        try:
            with real_io():
                async with asyncio.timeout(bound):
                    rows: list[Any] = await pool.fetch(sql, *args)
        except self._caught as exc:
            raise self._failure("query", bound, exc) from exc
        return rows

    @asynccontextmanager
    async def _errors(self, what: str, *, bounded: bool = True) -> AsyncIterator[None]:
        """The bound and the error mapping of every call (see :meth:`_failure`); the two
        hot paths, :meth:`_write` and :meth:`_fetch`, spell the same out inline (a
        generator-based context manager per call costs them ~10 µs of CPU)."""
        bound = self._bound if bounded else None
        try:
            with real_io():
                async with asyncio.timeout(bound):
                    yield
        except self._caught as exc:
            raise self._failure(what, bound, exc) from exc

    def _failure(self, what: str, bound: float | None, exc: BaseException) -> StoreError:
        """The one place asyncpg/OS errors become :class:`StoreError`, and the bound of
        every call (issue 20, item 6): a pool acquire, a query or a transaction that has
        not finished within :data:`CALL_TIMEOUT` (or ``connect_timeout`` if longer: a
        call may have to open a connection) raises ``StoreError`` instead of waiting for
        ever (a frozen server, a pool whose connections are all stuck).

        Every asyncpg exception is wrapped, its client-side ones included
        (``InternalClientError``, raised mid-restart of the server): none escapes."""
        if isinstance(exc, TimeoutError):
            if bound is None:
                return StoreError(f"PostgreSQL store {self.url}: {what} failed: {exc}")
            return StoreError(
                f"PostgreSQL store {self.url}: {what} failed: no answer within "
                f"{bound:g} s (server down or frozen?)"
            )
        if getattr(exc, "sqlstate", None) == q.FENCED_SQLSTATE:
            return FencedError(f"PostgreSQL store {self.url}: {what} refused: {exc}")
        return StoreError(f"PostgreSQL store {self.url}: {what} failed: {exc}")

    @property
    def _bound(self) -> float:
        return max(CALL_TIMEOUT, self.connect_timeout)


#: A write with its batch's fence folded in (cluster mode, #24): the fence upsert rides
#: the write's own statement as a data-modifying CTE, so a fenced write is one round trip
#: (it was four: BEGIN, fence, write, COMMIT). A CTE runs exactly once and to completion
#: whether or not the statement reads it, and the fence trigger's exception aborts the
#: whole statement: a zombie's write is refused in the same atomic step, as before. The
#: fence's row lock is held to commit, so two owners' writes still serialise on it. $1-$4
#: are the fence (kind, identity, epoch, owner); a row whose epoch is NULL writes no fence
#: (the rows of a batch after its first, or of an unfenced batch merged by group commit).
_FENCE_CTE: Final = (
    "WITH fence AS (INSERT INTO tocsin_fences (kind, identity, epoch, owner) "
    "SELECT $1::text, $2::text, $3::bigint, $4::text WHERE $3::bigint IS NOT NULL "
    "ON CONFLICT (kind, identity) DO UPDATE SET epoch = excluded.epoch, "
    "owner = excluded.owner) "
)
_FENCED: Final = {
    cls: _FENCE_CTE + q.numbered(sql, start=5) for cls, sql in q.WRITES.items() if cls is not Fence
}
_NO_FENCE: Final = (None, None, None, None)

#: One run of a batch: the op class, and per row (fence parameters or None, parameters).
_Run = tuple[type, list[tuple[tuple[Any, ...] | None, tuple[Any, ...]]]]


def _one_statement(ops: Sequence[Op]) -> tuple[str, tuple[Any, ...]] | None:
    """``[op]`` or ``[Fence, op]`` as one statement and its parameters (else None)."""
    last = ops[-1]
    cls = type(last)
    if cls is Fence:
        return None
    if len(ops) == 1:
        return _WRITES[cls], _params(last)
    if type(ops[0]) is Fence:
        return _FENCED[cls], (*_params(ops[0]), *_params(last))
    return None


def _runs(ops: Sequence[Op]) -> list[_Run]:
    """The batch as runs of one op class, in order, each :class:`Fence` folded into the
    op after it (a fence with no op of its own after it stays a run of its own)."""
    runs: list[_Run] = []
    fence: tuple[Any, ...] | None = None
    for op in ops:
        cls = type(op)
        if cls is Fence:
            if fence is not None:
                _add(runs, Fence, None, fence)
            fence = _params(op)
            continue
        _add(runs, cls, fence, _params(op))
        fence = None
    if fence is not None:
        _add(runs, Fence, None, fence)
    return runs


def _add(runs: list[_Run], cls: type, fence: tuple[Any, ...] | None, row: tuple[Any, ...]) -> None:
    if runs and runs[-1][0] is cls:
        runs[-1][1].append((fence, row))
    else:
        runs.append((cls, [(fence, row)]))


async def _execute(
    conn: Any, cls: type, rows: list[tuple[tuple[Any, ...] | None, tuple[Any, ...]]]
) -> None:
    """One run on a pool or a connection: one statement, or one ``executemany``."""
    if any(fence is not None for fence, _ in rows):
        sql = _FENCED[cls]
        args = [(*(fence or _NO_FENCE), *row) for fence, row in rows]
    else:
        sql = _WRITES[cls]
        args = [row for _, row in rows]
    if len(args) == 1:
        await conn.execute(sql, *args[0])
    else:
        await conn.executemany(sql, args)


def _ended(conn: Any) -> bool:
    """Whether a held pool connection was closed (the server ended the session, or it
    was terminated: the pool then took it back and the proxy refuses every call)."""
    try:
        return bool(conn.is_closed())
    except asyncpg.InterfaceError:
        return True


def _fail(done: asyncio.Future[Any], exc: BaseException) -> None:
    if done.done():
        return
    if isinstance(exc, asyncio.CancelledError):
        done.cancel()
    else:
        done.set_exception(exc)


def _columns(keys: list[tuple[str, str, float, int]]) -> tuple[list[Any], ...]:
    """The four array parameters of :data:`_DUE_WORK_MANY`."""
    return tuple([k[i] for k in keys] for i in range(4))


def _answers(rows: list[Any], work: list[bool]) -> list[Any]:
    """Each call's answer from one :data:`_DUE_WORK_MANY` result: its rows, or a
    :class:`DueWork` where ``work`` says so."""
    tasks: list[list[TaskRow]] = [[] for _ in work]
    later: list[float | None] = [None] * len(work)
    for r in rows:
        values = tuple(r)
        n = values[0] - 1
        if values[1] is not None:
            later[n] = float(values[1])
        if values[2] is not None:  # kind is NOT NULL: None means "no due task"
            tasks[n].append(_row(values[2:]))
    return [
        DueWork(rows_n, later_n) if w else rows_n
        for rows_n, later_n, w in zip(tasks, later, work, strict=True)
    ]


def _row(r: Any) -> TaskRow:
    return TaskRow(
        kind=r[0],
        identity=r[1],
        id=r[2],
        name=r[3],
        payload=bytes(r[4]),
        due=r[5],
        every=r[6],
        attempts=r[7],
        max_retries=r[8],
        created_at=r[9],
        state=r[10],
        last_error=r[11],
        timeout=r[12],
        cron=r[13],
        timezone=r[14],
        policy=None if r[15] is None else bytes(r[15]),
        paused_at=r[16],
        pause_note=r[17],
        paused_by=r[18],
    )


#: The stored schedules' SQL with asyncpg's ``$n`` placeholders.
#: The batch of :meth:`PostgresStore.claim_schedule_ticks`: $1 keys, $2 node, $3 expiries.
_CLAIM_MANY: Final = (
    "INSERT INTO tocsin_schedule_claims (key, node, expires) "
    "SELECT k, $2, e FROM unnest($1::text[], $3::float8[]) AS t(k, e) "
    "ON CONFLICT (key) DO NOTHING RETURNING key"
)
_SELECT_SOME: Final = (
    f"SELECT {sq.SCHEDULE_COLUMNS} FROM tocsin_schedules WHERE id = ANY($1::text[])"
)
_SQ: Final = {
    name: q.numbered(getattr(sq, name))
    for name in sq.__all__
    if name.isupper()
    and name not in ("IDS_AT_ONCE", "LEDGER_COLUMNS", "SCHEDULE_COLUMNS", "SELECT_SOME")
}

#: The ledger writes, saying whether they added the row: ``xmax = 0`` on a row an
#: ``INSERT … ON CONFLICT DO UPDATE`` returns means inserted, not updated (no row at
#: all when ``DO NOTHING`` wrote nothing).
_RECORD_ADDED: Final = _SQ["RECORD"] + " RETURNING (xmax = 0)"
_RECORD_IF_ABSENT_ADDED: Final = _SQ["RECORD_IF_ABSENT"] + " RETURNING true"
