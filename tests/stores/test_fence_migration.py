# SPDX-License-Identifier: Apache-2.0
"""Fence tables made before owners were recorded migrate on open (issue 20, item 4): the
rows keep their epochs, an older epoch is still refused, and from then on an equal epoch
from another owner is refused too."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path

import pytest

from tocsin.errors import FencedError
from tocsin.stores import Fence, PutState, Store
from tocsin.stores.sqlite import SQLiteStore

_OLD_SQLITE = """
CREATE TABLE tocsin_fences (
    kind TEXT NOT NULL, identity TEXT NOT NULL, epoch INTEGER NOT NULL,
    PRIMARY KEY (kind, identity)
) WITHOUT ROWID;
CREATE TRIGGER tocsin_fence BEFORE UPDATE OF epoch ON tocsin_fences
WHEN NEW.epoch < OLD.epoch
BEGIN SELECT RAISE(ABORT, 'tocsin fenced: a newer epoch owns this identity'); END;
INSERT INTO tocsin_fences VALUES ('Order', 'o-1', 7);
"""

_OLD_POSTGRES = """
CREATE SCHEMA {schema};
SET search_path = {schema};
CREATE TABLE tocsin_fences (
    kind text COLLATE "C" NOT NULL, identity text COLLATE "C" NOT NULL,
    epoch bigint NOT NULL, PRIMARY KEY (kind, identity)
);
CREATE FUNCTION tocsin_fence() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.epoch < OLD.epoch THEN
        RAISE EXCEPTION 'tocsin fenced: epoch % < %', NEW.epoch, OLD.epoch
            USING ERRCODE = 'T0C51';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tocsin_fence BEFORE UPDATE OF epoch ON tocsin_fences
    FOR EACH ROW EXECUTE FUNCTION tocsin_fence();
INSERT INTO tocsin_fences VALUES ('Order', 'o-1', 7);
"""


async def _check_migrated(store: Store) -> None:
    await store.open()
    try:
        assert await store.fence_epoch("Order", "o-1") == 7  # the old row is kept
        with pytest.raises(FencedError):
            await store.apply([Fence("Order", "o-1", 6, "a/1")])
        # An old row has no owner: the first owner to write its epoch takes it...
        await store.apply([Fence("Order", "o-1", 7, "a/1"), PutState("Order", "o-1", "k", b"a")])
        # ...and an equal epoch from another owner is refused from then on.
        with pytest.raises(FencedError):
            await store.apply(
                [Fence("Order", "o-1", 7, "b/1"), PutState("Order", "o-1", "k", b"b")]
            )
        assert await store.get_state("Order", "o-1", "k") == b"a"
    finally:
        await store.close()


async def test_an_sqlite_fence_table_without_owners_migrates_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(_OLD_SQLITE)
    conn.close()
    await _check_migrated(SQLiteStore(path))
    with sqlite3.connect(path) as conn:
        triggers = {
            r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='trigger'")
        }
    conn.close()
    # The epoch-only trigger is gone (the history's own trigger came with version 3).
    assert triggers == {"tocsin_fence_owner", "tocsin_task_history_bound"}
    await _check_migrated_again(SQLiteStore(path))


async def _check_migrated_again(store: Store) -> None:
    """A second open of a migrated store changes nothing (the schema script is idempotent)."""
    await store.open()
    try:
        with pytest.raises(FencedError):
            await store.apply([Fence("Order", "o-1", 7, "b/1")])
        await store.apply([Fence("Order", "o-1", 7, "a/1")])
    finally:
        await store.close()


@pytest.mark.integration
async def test_a_postgres_fence_table_without_owners_migrates_on_open(postgres_dsn: str) -> None:
    import asyncpg

    from tocsin.stores.postgres import PostgresStore

    schema = f"old_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute(_OLD_POSTGRES.format(schema=schema))
    finally:
        await conn.close()
    await _check_migrated(PostgresStore(postgres_dsn, schema=schema))
    await _check_migrated_again(PostgresStore(postgres_dsn, schema=schema))
