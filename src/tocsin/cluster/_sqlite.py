# SPDX-License-Identifier: Apache-2.0
"""The SQLite coordinator: one file shared by the nodes (processes) of one machine.

SQLite has no clock of its own, so leases and lateness are judged on the machine's wall
clock, read through :mod:`tocsin.clock` *inside* the write lock (after ``BEGIN
IMMEDIATE``): every node of the file reads the same clock, and no other writer can act
between the read and the write. That is why this coordinator is for the nodes of one
machine only (``tocsin run --workers N``), never for a file on a network share.

Two connections, as in the SQLite store (``stores/_sqlite_inline.py``): a loop-side one
with ``busy_timeout = 0`` runs each step on the event loop thread (a claim costs a few
tens of microseconds, much less than a hand-off to a thread); when another process holds
the lock it fails at once, and the step is run again on a worker thread whose connection
waits up to ``busy_timeout`` for the lock. Nothing on the loop thread ever waits.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final, TypeVar, final

from ..clock import Clock, SystemClock
from ..errors import CoordinatorError, InvalidCoordinatorURLError
from ..stores._spi import set_wal_mode
from ._protocol import EXPIRED_LEASE_RETENTION as RETENTION
from ._protocol import ClaimOutcome, LeaseRow, Ownership
from ._rendezvous import rendezvous_owner

__all__ = ["SQLiteCoordinator"]

T = TypeVar("T")

#: Milliseconds the worker thread's connection waits for another process's write lock.
BUSY_TIMEOUT_MS: Final = 10_000

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS tocsin_cluster_leases (
    node TEXT PRIMARY KEY, incarnation TEXT NOT NULL, address TEXT NOT NULL,
    joined REAL NOT NULL, renewed REAL NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tocsin_cluster_directory (
    kind TEXT NOT NULL, identity TEXT NOT NULL, node TEXT NOT NULL,
    incarnation TEXT NOT NULL, epoch INTEGER NOT NULL, PRIMARY KEY (kind, identity));
CREATE TABLE IF NOT EXISTS tocsin_cluster_claims (
    key TEXT PRIMARY KEY, node TEXT NOT NULL, expires REAL NOT NULL);
CREATE INDEX IF NOT EXISTS tocsin_cluster_claims_expires ON tocsin_cluster_claims (expires);
CREATE TABLE IF NOT EXISTS tocsin_cluster_paused (reference TEXT PRIMARY KEY);
"""

# One statement (atomic in autocommit): insert the claim unless the reference is paused,
# or take over an expired one. RETURNING says whether this call wrote it.
_CLAIM: Final = """
INSERT INTO tocsin_cluster_claims (key, node, expires)
SELECT ?1, ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM tocsin_cluster_paused WHERE reference = ?4)
ON CONFLICT (key) DO UPDATE SET node = excluded.node, expires = excluded.expires
WHERE tocsin_cluster_claims.expires <= ?5
RETURNING 1
"""
_PURGE_CLAIMS: Final = (
    "DELETE FROM tocsin_cluster_claims WHERE key IN "
    "(SELECT key FROM tocsin_cluster_claims WHERE expires <= ? LIMIT 256)"
)
_LEASE_COLUMNS: Final = "node, incarnation, address, joined, renewed, expires, zone"
# The lease's cron zone came with issue 19: added to tables of every age (the default is
# what leases written before it mean: those versions ran cluster cron in UTC).
_ADD_ZONE: Final = "ALTER TABLE tocsin_cluster_leases ADD COLUMN zone TEXT NOT NULL DEFAULT 'UTC'"
#: Claims between two purges of expired claims.
PURGE_EVERY: Final = 512


def _is_busy(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


def _lease(row: Any, now: float) -> LeaseRow:
    return LeaseRow(row[0], row[1], row[2], row[3], row[4], row[5], row[5] > now, row[6])


@final
class SQLiteCoordinator:
    """A :class:`~tocsin.cluster.Coordinator` in a SQLite file (WAL mode).

    Args:
        path: the database file, created if missing; every node of the machine uses the
            same file.
        clock: the clock judging leases and lateness (``SystemClock`` by default).
    """

    def __init__(self, path: str | Path, *, clock: Clock | None = None) -> None:
        self.path = str(path)
        self.url = f"sqlite:///{self.path}"
        self._clock = clock if clock is not None else SystemClock()
        self._inline: sqlite3.Connection | None = None
        self._thread_conn: sqlite3.Connection | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._claims = 0

    def __repr__(self) -> str:
        return f"SQLiteCoordinator({self.path!r})"

    async def open(self) -> None:
        if self._inline is not None:
            return
        executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="tocsin-coord")
        try:
            loop = asyncio.get_running_loop()
            thread_conn = await loop.run_in_executor(executor, self._connect_thread)
            inline = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            inline.execute("PRAGMA busy_timeout = 0")
            inline.execute("PRAGMA synchronous = NORMAL")
        except sqlite3.Error as exc:
            executor.shutdown(wait=False)
            raise CoordinatorError(f"cannot open SQLite coordinator {self.path!r}: {exc}") from exc
        except BaseException:
            executor.shutdown(wait=False)
            raise
        self._executor, self._thread_conn, self._inline = executor, thread_conn, inline

    def _connect_thread(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            # Before anything writes (WAL mode is kept in the file): pointed at another
            # application's database or at the durable store, change nothing in it.
            self._refuse_foreign(conn)
            # Retried: two nodes opening a new file at once made one fail here (issue 13).
            set_wal_mode(conn, budget=BUSY_TIMEOUT_MS / 1000)
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("BEGIN IMMEDIATE")  # two nodes creating the schema at once
            try:
                self._refuse_foreign(conn)  # again, under the write lock
                # One statement at a time: executescript() would COMMIT the transaction.
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    conn.execute(statement)
                columns = {
                    row[1] for row in conn.execute("PRAGMA table_info(tocsin_cluster_leases)")
                }
                if "zone" not in columns:
                    conn.execute(_ADD_ZONE)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except BaseException:
            conn.close()
            raise
        return conn

    def _refuse_foreign(self, conn: sqlite3.Connection) -> None:
        """Refuse a file holding any table but the coordinator's (an empty or new file,
        or one with only ``tocsin_cluster_*`` tables, is a coordinator)."""
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        foreign = [n for n in names if not n.startswith(("tocsin_cluster_", "sqlite_"))]
        if foreign:
            shown = ", ".join(foreign[:5]) + (", ..." if len(foreign) > 5 else "")
            what = "a tocsin durable store" if "tocsin_tasks" in foreign else "another database"
            raise InvalidCoordinatorURLError(
                f"{self.path!r} is not a SQLite coordinator file: it holds {what} "
                f"(tables {shown}); give the coordinator a file of its own, e.g. "
                "sqlite:///cluster.db (tocsin creates it)"
            )

    async def close(self) -> None:
        inline, self._inline = self._inline, None
        if inline is None:
            return
        inline.close()
        thread_conn, self._thread_conn = self._thread_conn, None
        executor, self._executor = self._executor, None
        if executor is not None:
            if thread_conn is not None:
                await asyncio.get_running_loop().run_in_executor(executor, thread_conn.close)
            executor.shutdown(wait=True)

    # -- running one atomic step -----------------------------------------------------

    async def _step(self, fn: Callable[[sqlite3.Connection, float], T], *, write: bool) -> T:
        """Run ``fn(conn, now)`` as one transaction: on the loop if the lock is free at
        once, else on the worker thread (which waits for it). ``now`` is read after the
        lock is taken, so no other writer acts between the clock read and the write."""
        inline = self._inline
        if inline is None:
            raise CoordinatorError(f"{self!r} is not open: `await coordinator.open()` first")
        try:
            return self._transaction(inline, fn, write)
        except sqlite3.Error as exc:
            if not _is_busy(exc):
                raise CoordinatorError(f"SQLite coordinator {self.path!r}: {exc}") from exc
        loop = asyncio.get_running_loop()
        conn = self._thread_conn
        assert conn is not None
        try:
            return await loop.run_in_executor(self._executor, self._transaction, conn, fn, write)
        except sqlite3.Error as exc:
            raise CoordinatorError(f"SQLite coordinator {self.path!r}: {exc}") from exc

    def _transaction(
        self, conn: sqlite3.Connection, fn: Callable[[sqlite3.Connection, float], T], write: bool
    ) -> T:
        conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        try:
            result = fn(conn, self._clock.wall())
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    async def now(self) -> float:
        return self._clock.wall()

    # -- membership ------------------------------------------------------------------

    async def join(
        self, node: str, incarnation: str, address: str, lease: float, zone: str = "UTC"
    ) -> LeaseRow | None:
        def step(conn: sqlite3.Connection, now: float) -> LeaseRow | None:
            held = conn.execute(
                "SELECT incarnation, joined, expires FROM tocsin_cluster_leases WHERE node = ?",
                (node,),
            ).fetchone()
            if held is not None and held[0] != incarnation and held[2] > now:
                return None
            joined = held[1] if held is not None and held[0] == incarnation else now
            conn.execute("DELETE FROM tocsin_cluster_leases WHERE expires < ?", (now - RETENTION,))
            conn.execute(
                f"INSERT OR REPLACE INTO tocsin_cluster_leases ({_LEASE_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (node, incarnation, address, joined, now, now + lease, zone),
            )
            return LeaseRow(node, incarnation, address, joined, now, now + lease, True, zone)

        return await self._step(step, write=True)

    async def renew(self, node: str, incarnation: str, lease: float) -> LeaseRow | None:
        def step(conn: sqlite3.Connection, now: float) -> LeaseRow | None:
            row = conn.execute(
                "UPDATE tocsin_cluster_leases SET renewed = ?1, expires = ?2 "
                "WHERE node = ?3 AND incarnation = ?4 AND expires > ?1 "
                f"RETURNING {_LEASE_COLUMNS}",
                (now, now + lease, node, incarnation),
            ).fetchone()
            return None if row is None else _lease(row, now)

        return await self._step(step, write=True)

    async def leave(self, node: str, incarnation: str) -> bool:
        def step(conn: sqlite3.Connection, now: float) -> bool:
            cur = conn.execute(
                "DELETE FROM tocsin_cluster_leases WHERE node = ? AND incarnation = ?",
                (node, incarnation),
            )
            return cur.rowcount > 0

        return await self._step(step, write=True)

    async def leases(self) -> tuple[float, list[LeaseRow]]:
        def step(conn: sqlite3.Connection, now: float) -> tuple[float, list[LeaseRow]]:
            rows = conn.execute(
                f"SELECT {_LEASE_COLUMNS} FROM tocsin_cluster_leases ORDER BY node"
            ).fetchall()
            return now, [_lease(row, now) for row in rows]

        return await self._step(step, write=False)

    # -- directory -------------------------------------------------------------------

    @staticmethod
    def _owner(conn: sqlite3.Connection, now: float, kind: str, identity: str) -> Ownership | None:
        row = conn.execute(
            "SELECT d.node, d.incarnation, d.epoch, l.expires FROM tocsin_cluster_directory d "
            "LEFT JOIN tocsin_cluster_leases l "
            "ON l.node = d.node AND l.incarnation = d.incarnation "
            "WHERE d.kind = ? AND d.identity = ?",
            (kind, identity),
        ).fetchone()
        if row is None:
            return None
        alive = row[3] is not None and row[3] > now
        return Ownership(kind, identity, row[0], row[1], row[2], alive)

    async def owner(self, kind: str, identity: str) -> Ownership | None:
        return await self._step(
            lambda conn, now: self._owner(conn, now, kind, identity), write=False
        )

    async def claim_owner(
        self,
        kind: str,
        identity: str,
        node: str,
        incarnation: str,
        *,
        floor: int = 0,
        place: bool = False,
    ) -> Ownership | None:
        def step(conn: sqlite3.Connection, now: float) -> Ownership | None:
            # One write transaction (BEGIN IMMEDIATE): the leases read here are the ones
            # live at this step; no other node writes in between.
            current = self._owner(conn, now, kind, identity)
            live = dict(
                conn.execute(
                    "SELECT node, incarnation FROM tocsin_cluster_leases WHERE expires > ?",
                    (now,),
                ).fetchall()
            )
            if live.get(node) != incarnation:
                return current  # the caller holds no live lease: nothing changes
            owner, owner_incarnation = node, incarnation
            if current is not None and (current.node, current.incarnation) == (node, incarnation):
                if current.epoch >= floor:
                    return current
                epoch = floor
            elif current is not None and current.alive:
                return current
            else:
                epoch = max(1 if current is None else current.epoch + 1, floor)
                if place:
                    owner = rendezvous_owner(kind, identity, live) or node
                    owner_incarnation = live[owner]
            conn.execute(
                "INSERT OR REPLACE INTO tocsin_cluster_directory "
                "(kind, identity, node, incarnation, epoch) VALUES (?, ?, ?, ?, ?)",
                (kind, identity, owner, owner_incarnation, epoch),
            )
            return Ownership(kind, identity, owner, owner_incarnation, epoch, True)

        return await self._step(step, write=True)

    async def hand_over(
        self, kind: str, identity: str, node: str, incarnation: str, *, floor: int = 0
    ) -> Ownership | None:
        def step(conn: sqlite3.Connection, now: float) -> Ownership | None:
            current = self._owner(conn, now, kind, identity)
            if current is None or (current.node, current.incarnation) != (node, incarnation):
                return current
            live = dict(
                conn.execute(
                    "SELECT node, incarnation FROM tocsin_cluster_leases WHERE expires > ?",
                    (now,),
                ).fetchall()
            )
            chosen = rendezvous_owner(kind, identity, live)
            if live.get(node) != incarnation or chosen is None or chosen == node:
                return current
            epoch = max(current.epoch + 1, floor)
            conn.execute(
                "UPDATE tocsin_cluster_directory SET node = ?, incarnation = ?, epoch = ? "
                "WHERE kind = ? AND identity = ?",
                (chosen, live[chosen], epoch, kind, identity),
            )
            return Ownership(kind, identity, chosen, live[chosen], epoch, True)

        return await self._step(step, write=True)

    # -- cron single fire ------------------------------------------------------------

    async def claim_tick(
        self, key: str, reference: str, fire_at: float, ttl: float, node: str
    ) -> ClaimOutcome:
        self._claims += 1
        purge = self._claims % PURGE_EVERY == 0

        def step(conn: sqlite3.Connection, now: float) -> ClaimOutcome:
            if now - fire_at > ttl:
                return late_or_paused(conn, now)
            won = conn.execute(
                _CLAIM, (key, node, max(now, fire_at) + ttl, reference, now)
            ).fetchone()
            if purge:
                conn.execute(_PURGE_CLAIMS, (now,))
            if won is not None:
                return ClaimOutcome.WON
            return lost_or_paused(conn, now)

        def lost_or_paused(conn: sqlite3.Connection, now: float) -> ClaimOutcome:
            paused = conn.execute(
                "SELECT 1 FROM tocsin_cluster_paused WHERE reference = ?", (reference,)
            ).fetchone()
            return ClaimOutcome.LOST if paused is None else ClaimOutcome.PAUSED

        def late_or_paused(conn: sqlite3.Connection, now: float) -> ClaimOutcome:
            # A paused reference is reported as paused even when late (as elsewhere).
            lost = lost_or_paused(conn, now)
            return ClaimOutcome.LATE if lost is ClaimOutcome.LOST else lost

        inline = self._inline
        if inline is not None and not purge:
            # Fast path: the claim is one statement, atomic in autocommit, so it needs no
            # BEGIN/COMMIT. The loop-side connection never waits for a lock (it fails at
            # once instead), so nothing can come between the clock read and the write.
            now = self._clock.wall()
            if now - fire_at > ttl:
                return await self._step(late_or_paused, write=False)
            try:
                won = inline.execute(
                    _CLAIM, (key, node, max(now, fire_at) + ttl, reference, now)
                ).fetchone()
            except sqlite3.Error as exc:
                if not _is_busy(exc):
                    raise CoordinatorError(f"SQLite coordinator {self.path!r}: {exc}") from exc
            else:
                if won is not None:
                    return ClaimOutcome.WON
                return await self._step(lost_or_paused, write=False)
        return await self._step(step, write=True)

    async def set_cron_paused(self, reference: str, paused: bool) -> None:
        sql = (
            "INSERT OR IGNORE INTO tocsin_cluster_paused VALUES (?)"
            if paused
            else "DELETE FROM tocsin_cluster_paused WHERE reference = ?"
        )
        await self._step(lambda conn, now: conn.execute(sql, (reference,)), write=True)

    async def paused_crons(self) -> frozenset[str]:
        def step(conn: sqlite3.Connection, now: float) -> frozenset[str]:
            rows = conn.execute("SELECT reference FROM tocsin_cluster_paused").fetchall()
            return frozenset(row[0] for row in rows)

        return await self._step(step, write=False)
