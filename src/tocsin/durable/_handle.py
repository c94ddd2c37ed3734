# SPDX-License-Identifier: Apache-2.0
"""One durable identity: its stable PID, its activations, its alarm, its task writes.

The handle outlives activations. Its PID routes every message through :meth:`_deliver`,
which activates the actor on demand; while an activation is finishing its stop
(passivation), new messages wait here and start the next activation, so there is never
more than one activation of an identity at a time in a system.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Any, final

from .._deadlines import Deadline
from ..actor._cell import Cell
from ..actor._events import DeadLetterReason
from ..actor._pid import PID, new_incarnation
from ..actor._supervision import DEFAULT_SUPERVISOR
from ..actor._target import SendTarget
from ..errors import FencedError
from ..stores import DeleteState, Fence, Op, PutState, Store
from ._drain import DrainTurn
from ._storage import MISSING, Storage

#: Seconds ahead the store is polled for identities with due tasks; a passivated
#: identity keeps its alarm in memory only when it is due within this window.
LOOKAHEAD = 300.0

if TYPE_CHECKING:
    from ..actor._reply import Reply
    from ._actor import DurableActor
    from ._run import Budget
    from ._runtime import DurableRuntime

__all__ = ["LOOKAHEAD", "DurableHandle"]

_log = logging.getLogger("tocsin.durable")


@final
class DurableHandle(SendTarget):
    """The runtime side of one ``(kind, identity)`` (internal); the target of its PID.

    It owns the identity's control flow, in one direction: its PID's deliveries, its
    activations, its alarm, the drain turns the alarm queues (each :class:`DrainTurn`
    carries this handle), and every write of the identity (:meth:`write` /
    :meth:`commit`, the one write path).
    """

    def __init__(
        self,
        durable: DurableRuntime,
        cls: type[DurableActor],
        identity: str,
        passivate_after: float | None,
    ) -> None:
        self.durable = durable
        self.runtime = durable.runtime
        self.cls = cls
        self.kind: str = cls.kind
        self.identity = identity
        self.store: Store = durable.store
        self.path = f"/durable/{self.kind}/{identity}"
        self.pid = PID(self.runtime.address, self.path, new_incarnation(), self)
        self.passivate_after = passivate_after
        self.cell: Cell | None = None
        self.pending: list[tuple[Any, Any, Reply | None]] = []
        self.starting: asyncio.Task[None] | None = None
        self.alarm = _Alarm(self)
        self.alarm_due: float | None = None  # wall epoch the alarm is armed for
        self.drain_queued = False
        self.running_id: str | None = None
        #: The budget of the task run suspended in this actor's turn, if any.
        self.budget: Budget | None = None
        self.touched: set[str] = set()
        self.tx: list[Op] | None = None
        self.storage = Storage(self)
        #: Cluster mode: the ownership epoch of the running activation (the fencing
        #: token its writes carry); ``None`` outside cluster mode or while not owned.
        self.epoch: int | None = None

    # -- the PID's target --------------------------------------------------------------

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        runtime = self.runtime
        if not runtime.running or self.durable.stopping:
            runtime.undeliverable(message, sender, self.pid, DeadLetterReason.STOPPED, reply)
            return False
        cell = self.cell
        if cell is not None and cell.alive():
            return cell.deliver(message, sender, reply)
        self.pending.append((message, sender, reply))
        if cell is None:
            self.activate()
        return True

    def alive(self) -> bool:
        return self.runtime.running

    async def stop(self) -> None:
        if self.starting is not None:
            await asyncio.shield(self.starting)
        if self.cell is not None:
            await self.cell.stop()

    def request_stop(self) -> None:
        if self.cell is not None:
            self.cell.request_stop()

    def reinstate(self) -> None:
        if self.cell is not None:
            self.cell.reinstate()
            self.ring()  # an alarm that rang while suspended was refused: drain now

    # -- activation --------------------------------------------------------------------

    def build(self) -> DurableActor:
        actor = self.cls()
        actor.kind = self.kind
        actor.identity = self.identity
        actor.storage = self.storage
        actor._handle = self
        return actor

    def activate(self) -> asyncio.Task[None]:
        """Start an activation (idempotent while one is starting or running).

        In cluster mode the identity is claimed first (``DurableRuntime.gate``): the
        activation starts only with this node's epoch; if another node owns it, the
        waiting messages are forwarded there and nothing starts here.
        """
        if self.starting is not None:
            return self.starting
        if self.durable.gate is not None and self.epoch is None:
            self.runtime.busy += 1
            self.starting = self.runtime.loop.create_task(self._claim())
            return self.starting
        return self._activate()

    async def _claim(self) -> None:
        from ._drain import DrainTurn

        gate = self.durable.gate
        assert gate is not None
        claim = None
        try:
            try:
                claim = await gate.claim(self.kind, self.identity)
                if claim.epoch is not None:
                    # The new owner's fence goes in alone, before the activation reads
                    # anything: from here on no older owner's write can land.
                    await self.store.apply([Fence(self.kind, self.identity, claim.epoch)])
            except FencedError as exc:
                gate.fenced(self.kind, self.identity)
                _log.warning("durable %s: a newer owner holds it: %s", self.path, exc)
                claim = None
            except Exception as exc:  # unknown outcome: nothing starts; a retry re-reads
                _log.warning("durable %s: claiming it failed: %s", self.path, exc)
                claim = None
        finally:
            self.starting = None
            self.runtime.busy_done()
        if claim is not None and claim.epoch is not None:
            if self.runtime.running and not self.durable.stopping and self.cell is None:
                self.epoch = claim.epoch
                await asyncio.shield(self._activate())
                return
            claim = None  # the system began stopping meanwhile: nothing starts here
        pending, self.pending = self.pending, []
        owner = None if claim is None else claim.owner
        for message, sender, reply in pending:
            if isinstance(message, DrainTurn):
                self.drain_queued = False  # the owner's own alarm runs its tasks
                continue
            if owner is not None:
                owner._target.deliver(message, sender, reply)
            else:
                self.runtime.undeliverable(
                    message, sender, self.pid, DeadLetterReason.STOPPED, reply
                )

    def lose_ownership(self) -> None:
        """This node no longer owns the identity (lease lost): forget the epoch and stop
        the activation; nothing it does from here can be written under its old epoch."""
        self.epoch = None
        self.rearm(None)
        self.request_stop()
        if self.budget is not None:
            self.budget.interrupt()

    def _activate(self) -> asyncio.Task[None]:
        runtime = self.runtime
        supervisor = getattr(self.cls, "supervisor", None) or DEFAULT_SUPERVISOR
        cell = Cell(
            runtime, self.path, self.build, None, supervisor, self.passivate_after, self.pid
        )
        runtime.registry[self.path] = cell
        self.durable.cells[cell] = self
        self.cell = cell
        pending, self.pending = self.pending, []
        for message, sender, reply in pending:
            cell.deliver(message, sender, reply)  # queued: the cell is still STARTING
        runtime.busy += 1
        self.starting = runtime.loop.create_task(self._start(cell))
        return self.starting

    async def _start(self, cell: Cell) -> None:
        try:
            async with self.durable.activation_slots:
                if await cell.first_start() is not None:
                    return  # did not come up; it has fully stopped (cell_stopped ran)
                if self.drain_queued:
                    # Activated by its alarm: the queued drain reads what is due and
                    # re-arms from the store when it ends. Reading the alarm here too was
                    # a store call per activation, and arming it rang a second, empty
                    # drain (two more calls): #24, 1,000 identities coming due at once.
                    return
                due = await self.store.next_due(self.kind, self.identity)
                if due is not None:
                    self.arm(due)
        finally:
            self.starting = None
            self.runtime.busy_done()

    def cell_stopped(self, cell: Cell) -> None:
        if self.cell is cell:
            self.cell = None
            self.drain_queued = False
            # Cluster mode: the next activation claims again (the owner may have changed).
            self.epoch = None
            if self.pending and self.runtime.running and not self.durable.stopping:
                self.activate()
                return
            # Passivated: an alarm beyond the look-ahead goes back to living in the store
            # only; the periodic poll re-arms it when it comes near.
            due = self.alarm_due
            if due is not None and due > self.runtime.clock.wall() + LOOKAHEAD:
                self.rearm(None)

    # -- alarm -------------------------------------------------------------------------

    def arm(self, due: float) -> None:
        """Make sure the alarm rings no later than ``due`` (wall epoch seconds)."""
        if self.alarm.armed and self.alarm_due is not None and self.alarm_due <= due:
            return
        runtime = self.runtime
        clock = runtime.clock
        self.alarm_due = due
        runtime.deadlines.add(clock.monotonic() + max(0.0, due - clock.wall()), self.alarm)

    def rearm(self, due: float | None) -> None:
        """Set the alarm to exactly ``due`` (or disarm it)."""
        self.runtime.deadlines.remove(self.alarm)
        self.alarm_due = None
        if due is not None:
            self.arm(due)

    def ring(self) -> None:
        """The alarm fired: run the due tasks inside the actor's turn (activating it)."""
        self.alarm_due = None
        if self.drain_queued or not self.runtime.running or self.durable.stopping:
            return
        self.drain_queued = True
        if not self.deliver(DrainTurn(self), None, None):
            # Refused (suspended): without this reset no later alarm would ever drain.
            self.drain_queued = False

    # -- writes ------------------------------------------------------------------------

    async def write(self, ops: Sequence[Op]) -> None:
        """Apply writes now, or buffer them in the open transaction."""
        if self.tx is not None:
            self.tx.extend(ops)
        else:
            await self.commit(ops)

    def commit(self, ops: Sequence[Op]) -> Awaitable[None]:
        """The one write path of this identity: task writes, completions and
        ``transaction()`` commits all end here, so a fencing epoch (cluster ownership)
        is checked in one place. Returns the store's awaitable itself (no coroutine
        frame of its own on the path of every write) outside cluster mode.

        Cluster mode: the batch begins with this activation's :class:`Fence`; a store
        that holds a newer epoch refuses it whole (:class:`FencedError`), and the
        activation stops. An activation that no longer owns the identity (its lease was
        lost) is refused without asking the store.
        """
        if self.durable.gate is None:
            return self.store.apply(ops)
        return self._fenced_commit(ops)

    async def _fenced_commit(self, ops: Sequence[Op]) -> None:
        gate = self.durable.gate
        assert gate is not None
        epoch = self.epoch
        if epoch is None:
            gate.fenced(self.kind, self.identity)
            raise FencedError(
                f"durable {self.path}: this node no longer owns it (its cluster lease was "
                "lost); the write was not made"
            )
        try:
            await self.store.apply([Fence(self.kind, self.identity, epoch), *ops])
        except FencedError:
            gate.fenced(self.kind, self.identity)
            if self.epoch == epoch:
                _log.warning(
                    "durable %s: write refused, a newer owner holds epoch > %d; stopping this "
                    "activation",
                    self.path,
                    epoch,
                )
                self.lose_ownership()
            raise

    def buffered_state(self, key: str) -> Any:
        """A buffered value (bytes), ``None`` for a buffered delete, else MISSING."""
        if self.tx is None:
            return MISSING
        for op in reversed(self.tx):
            if isinstance(op, PutState) and op.key == key:
                return op.value
            if isinstance(op, DeleteState) and op.key == key:
                return None
        return MISSING

    def buffered_items(self, prefix: str) -> list[tuple[str, bytes | None]]:
        if self.tx is None:
            return []
        out: list[tuple[str, bytes | None]] = []
        for op in self.tx:
            if isinstance(op, PutState) and op.key.startswith(prefix):
                out.append((op.key, op.value))
            elif isinstance(op, DeleteState) and op.key.startswith(prefix):
                out.append((op.key, None))
        return out


@final
class _Alarm(Deadline):
    """A durable identity's single alarm in the shared heap."""

    __slots__ = ("handle",)

    def __init__(self, handle: DurableHandle) -> None:
        super().__init__()
        self.handle = handle

    def fire(self, now: float, deadline: float) -> None:
        self.handle.ring()
