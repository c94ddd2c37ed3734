# SPDX-License-Identifier: Apache-2.0
"""The writes of one durable identity in flight: the open ``transaction()`` (its
buffered ops, which reads inside it see), the task changes that passed the output gate
and are not yet known committed (``gated``: see :mod:`._gate`), and the tasks replaced
or cancelled since the drain began (``touched``: the drain leaves their rows alone).
Only these methods write them; the drain, the tasks and the storage ask through them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, final

from ..stores import DeleteState, DeleteTask, Op, PauseTask, PutState, UpsertTask

__all__ = ["MISSING", "UNSURE", "Gated", "Writes"]

_NONE: Final[frozenset[str]] = frozenset()

#: A gated batch: the future of its commit and its ops.
Gated = tuple[asyncio.Future[None], list[Op]]

#: What :meth:`Writes.buffered_state` returns for a key with no buffered write (and
#: :meth:`Writes.gated_task` for a task with no gated change in flight).
MISSING: Final[Any] = object()
#: What :meth:`Writes.gated_task` returns for a task whose gated change in flight only
#: the store can apply (a pause): wait for it, then read the store.
UNSURE: Final[Any] = object()


@final
class Writes:
    """The open transaction and the touched tasks of one identity (internal)."""

    __slots__ = ("batch_flush", "gated", "touched", "tx")

    def __init__(self) -> None:
        #: Ids of tasks replaced or cancelled since the current drain began: the shared
        #: empty frozenset until the first one (most identities never touch a task
        #: during a drain; a set each would be one more object for every full GC).
        self.touched: set[str] | frozenset[str] = _NONE
        #: The open transaction's buffered ops (``None``: no transaction).
        self.tx: list[Op] | None = None
        #: The batches of task changes sent to a group commit and not yet taken by
        #: :meth:`take_gated`: each its future (resolved once committed, or with the
        #: store's error) and its ops. ``None`` while there is none: an identity keeps
        #: nothing once its changes are committed.
        self.gated: list[Gated] | None = None
        #: The group commit the last gated batch (``gated[-1]``) went to: until that
        #: commit takes it, more changes of this turn join it (one future per identity
        #: and loop turn, not one per change). Its future is not done before then, so
        #: no filtering of ``gated`` removes it.
        self.batch_flush = -1

    # -- the drain's view of task changes ------------------------------------------------

    def touch(self, ids: Iterable[str]) -> None:
        """Tasks replaced or cancelled now: a drain in progress leaves their rows alone."""
        touched = self.touched
        if isinstance(touched, set):
            touched.update(ids)
        else:
            self.touched = set(ids)

    def drain_began(self) -> None:
        """A drain starts: only what changes from now on is its concern. (The drain
        reads ``touched`` anew between runs: it may be replaced, never held.)"""
        if self.touched:
            self.touched = _NONE

    # -- the output gate -------------------------------------------------------------------

    def gate_change(
        self,
        ops: Sequence[Op],
        touched: Iterable[str],
        flush: int,
        commit_soon: Callable[[list[Op]], asyncio.Future[None]],
    ) -> asyncio.Future[None] | None:
        """A task change through the output gate, as one step: the tasks it replaced or
        cancelled are ``touched`` (see :meth:`touch`), and ``ops`` join the batch still
        waiting for group commit number ``flush`` (one future per identity and loop
        turn, not one per change), else go to ``commit_soon`` as a batch of their own,
        whose future is returned (``None`` when they joined one): the caller watches it.
        Batches already committed are forgotten here; failed ones stay until a reply or
        a later store call of the identity reports them."""
        if touched:
            self.touch(touched)
        gated = self.gated
        if gated and self.batch_flush == flush:
            gated[-1][1].extend(ops)
            return None
        if gated is None:
            gated = self.gated = []
        elif gated and gated[0][0].done():
            gated[:] = [g for g in gated if not g[0].done() or _failed(g[0])]
        batch = list(ops)
        # The runtime's group commit is called last: the step is over once it returns.
        done = commit_soon(batch)
        gated.append((done, batch))
        self.batch_flush = flush
        return done

    def committed(self) -> None:
        """A gated batch was committed: once all are, forget them."""
        gated = self.gated
        if gated and not any(not g[0].done() or _failed(g[0]) for g in gated):
            self.gated = None

    def gated_task(self, task_id: str) -> Any:
        """Task ``task_id`` as its gated change in flight leaves it: the row, ``None``
        (deleted), :data:`UNSURE`, or :data:`MISSING` when none is in flight (the store
        has the latest: a committed change is there, a failed one never will be)."""
        for done, ops in reversed(self.gated or ()):
            if done.done():
                continue
            for op in reversed(ops):
                # isinstance, not a class test: mypy narrows the union of ops by it.
                if isinstance(op, UpsertTask):
                    if op.row.id == task_id:
                        return op.row
                elif isinstance(op, DeleteTask):
                    if op.id == task_id:
                        return None
                elif isinstance(op, PauseTask) and op.id == task_id:
                    return UNSURE
        return MISSING

    def unsettled(self) -> list[asyncio.Future[None]]:
        """The futures of the gated batches not known committed (in flight, or failed);
        the committed ones are forgotten."""
        gated = self.gated
        if not gated:
            return []
        gated[:] = [g for g in gated if not g[0].done() or _failed(g[0])]
        return [g[0] for g in gated]

    def take_gated(self) -> list[asyncio.Future[None]]:
        """The futures of the gated batches to wait for (forgotten here: the caller
        waits for them)."""
        gated = self.gated or []
        self.gated = None
        return [g[0] for g in gated]

    def forget(self, reported: Iterable[asyncio.Future[None]]) -> None:
        """Gated batches whose outcome a reply has reported (committed, or its error)."""
        gated = self.gated
        if gated:
            done = set(reported)
            gated[:] = [g for g in gated if g[0] not in done]

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
