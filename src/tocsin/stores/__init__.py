# SPDX-License-Identifier: Apache-2.0
"""Task and state stores for durable actors.

:class:`MemoryStore` is always here; ``tocsin.stores.sqlite.SQLiteStore`` (the embedded
default) and ``tocsin.stores.postgres.PostgresStore`` (needs ``tocsin[postgres]``) are
imported from their modules, or made from a URL by :func:`open_store`. Importing this
package never imports asyncpg.
"""

from __future__ import annotations

from ._protocols import (
    HISTORY_LIMIT,
    DeleteHistory,
    DeleteState,
    DeleteTask,
    DueActor,
    Fence,
    Op,
    PauseTask,
    PutState,
    RecordTick,
    Store,
    TaskRow,
    TaskState,
    TickRow,
    UpsertTask,
)
from ._schedule_rows import (
    SchedulePause,
    ScheduleRequest,
    ScheduleRow,
    ScheduleStore,
    ScheduleTickRow,
)
from ._url import open_store, resolve_store
from .memory import MemoryStore

__all__ = [
    "HISTORY_LIMIT",
    "DeleteHistory",
    "DeleteState",
    "DeleteTask",
    "DueActor",
    "Fence",
    "MemoryStore",
    "Op",
    "PauseTask",
    "PutState",
    "RecordTick",
    "SchedulePause",
    "ScheduleRequest",
    "ScheduleRow",
    "ScheduleStore",
    "ScheduleTickRow",
    "Store",
    "TaskRow",
    "TaskState",
    "TickRow",
    "UpsertTask",
    "open_store",
    "resolve_store",
]

for _name in __all__:
    _obj = globals()[_name]
    if getattr(_obj, "__module__", "").startswith("tocsin.stores."):
        _obj.__module__ = __name__
del _name, _obj
