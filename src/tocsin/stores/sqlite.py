# SPDX-License-Identifier: Apache-2.0
"""The embedded default store: one SQLite file, WAL mode, never blocking the event loop
for longer than a small, bounded statement.

Durability trade-off (``synchronous``):

* ``"NORMAL"`` (default) with WAL: a commit is durable against a *process* crash (kill -9,
  an exception, OOM) the moment :meth:`SQLiteStore.apply` returns. A *power loss* or OS
  crash may lose the last few commits (those not yet checkpointed by an fsync), but never
  corrupts the file. This is SQLite's recommended setting for WAL.
* ``"FULL"``: every commit is fsynced before ``apply`` returns, so it also survives power
  loss, at the cost of one fsync per commit (group commit, below, amortises it).

Two connections, one rule: **what can wait runs on the worker thread; what cannot wait
and is small runs on the loop thread.**

Both connections are opened by the engine every tocsin SQLite file shares
(:mod:`._sqlite_engine`: pragmas, busy timeout, the WAL-open retry).

* The worker thread (:mod:`._sqlite_thread`) owns one connection with a busy timeout and
  runs, in arrival order: writes of more than :data:`INLINE_MAX_OPS` ops, every write at
  ``synchronous=FULL`` (an fsync), unbounded listings, the look-ahead poll, WAL
  checkpoints. Writes queued while it is busy are committed together (group commit).
* The loop-side connection (:class:`._sqlite_engine.LoopConnection`) runs point reads,
  reads bounded by a ``LIMIT`` of at most :data:`INLINE_MAX_ROWS`, and small commits at
  ``NORMAL``. It never waits: a locked database sends a read to the worker thread, and a
  small write to wait with the others that found it locked: they commit together on this
  connection once the lock is free (or, still locked, as one job on the worker thread).
  It never checkpoints. Measured on the project's 2-core VM: a point read inline costs ~4 µs
  and a one-row commit ~20 µs, against ~130–250 µs for the round trip to a thread alone.

Rejected: a thread per call (``asyncio.to_thread``) needs a connection per thread and
turns lock contention into ``SQLITE_BUSY`` retries; aiosqlite is the single-thread design
as a dependency, and pays the hand-off on every call. ``sqlite://:memory:`` has one
database per connection, so it uses the worker thread alone.

Prior art: SQLite's WAL docs (https://sqlite.org/wal.html, "synchronous=NORMAL"),
PostgreSQL's ``commit_delay`` group commit, aiosqlite's single-thread connection.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import itertools
import logging
import os
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeVar, final

from .._idle import real_io
from ..errors import StoreError
from . import _queries as q
from . import _schedule_sql as sq
from ._ownership import OWNER_SUFFIX, FileLock
from ._protocols import (
    DueActor,
    DueWork,
    Op,
    TaskRow,
    TaskState,
    TickRow,
)
from ._schedule_rows import SchedulePause, ScheduleRequest, ScheduleRow, ScheduleTickRow
from ._sqlite_calls import (
    DB_ERRORS,
    cannot_be_database,
    checkpoint,
    op_params,
    store_error,
)
from ._sqlite_changes import DataVersionWatch
from ._sqlite_engine import LoopConnection, open_connection
from ._sqlite_readonly import connect_read_only, open_error
from ._sqlite_schema import create_schema, row_from_sql
from ._sqlite_thread import Worker, in_savepoints
from ._validate import validate_ops

__all__ = [
    "CHECKPOINT_CHECK_EVERY",
    "CHECKPOINT_WAL_BYTES",
    "INLINE_MAX_OPS",
    "INLINE_MAX_ROWS",
    "SQLiteStore",
]

T = TypeVar("T")

#: Largest ``apply`` batch committed on the loop thread (about 3–10 µs per op); larger
#: batches go to the worker thread.
INLINE_MAX_OPS: Final = 128
#: Largest ``LIMIT`` of a read run on the loop thread (a drain reads at most 1,000 rows).
INLINE_MAX_ROWS: Final = 1_000
#: Page cache of each connection, as SQLite's negative "KiB" form: 64 MiB, allocated
#: only as pages are read (SQLite's default, 2 MiB, holds ~5,000 tasks' index pages).
CACHE_KIB: Final = -64 * 1024
#: Loop-side commits between two looks at the WAL's size (one ``stat`` each).
CHECKPOINT_CHECK_EVERY: Final = 100
#: WAL size past which the worker thread is asked for a checkpoint (a checkpoint fsyncs,
#: so it never runs on the loop thread). SQLite checkpoints at ~4 MiB by default; at 16 MiB
#: one-row commits measured 20% cheaper (bench/durable.py, 100,000 tasks).
CHECKPOINT_WAL_BYTES: Final = 16 * 1024 * 1024

_log = logging.getLogger("tocsin.stores.sqlite")


def _nothing(conn: sqlite3.Connection) -> None:
    """A no-op job: done once every job queued before it on the writer thread is."""


def _observed(task: asyncio.Task[None]) -> None:
    """A group commit task never dies unobserved (its callers get its errors)."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        _log.error("SQLite store: a group commit failed", exc_info=exc)


_GET_CLUSTER: Final = "SELECT value FROM tocsin_meta WHERE key = 'cluster'"
_SET_CLUSTER: Final = (
    "INSERT INTO tocsin_meta (key, value) VALUES ('cluster', ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)


@final
class SQLiteStore:
    """A :class:`~tocsin.stores.Store` in one SQLite file (or ``":memory:"``).

    Gives every guarantee of the Store protocol. ``apply`` returns once its batch is
    committed (see the module docstring for what "committed" survives under each
    ``synchronous`` setting). Several processes may share the file; writers wait up to
    :data:`~._sqlite_engine.BUSY_TIMEOUT_MS` (5 s) for each other, on the worker thread
    only. Cancelling an ``apply`` that the worker has not started withdraws it; once
    started, or when it runs on the loop thread, it completes (and is committed)
    regardless. A store is used from
    the event loop thread that opened it.

    Args:
        path: the database file (created if missing; its directory must exist), or
            ``":memory:"`` for a private in-memory database.
        synchronous: ``"NORMAL"`` (default: durable against process crashes, may lose the
            last commits on power loss, never corrupts) or ``"FULL"`` (fsync per commit).
        read_only: open an existing tocsin store file with ``mode=ro``: nothing is created
            or written, ``apply`` raises :class:`StoreError`, and ``open`` refuses a file
            without tocsin's tables (``tocsin tasks list``; see ``_sqlite_readonly``).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        read_only: bool = False,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"`synchronous` must be 'NORMAL' or 'FULL', got {synchronous!r}")
        self.path = os.fspath(path)
        self.synchronous = synchronous
        self.read_only = read_only and self.path != ":memory:"
        self.url = "sqlite://:memory:" if self.path == ":memory:" else f"sqlite:///{self.path}"
        self._worker: Worker | None = None
        self._inline: LoopConnection | None = None
        self._inline_writes = False
        #: Writes that found the file locked, waiting for one group commit (_apply_later).
        self._later: list[tuple[Callable[[sqlite3.Connection], None], asyncio.Future[None]]] = []
        self._checkpoint: concurrent.futures.Future[Any] | None = None
        self._since_checkpoint = 0
        self._owner: FileLock | None = None
        self._changes = DataVersionWatch(self._read_data_version)

    def __repr__(self) -> str:
        return f"SQLiteStore({self.path!r}, synchronous={self.synchronous!r})"

    @property
    def commits(self) -> int:
        """Transactions committed (a group of concurrent ``apply`` calls counts once)."""
        inline = self._inline.commits if self._inline is not None else 0
        return inline + (self._worker.commits if self._worker is not None else 0)

    # --- lifecycle -------------------------------------------------------------------------

    async def open(self, *, exclusive: bool = False) -> None:
        """Start the worker thread, open the file, set WAL mode and create the schema.

        Idempotent. With ``exclusive=True`` also take ownership: an ``flock`` on the side
        file ``<path>-owner``, released by :meth:`close` or by the holder's death (see
        :mod:`tocsin.stores._ownership`). A ``":memory:"`` database is private to its
        store, so it is always owned.

        Raises:
            StoreError: the file cannot be opened or the schema cannot be created (the
                thread is stopped again), or ``exclusive`` and another open store (in any
                process) owns this file; the message names its host and pid.
        """
        if exclusive and self.path != ":memory:":
            if cannot_be_database(self.path):
                # Before the side lock file: a path that cannot be a database must leave
                # nothing behind (no stray `<path>-owner`), and gets open()'s own message.
                raise open_error(self.path, FileNotFoundError(self.path))
            lock = FileLock(self.path + OWNER_SUFFIX)
            if self._owner is not None:
                lock = self._owner  # held by this very store: acquire() says so
            lock.acquire(self.url)
            try:
                await self._open()
            except BaseException:
                lock.release()
                raise
            self._owner = lock
            return
        await self._open()

    async def _open(self) -> None:
        if self._worker is not None:
            return
        worker = Worker(f"tocsin-sqlite:{self.path}", self._open_connection)
        worker.start()
        try:
            try:
                with real_io():
                    await asyncio.wrap_future(worker.ready)
                # After the worker created the schema and set WAL mode (persistent in the
                # file), so the loop-side connection finds both.
                inline = (
                    None
                    if self.path == ":memory:" or self.read_only
                    else LoopConnection(self.path, cache_kib=CACHE_KIB, autocheckpoint=False)
                )
            except DB_ERRORS as exc:
                raise open_error(self.path, exc) from exc
        except BaseException:
            worker.stop()  # connected after all (we were cancelled): let it close
            raise
        self._worker, self._inline = worker, inline
        self._inline_writes = inline is not None and self.synchronous == "NORMAL"

    async def close(self) -> None:
        """Finish queued work, close both connections and stop the thread. Idempotent."""
        worker, inline = self._worker, self._inline
        owner, self._owner = self._owner, None
        self._changes.clear()
        if worker is None:
            return
        self._worker = self._inline = None
        self._inline_writes = False
        if inline is not None:
            # First: the last connection to close checkpoints the WAL (an fsync), and that
            # must be the worker's, off the loop thread.
            inline.close()
        await worker.close()  # after every job already queued: they finish first
        if owner is not None:
            owner.release()  # last: nobody else may own the file while we still write

    # --- changes made by other processes -----------------------------------------------

    async def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` from :meth:`check_changes` when another connection committed
        (see :mod:`tocsin.stores._sqlite_changes`). Returns the unwatch function."""
        if self._worker is None:
            raise StoreError(f"{self!r} is not open; call `await store.open()` first")
        return self._changes.watch(callback)

    def check_changes(self) -> None:
        """Look at ``PRAGMA data_version`` (~20 µs, on the loop-side connection) and call
        the watchers if another connection committed since the last look."""
        if self._worker is not None:
            self._changes.check()

    async def announce(self) -> None:
        """Nothing to do: watchers of a SQLite file see every commit in ``data_version``."""

    async def swap_cluster(self, expected: str | None, new: str | None) -> str | None:
        """Compare-and-set the recorded cluster fingerprint, in one ``BEGIN IMMEDIATE``
        transaction on the worker thread (processes sharing the file take turns)."""
        if self.read_only:
            if expected != new:
                raise StoreError(f"{self!r} was opened read-only; it cannot record a cluster")
            rows = await self._read(_GET_CLUSTER, ())
            return str(rows[0][0]) if rows else None

        found: list[str | None] = []  # a write job returns nothing: its read goes here

        def swap(conn: sqlite3.Connection) -> None:
            row = conn.execute(_GET_CLUSTER).fetchone()
            current = None if row is None else str(row[0])
            if current == expected and current != new:
                if new is None:
                    conn.execute("DELETE FROM tocsin_meta WHERE key = 'cluster'")
                else:
                    conn.execute(_SET_CLUSTER, (new,))
            found.append(current)

        await self._call(swap, write=True, what="record the cluster")
        return found[-1]

    def _read_data_version(self) -> int | None:
        inline = self._inline
        if inline is None:
            return None  # ":memory:": private to this store, nobody else writes it
        try:
            rows = inline.read("PRAGMA data_version", ())
        except DB_ERRORS as exc:
            _log.warning("SQLite store %r: reading data_version failed: %s", self.path, exc)
            return None
        return None if rows is None else int(rows[0][0])

    # --- Store protocol --------------------------------------------------------------------

    async def apply(self, ops: Sequence[Op]) -> None:
        """Apply a batch atomically (all ops in order, or none and :class:`StoreError`)."""
        validate_ops(ops)
        if self.read_only:
            raise StoreError(f"{self!r} was opened read-only; it cannot apply writes")
        if not ops:
            return
        batch = list(ops)  # the caller may reuse its list while we wait

        def write(conn: sqlite3.Connection) -> None:
            for cls, group in itertools.groupby(batch, type):
                conn.executemany(q.WRITES[cls], [op_params(op) for op in group])

        inline = self._inline
        if inline is not None and self._inline_writes and len(batch) <= INLINE_MAX_OPS:
            try:
                if len(batch) == 1:
                    op = batch[0]
                    done = inline.write_one(q.WRITES[type(op)], op_params(op))
                else:
                    done = inline.write(write)
            except DB_ERRORS as exc:
                raise store_error("apply", self.path, exc) from exc
            if done:
                self._committed_inline()
                return
            # Locked (the writer thread commits, or another process): wait for the lock
            # with the other writes that find it taken, and commit them together.
            await self._apply_later(write)
            return
        await self._call(write, write=True, what="apply")

    async def _apply_later(self, write: Callable[[sqlite3.Connection], None]) -> None:
        """Group commit of the writes that found the file locked.

        Sent to the writer thread one by one, they queued behind its whole queue, and
        every commit there held the lock while the next loop-side writes found it taken
        and queued too: registrations waited up to a second at p99. Instead they wait
        here together, for what the thread has queued now (its lock is then free, unless
        another process holds it), and commit as one loop-side transaction, a savepoint
        each (one failing batch fails alone); if the file is still locked, as one job on
        the thread (which waits for the lock)."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._later.append((write, done))
        if len(self._later) == 1:
            flush = asyncio.get_running_loop().create_task(self._flush_later())
            flush.add_done_callback(_observed)
        await done

    async def _flush_later(self) -> None:
        outcomes: list[BaseException | None] = []
        group: list[tuple[Callable[[sqlite3.Connection], None], asyncio.Future[None]]] = []

        def write_all(conn: sqlite3.Connection) -> None:
            outcomes[:] = in_savepoints(conn, [write for write, _ in group])

        try:
            # A turn of the loop later (the lock is usually free again by then); then
            # after every job queued on the thread (its lock is free unless another
            # process holds it); then on the thread, which waits for the lock.
            for attempt in range(2):
                # A caller that stopped waiting (cancelled) withdraws its write.
                group = [w for w in (*group, *self._later) if not w[1].done()]
                self._later = []
                if not group:
                    return  # another flush took them
                inline = self._inline
                if inline is not None and inline.write(write_all):
                    self._committed_inline()
                    break
                if attempt == 0:
                    with contextlib.suppress(StoreError):  # the commit below says why
                        await self._call(_nothing, write=False)
            else:
                await self._call(write_all, write=True, what="apply")
        except (StoreError, *DB_ERRORS) as exc:
            error = exc if isinstance(exc, StoreError) else store_error("apply", self.path, exc)
            for _, done in group:
                if not done.done():
                    done.set_exception(error)
            return
        for (_, done), outcome in zip(group, outcomes, strict=True):
            if done.done():
                continue
            if outcome is None:
                done.set_result(None)
            else:
                done.set_exception(store_error("apply", self.path, outcome))

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
        rows = await self._read(sql, (kind, identity, len(prefix), prefix), bounded=False)
        return [(key, bytes(value)) for key, value in rows]

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None:
        """One task by primary key, or ``None``."""
        rows = await self._read(q.GET_TASK, (kind, identity, task_id))
        return row_from_sql(rows[0]) if rows else None

    async def list_tasks(
        self,
        kind: str | None = None,
        identity: str | None = None,
        state: TaskState | None = None,
    ) -> list[TaskRow]:
        """Tasks matching the filters, ordered by ``(due, id, kind, identity)``."""
        sql, args = q.list_tasks(kind, identity, state)
        return [row_from_sql(r) for r in await self._read(sql, tuple(args), bounded=False)]

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        """Every task with this id, across actors, ordered like :meth:`list_tasks`."""
        rows = await self._read(q.FIND_TASKS, (task_id,), bounded=False)
        return [row_from_sql(r) for r in rows]

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        """This actor's pending tasks due at or before ``before``, by ``(due, id)``."""
        limit = max(limit, 0)
        args = (kind, identity, float(before), limit)
        rows = await self._read(q.DUE_TASKS, args, bounded=limit <= INLINE_MAX_ROWS)
        return [row_from_sql(r) for r in rows]

    async def due_work(self, kind: str, identity: str, before: float, limit: int) -> DueWork:
        """``due_tasks`` and the earliest pending ``due`` after ``before`` (one drain's read:
        two point reads on the loop-side connection, instead of a ``next_due`` after the
        drain's commit)."""
        rows = await self.due_tasks(kind, identity, before, limit)
        later = (await self._read(q.LATER_DUE, (kind, identity, float(before))))[0][0]
        return DueWork(rows, None if later is None else float(later))

    async def next_due(self, kind: str, identity: str) -> float | None:
        """The earliest ``due`` among this actor's pending tasks, or ``None``."""
        rows = await self._read(q.NEXT_DUE, (kind, identity))
        value = rows[0][0]
        return None if value is None else float(value)

    async def task_history(self, kind: str, identity: str, task_id: str) -> list[TickRow]:
        """One task's history, oldest first (at most ``HISTORY_LIMIT`` entries)."""
        rows = await self._read(q.TASK_HISTORY, (kind, identity, task_id))
        return [TickRow(*row) for row in rows]

    async def fence_epoch(self, kind: str, identity: str) -> int:
        """The highest epoch fenced for ``(kind, identity)`` (0 if none)."""
        rows = await self._read(q.FENCE_EPOCH, (kind, identity))
        return int(rows[0][0]) if rows else 0

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        """Actors with a pending task due at or before ``before``, earliest first.

        Ties are broken by ``(kind, identity)``; at most ``limit`` actors.
        """
        # Not inline even with a small limit: the GROUP BY reads every due row first.
        sql = q.DUE_ACTORS if self.read_only else q.DUE_ACTORS_SQLITE
        rows = await self._read(sql, (before, max(limit, 0)), bounded=False)
        return [DueActor(kind, identity, float(due)) for kind, identity, due in rows]

    # --- stored schedules (ScheduleStore) -----------------------------------------------

    async def schedule_rows(self) -> list[ScheduleRow]:
        """Every stored schedule, by id."""
        rows = await self._read(sq.SELECT_ALL, (), bounded=False)
        return [sq.schedule_from_sql(r) for r in rows]

    async def schedule_page(self, after: str, limit: int) -> list[ScheduleRow]:
        """At most ``limit`` stored schedules with ids after ``after``, by id."""
        rows = await self._read(sq.SELECT_PAGE, (after, max(limit, 0)), bounded=False)
        return [sq.schedule_from_sql(r) for r in rows]

    async def schedule_row(self, schedule_id: str) -> ScheduleRow | None:
        """One stored schedule, or ``None``."""
        rows = await self._read(sq.SELECT_ONE, (schedule_id,))
        return sq.schedule_from_sql(rows[0]) if rows else None

    async def schedule_rows_of(self, schedule_ids: Sequence[str]) -> dict[str, ScheduleRow]:
        """The stored schedules of ``schedule_ids`` by id (the missing left out), read
        :data:`~tocsin.stores._schedule_sql.IDS_AT_ONCE` ids a statement (SQLite bounds
        a statement's parameters)."""
        ids = list(dict.fromkeys(schedule_ids))
        found: dict[str, ScheduleRow] = {}
        for first in range(0, len(ids), sq.IDS_AT_ONCE):
            part = tuple(ids[first : first + sq.IDS_AT_ONCE])
            marks = ", ".join("?" * len(part))
            for raw in await self._read(sq.SELECT_SOME.format(marks=marks), part):
                row = sq.schedule_from_sql(raw)
                found[row.id] = row
        return found

    async def write_schedule(self, row: ScheduleRow, *, expect: int | None) -> bool:
        """Insert if absent (``expect=None``) or compare-and-set on ``version``."""
        if expect is None:
            sql, args = sq.INSERT, sq.schedule_params(row)
        else:
            sql, args = sq.UPDATE, (row.spec, row.version, float(row.updated_at), row.id, expect)
        return await self._change(sql, args, "write a schedule")

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Remove one schedule (its ledger stays); whether it existed."""
        return await self._change(sq.DELETE, (schedule_id,), "remove a schedule")

    async def pause_schedule_row(self, schedule_id: str, pause: SchedulePause) -> bool:
        """Set the pause state (not the version); whether the schedule exists."""
        return await self._change(sq.PAUSE, sq.pause_params(schedule_id, pause), "pause a schedule")

    async def schedules_revision(self) -> int:
        """Moves at every change of a stored schedule."""
        rows = await self._read(sq.REVISION, ())
        return int(rows[0][0]) if rows else 0

    async def record_schedule_tick(
        self, row: ScheduleTickRow, keep: int, *, replace: bool = True
    ) -> None:
        """Write the ledger row of ``(id, instant, manual)``, keep the newest ``keep``."""
        params = sq.ledger_params(row)
        sql = sq.RECORD if replace else sq.RECORD_IF_ABSENT

        def record(conn: sqlite3.Connection) -> None:
            conn.execute(sql, params)
            conn.execute(sq.TRIM, (row.id, row.id, max(keep, 1) - 1))

        await self._call(record, write=True, what="record a schedule tick")

    async def schedule_ticks(
        self, schedule_id: str, limit: int | None = None
    ) -> list[ScheduleTickRow]:
        """One schedule's ledger, oldest first (the newest ``limit`` with a limit)."""
        if limit is None:
            rows = await self._read(sq.LEDGER, (schedule_id,), bounded=False)
            return [sq.tick_from_sql(r) for r in rows]
        rows = await self._read(sq.LEDGER_NEWEST, (schedule_id, max(limit, 0)), bounded=False)
        return [sq.tick_from_sql(r) for r in reversed(rows)]

    async def schedule_last_instants(
        self, first: str | None = None, last: str | None = None
    ) -> dict[str, float]:
        """The newest instant of each schedule's ledger, manual runs aside, by id (from
        ``first`` to ``last`` when given)."""
        if first is None or last is None:
            rows = await self._read(sq.LAST_INSTANTS, (), bounded=False)
        else:
            rows = await self._read(sq.LAST_INSTANTS_RANGE, (first, last), bounded=False)
        return {sid: float(instant) for sid, instant in rows}

    async def schedule_tick(
        self, schedule_id: str, instant: float, *, manual: bool = False
    ) -> ScheduleTickRow | None:
        """The ledger row of one instant (a manual run's: ``manual``), or ``None``."""
        rows = await self._read(sq.LEDGER_ONE, (schedule_id, float(instant), manual))
        return sq.tick_from_sql(rows[0]) if rows else None

    async def claim_schedule_ticks(
        self, claims: Sequence[tuple[str, float]], node: str, now: float
    ) -> list[bool]:
        """:meth:`claim_schedule_tick` for each ``(key, expires)`` of ``claims``, in order,
        in one ``BEGIN IMMEDIATE`` transaction (one commit for a tick's whole batch)."""
        won: list[bool] = []

        def claim(conn: sqlite3.Connection) -> None:
            won.clear()  # a retried transaction starts over
            conn.execute(sq.PURGE_CLAIMS, (float(now),))
            for key, expires in claims:
                won.append(conn.execute(sq.CLAIM, (key, node, float(expires))).rowcount == 1)

        await self._call(claim, write=True, what="claim schedule ticks")
        return list(won)

    async def claim_schedule_tick(self, key: str, node: str, now: float, expires: float) -> bool:
        """Put-if-absent ``key`` until ``expires`` (an expired claim is replaced), in one
        ``BEGIN IMMEDIATE`` transaction: processes sharing the file take turns."""
        won: list[bool] = []

        def claim(conn: sqlite3.Connection) -> None:
            conn.execute(sq.PURGE_CLAIMS, (float(now),))
            won.append(conn.execute(sq.CLAIM, (key, node, float(expires))).rowcount == 1)

        await self._call(claim, write=True, what="claim a schedule tick")
        return bool(won and won[-1])

    async def request_schedule_run(self, request: ScheduleRequest) -> None:
        """Record a run asked for (once) and move the revision."""
        args = (request.id, float(request.instant), request.manual, float(request.at))
        await self._change(sq.REQUEST, args, "request a schedule run")

    async def schedule_requests(self) -> list[ScheduleRequest]:
        """The requests not yet done, oldest instant first."""
        rows = await self._read(sq.REQUESTS, (), bounded=False)
        return [ScheduleRequest(i, float(t), bool(m), float(a)) for i, t, m, a in rows]

    async def delete_schedule_request(self, request: ScheduleRequest) -> None:
        """Forget a request."""
        args = (request.id, float(request.instant), request.manual)

        def delete(conn: sqlite3.Connection) -> None:
            conn.execute(sq.DELETE_REQUEST, args)

        await self._call(delete, write=True, what="forget a schedule request")

    async def _change(self, sql: str, args: tuple[Any, ...], what: str) -> bool:
        """One change of ``tocsin_schedules`` and, if it changed a row, the revision
        bump, in one transaction; whether a row changed."""
        if self.read_only:
            raise StoreError(f"{self!r} was opened read-only; it cannot {what}")
        changed: list[bool] = []

        def change(conn: sqlite3.Connection) -> None:
            done = conn.execute(sql, args).rowcount == 1
            if done:
                conn.execute(sq.BUMP_REVISION)
            changed.append(done)

        await self._call(change, write=True, what=what)
        return bool(changed and changed[-1])

    # --- plumbing --------------------------------------------------------------------------

    async def _read(self, sql: str, args: tuple[Any, ...], *, bounded: bool = True) -> list[Any]:
        inline = self._inline
        if bounded and inline is not None:
            try:
                rows = inline.read(sql, args)
            except DB_ERRORS as exc:
                raise store_error("query", self.path, exc) from exc
            if rows is not None:
                return rows
        return await self._call(lambda conn: conn.execute(sql, args).fetchall(), write=False)

    async def _call(
        self, fn: Callable[[sqlite3.Connection], T], *, write: bool, what: str = "query"
    ) -> T:
        """Run ``fn`` on the worker thread's connection (in a transaction if ``write``)."""
        worker = self._worker
        if worker is None:
            raise StoreError(f"{self!r} is not open; call `await store.open()` first")
        try:
            result: T = await worker.call(fn, write=write)
        except DB_ERRORS as exc:
            raise store_error(what, self.path, exc) from exc
        return result

    def _committed_inline(self) -> None:
        """Count a loop-side commit; every :data:`CHECKPOINT_CHECK_EVERY` of them, look at
        the WAL's size and, past :data:`CHECKPOINT_WAL_BYTES`, ask the worker thread for a
        ``TRUNCATE`` checkpoint unless one is pending.

        See :func:`._sqlite_calls.checkpoint` for why it is a PASSIVE then a TRUNCATE checkpoint.
        """
        self._since_checkpoint += 1
        if self._since_checkpoint < CHECKPOINT_CHECK_EVERY:
            return
        self._since_checkpoint = 0
        running = self._checkpoint
        if running is not None and not running.done():
            return
        failed = running.exception() if running is not None else None
        if failed is not None:
            # Nothing is lost: the WAL keeps every commit until a checkpoint succeeds.
            _log.warning("SQLite store %r: WAL checkpoint failed: %s", self.path, failed)
        try:
            size = os.stat(self.path + "-wal").st_size
        except OSError:
            return  # no WAL file (yet): nothing to checkpoint
        if size < CHECKPOINT_WAL_BYTES:
            return
        worker = self._worker
        assert worker is not None
        self._checkpoint = worker.submit(checkpoint, write=False).future

    def _open_connection(self) -> sqlite3.Connection:
        if self.read_only:
            return connect_read_only(self.path)  # issue 10 item 15: creates nothing
        # The engine's pragmas (busy timeout, WAL with the open-race retry), then the
        # schema under BEGIN IMMEDIATE: two processes opening a new file at once create
        # (or migrate) it one after the other, not interleaved.
        return open_connection(
            self.path, synchronous=self.synchronous, cache_kib=CACHE_KIB, schema=create_schema
        )
