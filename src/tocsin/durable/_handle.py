# SPDX-License-Identifier: Apache-2.0
"""One durable identity: its stable PID, its activations and its ownership.

The handle outlives activations. Its PID routes every message through :meth:`deliver`,
which activates the actor on demand; while an activation is finishing its stop
(passivation), new messages wait here and start the next activation, so there is never
more than one activation of an identity at a time in a system. In cluster mode it claims
the identity first and fences every write with its epoch (:meth:`commit`, the one write
path).

What else an identity holds has its own owner, each a small class in its own module:
the alarm (:class:`~._alarm.Alarm`), the run in progress (:class:`~._current.CurrentRun`),
the writes in flight (:class:`~._writes.Writes`), its tasks (:class:`~._tasks.Tasks`) and
its storage (:class:`~._storage.Storage`). The handle creates them and answers what they
ask of the identity; it writes none of their fields.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, final

from ..actor._spi import (
    DEFAULT_SUPERVISOR,
    PID,
    Actor,
    Cell,
    DeadLetterReason,
    Directive,
    NoSender,
    SendTarget,
    Supervisor,
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
from ..stores import Fence, Op, Store
from ._alarm import Alarm, AlarmRuntime
from ._current import IDLE, CurrentRun
from ._drain import DRAIN, DrainRuntime, DrainTurn
from ._gate import GatedReply, first_failure
from ._kinds import DurableClass, keeps_default
from ._storage import Storage
from ._tasks import Tasks
from ._writes import Writes

#: Seconds ahead the store is polled for identities with due tasks; a passivated
#: identity keeps its alarm in memory only when it is due within this window.
LOOKAHEAD = 300.0

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ..actor._spi import Reply, Runtime, Tick
    from ._outage import Outage
    from ._ownership import Claim, OwnershipGate
    from ._run import TaskActor

__all__ = ["LOOKAHEAD", "WAKE", "DurableHandle"]

#: Cluster mode: the message a node sends to an identity's owner when the identity's
#: alarm rang on a node that no longer owns it (after a hand-over): the owner activates
#: it, which arms its alarm. Intercepted by the handle, never seen by ``receive``.
WAKE = "\x00tocsin.durable.wake"

#: Claims an activation makes when the store keeps refusing its fence (each one lifts
#: the floor to one above what the store has fenced; only a race repeats it).
_FENCE_ATTEMPTS = 4

_log = logging.getLogger("tocsin.durable")


class HandleRuntime(DrainRuntime, AlarmRuntime, Protocol):
    """What a handle uses of the durable runtime (``DurableRuntime`` is the one): a
    protocol, so the runtime imports the handle and never the other way round."""

    @property
    def runtime(self) -> Runtime: ...
    @property
    def store(self) -> Store: ...
    @property
    def gate(self) -> OwnershipGate | None: ...
    @property
    def coordinator_outage(self) -> Outage: ...
    @property
    def activation_slots(self) -> asyncio.Semaphore: ...
    def activated(self, cell: Cell, handle: DurableHandle) -> None: ...
    def start_batched(self, handle: DurableHandle, cell: Cell) -> asyncio.Task[None]: ...
    def commit_soon(self, ops: list[Op]) -> asyncio.Future[None]: ...
    @property
    def flushes(self) -> int: ...


@final
class DurableHandle(SendTarget):
    """The runtime side of one ``(kind, identity)`` (internal); the target of its PID.

    It owns the identity's activation and ownership: its PID's deliveries, its
    activations, the cluster claim and epoch, the hand-over, and the one write path
    (:meth:`write` / :meth:`commit`). Its parts, each the only writer of its state:
    ``alarm``, ``current`` (the run in progress), ``writes``, ``tasks``, ``storage``.
    """

    def __init__(
        self,
        durable: HandleRuntime,
        cls: DurableClass,
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
        #: The class keeps the default ``now()`` (asked once, not on every decision).
        self.clock_now = keeps_default(cls, "now")
        #: The class keeps the default ``pre_start`` (it never suspends): an activation
        #: by the alarm may start in a batch's task (see :meth:`_activate`).
        self.plain_start = getattr(cls, "pre_start", None) is Actor.pre_start
        self.cell: Cell | None = None
        #: Messages waiting for the next activation: ``()`` (no list kept) while none
        #: waits. A handle lives as long as its identity is in memory (100,000s of
        #: them), and every container it keeps is one more object for each of the
        #: cyclic GC's full collections to visit: the parts that most identities
        #: never use (``storage``, ``tasks``) are made on first use too.
        self.pending: list[tuple[Any, Any, Reply | None]] | tuple[()] = ()
        self.starting: asyncio.Task[None] | None = None
        #: The identity's single alarm; the run in progress; the writes in flight.
        self.alarm = Alarm(self)
        self.current: CurrentRun = IDLE
        self.writes = Writes()
        #: Cluster mode: the ownership epoch of the running activation (the fencing
        #: token its writes carry); ``None`` outside cluster mode or while not owned.
        self.epoch: int | None = None
        #: Cluster mode: who holds that epoch (node and incarnation), fenced with it.
        self.holder = ""
        #: Cluster mode, rebalancing: the activation is stopping to be handed to another
        #: node; messages wait in ``pending`` until the directory says where it lives.
        self.moving = False

    # Cached in the instance's dict on first use: later reads are a plain attribute
    # read, with no call into this module on the path of every ``self.schedule``.
    @cached_property
    def storage(self) -> Storage:
        """The identity's storage (``self.storage`` of its actor), made on first use."""
        return Storage(self)

    @cached_property
    def tasks(self) -> Tasks:
        """The identity's tasks, written through this handle (the actor's own calls),
        made on first use."""
        return Tasks(self)

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
        if reply is not None and self.durable.gate is None:
            reply = GatedReply(reply, self.writes)  # the output gate (._gate)
        if cell is not None and cell.alive():
            return cell.deliver(message, sender, reply)
        pending = self.pending
        if isinstance(pending, list):
            pending.append((message, sender, reply))
        else:
            self.pending = [(message, sender, reply)]
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
            if reply is not None and self.durable.gate is None:
                reply = GatedReply(reply, self.writes)  # the output gate (._gate)
            return cell.offer(message, sender, reply)
        return super().offer(message, sender, reply)

    def alive(self) -> bool:
        return self.runtime.running

    async def stop(self) -> None:
        if self.starting is not None:
            await asyncio.shield(self.starting)
        if self.cell is not None:
            await self.cell.stop()
        # The gated task changes of its last turns are committed before the system's
        # stop goes on to close the store (their failures were logged).
        waiting = [f for f in self.writes.unsettled() if not f.done()]
        if waiting:
            await asyncio.wait(waiting)

    def request_stop(self) -> None:
        if self.cell is not None:
            self.cell.request_stop()

    def reinstate(self) -> None:
        if self.cell is not None:
            self.cell.reinstate()
            self.alarm.ring()  # an alarm that rang while suspended was refused: drain now

    def queue_drain(self) -> bool:
        """The alarm rang: queue a drain turn in the actor's mailbox (activating it);
        False if it was refused (the actor is suspended)."""
        # The one drain turn of every identity: it finds this handle in the cell.
        return self.deliver(DRAIN, None, None)

    # -- activation --------------------------------------------------------------------

    def wall_now(self, actor: TaskActor) -> float:
        """``actor.now()`` as epoch seconds: the time of every scheduling decision."""
        if self.clock_now:
            # Not overridden: the clock's float, without a datetime built and taken apart
            # again on every queue/schedule (~1.5 µs).
            return self.runtime.clock.wall()
        return actor.now().timestamp()

    def __call__(self) -> Any:
        """The factory of its activations' actors (:meth:`build`): the cell is given the
        handle itself, not a bound method kept alive by every identity in memory."""
        return self.build()

    def build(self) -> Any:
        # Any: the class is the durable package's top (DurableActor), which this module
        # does not import; the attributes set here are its documented ones.
        actor: Any = self.cls()
        actor.kind = self.kind
        actor.identity = self.identity
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
        pending, self.pending = self.pending, ()
        owner = None if claim is None else claim.owner
        for message, sender, reply in pending:
            if isinstance(message, DrainTurn):
                self.alarm.drain_started()  # it never runs here: the owner's alarm does
                if owner is not None:
                    # It may not know yet (handed over to it, never activated there).
                    target_of(owner).deliver(WAKE, NoSender, None)
                elif failure is not None and not isinstance(failure, (FencedError, NotOwnerError)):
                    # The coordinator or the store failed (counted and logged above): the
                    # alarm stays, retried after a backoff (a node without a lease polls
                    # once it regains it).
                    self.alarm.back_off()
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
            and not self.alarm.queued
            and self.current.id is None
            and self.current.budget is None
            and not self.writes.open
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
                    pending, self.pending = self.pending, ()
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
        self.alarm.rearm(None)
        self.request_stop()
        self.current.interrupt()

    def _activate(self) -> asyncio.Task[None]:
        runtime = self.runtime
        supervisor = getattr(self.cls, "supervisor", None) or DEFAULT_SUPERVISOR
        if self.durable.gate is not None:
            supervisor = self._fenced_stops(supervisor)
        cell = new_cell(
            runtime,
            self.path,
            self,
            None,
            supervisor,
            self.passivate_after,
            self.pid,
            mailbox_bound=runtime.mailbox_bound,
        )
        runtime.registry[self.path] = cell
        self.durable.activated(cell, self)
        self.cell = cell
        pending, self.pending = self.pending, ()
        for message, sender, reply in pending:
            cell.deliver(message, sender, reply)  # queued: the cell is still STARTING
        runtime.busy += 1
        if self.alarm.queued and self.plain_start and self.durable.gate is None:
            # Activated by its alarm with nothing to suspend on before the drain (the
            # default pre_start; no alarm read, the queued drain reads): started in a
            # task shared with the identities coming due with it, not one task each.
            self.starting = self.durable.start_batched(self, cell)
            return self.starting
        self.starting = runtime.loop.create_task(self.run_start(cell))
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

    async def run_start(self, cell: Cell) -> None:
        """Start the activation ``cell`` (its first ``pre_start``), then arm its alarm
        from the store unless a drain is already queued; ``starting`` is cleared at the
        end. Run by :meth:`_activate`'s task or by a batch of starts (the runtime's)."""
        try:
            async with self.durable.activation_slots:
                if await cell.first_start() is not None:
                    return  # did not come up; it has fully stopped (cell_stopped ran)
                if self.alarm.queued:
                    # Activated by its alarm: the queued drain reads what is due and
                    # re-arms from the store when it ends. Reading the alarm here too was
                    # a store call per activation, and arming it rang a second, empty
                    # drain (two more calls): #24, 1,000 identities coming due at once.
                    return
                try:
                    due = await self.store.next_due(self.kind, self.identity)
                except Exception as exc:  # the alarm drains (and re-reads) after a backoff
                    self.alarm.retry_later(exc, "reading the alarm at activation")
                    return
                if due is not None:
                    self.alarm.arm(due)
        finally:
            self.starting = None
            self.runtime.busy_done()

    def cell_stopped(self, cell: Cell) -> None:
        if self.cell is cell:
            self.cell = None
            self.alarm.drain_started()  # a queued drain died with the activation
            # Cluster mode: the next activation claims again (the owner may have changed).
            self.epoch = None
            if self.moving:
                return  # the hand-over decides where the waiting messages go
            if self.pending and self.runtime.running and not self.durable.stopping:
                self.activate()
                return
            # Passivated: an alarm beyond the look-ahead goes back to living in the store
            # only; the periodic poll re-arms it when it comes near.
            due = self.alarm.due
            if due is not None and due > self.runtime.clock.wall() + LOOKAHEAD:
                self.alarm.rearm(None)

    # -- what its parts and the drain ask of the identity -----------------------------

    def current_tick(self) -> Tick | None:
        """``current_task``: the run in progress, fenced with this activation's epoch."""
        return self.current.tick(self.epoch)

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

    @property
    def running_id(self) -> str | None:
        """The id of the task whose method runs now (listings show it ``running``)."""
        return self.current.id

    @property
    def max_value_bytes(self) -> int:
        """The largest encoded storage value of this identity's class."""
        return self.cls.max_value_bytes

    def use_store(self, store: Store) -> None:
        """Write through ``store`` from now on (the runtime wrapped it: call timing)."""
        self.store = store

    def touch(self, ids: Iterable[str]) -> None:
        """Tasks replaced or cancelled now: a drain in progress leaves their rows alone."""
        self.writes.touch(ids)

    # -- writes ------------------------------------------------------------------------

    async def write(self, ops: Sequence[Op]) -> None:
        """Apply writes now, or buffer them in the open transaction."""
        if self.writes.tx is None:
            await self.commit(ops)
        else:
            self.writes.buffer(ops)

    async def change(
        self, ops: Sequence[Op], touched: Iterable[str] = (), due: float | None = None
    ) -> None:
        """A task change (``TaskHost``): write ``ops`` (in the open transaction, through
        the output gate, or now), tell a drain in progress which tasks changed, and arm
        the alarm for ``due``. The alarm is armed before the commit: an early alarm is
        harmless, the drain waits for the gated changes and re-reads the store.

        Through the output gate (:mod:`._gate`) outside a transaction, a task run and
        cluster mode: the change joins the next group commit and this returns without
        waiting for it; the ask being answered waits instead."""
        writes, durable = self.writes, self.durable
        if writes.tx is None and self.current.id is None and durable.gate is None:
            # One call to the writes' owner for the whole gated step (batch and touched).
            done = writes.gate_change(ops, touched, durable.flushes, durable.commit_soon)
            if done is not None:  # the first change of this turn: a batch of its own
                done.add_done_callback(self._gated_done)
        else:
            if writes.tx is not None:
                writes.buffer(ops)
            else:
                await self.commit(ops)
            if touched:
                writes.touch(touched)
        if due is not None:
            self.alarm.arm(due)

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
        if self.writes.gated and self.writes.unsettled():
            return self._commit_after_gated(ops)
        if self.durable.gate is None:
            return self.store.apply(ops)
        return self._fenced_commit(ops)

    def gated_task(self, task_id: str) -> Any:
        """``TaskHost``: task ``task_id`` as a gated change in flight leaves it
        (:meth:`~._writes.Writes.gated_task`)."""
        return self.writes.gated_task(task_id)

    async def settle(self) -> None:
        """Wait until the task changes that went through the output gate are committed
        (before a read that must see them, or a write that must follow them).

        Raises:
            Exception: what the store raised for one of them (it was not committed).
        """
        writes = self.writes
        while writes.unsettled():
            gated = writes.take_gated()
            waiting = [f for f in gated if not f.done()]
            if waiting:  # not otherwise: a wait takes a turn of the loop even when done
                await asyncio.wait(waiting)
            failure = first_failure(gated)
            if failure is not None:
                raise failure

    async def _commit_after_gated(self, ops: Sequence[Op]) -> None:
        await self.settle()
        await self.commit(ops)

    def _gated_done(self, done: asyncio.Future[None]) -> None:
        """A gated change is committed (forgotten once all are), or failed: logged (a
        reply or the next store call may report it too)."""
        if done.cancelled():
            return
        error = done.exception()
        if error is None:
            self.writes.committed()
        else:
            _log.error("durable %s: a task change was not committed: %s", self.path, error)

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


def _observed(task: asyncio.Task[None]) -> None:
    """No claim or start of an identity dies unobserved (issue 20): an exception that
    escaped it (a bug: every expected failure is handled inside) is logged here."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        _log.error("durable: an activation task failed", exc_info=exc)
