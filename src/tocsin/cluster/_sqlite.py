# SPDX-License-Identifier: Apache-2.0
"""The SQLite coordinator: one file shared by the nodes (processes) of one machine.

SQLite has no clock of its own, so leases and lateness are judged on the machine's wall
clock, read through :mod:`tocsin.clock` *inside* the write lock (after ``BEGIN
IMMEDIATE``): every node of the file reads the same clock, and no other writer can act
between the read and the write. That is why this coordinator is for the nodes of one
machine only (``tocsin run --workers N``), never for a file on a network share.

The file is opened and called with the stores' SQLite engine (``stores/_sqlite_engine.py``,
through :mod:`tocsin.stores._spi`), with the store's pragmas and busy timeout: a
loop-side connection with ``busy_timeout = 0`` runs each step on the event loop thread (a
claim costs a few tens of microseconds, much less than a hand-off to a thread); when
another process holds the lock it answers ``BUSY`` at once, and the step is run again on
the worker thread, whose connection waits up to ``busy_timeout`` (5 s) for the lock.
Nothing on the loop thread ever waits. The tables are ``sql/sqlite_coordinator.sql``.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final, TypeVar, final

from .._idle import real_io
from ..clock import Clock, SystemClock
from ..errors import CoordinatorError, InvalidCoordinatorURLError
from ..stores._spi import (
    Busy,
    LoopConnection,
    Worker,
    execute_script,
    open_connection,
    transaction,
)
from . import _protocol
from ._protocol import EXPIRED_LEASE_RETENTION as RETENTION
from ._protocol import ClaimOutcome, LeaseRow, Ownership, PauseNote, TickClaim, TickRequest
from ._protocol import ClaimsInBatches as _OneClaimAsBatch
from ._rendezvous import rendezvous_owner

__all__ = ["SQLiteCoordinator"]

T = TypeVar("T")

#: The coordinator's ``synchronous``: commits append to the WAL without an fsync (durable
#: against a process crash; a power loss may lose the last leases and claims, which the
#: nodes write again within a lease).
SYNCHRONOUS: Final = "NORMAL"

# The next fence of a reference: one more than its last, or the clock in microseconds if
# larger (least_fence: fences keep growing across a coordinator file deleted).
_FENCE: Final = (
    "INSERT INTO tocsin_cluster_fences (reference, fence) VALUES (?, ?) "
    "ON CONFLICT (reference) DO UPDATE "
    "SET fence = max(tocsin_cluster_fences.fence + 1, excluded.fence) "
    "RETURNING fence"
)
_PURGE_CLAIMS: Final = (
    "DELETE FROM tocsin_cluster_claims WHERE key IN "
    "(SELECT key FROM tocsin_cluster_claims WHERE expires <= ? LIMIT 256)"
)
_LEASE_COLUMNS: Final = "node, incarnation, address, joined, renewed, expires, zone"
# The lease's cron zone came with issue 19: added to tables of every age (the default is
# what leases written before it mean: those versions ran cluster cron in UTC).
_ADD_ZONE: Final = "ALTER TABLE tocsin_cluster_leases ADD COLUMN zone TEXT NOT NULL DEFAULT 'UTC'"
# The claims' fence and delivery lease came with issue 23 (claims written before them are
# done at_most_once claims with no fence).
_ADD_CLAIM_COLUMNS: Final = {
    "fence": "ALTER TABLE tocsin_cluster_claims ADD COLUMN fence INTEGER NOT NULL DEFAULT 0",
    "held": "ALTER TABLE tocsin_cluster_claims ADD COLUMN held REAL NOT NULL DEFAULT 0",
}
#: Claims between two purges of expired claims.
PURGE_EVERY: Final = 512


def _lease(row: Any, now: float) -> LeaseRow:
    return LeaseRow(row[0], row[1], row[2], row[3], row[4], row[5], row[5] > now, row[6])


def _claim_one(conn: sqlite3.Connection, now: float, request: TickRequest, node: str) -> TickClaim:
    """Decide and write one tick claim inside the caller's write transaction."""
    reference, lease = request.reference, request.lease
    paused = conn.execute(
        "SELECT 1 FROM tocsin_cluster_paused WHERE reference = ?", (reference,)
    ).fetchone()
    if paused is not None:
        return TickClaim(ClaimOutcome.PAUSED)
    if request.late(now):
        return TickClaim(ClaimOutcome.LATE)
    row = conn.execute(
        "SELECT expires, held FROM tocsin_cluster_claims WHERE key = ?", (request.key,)
    ).fetchone()
    if row is not None and row[0] > now:
        if lease is None or row[1] == 0:
            return TickClaim(ClaimOutcome.LOST)
        if row[1] > now:
            return TickClaim(ClaimOutcome.LOST, retry_in=row[1] - now)
        expires = row[0]  # a re-claim keeps the claim's expiry
    else:
        expires = request.expiry(now)
    fence = conn.execute(_FENCE, (reference, _protocol.least_fence(now))).fetchone()[0]
    conn.execute(
        "INSERT OR REPLACE INTO tocsin_cluster_claims (key, node, expires, fence, held) "
        "VALUES (?, ?, ?, ?, ?)",
        (request.key, node, expires, fence, 0.0 if lease is None else now + lease),
    )
    return TickClaim(ClaimOutcome.WON, fence)


@final
class SQLiteCoordinator(_OneClaimAsBatch):
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
        self._inline: LoopConnection | None = None
        self._worker: Worker | None = None
        self._claims = 0

    def __repr__(self) -> str:
        return f"SQLiteCoordinator({self.path!r})"

    async def open(self) -> None:
        if self._inline is not None:
            return
        worker = Worker(f"tocsin-coord:{self.path}", self._connect_thread)
        worker.start()
        try:
            try:
                with real_io():
                    await asyncio.wrap_future(worker.ready)
                # After the worker set WAL mode (kept in the file) and created the tables.
                inline = LoopConnection(self.path)
            except sqlite3.Error as exc:
                raise CoordinatorError(
                    f"cannot open SQLite coordinator {self.path!r}: {exc}"
                ) from exc
        except BaseException:
            await worker.close()
            raise
        self._worker, self._inline = worker, inline

    def _connect_thread(self) -> sqlite3.Connection:
        # The refusal runs before anything writes (WAL mode is kept in the file): pointed
        # at another application's database or at the durable store, change nothing in it.
        # The WAL switch is retried (two nodes opening a new file at once made one fail
        # there, issue 13); the tables are created under BEGIN IMMEDIATE.
        return open_connection(
            self.path, synchronous=SYNCHRONOUS, check=self._refuse_foreign, schema=self._schema
        )

    def _schema(self, conn: sqlite3.Connection) -> None:
        self._refuse_foreign(conn)  # again, under the write lock
        script = resources.files("tocsin.cluster").joinpath("sql/sqlite_coordinator.sql")
        execute_script(conn, script.read_text("utf-8"))
        columns = {row[1] for row in conn.execute("PRAGMA table_info(tocsin_cluster_leases)")}
        if "zone" not in columns:
            conn.execute(_ADD_ZONE)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(tocsin_cluster_claims)")}
        for column, sql in _ADD_CLAIM_COLUMNS.items():
            if column not in columns:
                conn.execute(sql)

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
        worker, self._worker = self._worker, None
        if worker is not None:
            await worker.close()

    # -- running one atomic step -----------------------------------------------------

    async def _step(self, fn: Callable[[sqlite3.Connection, float], T], *, write: bool) -> T:
        """Run ``fn(conn, now)`` as one transaction: on the loop if the lock is free at
        once, else on the worker thread (which waits for it). ``now`` is read after the
        lock is taken, so no other writer acts between the clock read and the write."""
        inline, worker = self._inline, self._worker
        if inline is None or worker is None:
            raise CoordinatorError(f"{self!r} is not open: `await coordinator.open()` first")
        begin = "BEGIN IMMEDIATE" if write else "BEGIN"

        def run(conn: sqlite3.Connection) -> T:
            return transaction(conn, lambda c: fn(c, self._clock.wall()), begin=begin)

        try:
            result = inline.attempt(run)
            if not isinstance(result, Busy):
                return result
            # A "read" job: `run` makes its own transaction, and its result comes back.
            return await worker.call(run, write=False)
        except sqlite3.Error as exc:
            raise CoordinatorError(f"SQLite coordinator {self.path!r}: {exc}") from exc

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

    async def claim_ticks(self, requests: Sequence[TickRequest], node: str) -> list[TickClaim]:
        before = self._claims
        self._claims += len(requests)
        purge = before // PURGE_EVERY != self._claims // PURGE_EVERY

        def step(conn: sqlite3.Connection, now: float) -> list[TickClaim]:
            # One write transaction (BEGIN IMMEDIATE) for the whole batch, the clock read
            # under the lock: no other node acts between the checks, the fences and the
            # writes, and the batch costs one commit (one fsync) however many ticks.
            claims = [_claim_one(conn, now, request, node) for request in requests]
            if purge:
                conn.execute(_PURGE_CLAIMS, (now,))
            return claims

        return await self._step(step, write=True)

    async def renew_tick(self, key: str, fence: int, lease: float) -> bool:
        def step(conn: sqlite3.Connection, now: float) -> bool:
            cur = conn.execute(
                "UPDATE tocsin_cluster_claims SET held = ? WHERE key = ? AND fence = ? "
                "AND held > 0",
                (now + lease, key, fence),
            )
            return cur.rowcount > 0

        return await self._step(step, write=True)

    async def finish_tick(self, key: str, fence: int) -> bool:
        def step(conn: sqlite3.Connection, now: float) -> bool:
            cur = conn.execute(
                "UPDATE tocsin_cluster_claims SET held = 0 WHERE key = ? AND fence = ?",
                (key, fence),
            )
            return cur.rowcount > 0

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

    async def set_pause_note(self, reference: str, note: PauseNote | None) -> None:
        def step(conn: sqlite3.Connection, now: float) -> None:
            if note is None:
                conn.execute(
                    "DELETE FROM tocsin_cluster_pause_notes WHERE reference = ?", (reference,)
                )
            else:
                conn.execute(
                    "INSERT OR REPLACE INTO tocsin_cluster_pause_notes VALUES (?, ?, ?, ?)",
                    (reference, note.note, note.paused_at, note.paused_by),
                )

        await self._step(step, write=True)

    async def pause_notes(self) -> dict[str, PauseNote]:
        def step(conn: sqlite3.Connection, now: float) -> dict[str, PauseNote]:
            rows = conn.execute("SELECT * FROM tocsin_cluster_pause_notes").fetchall()
            return {row[0]: PauseNote(row[1], float(row[2]), str(row[3])) for row in rows}

        return await self._step(step, write=False)
