# SPDX-License-Identifier: Apache-2.0
"""The writes of one durable identity in flight: the open ``transaction()`` (its
buffered ops, which reads inside it see), the task changes that passed the output gate
and are not yet known committed (``gated``: see :mod:`._gate`), and the tasks replaced
or cancelled since the drain began (``touched``: the drain leaves their rows alone).
Only these methods write them; the drain, the tasks and the storage ask through them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any, Final, final

from ..stores import DeleteState, DeleteTask, Op, PauseTask, PutState, UpsertTask

__all__ = ["MISSING", "UNSURE", "Writes"]

#: What :meth:`Writes.buffered_state` returns for a key with no buffered write (and
#: :meth:`Writes.gated_task` for a task with no gated change in flight).
MISSING: Final[Any] = object()
#: What :meth:`Writes.gated_task` returns for a task whose gated change in flight only
#: the store can apply (a pause): wait for it, then read the store.
UNSURE: Final[Any] = object()


@final
class Writes:
    """The open transaction and the touched tasks of one identity (internal)."""

    __slots__ = ("batch", "batch_flush", "gated", "gated_tasks", "touched", "tx")

    def __init__(self) -> None:
        #: Ids of tasks replaced or cancelled since the current drain began.
        self.touched: set[str] = set()
        #: The open transaction's buffered ops (``None``: no transaction).
        self.tx: list[Op] | None = None
        #: One future per batch of task changes sent to a group commit and not yet taken
        #: by :meth:`take_gated` (resolved once committed, or with the store's error).
        #: ``None`` until the first (most identities never gate a change: nothing kept).
        self.gated: list[asyncio.Future[None]] | None = None
        #: Task id -> the latest gated change of that task and its future: the new row,
        #: ``None`` (deleted) or :data:`UNSURE` (a pause).
        self.gated_tasks: dict[str, tuple[asyncio.Future[None], Any]] | None = None
        #: The ops of the last gated batch, still open to more changes while the group
        #: commit numbered ``batch_flush`` has not taken it (one future per identity and
        #: loop turn, not one per change).
        self.batch: tuple[list[Op], asyncio.Future[None]] | None = None
        self.batch_flush = -1

    # -- the drain's view of task changes ------------------------------------------------

    def touch(self, ids: Iterable[str]) -> None:
        """Tasks replaced or cancelled now: a drain in progress leaves their rows alone."""
        self.touched.update(ids)

    def drain_began(self) -> None:
        """A drain starts: only what changes from now on is its concern. The set is
        cleared, never replaced: the drain holds it and reads it between runs."""
        self.touched.clear()

    # -- the output gate -------------------------------------------------------------------

    def open_batch(self, flush: int) -> tuple[list[Op], asyncio.Future[None]] | None:
        """The gated batch (its ops and future) still waiting for group commit number
        ``flush`` (more changes of this turn join it), or ``None``."""
        return self.batch if self.batch_flush == flush else None

    def gate(self, done: asyncio.Future[None], batch: list[Op], flush: int) -> None:
        """Batch ``batch`` went to group commit number ``flush``; ``done`` says when it
        is in. Batches already committed are forgotten here; failed ones stay until a
        reply or a later store call of the identity reports them."""
        gated = self.gated
        if gated is None:
            gated = self.gated = []
        elif gated and gated[0].done():
            gated[:] = [f for f in gated if not f.done() or _failed(f)]
        gated.append(done)
        self.batch, self.batch_flush = (batch, done), flush

    def track(self, done: asyncio.Future[None], ops: Iterable[Op]) -> None:
        """Remember what the gated ``ops`` (committed by ``done``) make of their tasks."""
        tasks = self.gated_tasks
        if tasks is None:
            tasks = self.gated_tasks = {}
        for op in ops:
            # isinstance, not a class test: mypy narrows the union of ops by it.
            if isinstance(op, UpsertTask):
                tasks[op.row.id] = (done, op.row)
            elif isinstance(op, DeleteTask):
                tasks[op.id] = (done, None)
            elif isinstance(op, PauseTask):
                tasks[op.id] = (done, UNSURE)

    def committed(self) -> None:
        """A gated batch was committed: once all are, forget them (an identity that
        made changes and went quiet keeps no future, no row)."""
        gated = self.gated
        if gated and gated[-1].done() and not any(not f.done() or _failed(f) for f in gated):
            self.gated = self.gated_tasks = self.batch = None

    def gated_task(self, task_id: str) -> Any:
        """Task ``task_id`` as its gated change in flight leaves it: the row, ``None``
        (deleted), :data:`UNSURE`, or :data:`MISSING` when none is in flight (the store
        has the latest: a committed change is there, a failed one never will be)."""
        tasks = self.gated_tasks
        entry = None if tasks is None else tasks.get(task_id)
        if entry is None or entry[0].done():
            return MISSING
        return entry[1]

    def unsettled(self) -> list[asyncio.Future[None]]:
        """The gated batches not known committed (in flight, or failed), in a new list;
        the committed ones are forgotten."""
        gated = self.gated
        if not gated:
            return []
        gated[:] = [f for f in gated if not f.done() or _failed(f)]
        return list(gated)

    def take_gated(self) -> list[asyncio.Future[None]]:
        """The gated batches to wait for (forgotten here: the caller waits for them)."""
        gated = self.gated or []
        self.gated = self.gated_tasks = self.batch = None
        return gated

    def forget(self, reported: Iterable[asyncio.Future[None]]) -> None:
        """Gated batches whose outcome a reply has reported (committed, or its error)."""
        gated = self.gated
        if gated:
            done = set(reported)
            gated[:] = [f for f in gated if f not in done]

    # -- transactions ----------------------------------------------------------------------

    @property
    def open(self) -> bool:
        """Whether a transaction is open."""
        return self.tx is not None

    def begin(self) -> bool:
        """Open a transaction; False if one is open already (a nested block joins it)."""
        if self.tx is not None:
            return False
        self.tx = []
        return True

    def rollback(self) -> None:
        """Drop the open transaction's writes."""
        self.tx = None

    def take(self) -> list[Op]:
        """Close the open transaction and return its writes (to commit them)."""
        ops, self.tx = self.tx or [], None
        return ops

    def buffer(self, ops: Iterable[Op]) -> bool:
        """Add ``ops`` to the open transaction; False (nothing done) when none is open."""
        if self.tx is None:
            return False
        self.tx.extend(ops)
        return True

    def buffered_state(self, key: str) -> Any:
        """A buffered value (bytes), ``None`` for a buffered delete, else :data:`MISSING`."""
        if self.tx is None:
            return MISSING
        for op in reversed(self.tx):
            if isinstance(op, PutState) and op.key == key:
                return op.value
            if isinstance(op, DeleteState) and op.key == key:
                return None
        return MISSING

    def buffered_items(self, prefix: str) -> list[tuple[str, bytes | None]]:
        """The buffered writes of keys starting with ``prefix``, in order (``None``: a
        delete)."""
        if self.tx is None:
            return []
        out: list[tuple[str, bytes | None]] = []
        for op in self.tx:
            if isinstance(op, PutState) and op.key.startswith(prefix):
                out.append((op.key, op.value))
            elif isinstance(op, DeleteState) and op.key.startswith(prefix):
                out.append((op.key, None))
        return out


def _failed(future: asyncio.Future[None]) -> bool:
    return future.cancelled() or future.exception() is not None
