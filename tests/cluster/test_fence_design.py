# SPDX-License-Identifier: Apache-2.0
"""The store fencing design of docs/cluster.md, checked on real SQLite and PostgreSQL.

The stores do not carry the fence yet (another branch is reshaping ``stores/``); these
tests pin the exact SQL the design specifies, so wiring it in is a copy: a
``tocsin_fences`` table, a trigger that refuses an epoch going back, and a ``Fence`` op
that is one upsert placed first in a batch. A stale batch then fails as a whole inside
the store's own transaction, and nothing it wrote stays.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

SQLITE_FENCE_SCHEMA = """
CREATE TABLE IF NOT EXISTS tocsin_fences (
    kind TEXT NOT NULL, identity TEXT NOT NULL, epoch INTEGER NOT NULL,
    PRIMARY KEY (kind, identity)) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS tocsin_fence BEFORE UPDATE OF epoch ON tocsin_fences
WHEN NEW.epoch < OLD.epoch
BEGIN SELECT RAISE(ABORT, 'tocsin fenced: a newer epoch owns this identity'); END;
"""
POSTGRES_FENCE_SCHEMA = """
CREATE TABLE IF NOT EXISTS tocsin_fences (
    kind text NOT NULL, identity text NOT NULL, epoch bigint NOT NULL,
    PRIMARY KEY (kind, identity));
CREATE OR REPLACE FUNCTION tocsin_fence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.epoch < OLD.epoch THEN
        RAISE EXCEPTION 'tocsin fenced: epoch % < %', NEW.epoch, OLD.epoch
            USING ERRCODE = 'T0C51';
    END IF;
    RETURN NEW;
END $$;
DROP TRIGGER IF EXISTS tocsin_fence ON tocsin_fences;
CREATE TRIGGER tocsin_fence BEFORE UPDATE OF epoch ON tocsin_fences
    FOR EACH ROW EXECUTE FUNCTION tocsin_fence();
"""
#: The ``Fence(kind, identity, epoch)`` op: first statement of a fenced batch.
FENCE_SQL = (
    "INSERT INTO tocsin_fences (kind, identity, epoch) VALUES (?, ?, ?) "
    "ON CONFLICT (kind, identity) DO UPDATE SET epoch = excluded.epoch"
)
STATE_SQLITE = """
CREATE TABLE IF NOT EXISTS state (kind TEXT, identity TEXT, key TEXT, value TEXT,
                                  PRIMARY KEY (kind, identity, key));
"""


def _sqlite_batch(conn: sqlite3.Connection, epoch: int, value: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(FENCE_SQL, ("Order", "42", epoch))
        conn.execute(
            "INSERT INTO state VALUES ('Order', '42', 'k', ?) "
            "ON CONFLICT DO UPDATE SET value = excluded.value",
            (value,),
        )
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def test_sqlite_refuses_a_stale_epoch_batch_as_a_whole(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    zombie = sqlite3.connect(path, isolation_level=None)
    owner = sqlite3.connect(path, isolation_level=None)
    zombie.executescript(SQLITE_FENCE_SCHEMA + STATE_SQLITE)
    _sqlite_batch(zombie, 1, "zombie-before")  # epoch 1 writes while it owns
    _sqlite_batch(owner, 2, "owner")  # the new owner's first write bumps the fence
    with pytest.raises(sqlite3.IntegrityError, match="tocsin fenced"):
        _sqlite_batch(zombie, 1, "zombie-after")
    _sqlite_batch(owner, 2, "owner-again")  # the same epoch keeps writing
    value = owner.execute("SELECT value FROM state").fetchone()[0]
    assert value == "owner-again"
    zombie.close()
    owner.close()


async def test_postgres_refuses_a_stale_epoch_batch_as_a_whole(postgres_dsn: str) -> None:
    import asyncpg

    schema = f"f_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}; SET search_path = {schema}")
        await conn.execute(POSTGRES_FENCE_SCHEMA)
        await conn.execute("CREATE TABLE state (k text PRIMARY KEY, value text NOT NULL)")
        fence = FENCE_SQL.replace("?, ?, ?", "$1, $2, $3")
        upsert = "INSERT INTO state VALUES ('k', $1) ON CONFLICT (k) DO UPDATE SET value = $1"

        async def batch(epoch: int, value: str) -> None:
            async with conn.transaction():
                await conn.execute(fence, "Order", "42", epoch)
                await conn.execute(upsert, value)

        await batch(1, "zombie-before")
        await batch(2, "owner")
        with pytest.raises(asyncpg.PostgresError, match="tocsin fenced") as info:
            await batch(1, "zombie-after")
        assert info.value.sqlstate == "T0C51"
        assert await conn.fetchval("SELECT value FROM state") == "owner"
    finally:
        await conn.close()
