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
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, final

from .._deadlines import Deadline
from ..actor._spi import (
    DEFAULT_SUPERVISOR,
    PID,
    Cell,
    DeadLetterReason,
    Directive,
    NoSender,
    SendTarget,
    Supervisor,
    Tick,
    new_cell,
    new_incarnation,
    target_of,
)
from ..errors import (
    CoordinatorError,
    CoordinatorUnavailableError,
    FencedError,
    NotOwnerError,
)
from ..stores import DeleteState, Fence, Op, PutState, Store, TaskRow
from ._drain import DrainTurn
from ._kinds import keeps_default
from ._outage import retry_delay
from ._storage import MISSING, Storage
from ._tasks import Tasks

#: Seconds ahead the store is polled for identities with due tasks; a passivated
#: identity keeps its alarm in memory only when it is due within this window.
LOOKAHEAD = 300.0

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..actor._spi import Reply
    from ._actor import DurableActor
    from ._ownership import Claim, OwnershipGate
    from ._plan import Cursor
    from ._run import Budget, TaskActor
    from ._runtime import DurableRuntime

__all__ = ["LOOKAHEAD", "WAKE", "DurableHandle"]

#: Cluster mode: the message a node sends to an identity's owner when the identity's
#: alarm rang on a node that no longer owns it (after a hand-over): the owner activates
#: it, which arms its alarm. Intercepted by the handle, never seen by ``receive``.
WAKE = "\x00tocsin.durable.wake"

#: Claims an activation makes when the store keeps refusing its fence (each one lifts
#: the floor to one above what the store has fenced; only a race repeats it).
_FENCE_ATTEMPTS = 4

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
        #: The row and nominal instant of the task run in progress (``current_task``).
        self.running_row: TaskRow | None = None
        self.running_instant = 0.0
        self.running_origin: Cursor | None = None
        #: The budget of the task run suspended in this actor's turn, if any.
        self.budget: Budget | None = None
        self.touched: set[str] = set()
        self.tx: list[Op] | None = None
        self.storage = Storage(self)
        #: The identity's tasks, written through this handle (the actor's own calls).
        self.tasks = Tasks(self)
        #: Cluster mode: the ownership epoch of the running activation (the fencing
        #: token its writes carry); ``None`` outside cluster mode or while not owned.
        self.epoch: int | None = None
        #: Cluster mode: who holds that epoch (node and incarnation), fenced with it.
        self.holder = ""
        #: Cluster mode, rebalancing: the activation is stopping to be handed to another
        #: node; messages wait in ``pending`` until the directory says where it lives.
        self.moving = False
        #: Failed store or coordinator calls of this identity's alarm in a row (the next
        #: retry's backoff, issue 20).
        self.retries = 0

    def retry_later(self, exc: BaseException, during: str) -> None:
        """A store or coordinator call of this identity's alarm path failed: keep the
        alarm, armed again after a capped backoff (the outage is logged once, counted)."""
        self.durable.outage_of(exc).failed(exc, f"{during} of durable {self.path}")
        self._back_off()

    def _back_off(self) -> None:
        """Arm the alarm again after the next capped backoff delay."""
        durable = self.durable
        self.retries += 1
        if durable.stopping or not self.runtime.running:
            return
        self.rearm(self.runtime.clock.wall() + retry_delay(self.retries, durable.retry_cap))

    def calls_ok(self) -> None:
        """The alarm path's store calls succeeded: the backoff starts over."""
        if self.retries:
            self.retries = 0
        self.durable.store_outage.ok()

    # -- the PID's target --------------------------------------------------------------

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        runtime = self.runtime
        if not runtime.running or self.durable.stopping:
            runtime.undeliverable(message, sender, self.pid, DeadLetterReason.STOPPED, reply)
            return False
        cell = self.cell
        if message.__class__ is str and message == WAKE:
            # Another node forwarded a due-task alarm here (this node owns the identity
            # now): activate, and the activation arms the alarm from the store.
            if cell is None and not self.moving:
                self.activate()
            return True
        if cell is not None and cell.alive():
            return cell.deliver(message, sender, reply)
        self.pending.append((message, sender, reply))
        if cell is None and not self.moving:
            self.activate()
        return True

    def offer(self, message: Any, sender: Any, reply: Reply | None) -> asyncio.Future[None] | None:
        """``pid.send``: to the running activation's mailbox (waiting for room when it
        is bounded and full); else queued for the activation it starts, as ``deliver``."""
        cell = self.cell
        if (
            cell is not None
            and cell.alive()
            and self.runtime.running
            and not self.durable.stopping
            and not (message.__class__ is str and message == WAKE)  # the handle's own
        ):
            return cell.offer(message, sender, reply)
        return super().offer(message, sender, reply)

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

    def wall_now(self, actor: TaskActor) -> float:
        """``actor.now()`` as epoch seconds: the time of every scheduling decision."""
        if keeps_default(type(actor), "now"):
            # Not overridden: the clock's float, without a datetime built and taken apart
            # again on every queue/schedule (~1.5 µs).
            return self.runtime.clock.wall()
        return actor.now().timestamp()

    def build(self) -> DurableActor:
        actor = self.cls()
        actor.kind = self.kind
        actor.identity = self.identity
        actor.storage = self.storage
        # The one write of the user class's internal link, by the package that owns it
        # (a public name would take one from every subclass's namespace).
        actor._handle = self  # noqa: SLF001
        return actor

    def activate(self) -> asyncio.Task[None] | None:
        """Start an activation (idempotent while one is starting or running).

        In cluster mode the identity is claimed first (``DurableRuntime.gate``): the
        activation starts only with this node's epoch; if another node owns it, the
        waiting messages are forwarded there and nothing starts here. Nothing starts
        while the identity is being handed over (``None``): the hand-over activates
        (or forwards) once the directory says where it lives.
        """
        if self.starting is not None:
            return self.starting
        if self.moving:
            return None
        if self.durable.gate is not None and self.epoch is None:
            self.runtime.busy += 1
            self.starting = self.runtime.loop.create_task(self._claim())
            self.starting.add_done_callback(_observed)
            return self.starting
        return self._activate()

    async def _claim(self) -> None:
        from ._drain import DrainTurn

        gate = self.durable.gate
        assert gate is not None
        claim = None
        #: Why nothing starts here and no owner is known (None: a claim was answered).
        failure: BaseException | None = None
        try:
            try:
                claim = await self._claim_fenced(gate)
            except FencedError as exc:
                gate.fenced(self.kind, self.identity)
                _log.warning("durable %s: a newer owner holds it: %s", self.path, exc)
                failure = exc
            except Exception as exc:  # unknown outcome: nothing starts; a retry re-reads
                failure = self._unavailable(exc)
                self.durable.outage_of(exc).failed(exc, f"claiming durable {self.path}")
            else:
                self.durable.coordinator_outage.ok()
                if claim.epoch is None and claim.owner is None:
                    failure = NotOwnerError(
                        f"durable {self.path}: this node holds no cluster lease (lost, not "
                        "yet regained), so it can neither run the identity nor find its "
                        "owner; it joins again by itself (LeaseRegained)"
                    )
        finally:
            self.starting = None
            self.runtime.busy_done()
        if claim is not None and claim.epoch is not None:
            if self.runtime.running and not self.durable.stopping and self.cell is None:
                self.epoch = claim.epoch
                self.holder = claim.holder
                await asyncio.shield(self._activate())
                return
            claim = None  # the system began stopping meanwhile: nothing starts here
            failure = None
        pending, self.pending = self.pending, []
        owner = None if claim is None else claim.owner
        for message, sender, reply in pending:
            if isinstance(message, DrainTurn):
                self.drain_queued = False  # the owner's own alarm runs its tasks
                if owner is not None:
                    # It may not know yet (handed over to it, never activated there).
                    target_of(owner).deliver(WAKE, NoSender, None)
                elif failure is not None and not isinstance(failure, (FencedError, NotOwnerError)):
                    # The coordinator or the store failed (counted and logged above): the
                    # alarm stays, retried after a backoff (a node without a lease polls
                    # once it regains it).
                    self._back_off()
                continue
            if owner is not None:
                target_of(owner).deliver(message, sender, reply)
            elif failure is not None:
                # Say why (issue 20, item 8): not "is stopped" for a live identity.
                if reply is not None and not reply.done():
                    reply.set_exception(failure)
                self.runtime.undeliverable(
                    message, sender, self.pid, DeadLetterReason.UNREACHABLE, None
                )
            else:
                self.runtime.undeliverable(
                    message, sender, self.pid, DeadLetterReason.STOPPED, reply
                )

    def _unavailable(self, exc: BaseException) -> BaseException:
        """What an ask learns when claiming failed: a coordinator failure is
        :class:`CoordinatorUnavailableError` (the store's own errors stay as they are)."""
        if isinstance(exc, CoordinatorError) and not isinstance(exc, CoordinatorUnavailableError):
            error = CoordinatorUnavailableError(
                f"durable {self.path}: the cluster coordinator did not answer its claim "
                f"({exc}); nothing was decided, call again once it is back"
            )
            error.__cause__ = exc
            return error
        return exc

    async def _claim_fenced(self, gate: OwnershipGate) -> Claim:
        """Claim the identity and, when it is this node's, write its fence alone, before
        the activation reads anything: from then on no older owner's write can land.

        The gate claims above the store's highest fence; a refusal here means another
        owner fenced in between (a race): claim again, a few times (the compare-and-set
        still decides who owns it).
        """
        refused: int | None = None
        for attempt in range(1, _FENCE_ATTEMPTS + 1):
            claim = await gate.claim(self.kind, self.identity, refused=refused)
            if claim.epoch is None:
                return claim
            try:
                await self.store.apply([Fence(self.kind, self.identity, claim.epoch, claim.holder)])
            except FencedError:
                if attempt == _FENCE_ATTEMPTS:
                    raise
                refused = claim.epoch  # another holder fenced it: claim above it
                continue
            return claim
        raise AssertionError("unreachable")  # pragma: no cover

    def idle(self) -> bool:
        """Cluster mode, rebalancing: an activation owned here with nothing to do (no
        message queued or in a turn, no task running, no transaction, no claim)."""
        cell = self.cell
        return (
            cell is not None
            and self.epoch is not None
            and cell.alive_running()
            and not cell.draining
            and not cell.mailbox
            and self.starting is None
            and not self.pending
            and not self.drain_queued
            and self.running_id is None
            and self.budget is None
            and self.tx is None
            and not self.moving
        )

    async def move(self, hand_over: Callable[[], Awaitable[object]]) -> bool:
        """Rebalancing: stop this idle activation (passivation, ``post_stop`` included),
        then ``hand_over()`` (the directory entry goes to the preferred node) before
        anything can activate here again; the messages that came meanwhile then claim
        and are forwarded to wherever the directory says. Returns whether it moved
        (False: it was not idle, nothing happened). Never two activations: the new owner
        claims only once the entry names it, after this activation has fully stopped.
        """
        cell = self.cell
        if cell is None or not self.idle():
            return False
        self.moving = True
        try:
            await cell.stop()
            try:
                await hand_over()
            except Exception as exc:  # unknown outcome: the next claim re-reads it
                _log.warning("durable %s: handing it over failed: %s", self.path, exc)
        finally:
            self.moving = False
            running = self.runtime.running and not self.durable.stopping
            if self.pending and self.cell is None:
                if running:
                    self.activate()
                else:  # the system is stopping (the move was cancelled): dead letters
                    pending, self.pending = self.pending, []
                    for message, sender, reply in pending:
                        if not isinstance(message, DrainTurn):
                            self.runtime.undeliverable(
                                message, sender, self.pid, DeadLetterReason.STOPPED, reply
                            )
        return True

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
        if self.durable.gate is not None:
            supervisor = self._fenced_stops(supervisor)
        cell = new_cell(
            runtime,
            self.path,
            self.build,
            None,
            supervisor,
            self.passivate_after,
            self.pid,
            mailbox_bound=runtime.mailbox_bound,
        )
        runtime.registry[self.path] = cell
        self.durable.cells[cell] = self
        self.cell = cell
        pending, self.pending = self.pending, []
        for message, sender, reply in pending:
            cell.deliver(message, sender, reply)  # queued: the cell is still STARTING
        runtime.busy += 1
        self.starting = runtime.loop.create_task(self._start(cell))
        self.starting.add_done_callback(_observed)
        return self.starting

    def _fenced_stops(self, supervisor: Supervisor) -> Supervisor:
        """Cluster mode: the class's supervisor, except that a failure once this node no
        longer owns the identity (a write refused by the fence, or the lease lost) stops
        the activation instead of restarting it: a restart would run ``pre_start`` again
        on a node that is not the owner. The next message claims again and is forwarded
        to the real owner."""

        def decide(error: BaseException) -> Directive:
            if isinstance(error, FencedError) or self.epoch is None:
                return Directive.STOP
            return supervisor.decide(error)

        return Supervisor(
            decide,
            max_restarts=supervisor.max_restarts,
            within=supervisor.within,
            backoff=supervisor.backoff,
        )

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
                try:
                    due = await self.store.next_due(self.kind, self.identity)
                except Exception as exc:  # the alarm drains (and re-reads) after a backoff
                    self.retry_later(exc, "reading the alarm at activation")
                    return
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
            if self.moving:
                return  # the hand-over decides where the waiting messages go
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
        wait = due - clock.wall()
        if wait <= 0.0 and self.drain_queued:
            # A queued drain that has not started reads every task due at its start
            # (this one too) and re-arms from the store when it ends: an alarm now would
            # only ring to find it queued. `queue` in a loop paid a timer and a ring per
            # task for nothing (#24).
            return
        self.alarm_due = due
        runtime.deadlines.add(clock.monotonic() + max(0.0, wait), self.alarm)

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

    def drain_started(self) -> None:
        """The queued drain turn began: a later alarm may queue the next one."""
        self.drain_queued = False

    def running(
        self, row: TaskRow | None, instant: float = 0.0, cursor: Cursor | None = None
    ) -> None:
        """The drain runs this task now, for this nominal instant (``None``: no task
        runs); ``list_tasks``, :meth:`idle` and ``current_task`` read it. ``cursor``:
        the row's policy cursor, if it has one (a manual or backfilled run names its
        task there)."""
        self.running_row = row
        self.running_id = None if row is None else row.id
        self.running_instant = instant
        self.running_origin = cursor

    def current_tick(self) -> Tick | None:
        """``current_task``: the run in progress as a :class:`Tick`, made when read (a
        run that never looks pays nothing)."""
        row = self.running_row
        if row is None:
            return None
        origin = self.running_origin
        if origin is not None and origin.of is not None:
            return Tick(
                reference=origin.of,
                instant=datetime.fromtimestamp(self.running_instant, UTC),
                attempt=row.attempts + 1,
                manual=origin.manual,
                backfill=origin.backfill,
                fence=self.epoch,
            )
        return Tick(
            reference=row.id,
            instant=datetime.fromtimestamp(self.running_instant, UTC),
            attempt=row.attempts + 1,
            fence=self.epoch,
        )

    def suspended(self, budget: Budget | None) -> None:
        """The task run is suspended under ``budget`` (``None``: it no longer is); the
        system's stop and a lost lease interrupt it through it."""
        self.budget = budget

    def handles_unknown_tasks(self, actor: TaskActor) -> bool:
        """Whether the actor's class overrides ``on_task`` (else a task naming a method
        it lacks is dropped)."""
        return not keeps_default(type(actor), "on_task")

    # -- what its Tasks use (TaskHost) --------------------------------------------------

    @property
    def timezone(self) -> str:
        """The zone of tasks registered without one (the system's)."""
        return self.durable.timezone

    @property
    def node(self) -> str:
        """Who writes (a pause's ``paused_by``): this system's name."""
        return self.runtime.name

    def touch(self, ids: Iterable[str]) -> None:
        """Tasks replaced or cancelled now: a drain in progress leaves their rows alone."""
        self.touched.update(ids)

    # -- writes ------------------------------------------------------------------------

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
        """Close the open transaction and return its writes (for :meth:`commit`)."""
        ops, self.tx = self.tx or [], None
        return ops

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
            await self.store.apply([Fence(self.kind, self.identity, epoch, self.holder), *ops])
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


def _observed(task: asyncio.Task[None]) -> None:
    """No claim or start of an identity dies unobserved (issue 20): an exception that
    escaped it (a bug: every expected failure is handled inside) is logged here."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        _log.error("durable: an activation task failed", exc_info=exc)


@final
class _Alarm(Deadline):
    """A durable identity's single alarm in the shared heap."""

    __slots__ = ("handle",)

    def __init__(self, handle: DurableHandle) -> None:
        super().__init__()
        self.handle = handle

    def fire(self, now: float, deadline: float) -> None:
        self.handle.ring()
