# SPDX-License-Identifier: Apache-2.0
"""The writes of one durable identity in flight: the open ``transaction()`` (its
buffered ops, which reads inside it see) and the tasks replaced or cancelled since the
drain began (``touched``: the drain leaves their rows alone). Only these methods write
them; the drain, the tasks and the storage ask through them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, final

from ..stores import DeleteState, Op, PutState

__all__ = ["MISSING", "Writes"]

_NONE: Final[frozenset[str]] = frozenset()

#: What :meth:`Writes.buffered_state` returns for a key with no buffered write.
MISSING: Final[Any] = object()


@final
class Writes:
    """The open transaction and the touched tasks of one identity (internal)."""

    __slots__ = ("touched", "tx")

    def __init__(self) -> None:
        #: Ids of tasks replaced or cancelled since the current drain began: the shared
        #: empty frozenset until the first one (most identities never touch a task
        #: during a drain; a set each would be one more object for every full GC).
        self.touched: set[str] | frozenset[str] = _NONE
        #: The open transaction's buffered ops (``None``: no transaction).
        self.tx: list[Op] | None = None

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
