# SPDX-License-Identifier: Apache-2.0
"""The SQL of stored schedules (:mod:`._schedule_rows`), written once with ``?``
placeholders: SQLite takes them as they are, PostgreSQL through :func:`._queries.numbered`.

Each write that changes ``tocsin_schedules`` runs in one transaction with
:data:`BUMP_REVISION`, so a node polling :data:`REVISION` never misses a change.
"""

from __future__ import annotations

from typing import Any, Final

from ._schedule_rows import SchedulePause, ScheduleRow, ScheduleTickRow

__all__ = [
    "BUMP_REVISION",
    "CLAIM",
    "DELETE",
    "DELETE_REQUEST",
    "IDS_AT_ONCE",
    "INSERT",
    "LAST_INSTANTS",
    "LAST_INSTANTS_RANGE",
    "LEDGER",
    "LEDGER_COLUMNS",
    "LEDGER_NEWEST",
    "LEDGER_ONE",
    "PAUSE",
    "PURGE_CLAIMS",
    "RECORD",
    "RECORD_IF_ABSENT",
    "REQUEST",
    "REQUESTS",
    "REVISION",
    "SCHEDULE_COLUMNS",
    "SELECT_ALL",
    "SELECT_ONE",
    "SELECT_PAGE",
    "SELECT_SOME",
    "TRIM",
    "UPDATE",
    "ledger_params",
    "pause_params",
    "schedule_from_sql",
    "schedule_params",
    "tick_from_sql",
]

#: ScheduleRow's field order: rows map to ScheduleRow positionally.
SCHEDULE_COLUMNS: Final = (
    "id, spec, version, created_at, updated_at, paused, note, paused_by, paused_at"
)
#: ScheduleTickRow's field order.
LEDGER_COLUMNS: Final = (
    "id, instant, at, outcome, node, version, detail, note, paused_by, started, manual"
)

SELECT_ALL: Final = f"SELECT {SCHEDULE_COLUMNS} FROM tocsin_schedules ORDER BY id"
SELECT_ONE: Final = f"SELECT {SCHEDULE_COLUMNS} FROM tocsin_schedules WHERE id = ?"
#: ``{marks}``: one ``?`` per id, at most :data:`IDS_AT_ONCE` (SQLite's bound on a
#: statement's parameters is 999 in old builds).
SELECT_SOME: Final = f"SELECT {SCHEDULE_COLUMNS} FROM tocsin_schedules WHERE id IN ({{marks}})"
#: Ids one ``SELECT_SOME`` reads.
IDS_AT_ONCE: Final = 500
#: Parameters: the last id of the previous page ('' for the first), the page's size.
SELECT_PAGE: Final = (
    f"SELECT {SCHEDULE_COLUMNS} FROM tocsin_schedules WHERE id > ? ORDER BY id LIMIT ?"
)
#: Parameters: the row's nine fields. Only if absent (an add never overwrites).
INSERT: Final = (
    f"INSERT INTO tocsin_schedules ({SCHEDULE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (id) DO NOTHING"
)
#: Parameters: spec, version, updated_at, id, expected version. The pause state is kept.
UPDATE: Final = (
    "UPDATE tocsin_schedules SET spec = ?, version = ?, updated_at = ? WHERE id = ? AND version = ?"
)
DELETE: Final = "DELETE FROM tocsin_schedules WHERE id = ?"
#: Parameters: paused, note, paused_by, paused_at, id.
PAUSE: Final = (
    "UPDATE tocsin_schedules SET paused = ?, note = ?, paused_by = ?, paused_at = ? WHERE id = ?"
)
REVISION: Final = "SELECT value FROM tocsin_meta WHERE key = 'schedules'"
BUMP_REVISION: Final = (
    "INSERT INTO tocsin_meta (key, value) VALUES ('schedules', '1') ON CONFLICT (key) "
    "DO UPDATE SET value = CAST(CAST(tocsin_meta.value AS BIGINT) + 1 AS TEXT)"
)
#: Parameters: the ledger row's eleven fields. A later decision about one instant (of one
#: kind: a regular tick, or a manual run) replaces it.
RECORD: Final = (
    f"INSERT INTO tocsin_schedule_history ({LEDGER_COLUMNS}) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id, instant, manual) DO UPDATE SET "
    "at = excluded.at, outcome = excluded.outcome, node = excluded.node, "
    "version = excluded.version, detail = excluded.detail, note = excluded.note, "
    "paused_by = excluded.paused_by, "
    "started = COALESCE(excluded.started, tocsin_schedule_history.started)"
)
#: The same, writing nothing when the instant already has a row (an outcome decided
#: without holding the instant's claim, such as ``coalesced``, never hides the winner's).
RECORD_IF_ABSENT: Final = (
    RECORD.split(" ON CONFLICT")[0] + " ON CONFLICT (id, instant, manual) DO NOTHING"
)
#: Parameters: id, id, keep - 1. Drops rows older than the newest ``keep``.
TRIM: Final = (
    "DELETE FROM tocsin_schedule_history WHERE id = ? AND instant < "
    "(SELECT instant FROM tocsin_schedule_history WHERE id = ? "
    "ORDER BY instant DESC LIMIT 1 OFFSET ?)"
)
#: Parameters: id.
LEDGER: Final = (
    f"SELECT {LEDGER_COLUMNS} FROM tocsin_schedule_history WHERE id = ? ORDER BY instant, manual"
)
#: Manual runs do not say how far a schedule's instants were decided.
LAST_INSTANTS: Final = (
    "SELECT id, MAX(instant) FROM tocsin_schedule_history WHERE NOT manual GROUP BY id"
)
#: Parameters: the first and the last id of the range (both included).
LAST_INSTANTS_RANGE: Final = (
    "SELECT id, MAX(instant) FROM tocsin_schedule_history "
    "WHERE NOT manual AND id >= ? AND id <= ? GROUP BY id"
)
#: Parameters: id, instant, manual.
LEDGER_ONE: Final = (
    f"SELECT {LEDGER_COLUMNS} FROM tocsin_schedule_history "
    "WHERE id = ? AND instant = ? AND manual = ?"
)
#: Parameters: id, limit. Newest first (the caller reverses).
LEDGER_NEWEST: Final = (
    f"SELECT {LEDGER_COLUMNS} FROM tocsin_schedule_history WHERE id = ? "
    "ORDER BY instant DESC, manual DESC LIMIT ?"
)
#: Parameters: now. Expired claims go (never one that has not expired).
PURGE_CLAIMS: Final = "DELETE FROM tocsin_schedule_claims WHERE expires <= ?"
#: Parameters: key, node, expires.
CLAIM: Final = (
    "INSERT INTO tocsin_schedule_claims (key, node, expires) VALUES (?, ?, ?) "
    "ON CONFLICT (key) DO NOTHING"
)


#: Parameters: id, instant, manual, at.
REQUEST: Final = (
    "INSERT INTO tocsin_schedule_requests (id, instant, manual, at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (id, instant, manual) DO NOTHING"
)
REQUESTS: Final = (
    "SELECT id, instant, manual, at FROM tocsin_schedule_requests ORDER BY instant, id"
)
#: Parameters: id, instant, manual.
DELETE_REQUEST: Final = (
    "DELETE FROM tocsin_schedule_requests WHERE id = ? AND instant = ? AND manual = ?"
)


def schedule_params(row: ScheduleRow) -> tuple[Any, ...]:
    """The parameters of :data:`INSERT` for ``row``."""
    return (
        row.id,
        row.spec,
        row.version,
        float(row.created_at),
        float(row.updated_at),
        row.paused,
        row.note,
        row.paused_by,
        None if row.paused_at is None else float(row.paused_at),
    )


def pause_params(schedule_id: str, pause: SchedulePause) -> tuple[Any, ...]:
    """The parameters of :data:`PAUSE` for ``pause`` of ``schedule_id``."""
    at = None if pause.at is None else float(pause.at)
    return (pause.paused, pause.note, pause.by, at, schedule_id)


def ledger_params(row: ScheduleTickRow) -> tuple[Any, ...]:
    """The parameters of :data:`RECORD` for ``row``."""
    return (
        row.id,
        float(row.instant),
        float(row.at),
        row.outcome,
        row.node,
        row.version,
        row.detail,
        row.note,
        row.by,
        None if row.started is None else float(row.started),
        row.manual,
    )


def schedule_from_sql(r: Any) -> ScheduleRow:
    """One ``SELECT`` row of :data:`SCHEDULE_COLUMNS` as a ScheduleRow."""
    sid, spec, version, created_at, updated_at, paused, note, paused_by, paused_at = r
    return ScheduleRow(
        id=sid,
        spec=bytes(spec),
        version=int(version),
        created_at=float(created_at),
        updated_at=float(updated_at),
        paused=bool(paused),
        note=note,
        paused_by=paused_by,
        paused_at=None if paused_at is None else float(paused_at),
    )


def tick_from_sql(r: Any) -> ScheduleTickRow:
    """One ``SELECT`` row of :data:`LEDGER_COLUMNS` as a ScheduleTickRow."""
    sid, instant, at, outcome, node, version, detail, note, by, started, manual = r
    return ScheduleTickRow(
        id=sid,
        instant=float(instant),
        at=float(at),
        outcome=outcome,
        node=node,
        version=int(version),
        detail=detail,
        note=note,
        by=by,
        started=None if started is None else float(started),
        manual=bool(manual),
    )
