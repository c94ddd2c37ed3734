# SPDX-License-Identifier: Apache-2.0
"""What a store is: rows, write operations, and the :class:`Store` protocol.

Stores know nothing about actors or codecs: payloads and state values arrive as ``bytes``
already encoded by :mod:`tocsin.durable` (never pickled), times are epoch seconds (UTC).
Every write goes through :meth:`Store.apply`, an atomic batch: recording intent in
``storage`` and queueing a task commit together or not at all, and many task changes
cost one commit.

Prior art: Proto.Actor's ``persistence_provider.go`` (small provider interface, in-memory
provider first), procrastinate's connector and ``InMemoryConnector``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final, Literal, Protocol, runtime_checkable

import msgspec

__all__ = [
    "HISTORY_LIMIT",
    "DeleteHistory",
    "DeleteState",
    "DeleteTask",
    "DueActor",
    "DueWork",
    "Fence",
    "Op",
    "PauseTask",
    "PutState",
    "RecordTick",
    "Store",
    "TaskRow",
    "TaskState",
    "TickRow",
    "UpsertTask",
]

TaskState = Literal["pending", "running", "parked"]


class TaskRow(msgspec.Struct, frozen=True):
    """One persistent task of one durable actor, as stored.

    ``(kind, identity, id)`` is the primary key. ``due`` is when it next runs (epoch
    seconds), ``every`` its interval for recurring tasks, ``attempts`` the failed runs
    since the last success, ``timeout`` its run budget in seconds. A cron task has its
    expression in ``cron`` and its IANA zone in ``timezone`` (``None``: the zone of the
    system that runs it); ``every`` is then ``None``. ``policy`` is the task's schedule
    policies and the cursor they keep (DESIGN.md "Schedule policies"), as codec bytes
    encoded by :mod:`tocsin.durable`; ``None`` (every row written before policies existed,
    and every task that uses the defaults): today's behaviour.

    ``paused_at`` (epoch seconds; ``None``: not paused), ``pause_note`` and ``paused_by``
    are the task's pause, operational state beside its spec: only :class:`PauseTask`
    writes them. An :class:`UpsertTask` of an existing row keeps them (a re-registration,
    or a run's completion that read the row before an operator paused it, never undoes
    the pause); a new row takes the row's own (``None``).
    """

    kind: str
    identity: str
    id: str
    name: str
    payload: bytes
    due: float
    every: float | None
    attempts: int
    max_retries: int
    created_at: float
    state: TaskState = "pending"
    last_error: str | None = None
    timeout: float | None = None
    cron: str | None = None
    timezone: str | None = None
    policy: bytes | None = None
    paused_at: float | None = None
    pause_note: str | None = None
    paused_by: str | None = None


class PauseTask(msgspec.Struct, frozen=True):
    """Pause task ``(kind, identity, id)`` since ``paused_at`` (epoch seconds), with an
    operator's ``note`` and who paused it (``by``), or resume it (``paused_at=None``:
    the three are cleared). Nothing else of the row changes; no row: nothing happens."""

    kind: str
    identity: str
    id: str
    paused_at: float | None
    note: str | None = None
    by: str | None = None


class PutState(msgspec.Struct, frozen=True):
    """Set ``storage[key] = value`` of one actor."""

    kind: str
    identity: str
    key: str
    value: bytes


class DeleteState(msgspec.Struct, frozen=True):
    """Delete ``storage[key]`` of one actor (no error if absent)."""

    kind: str
    identity: str
    key: str


class UpsertTask(msgspec.Struct, frozen=True):
    """Insert or replace a task row (same primary key)."""

    row: TaskRow


class DeleteTask(msgspec.Struct, frozen=True):
    """Delete one task (no error if absent)."""

    kind: str
    identity: str
    id: str


class Fence(msgspec.Struct, frozen=True):
    """Cluster mode: the batch is written by the owner of ``(kind, identity)`` at
    ``epoch``. One upsert into ``tocsin_fences``, placed first in the batch; the store
    refuses it (:class:`~tocsin.errors.FencedError`, the whole batch with it) when a
    newer epoch was written before, or the same epoch by another ``owner`` (node and
    incarnation; issue 20: two owners given one epoch by a coordinator that lost its
    data): a zombie owner changes nothing. A row fenced before owners were recorded
    (owner ``""``) takes the first owner that writes its epoch."""

    kind: str
    identity: str
    epoch: int
    owner: str = ""


#: Entries of history each task keeps (the oldest go first): DESIGN.md's ring of 64.
HISTORY_LIMIT: Final = 64


class RecordTick(msgspec.Struct, frozen=True):
    """Append to the history of task ``(kind, identity, id)`` what became of ``instant``
    (issue 23): ``outcome`` an ``Outcome`` value (``delivered``, ``missed``, ...),
    ``detail`` more about it (text, or ``None``), ``at`` when, ``node`` who recorded it.
    Each task keeps its :data:`HISTORY_LIMIT` most recent entries."""

    kind: str
    identity: str
    id: str
    instant: float
    at: float
    outcome: str
    detail: str | None
    node: str


class DeleteHistory(msgspec.Struct, frozen=True):
    """Forget the history of one task (its task was cancelled)."""

    kind: str
    identity: str
    id: str


#: One history entry as read back (oldest first); the fields of :class:`RecordTick`.
TickRow = RecordTick

Op = (
    PutState
    | DeleteState
    | UpsertTask
    | DeleteTask
    | Fence
    | RecordTick
    | DeleteHistory
    | PauseTask
)


class DueActor(msgspec.Struct, frozen=True):
    """An actor with pending work: its earliest pending due time."""

    kind: str
    identity: str
    due: float


class DueWork(msgspec.Struct, frozen=True):
    """What one drain of an actor reads (``due_work``, an optional store method): its
    pending tasks due at or before ``before`` (``rows``, as ``due_tasks`` returns them) and
    ``later``, the earliest ``due`` among its pending tasks due after ``before`` (``None``:
    none). A drain arms its alarm from these and from its own writes, without reading
    ``next_due`` again after its commit."""

    rows: list[TaskRow]
    later: float | None


@runtime_checkable
class Store(Protocol):
    """A durable task and state store. All methods are coroutines and never block the loop.

    Guarantees every implementation gives (the contract suite in ``tests/stores`` checks
    them on memory, SQLite and PostgreSQL alike):

    * :meth:`apply` is atomic: all operations take effect, or none do (and it raises
      :class:`~tocsin.errors.StoreError`). Operations apply in order.
    * Reads see every write whose ``apply`` has returned.
    * ``next_due`` and ``due_actors`` only consider ``pending`` tasks (never ``parked``).
    * Ownership: ``open(exclusive=True)`` takes a lock that at most one open store holds
      at a time, across processes and hosts sharing the data, and that dies with its
      holder; a second one raises :class:`~tocsin.errors.StoreError` naming the holder
      (host, pid). ``open()`` (``exclusive=False``) takes none: operators' tools and
      cluster nodes. :meth:`close` releases it.
    * Changes made by another process (``tocsin tasks retry``) reach :meth:`watch`
      callbacks: pushed by the store (PostgreSQL ``LISTEN``, memory), or found by
      :meth:`check_changes`, which the owner calls about once a second (SQLite
      ``PRAGMA data_version``). A callback may also run for no outside change (a
      false alarm costs one look at the store); it never misses one made while watched.
    """

    url: str

    async def open(self, *, exclusive: bool = False) -> None:
        """Connect and create the schema if needed (idempotent).

        Args:
            exclusive: also take ownership (see the class docstring); a store that
                already holds it raises :class:`~tocsin.errors.StoreError`. On any error
                nothing is left open or held.
        """
        ...

    async def watch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` on the loop thread after another process changed tasks.

        Returns a function that ends the watch (idempotent). The store must be open.
        """
        ...

    def check_changes(self) -> None:
        """Cheaply look for outside changes and call the watchers if there were any.

        Never blocks (stores that push make it a no-op); call it about once a second.
        """
        ...

    async def announce(self) -> None:
        """Tell systems watching this store that tasks changed (call after a write made
        outside them, as ``tocsin tasks retry`` does). Stores whose watchers find
        changes by themselves make it a no-op."""
        ...

    async def close(self) -> None:
        """Release connections (idempotent)."""
        ...

    async def swap_cluster(self, expected: str | None, new: str | None) -> str | None:
        """Compare-and-set the cluster this store belongs to (its coordinator's
        fingerprint, see ``docs/cluster.md``), atomically across processes.

        Reads the recorded fingerprint; when it equals ``expected`` (``None``: nothing
        recorded), replaces it with ``new`` (``None`` deletes it). ``swap_cluster(None,
        None)`` is a pure read. Returns the fingerprint recorded *before* the call, so the
        swap happened exactly when the result equals ``expected``.
        """
        ...

    async def apply(self, ops: Sequence[Op]) -> None:
        """Apply a batch of writes atomically."""
        ...

    async def get_state(self, kind: str, identity: str, key: str) -> bytes | None: ...

    async def list_state(
        self, kind: str, identity: str, prefix: str = ""
    ) -> list[tuple[str, bytes]]:
        """Keys starting with ``prefix`` and their values, sorted by key."""
        ...

    async def get_task(self, kind: str, identity: str, task_id: str) -> TaskRow | None: ...

    async def list_tasks(
        self,
        kind: str | None = None,
        identity: str | None = None,
        state: TaskState | None = None,
    ) -> list[TaskRow]:
        """Tasks matching the filters, ordered by ``(due, id)``."""
        ...

    async def find_tasks(self, task_id: str) -> list[TaskRow]:
        """Every task with this id, across actors (for ``tocsin tasks retry ID``)."""
        ...

    async def due_tasks(self, kind: str, identity: str, before: float, limit: int) -> list[TaskRow]:
        """This actor's pending tasks due at or before ``before``, by ``(due, id)``, at most
        ``limit`` (what one drain turn runs)."""
        ...

    async def next_due(self, kind: str, identity: str) -> float | None:
        """The earliest ``due`` among this actor's pending tasks (its alarm), or ``None``."""
        ...

    async def due_actors(self, before: float, limit: int) -> list[DueActor]:
        """Actors with a pending task due at or before ``before``, earliest first."""
        ...

    async def task_history(self, kind: str, identity: str, task_id: str) -> list[TickRow]:
        """The history of one task, oldest first, at most :data:`HISTORY_LIMIT` entries
        (empty for a task without one, or an unknown task)."""
        ...

    async def fence_epoch(self, kind: str, identity: str) -> int:
        """The highest ownership epoch a :class:`Fence` ever wrote for ``(kind,
        identity)`` (0 if none): a cluster node claims above it, so an emptied
        coordinator (its directory starting again at epoch 1) never wedges an identity
        behind the store's fence."""
        ...
