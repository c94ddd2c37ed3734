# SPDX-License-Identifier: Apache-2.0
"""Task history in the store (issue 23): each task keeps its newest ``HISTORY_LIMIT``
entries, oldest first, on every store; a read-only open of an older file reads an empty
history."""

from __future__ import annotations

from pathlib import Path

from tests.stores.test_policy_migration import _old_sqlite
from tests.stores.test_store_contract import Backend, backend, opened

from tocsin.stores import HISTORY_LIMIT, DeleteHistory, RecordTick
from tocsin.stores.sqlite import SQLiteStore

__all__ = ["backend"]  # the contract suite's fixture, used here


def _entry(n: int, task_id: str = "tick") -> RecordTick:
    return RecordTick("Order", "o-1", task_id, 100.0 + n, 200.0 + n, "delivered", None, "n1")


async def test_history_keeps_the_newest_entries_per_task_oldest_first(backend: Backend) -> None:
    store = await opened(backend)
    try:
        await store.apply([_entry(n) for n in range(HISTORY_LIMIT + 10)])
        missed = RecordTick("Order", "o-1", "other", 5, 6, "missed", "late", "n2")
        await store.apply([_entry(0, "other"), missed])
        history = await store.task_history("Order", "o-1", "tick")
        assert [e.instant for e in history] == [100.0 + n for n in range(10, HISTORY_LIMIT + 10)]
        other = await store.task_history("Order", "o-1", "other")
        assert [(e.outcome, e.detail, e.node, e.instant) for e in other] == [
            ("delivered", None, "n1", 100.0),
            ("missed", "late", "n2", 5.0),
        ]
        assert type(other[1].instant) is float
        await store.apply([DeleteHistory("Order", "o-1", "tick")])
        assert await store.task_history("Order", "o-1", "tick") == []
        assert await store.task_history("Nope", "x", "y") == []
    finally:
        await store.close()


async def test_a_read_only_open_of_an_old_file_has_an_empty_history(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _old_sqlite(path)
    store = SQLiteStore(path, read_only=True)
    await store.open()
    try:
        assert await store.task_history("Order", "o-1", "tick") == []
    finally:
        await store.close()
