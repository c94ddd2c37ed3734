# SPDX-License-Identifier: Apache-2.0
"""The history page of one durable task: the task as stored and what became of its
recent instants (the same outcomes as a stored schedule's ledger: ``delivered``,
``paused`` with its note, ``coalesced``, ``missed``, ...), read from the store, so the
page answers from a running system and from ``tocsin console --store`` alike, and never
waits behind the identity's running task."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import final

from ..durable._spi import tick_outcome
from ..stores import Store
from ..triggers import TickOutcome

__all__ = ["TaskHistory", "task_history"]


@final
@dataclass(frozen=True, slots=True)
class TaskHistory:
    """One durable task's page: where it is, its stored state (``None``: the task is gone,
    its history kept) and its history, oldest first."""

    kind: str
    identity: str
    id: str
    name: str | None
    state: str | None
    due: datetime | None
    paused: bool
    note: str | None
    entries: tuple[TickOutcome, ...]


async def task_history(
    store: Store | None, kind: str, identity: str, task_id: str
) -> TaskHistory | None:
    """Task ``kind/identity/task_id`` and its history; ``None`` when the store holds
    neither the task nor a history under its id (or there is no store here)."""
    if store is None:
        return None
    row = await store.get_task(kind, identity, task_id)
    ticks = await store.task_history(kind, identity, task_id)
    if row is None and not ticks:
        return None
    return TaskHistory(
        kind=kind,
        identity=identity,
        id=task_id,
        name=None if row is None else row.name,
        state=None if row is None else row.state,
        due=None if row is None else datetime.fromtimestamp(row.due, UTC),
        paused=row is not None and row.paused_at is not None,
        note=None if row is None else row.pause_note,
        entries=tuple(tick_outcome(t) for t in ticks),
    )
