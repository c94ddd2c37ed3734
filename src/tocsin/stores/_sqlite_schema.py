# SPDX-License-Identifier: Apache-2.0
"""The SQLite store's schema (creation, migration) and how its rows become TaskRows.

The schema script (``sql/sqlite_schema.sql``) is idempotent and runs on every open, in
one ``BEGIN IMMEDIATE`` transaction, so processes opening a new file at once create it
one after the other. An older file (version 1: no ``cron``/``timezone`` columns; version
2: no ``policy`` column; version 3: no pause columns) is migrated first, in the same
transaction: the added columns are NULL in old rows, which means today's behaviour. A
schedule ledger made before manual runs were keyed apart (no ``manual`` column, key
``(id, instant)``) is rebuilt with the wider key, its rows kept as regular ticks.
"""

from __future__ import annotations

import sqlite3
from importlib import resources
from typing import Any, Final

from ._protocols import TaskRow
from ._sqlite_engine import execute_script

__all__ = ["ADDED_COLUMNS", "LEDGER_BEFORE_MANUAL", "create_schema", "row_from_sql"]

#: The ledger's columns before ``manual`` (copied as they are into the rebuilt table).
LEDGER_BEFORE_MANUAL: Final = (
    "id, instant, at, outcome, node, version, detail, note, paused_by, started"
)

#: Columns added to ``tocsin_tasks`` after schema version 1, with their types.
#: (Version 2 added cron and timezone, version 3 policy: schedule policies, issue 22;
#: version 4 the pause of a task: paused_at, pause_note, paused_by.)
ADDED_COLUMNS: Final = (
    ("cron", "TEXT"),
    ("timezone", "TEXT"),
    ("policy", "BLOB"),
    ("paused_at", "REAL"),
    ("pause_note", "TEXT"),
    ("paused_by", "TEXT"),
)


def create_schema(conn: sqlite3.Connection) -> None:
    """Migrate a version 1 file, then run the (idempotent) schema script, statement by
    statement inside the caller's transaction (``executescript`` would commit it)."""
    have = {row[1] for row in conn.execute("PRAGMA table_info(tocsin_tasks)")}
    if have:  # an existing table: add what later versions added
        for column, sql_type in ADDED_COLUMNS:
            if column not in have:
                conn.execute(f"ALTER TABLE tocsin_tasks ADD COLUMN {column} {sql_type}")
    fences = {row[1] for row in conn.execute("PRAGMA table_info(tocsin_fences)")}
    if fences and "owner" not in fences:  # fences written before owners were recorded
        conn.execute("ALTER TABLE tocsin_fences ADD COLUMN owner TEXT NOT NULL DEFAULT ''")
    ledger = {row[1] for row in conn.execute("PRAGMA table_info(tocsin_schedule_history)")}
    rebuild = bool(ledger) and "manual" not in ledger
    if rebuild:  # SQLite cannot widen a key in place: the script creates the new table
        conn.execute("ALTER TABLE tocsin_schedule_history RENAME TO tocsin_schedule_history_v4")
    script = resources.files("tocsin.stores").joinpath("sql/sqlite_schema.sql")
    execute_script(conn, script.read_text("utf-8"))
    if rebuild:
        conn.execute(
            f"INSERT INTO tocsin_schedule_history ({LEDGER_BEFORE_MANUAL}, manual) "
            f"SELECT {LEDGER_BEFORE_MANUAL}, 0 FROM tocsin_schedule_history_v4"
        )
        conn.execute("DROP TABLE tocsin_schedule_history_v4")


def row_from_sql(r: Any) -> TaskRow:
    """One ``SELECT`` row of :data:`~tocsin.stores._queries.COLUMNS` as a TaskRow."""
    kind, identity, task_id, name, payload, due, every, attempts, max_retries, *rest = r
    created_at, state, last_error, timeout, cron, timezone, policy, *pause = rest
    paused_at, pause_note, paused_by = pause
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
        cron=cron,
        timezone=timezone,
        policy=None if policy is None else bytes(policy),
        paused_at=None if paused_at is None else float(paused_at),
        pause_note=pause_note,
        paused_by=paused_by,
    )
