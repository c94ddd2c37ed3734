# SPDX-License-Identifier: Apache-2.0
"""``tocsin.Client``: a process that produces work without running any.

A web worker (uvicorn, gunicorn, Django) holds a ``Client`` on the durable store the
workers use; ``await client.jobs.enqueue(send_invoice, 42)`` writes the run to the store
and tells the workers (PostgreSQL ``NOTIFY``: they start it at once; SQLite: their change
watch sees the file change within about 10 ms; a cluster: within ``poll_interval``).
The client starts no actor, no timer and no listener, takes no node name and no store
ownership: any number of clients share a store with the workers that run the jobs.

Prior art: arq's ``ArqRedis.enqueue_job`` and Celery's ``send_task`` from a web process,
procrastinate's ``App`` opened without a worker.
"""

from __future__ import annotations

import uuid
import zlib
from typing import Any, final

from ._resource import AsyncResource
from .actor import PID, TickOutcome
from .clock import Clock, SystemClock
from .cluster import Cluster, Coordinator
from .cluster._spi import open_coordinator
from .durable import DurableActor
from .durable._spi import tick_outcome
from .errors import ActorSystemNotStartedError, NodeUnreachableError, RemotingDisabledError
from .jobs import Jobs
from .remote import Remoting
from .schedules import Schedules
from .stores import Store, resolve_store
from .system import ActorSystem

__all__ = ["Client"]


@final
class Client(AsyncResource):
    """Enqueue jobs, read durable history and reach durable identities, from a process
    that runs nothing.

    Use it as an async context manager (``async with Client("postgresql://...") as
    client:``), or call :meth:`open` and :meth:`close` (a web framework's lifespan).

    Args:
        store: the workers' durable store: a URL (``sqlite:///app.db``,
            ``postgresql://...``) or a :class:`~tocsin.stores.Store`.
        cluster: the workers' :class:`~tocsin.Cluster`, when they run as one: its
            coordinator says where identities live (:meth:`durable`); enqueueing needs
            only the store. The client never joins it.
        remoting: this process's :class:`~tocsin.Remoting` (the workers' secret; port 0
            is fine), with ``cluster``: the client's asks and their replies go over it.
        clock: the clock due times are read from (default: the system clock; a
            ``ManualClock`` in tests).

    Raises:
        InvalidStoreURLError: a malformed store URL (here, not at :meth:`open`).
        TypeError: ``store`` is neither a URL nor a Store, or a wrong option type.
    """

    __slots__ = (
        "_clock",
        "_cluster",
        "_coordinator",
        "_jobs",
        "_node",
        "_open",
        "_remoting",
        "_store",
    )

    def __init__(
        self,
        store: str | Store,
        *,
        cluster: Cluster | None = None,
        remoting: Remoting | None = None,
        clock: Clock | None = None,
    ) -> None:
        resolved = resolve_store(store)
        if resolved is None:
            raise TypeError("`store` is required: the workers' store URL or a Store")
        if cluster is not None and not isinstance(cluster, Cluster):
            raise TypeError(f"`cluster` must be a tocsin.Cluster or None, got {cluster!r}")
        if remoting is not None and not isinstance(remoting, Remoting):
            raise TypeError(f"`remoting` must be a tocsin.Remoting or None, got {remoting!r}")
        if clock is not None and not isinstance(clock, Clock):
            raise TypeError(f"`clock` must be a tocsin.Clock or None, got {clock!r}")
        self._store = resolved
        self._cluster = cluster
        self._remoting = remoting
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._open = False
        self._jobs = Jobs(_ClientJobs(self))
        #: With ``cluster=``: the coordinator, read to find where identities live.
        self._coordinator: Coordinator | None = None
        #: With ``remoting=``: a system that only sends (no store, no cluster membership,
        #: no jobs): the replies of this client's asks come back to its listener.
        self._node: ActorSystem | None = None

    @property
    def store(self) -> Store:
        """The store this client writes to."""
        return self._store

    @property
    def jobs(self) -> Jobs:
        """Enqueue and steer runs of jobs (``client.jobs.enqueue(f, ...)``); the workers
        that imported the job run them."""
        return self._jobs

    @property
    def schedules(self) -> Schedules:
        """Stored schedules (``docs/schedules.md``), answered from the store: the verbs of
        ``system.schedules``. Nothing runs in the client: ``trigger`` and ``backfill``
        store requests that the first worker running schedules claims and runs.

        Raises:
            ActorSystemNotStartedError: the client is not open.
        """
        store: Any = self.opened_store("use stored schedules")
        return Schedules(store, self._clock, "client", None)

    async def open(self) -> None:
        """Connect to the store (idempotent). Takes no ownership: workers keep running.

        Raises:
            StoreError: the store cannot be opened.
        """
        if self._open:
            return
        await self._store.open(exclusive=False)
        try:
            if self._cluster is not None:
                coordinator = self._cluster.coordinator
                if isinstance(coordinator, str):
                    coordinator = open_coordinator(coordinator, clock=self._clock)
                await coordinator.open()
                self._coordinator = coordinator
            if self._remoting is not None:
                node = ActorSystem(f"client-{uuid.uuid4().hex[:12]}", clock=self._clock,
                                   remoting=self._remoting)  # fmt: skip
                await node.start()
                self._node = node
        except BaseException:
            await self._release()
            raise
        self._open = True

    async def close(self) -> None:
        """Release the store's connections (idempotent)."""
        if self._open:
            self._open = False
            await self._release()

    async def _release(self) -> None:
        node, self._node = self._node, None
        coordinator, self._coordinator = self._coordinator, None
        try:
            if node is not None:
                await node.stop()
        finally:
            try:
                # Closed only if made here from a URL; a Coordinator given is the caller's.
                cluster = self._cluster
                made_here = cluster is not None and isinstance(cluster.coordinator, str)
                if coordinator is not None and made_here:
                    await coordinator.close()
            finally:
                await self._store.close()

    # `async with Client(...) as client:` opens it and closes it (AsyncResource).
    async def _enter(self) -> None:
        await self.open()

    async def _exit(self) -> None:
        await self.close()

    def opened_store(self, what: str) -> Store:
        """The store, once open (``ActorSystemNotStartedError`` naming ``what`` before)."""
        if not self._open:
            raise ActorSystemNotStartedError(
                f"cannot {what}: the Client is not open (use `async with Client(...)` or "
                "`await client.open()`)"
            )
        return self._store

    def wall(self) -> float:
        """Now, epoch seconds, from the client's clock."""
        return self._clock.wall()

    async def durable(self, kind: type[DurableActor], identity: str) -> PID:
        """A PID reaching durable identity ``identity`` of ``kind`` wherever it runs.

        Needs ``cluster=`` (the workers' coordinator: where identities live) and
        ``remoting=`` (the workers' secret; this client listens for its replies). The
        PID names the identity's owner, or a live node that places it if it has none;
        that node forwards each message to the owner found at that moment, so the PID
        keeps working across failovers and moves. Nothing is activated here.

        Raises:
            RemotingDisabledError: the client has no ``cluster=`` or no ``remoting=``.
            NodeUnreachableError: no live node in the cluster.
            CoordinatorUnavailableError: the coordinator did not answer.
        """
        if not (isinstance(kind, type) and issubclass(kind, DurableActor)):
            raise TypeError(f"`kind` must be a DurableActor subclass, got {kind!r}")
        if not isinstance(identity, str) or not identity:
            raise ValueError(f"`identity` must be a non-empty str, got {identity!r}")
        self.opened_store("reach a durable identity")
        coordinator, node = self._coordinator, self._node
        if coordinator is None or node is None:
            raise RemotingDisabledError(
                "client.durable() reaches identities on the workers: give the Client the "
                "workers' cluster= (its coordinator says where identities live) and a "
                "remoting= with their secret; enqueueing jobs needs neither"
            )
        owner = await coordinator.owner(kind.kind, identity)
        _, leases = await coordinator.leases()
        alive = {lease.node: lease for lease in leases if lease.alive}
        if not alive:
            raise NodeUnreachableError(
                f"durable {kind.kind}/{identity}: no live node in the cluster to reach it"
            )
        if owner is not None and owner.alive and owner.node in alive:
            address = alive[owner.node].address
        else:  # unplaced (or its owner gone): a live node places it on first message
            names = sorted(alive)
            address = alive[names[zlib.crc32(identity.encode()) % len(names)]].address
        return await node.actor_of(f"{address}/durable/{kind.kind}/{identity}")

    async def task_history(
        self, kind: type[DurableActor] | str, identity: str, task_id: str
    ) -> list[TickOutcome]:
        """What became of a durable task's recent instants, oldest first (read from the
        store, never waiting behind a running task). Empty for an unknown task."""
        name = kind.kind if isinstance(kind, type) and issubclass(kind, DurableActor) else kind
        if not isinstance(name, str) or not name:
            raise TypeError(f"`kind` must be a DurableActor subclass or its kind, got {kind!r}")
        rows = await self.opened_store("read a task history").task_history(name, identity, task_id)
        return [tick_outcome(row) for row in rows]

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<tocsin.Client {self._store.url!r} {state}>"


@final
class _ClientJobs:
    """``client.jobs`` writes to the client's store and tells the store's watchers."""

    __slots__ = ("client",)

    def __init__(self, client: Client) -> None:
        self.client = client

    async def store(self) -> Store:
        return self.client.opened_store("enqueue a job")

    def wall(self) -> float:
        return self.client.wall()

    async def written(self, kind: str, identity: str, due: float) -> None:
        del kind, identity, due  # a store's announcement is not per identity
        # PostgreSQL: NOTIFY, the workers poll at once; memory: its watchers are called;
        # SQLite: a no-op, the workers' change check sees the file change.
        await self.client.store.announce()
