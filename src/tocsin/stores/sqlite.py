# SPDX-License-Identifier: Apache-2.0
"""The embedded default store: one SQLite file, WAL mode, one worker thread.

Durability trade-off (``synchronous``):

* ``"NORMAL"`` (default) with WAL: a commit is durable against a *process* crash (kill -9,
  an exception, OOM) the moment :meth:`SQLiteStore.apply` returns. A *power loss* or OS
  crash may lose the last few commits (those not yet checkpointed by an fsync), but never
  corrupts the file. This is SQLite's recommended setting for WAL.
* ``"FULL"``: every commit is fsynced before ``apply`` returns, so it also survives power
  loss, at the cost of one fsync per commit (group commit, below, amortises it).

Threading. sqlite3 blocks, so every call runs on ONE dedicated thread owning the one
connection: the event loop never blocks, writes are serialised without locks, and
``sqlite://:memory:`` works (one connection sees one database). Rejected: a thread per
call (``asyncio.to_thread``) needs a connection per thread and turns lock contention into
``SQLITE_BUSY`` retries; aiosqlite is the same single-thread design as a dependency.

Group commit. ``apply`` calls that queue up while the thread is busy are committed
together: one ``BEGIN IMMEDIATE … COMMIT`` wrapping one ``SAVEPOINT`` per call. A call
whose ops fail is rolled back to its savepoint alone and raises; the others still commit.
Each ``apply`` still returns only after its data is committed.

Prior art: SQLite's WAL docs (https://sqlite.org/wal.html, "synchronous=NORMAL"),
PostgreSQL's ``commit_delay`` group commit, aiosqlite's single-thread connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import queue
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from typing import Any, Final, Literal, TypeVar, final

import msgspec

from ..errors import StoreError
from . import _queries as q
from ._protocols import (
    DeleteTask,
    DueActor,
    Op,
    PutState,
    TaskRow,
    TaskState,
    UpsertTask,
)
from ._validate import validate_ops

__all__ = ["SQLiteStore"]

T = TypeVar("T")

#: How long a write waits for another process holding the file's write lock (the CLI and
#: an application can share one file) before failing with "database is locked".
BUSY_TIMEOUT_MS: Final = 5_000


def _params(op: Op) -> tuple[Any, ...]:
    if isinstance(op, UpsertTask):
        # TaskRow's field order is q.COLUMNS' order (a contract test pins it).
        return msgspec.structs.astuple(op.row)
    if isinstance(op, DeleteTask):
        return (op.kind, op.identity, op.id)
    if isinstance(op, PutState):
        return (op.kind, op.identity, op.key, op.value)
    return (op.kind, op.identity, op.key)


@final
class _Job:
    """One unit of work for the worker thread (slotted: one per store call)."""

    __slots__ = ("fn", "future", "write")

    def __init__(self, fn: Callable[[sqlite3.Connection], Any], *, write: bool) -> None:
        self.fn = fn
        self.write = write
        self.future: concurrent.futures.Future[Any] = concurrent.futures.Future()


_STOP: Final = _Job(lambda conn: None, write=False)


@contextmanager
def _map_errors(what: str, path: str) -> Iterator[None]:
    """The one place sqlite3/OS errors become :class:`StoreError`."""
    try:
        yield
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"SQLite store {path!r}: {what} failed: {exc}") from exc


@final
class SQLiteStore:
    """A :class:`~tocsin.stores.Store` in one SQLite file (or ``":memory:"``).

    Gives every guarantee of the Store protocol. ``apply`` returns once its batch is
    committed (see the module docstring for what "committed" survives under each
    ``synchronous`` setting). Several processes may share the file; writers wait up to
    :data:`BUSY_TIMEOUT_MS` for each other. Cancelling an ``apply`` that the worker has
    not started withdraws it; once started, it completes (and is committed) regardless.

    Args:
        path: the database file (created if missing; its directory must exist), or
            ``":memory:"`` for a private in-memory database.
        synchronous: ``"NORMAL"`` (default: durable against process crashes, may lose the
            last commits on power loss, never corrupts) or ``"FULL"`` (fsync per commit).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"`synchronous` must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.synchronous = synchronous
        self.url = "sqlite://:memory:" if self.path == ":memory:" else f"sqlite:///{self.path}"
        self._queue: queue.SimpleQueue[_Job] | None = None
        self._stopped: concurrent.futures.Future[None] | None = None
        self._thread: threading.Thread | None = None
        #: Transactions committed (a group of concurrent ``apply`` calls counts once).
        self.commits = 0

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        """Start the worker thread, open the file, set WAL mode and create the schema.

        Idempotent. Raises :class:`StoreError` if the file cannot be opened or the schema
        cannot be created (the thread is stopped again).
        """
        if self._queue is not None:
            return
        jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        stopped.set_running_or_notify_cancel()  # never cancellable: close() relies on it
        thread = threading.Thread(
            target=self._work,
            args=(jobs, ready, stopped),
            name=f"tocsin-sqlite:{self.path}",
            daemon=True,  # a forgotten close() must not hang interpreter exit
        )
        thread.start()
        self._thread = thread
        try:
            with _map_errors("open", self.path):
                await asyncio.wrap_future(ready)
        except BaseException:
            jobs.put(_STOP)  # connected after all (we were cancelled): let it close
            raise
        self._queue, self._stopped = jobs, stopped

    async def close(self) -> None:
        """Finish queued work, close the connection and stop the thread. Idempotent."""
        jobs, stopped = self._queue, self._stopped
        if jobs is None or stopped is None:
            return
        self._queue = self._stopped = None
        jobs.put(_STOP)  # after every job already queued: they finish first
        await asyncio.shield(asyncio.wrap_future(stopped))
        # `stopped` is the thread's last act; the join waits out its final microseconds,
        # so that "closed" really means "no thread left".
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # --- Store protocol --------------------------------------------------------------------

    async def apply(self, ops: Sequence[Op]) -> None:
        """Apply a batch atomically (all ops in order, or none and :class:`StoreError`)."""
        validate_ops(ops)
        if not ops:
            return
        batch = list(ops)  # the caller may reuse its list while we wait

        def write(conn: sqlite3.Connection) -> None:
            for cls, group in itertools.groupby(batch, type):
                conn.executemany(q.WRITES[cls], [_params(op) for op in group])

        await self._call(write, write=True, what="apply")

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None:
        """The value of ``storage[key]``, or ``None``."""
        rows = await self._read(q.GET_STATE, (kind, identity, key))
        return bytes(rows[0][0]) if rows else None

    async def list_state(
        self, kind: str, identity: str, prefix: str = ""
    ) -> list[tuple[str, bytes]]:
        """Keys starting with ``prefix`` and their values, sorted by key (code points)."""
        # substr() rather than LIKE: LIKE treats % and _ in the prefix as wildcards and is
        # case-insensitive for ASCII. The (kind, identity) primary-key prefix bounds the scan.
        sql = (
            "SELECT key, value FROM tocsin_state WHERE kind = ? AND identity = ? "
            "AND substr(key, 1, ?) = ? ORDER BY key"
        )
        rows = await self._read(sql, (kind, identity, len(prefix), prefix))
        return [(key, bytes(value)) for key, value in rows]

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None:
        """One task by primary key, or ``None``."""
        rows = await self._read(q.GET_TASK, (kind, identity, task_id))
        return _row(rows[0]) if rows else None

    async def list_tasks(
        self,
        kind: str | None = None,
        identity: str | None = None,
        state: TaskState | None = None,
    ) -> list[TaskRow]:
        """Tasks matching the filters, ordered by ``(due, id, kind, identity)``."""
        sql, args = q.list_tasks(kind, identity, state)
        return [_row(r) for r in await self._read(sql, tuple(args))]

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        """Every task with this id, across actors, ordered like :meth:`list_tasks`."""
        rows = await self._read(q.FIND_TASKS, (task_id,))
        return [_row(r) for r in rows]

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        """This actor's pending tasks due at or before ``before``, by ``(due, id)``."""
        args = (kind, identity, float(before), max(limit, 0))
        rows = await self._read(q.DUE_TASKS, args)
        return [_row(r) for r in rows]

    async def next_due(self, kind: str, identity: str) -> float | None:
        """The earliest ``due`` among this actor's pending tasks, or ``None``."""
        rows = await self._read(q.NEXT_DUE, (kind, identity))
        value = rows[0][0]
        return None if value is None else float(value)

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        """Actors with a pending task due at or before ``before``, earliest first.

        Ties are broken by ``(kind, identity)``; at most ``limit`` actors.
        """
        rows = await self._read(q.DUE_ACTORS, (before, max(limit, 0)))
        return [DueActor(kind, identity, float(due)) for kind, identity, due in rows]

    # --- plumbing --------------------------------------------------------------------------

    async def _read(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        return await self._call(lambda conn: conn.execute(sql, args).fetchall(), write=False)

    async def _call(
        self, fn: Callable[[sqlite3.Connection], T], *, write: bool, what: str = "query"
    ) -> T:
        jobs = self._queue
        if jobs is None:
            raise StoreError(f"{self!r} is not open; call `await store.open()` first")
        job = _Job(fn, write=write)
        jobs.put(job)
        with _map_errors(what, self.path):
            result: T = await asyncio.wrap_future(job.future)
        return result

    def _open_connection(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            conn.execute("PRAGMA journal_mode = WAL")  # a no-op ("memory") for :memory:
            conn.execute(f"PRAGMA synchronous = {self.synchronous}")
            schema = resources.files("tocsin.stores").joinpath("sql/sqlite_schema.sql")
            # BEGIN IMMEDIATE takes the write lock first: two processes opening a new file
            # at once create the schema one after the other, not interleaved.
            conn.executescript(f"BEGIN IMMEDIATE;\n{schema.read_text('utf-8')}\nCOMMIT;")
        except BaseException:
            conn.close()
            raise
        return conn

    def _work(
        self,
        jobs: queue.SimpleQueue[_Job],
        ready: concurrent.futures.Future[None],
        stopped: concurrent.futures.Future[None],
    ) -> None:
        """The worker thread: owns the connection, runs jobs in arrival order."""
        conn: sqlite3.Connection | None = None
        try:
            if not ready.set_running_or_notify_cancel():
                return  # open() was cancelled before we started
            try:
                conn = self._open_connection()
            except BaseException as exc:
                ready.set_exception(exc)
                return
            ready.set_result(None)
            self._serve(conn, jobs)
        finally:
            if conn is not None:
                conn.close()
            stopped.set_result(None)

    def _serve(self, conn: sqlite3.Connection, jobs: queue.SimpleQueue[_Job]) -> None:
        carry: _Job | None = None
        while True:
            job = carry if carry is not None else jobs.get()
            carry = None
            if job is _STOP:
                return
            if not job.write:
                _run(job, conn)
                continue
            group = [job]
            while True:  # group commit: take every write already waiting, in order
                try:
                    nxt = jobs.get_nowait()
                except queue.Empty:
                    break
                if nxt is _STOP or not nxt.write:
                    carry = nxt  # a read waits for the group: it must see those writes
                    break
                group.append(nxt)
            self._commit(conn, group)

    def _commit(self, conn: sqlite3.Connection, group: list[_Job]) -> None:
        live = [job for job in group if job.future.set_running_or_notify_cancel()]
        if not live:
            return
        if len(live) == 1:
            self._commit_one(conn, live[0])
            return
        outcomes: list[BaseException | None] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
            for job in live:
                conn.execute("SAVEPOINT apply")
                try:
                    job.fn(conn)
                except sqlite3.Error as exc:
                    conn.execute("ROLLBACK TO apply")
                    outcomes.append(exc)
                else:
                    outcomes.append(None)
                conn.execute("RELEASE apply")
            conn.execute("COMMIT")
            self.commits += 1
        except BaseException as exc:
            # BEGIN/SAVEPOINT/COMMIT itself failed (disk full, I/O error, busy timeout):
            # nothing of this group is committed, so every call in it fails.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            for job in live:
                job.future.set_exception(exc)
            return
        for job, outcome in zip(live, outcomes, strict=True):
            if outcome is None:
                job.future.set_result(None)
            else:
                job.future.set_exception(outcome)

    def _commit_one(self, conn: sqlite3.Connection, job: _Job) -> None:
        """A group of one (the common case when writes do not overlap): no savepoint is
        needed to isolate it from others, which saves two statements per commit."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            job.fn(conn)
            conn.execute("COMMIT")
            self.commits += 1
        except BaseException as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            job.future.set_exception(exc)
            return
        job.future.set_result(None)


def _run(job: _Job, conn: sqlite3.Connection) -> None:
    if not job.future.set_running_or_notify_cancel():
        return
    try:
        result = job.fn(conn)
    except BaseException as exc:
        job.future.set_exception(exc)
    else:
        job.future.set_result(result)


def _row(r: Any) -> TaskRow:
    kind, identity, task_id, name, payload, due, every, attempts, max_retries, *rest = r
    created_at, state, last_error, timeout = rest
    return TaskRow(
        kind=kind,
        identity=identity,
        id=task_id,
        name=name,
        payload=bytes(payload),
        due=float(due),
        every=None if every is None else float(every),
        attempts=attempts,
        max_retries=max_retries,
        created_at=float(created_at),
        state=state,
        last_error=last_error,
        timeout=None if timeout is None else float(timeout),
    )
