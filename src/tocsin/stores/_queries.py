# SPDX-License-Identifier: Apache-2.0
"""The SQL both database stores share, written once with ``?`` placeholders.

SQLite takes them as they are; :func:`numbered` turns them into asyncpg's ``$1, $2, ...``
once, at import. Only what really differs between the two engines stays in each store
(prefix matching in ``list_state``, connection handling, error mapping).
"""

from __future__ import annotations

import itertools
import re
from typing import Final

from ._protocols import (
    HISTORY_LIMIT,
    DeleteHistory,
    DeleteState,
    DeleteTask,
    Fence,
    PauseTask,
    PutState,
    RecordTick,
    UpsertTask,
)

__all__ = [
    "COLUMNS",
    "DUE_ACTORS",
    "DUE_ACTORS_SQLITE",
    "DUE_TASKS",
    "FENCED_MESSAGE",
    "FENCED_SQLSTATE",
    "FENCE_EPOCH",
    "FIND_TASKS",
    "GET_STATE",
    "GET_TASK",
    "LATER_DUE",
    "NEXT_DUE",
    "TASK_HISTORY",
    "WRITES",
    "list_tasks",
    "numbered",
]

#: TaskRow's field order (a contract test pins it): rows map to TaskRow positionally.
COLUMNS: Final = (
    "kind, identity, id, name, payload, due, every, attempts, max_retries, created_at, "
    "state, last_error, timeout, cron, timezone, policy, paused_at, pause_note, paused_by"
)
_SELECT_TASKS: Final = f"SELECT {COLUMNS} FROM tocsin_tasks"
_ORDER: Final = " ORDER BY due, id, kind, identity"

WRITES: Final[dict[type, str]] = {
    UpsertTask: (
        f"INSERT INTO tocsin_tasks ({COLUMNS}) VALUES ({', '.join('?' * 19)}) "
        "ON CONFLICT (kind, identity, id) DO UPDATE SET name = excluded.name, "
        "payload = excluded.payload, due = excluded.due, every = excluded.every, "
        "attempts = excluded.attempts, max_retries = excluded.max_retries, "
        "created_at = excluded.created_at, state = excluded.state, "
        "last_error = excluded.last_error, timeout = excluded.timeout, "
        "cron = excluded.cron, timezone = excluded.timezone, policy = excluded.policy"
        # Not the pause columns: an upsert of an existing row keeps its pause (PauseTask
        # alone writes them), so a run's completion never undoes an operator's pause.
    ),
    # Parameters: paused_at, note, by, kind, identity, id (see the stores' op params).
    PauseTask: (
        "UPDATE tocsin_tasks SET paused_at = ?, pause_note = ?, paused_by = ? "
        "WHERE kind = ? AND identity = ? AND id = ?"
    ),
    DeleteTask: "DELETE FROM tocsin_tasks WHERE kind = ? AND identity = ? AND id = ?",
    PutState: (
        "INSERT INTO tocsin_state (kind, identity, key, value) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (kind, identity, key) DO UPDATE SET value = excluded.value"
    ),
    DeleteState: "DELETE FROM tocsin_state WHERE kind = ? AND identity = ? AND key = ?",
    # Cluster fencing: the trigger on tocsin_fences refuses an epoch going back, which
    # aborts the whole batch inside the store's own transaction (docs/cluster.md).
    # The owner goes with the epoch: an equal epoch from another owner is refused too.
    Fence: (
        "INSERT INTO tocsin_fences (kind, identity, epoch, owner) VALUES (?, ?, ?, ?) "
        "ON CONFLICT (kind, identity) DO UPDATE SET epoch = excluded.epoch, "
        "owner = excluded.owner"
    ),
    # Task history (issue 23): the table's trigger keeps each task's HISTORY_LIMIT newest.
    RecordTick: (
        "INSERT INTO tocsin_task_history (kind, identity, id, instant, at, outcome, detail, "
        "node) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    ),
    DeleteHistory: "DELETE FROM tocsin_task_history WHERE kind = ? AND identity = ? AND id = ?",
}

#: Parameters: kind, identity, id.
TASK_HISTORY: Final = (
    "SELECT kind, identity, id, instant, at, outcome, detail, node FROM tocsin_task_history "
    "WHERE kind = ? AND identity = ? AND id = ? ORDER BY seq"
)
assert HISTORY_LIMIT == 64, "sql/*_schema.sql's history triggers say 64 (OFFSET 63)"

#: What the fence triggers say (SQLite's RAISE message; PostgreSQL's SQLSTATE too).
FENCED_MESSAGE: Final = "tocsin fenced"
FENCED_SQLSTATE: Final = "T0C51"

GET_STATE: Final = "SELECT value FROM tocsin_state WHERE kind = ? AND identity = ? AND key = ?"
GET_TASK: Final = f"{_SELECT_TASKS} WHERE kind = ? AND identity = ? AND id = ?"
FIND_TASKS: Final = f"{_SELECT_TASKS} WHERE id = ?{_ORDER}"
#: Parameters: kind, identity, before, limit.
DUE_TASKS: Final = (
    f"{_SELECT_TASKS} WHERE kind = ? AND identity = ? AND state = 'pending' "
    f"AND due <= ?{_ORDER} LIMIT ?"
)
NEXT_DUE: Final = (
    "SELECT MIN(due) FROM tocsin_tasks WHERE kind = ? AND identity = ? AND state = 'pending'"
)
#: The earliest pending task due after a drain's window; parameters: kind, identity, before.
LATER_DUE: Final = (
    "SELECT MIN(due) FROM tocsin_tasks WHERE kind = ? AND identity = ? AND state = 'pending' "
    "AND due > ?"
)
#: The highest epoch fenced for one identity (cluster mode); parameters: kind, identity.
FENCE_EPOCH: Final = "SELECT epoch FROM tocsin_fences WHERE kind = ? AND identity = ?"
#: Parameters: before, limit.
DUE_ACTORS: Final = (
    "SELECT kind, identity, MIN(due) AS first FROM tocsin_tasks "
    "WHERE state = 'pending' AND due <= ? GROUP BY kind, identity "
    "ORDER BY first, kind, identity LIMIT ?"
)

#: SQLite's planner prefers the (kind, identity, state, due) index for the GROUP BY and
#: then reads every task; the due window alone is read through the partial index (#24).
#: Files opened read-only may predate that index: they use :data:`DUE_ACTORS`.
DUE_ACTORS_SQLITE: Final = DUE_ACTORS.replace(
    "FROM tocsin_tasks", "FROM tocsin_tasks INDEXED BY tocsin_tasks_pending_due"
)


def list_tasks(kind: str | None, identity: str | None, state: str | None) -> tuple[str, list[str]]:
    """The ``list_tasks`` query for the given filters, and its arguments."""
    where: list[str] = []
    args: list[str] = []
    for column, value in (("kind", kind), ("identity", identity), ("state", state)):
        if value is not None:
            where.append(f"{column} = ?")
            args.append(value)
    return _SELECT_TASKS + (" WHERE " + " AND ".join(where) if where else "") + _ORDER, args


_PLACEHOLDER = re.compile(r"\?")


def numbered(sql: str, start: int = 1) -> str:
    """``?`` placeholders as PostgreSQL's ``$start, ...`` (none of our SQL has a literal ``?``)."""
    count = itertools.count(start)
    return _PLACEHOLDER.sub(lambda _: f"${next(count)}", sql)
