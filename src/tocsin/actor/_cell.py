# SPDX-License-Identifier: Apache-2.0
"""One actor incarnation's machinery: delivery, the turn loop, start and stop.

An idle actor owns no task and no mailbox object, so 100,000 idle actors stay cheap. A
delivery to an idle actor creates its mailbox and one task; the task drains the mailbox
in batches of :data:`THROUGHPUT` messages, yielding to the loop between batches (fair
dispatch), and ends when the mailbox is empty. What the mailbox holds is described in
``_mailbox.py``.

A bounded mailbox (``mailbox_bound``, issue 20) is a :class:`BoundedCell`: its delivery
is the same plus one compare against the bound (past it: an ``overflow`` dead letter),
so an unbounded cell pays nothing. ``await pid.send`` waits in the cell's ``waiting``
line; each drain batch that ends with the mailbox at half its bound or below admits
waiting sends, in order (:meth:`Cell._admit`).

The start and the stop (first ``pre_start``, the grace's interrupt, a restart's backoff
wait, the final teardown) live here too, as methods: they write the same fields as the
turn loop (state, task, mailbox, the draining flag), so one class in one module owns them
all (a split carries its state, STYLE rule 1; pykka keeps its actor loop in one class).
What to do about a failure is decided and applied by the cell's
:class:`~tocsin.actor._supervising.Supervision` (``_supervising.py``), which owns the
restart window and acts on the cell only through its methods.

Prior art: pykka's ``_actor_loop_setup/running/teardown``, Proto.Actor's mailbox
(``throughput`` batch, system messages first).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..errors import ActorSuspendedError, DeadActorError
from ._actor import Actor
from ._context import ReceiveContext
from ._events import (
    ActorReinstated,
    ActorStarted,
    ActorStopped,
    ActorSuspended,
    DeadLetterReason,
)
from ._mailbox import ITEM_TYPES, STALE, TURN_TYPES, Ask, Mailbox, RuntimeItem
from ._passivation import Passivation
from ._pid import PID, new_incarnation
from ._reply import fail_reply
from ._state import CellState
from ._supervising import Supervision
from ._target import SendTarget

if TYPE_CHECKING:
    from ._reply import Reply
    from ._runtime import Runtime
    from ._supervision import Supervisor

__all__ = ["THROUGHPUT", "BoundedCell", "Cell", "CellState", "new_cell"]

#: Messages one actor handles before yielding to the event loop (fairness).
THROUGHPUT = 256

_log = logging.getLogger("tocsin.actor")
# asyncio's C-level alias (no raise, no frame): the wake path's exact loop check. SLF001:
# asyncio exports no raise-free public form; running_loop() costs a try/except per wake.
_get_running_loop = asyncio._get_running_loop  # noqa: SLF001


_STARTING = CellState.STARTING
_RUNNING = CellState.RUNNING
_SUSPENDED = CellState.SUSPENDED
_STOPPING = CellState.STOPPING
_STOPPED = CellState.STOPPED
_OVERFLOW = DeadLetterReason.OVERFLOW


def new_cell(
    runtime: Runtime,
    path: str,
    factory: Callable[[], Actor],
    parent: Cell | None,
    supervisor: Supervisor,
    passivate_after: float | None,
    pid: PID | None = None,
    *,
    mailbox_bound: int | None = None,
) -> Cell:
    """A cell for a new incarnation: a :class:`BoundedCell` when ``mailbox_bound`` is a
    number of messages (>= 1), else a plain :class:`Cell` (unbounded: its delivery pays
    nothing for bounds)."""
    if mailbox_bound:
        return BoundedCell(
            runtime, path, factory, parent, supervisor, passivate_after, pid, mailbox_bound
        )
    return Cell(runtime, path, factory, parent, supervisor, passivate_after, pid)


class Cell(SendTarget):
    """The runtime side of one actor incarnation (internal); the target of its PID.

    Unbounded; :class:`BoundedCell` (made by :func:`new_cell`) is the bounded one. Only
    ``deliver`` and ``offer`` differ, so an unbounded mailbox pays nothing for bounds.
    """

    __slots__ = (
        "_stopped",
        "actor",
        "borrowed",
        "bound",
        "children",
        "ctx",
        "depth_high",
        "draining",
        "factory",
        "finishing",
        "in_post_stop",
        "interrupted",
        "last_active",
        "limit",
        "low",
        "mailbox",
        "owned",
        "parent",
        "passivate_after",
        "passivation",
        "pausing",
        "pid",
        "post_stop_done",
        "room",
        "runtime",
        "state",
        "supervision",
        "supervisor",
        "sysq",
        "task",
        "turn_item",
        "turn_reply",
        "unanswered",
        "waiting",
    )

    def __init__(
        self,
        runtime: Runtime,
        path: str,
        factory: Callable[[], Actor],
        parent: Cell | None,
        supervisor: Supervisor,
        passivate_after: float | None,
        pid: PID | None = None,
        bound: int | None = None,
    ) -> None:
        self.runtime = runtime
        #: Messages the mailbox may hold (None: unbounded). ``limit`` and ``low`` are the
        #: bound and its low-water mark (half of it) in deque entries, two per message,
        #: so the delivery compares ``len(mailbox)`` with an int as it is. ``room`` is
        #: what a tell may fill: ``limit``, or 0 while sends wait for room (they hold
        #: their place: a tell does not overtake them, it overflows).
        self.bound = bound
        self.limit = 2 * bound if bound else 0
        self.room = self.limit
        self.low = 2 * (bound // 2) if bound else 0
        #: ``pid.send`` calls (and inbound remote frames) waiting for room, in order:
        #: ``(future, message, sender, reply)``; admitted when a drain batch ends with
        #: the mailbox at or below ``low`` (see :meth:`_admit`). None until one waits.
        self.waiting: deque[tuple[asyncio.Future[None], Any, Any, Reply | None]] | None = None
        self.pid = pid if pid is not None else PID(runtime.address, path, new_incarnation(), self)
        self.factory = factory
        self.in_post_stop = False
        self.post_stop_done = False
        self.parent = parent
        self.supervisor = supervisor
        self.passivate_after = passivate_after
        self.children: dict[str, Cell] = {}
        self.ctx = ReceiveContext(self)
        self.state = _STARTING
        self.mailbox: Mailbox | None = None
        #: A task is draining the mailbox (or will be): deliveries only enqueue.
        self.draining = False
        self.task: asyncio.Task[Any] | None = None
        #: Failures escalated by children, handled before the next message.
        self.sysq: list[tuple[Cell, BaseException]] | None = None
        #: Made at the first failure (most actors never fail; spawn stays lighter).
        self.supervision: Supervision | None = None
        #: The schedule-owner hook: what upper layers registered as owned by this actor
        #: (the scheduler's records), released by their stop listener.
        self.owned: set[Any] | None = None
        self.passivation: Passivation | None = None
        self.last_active = 0.0
        #: Mailbox high-water mark in deque entries (two per message), sampled once per
        #: drain batch; read by tocsin.metrics and the console (issue 14).
        self.depth_high = 0
        self.unanswered: set[Reply] | None = None
        #: The ask the current turn answers (``ctx.respond``) and the runtime item its
        #: message came as (``ctx.tick``): written by the turn loop, None between turns.
        self.turn_reply: Reply | None = None
        self.turn_item: RuntimeItem | None = None
        self.interrupted = False
        #: The turn runs in the spawner's task (first ``pre_start``), not its own.
        self.borrowed = False
        self.finishing = False
        self.pausing: asyncio.Future[None] | None = None
        self._stopped: asyncio.Future[None] | None = None
        self.actor = self.make_actor()

    # -- delivery (hot path) -----------------------------------------------------------

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        """Enqueue a message; return False (and dead-letter it) if the actor cannot take it."""
        state = self.state
        if state <= _RUNNING:
            mailbox = self.mailbox
            if mailbox is None:
                mailbox = self.mailbox = deque()
            mailbox.append(message if reply is None else Ask(message, reply))
            mailbox.append(sender)
            if not self.draining and state is _RUNNING:
                runtime = self.runtime
                if not runtime.on_loop_thread():
                    # Checked only when waking the actor (that creates a task on the loop).
                    loop = _get_running_loop()
                    if loop is not runtime.loop:
                        mailbox.pop()  # not sent after all: take it back
                        mailbox.pop()
                        raise runtime.wrong_loop(f"send to {self.pid}", loop)
                # `wake`, inlined on the send path: one call fewer per wake, and the loop
                # check and `busy_begin` are one visit to the runtime (bench/_tick_trace.py).
                self.draining = True
                runtime.busy_begin()
                self.task = runtime.loop.create_task(self._run())
            return True
        reason = DeadLetterReason.SUSPENDED if state is _SUSPENDED else DeadLetterReason.STOPPED
        self.runtime.undeliverable(message, sender, self.pid, reason, reply)
        return False

    def offer(self, message: Any, sender: Any, reply: Reply | None) -> asyncio.Future[None] | None:
        """``pid.send``'s path (see :meth:`SendTarget.offer`): an unbounded mailbox always
        has room, so this is :meth:`deliver`, or a refusal when the actor is gone."""
        if self.deliver(message, sender, reply):
            return None
        return self.refusal()

    def refusal(self) -> asyncio.Future[None]:
        """A done future failed with why this actor takes no messages (stopped or
        suspended): what ``await pid.send`` raises after the dead letter."""
        future: asyncio.Future[None] = self.runtime.loop.create_future()
        future.set_exception(self.refused_error())
        return future

    def refused_error(self) -> Exception:
        if self.state is _SUSPENDED:
            return ActorSuspendedError(f"{self.pid} is suspended")
        return DeadActorError(f"{self.pid} is stopped")

    def alive(self) -> bool:
        return self.state < _STOPPING

    def alive_running(self) -> bool:
        return self.state is _RUNNING

    def schedulable(self) -> bool:
        """The schedule-owner hook: may schedules still be made through this actor's
        context? (Not once it is stopping, nor from ``post_stop``.)"""
        return self.state < _STOPPING and not self.in_post_stop

    # -- the schedule-owner hook (what upper layers registered as owned by this actor) ---

    def own(self, item: Any) -> None:
        """Register ``item`` as owned by this actor (released once it fully stops)."""
        owned = self.owned
        if owned is None:
            owned = self.owned = set()
        owned.add(item)

    def disown(self, item: Any) -> None:
        """Forget ``item`` (it ended before the actor did)."""
        if self.owned is not None:
            self.owned.discard(item)

    def release_owned(self) -> set[Any]:
        """What this actor owned, handed over once (its stop listener releases it)."""
        owned, self.owned = self.owned, None
        return owned or set()

    def wake(self) -> None:
        runtime = self.runtime
        self.draining = True
        runtime.busy_begin()
        self.task = runtime.loop.create_task(self._run())

    async def _run(self) -> None:
        task = self.task
        handled = 0  # a turn cut short by the stop's grace counts nothing
        try:
            try:
                handled = await self._drain()
            except asyncio.CancelledError:
                # Only the stop's grace cancels a turn (interrupt); anything else re-raises.
                if not self.interrupted or task is None or task.uncancel() > 0:
                    raise
                self._fail_current()
            if self.state is _STOPPING:
                await self._finish_stop()
        finally:
            self.task = None
            # Idle again. Written here, not in a method of its own, and the messages
            # handled reported with `busy_done` rather than once per batch: a turn visits
            # the runtime once at its end (bench/_tick_trace.py counts the re-entries).
            self.draining = False
            runtime = self.runtime
            if self.passivate_after is not None:
                self.last_active = runtime.clock.monotonic()
            runtime.busy_done(handled)
            mailbox = self.mailbox
            if mailbox:
                # A message may have arrived while the stop or a restart was being finished.
                if self.state is _RUNNING:
                    self.wake()
            elif mailbox is not None and self.waiting is None:
                # Idle with an empty mailbox: none kept. An actor stays in memory long
                # after its last message (100,000s of durable identities), and each
                # empty deque is ~600 bytes and one more object for every full
                # collection of the cyclic GC to visit; the next delivery makes one.
                self.mailbox = None

    async def _drain(self) -> int:
        """Handle the mailbox until it is empty or the actor stops running; returns how
        many messages were handled."""
        ctx = self.ctx
        total = 0
        while True:
            if self.sysq:
                await self._take_escalations()
            mailbox = self.mailbox
            if self.state is not _RUNNING or not mailbox:
                return total
            actor = self.actor
            handled = 0
            # Mailbox high-water (issue 14): once per batch, where the mailbox is deepest
            # (it fills while the actor waits for its turn), not per send. One int compare.
            if len(mailbox) > self.depth_high:
                self.depth_high = len(mailbox)
            popleft = mailbox.popleft
            while mailbox and handled < THROUGHPUT:
                message = popleft()
                sender = popleft()
                handled += 1
                reply = None
                # The RuntimeItem being handled (ctx.tick reads it), told `finished()`
                # once `receive` returns if it is `tracked`: the plain-message path pays
                # one local store and one `is`, a plain tick one class attribute read.
                item = None
                cls = type(message)
                if cls in ITEM_TYPES:  # one set test on the common path
                    if cls is Ask:
                        reply = message.reply
                        message = message.message
                    elif cls not in TURN_TYPES:  # a RuntimeItem (a tick, ...)
                        item = message
                        message = message.open()
                        if message is STALE:
                            continue
                    else:  # a Turn: runtime work inside this actor's turn
                        # A clean context: no earlier message, sender or ask leaks in.
                        ctx.clear()
                        self.turn_reply = self.turn_item = None
                        try:
                            await message.run(self)
                        except Exception:
                            _log.exception("runtime work in the turn of %s failed", self.pid)
                        actor = self.actor
                        if self.state is not _RUNNING or self.sysq:
                            break
                        continue
                # The turn's message and sender go into the context's two public fields,
                # its ask and item into this cell's (ctx.respond and ctx.tick read them):
                # four stores, no call (a call here was ~400 instructions per message,
                # 2% of a tick; bench/footprint.py `tick`).
                ctx.message = message
                ctx.sender = sender
                self.turn_reply = reply
                self.turn_item = item
                try:
                    await actor.receive(ctx)
                except Exception as exc:
                    if reply is not None and not reply.done():
                        reply.set_exception(exc)
                    # Its `receive` is over: `respond` no longer reaches the ask, and a
                    # tracked item is finished before the supervisor's restart.
                    self.turn_reply = self.turn_item = None
                    if item is not None:
                        if item.tracked:
                            item.finished()
                        item = None
                    await self._supervise().failed(exc)
                    actor = self.actor
                else:
                    if reply is not None and not reply.done():
                        self._hold_unanswered(reply)
                finally:
                    # Also when the turn is cancelled (a stop's grace): the item is
                    # not left in flight for ever. An untracked item (a plain tick) is
                    # not told: its `finished()` does nothing (a call per tick saved).
                    if item is not None and item.tracked:
                        item.finished()
                if self.state is not _RUNNING or self.sysq:
                    break
            # Between turns: nothing of the last message is held.
            ctx.clear()
            self.turn_reply = self.turn_item = None
            total += handled
            if self.waiting:  # sends waiting for room (bounded mailboxes only)
                self._admit()
            if mailbox and self.state is _RUNNING:
                await asyncio.sleep(0)  # fairness: let other actors and I/O run

    # -- lifecycle ---------------------------------------------------------------------

    def make_actor(self) -> Actor:
        actor = self.factory()
        if not isinstance(actor, Actor):
            raise TypeError(
                f"actor factory {self.factory!r} returned {actor!r}; it must return an "
                f"instance of tocsin.Actor (pass the class itself, or a zero-argument callable)"
            )
        return actor

    async def first_start(self) -> BaseException | None:
        """Run the first ``pre_start`` (in the spawner's coroutine) and open the mailbox.

        Returns ``None`` once the actor is up, or, when ``pre_start`` failed and the
        supervisor did not bring the actor up, the last error, after the actor has fully
        stopped (so its name is free again).
        """
        self.draining = True  # deliveries meanwhile only enqueue
        # The spawner's task runs this actor's turn for now, so that a stop called from
        # `pre_start` returns at once (as from `receive`) instead of awaiting itself.
        self.task = asyncio.current_task()
        runtime = self.runtime
        self.borrowed = True  # the task is the spawner's: the grace never cancels it
        runtime.busy_begin()
        error: BaseException | None = None
        try:
            try:
                await self.actor.pre_start(self.ctx)
            except Exception as exc:
                if self.state is _STARTING:
                    self.state = _RUNNING
                error = await self._supervise().failed(exc)
            if self.state is _STARTING:
                self.state = _RUNNING
            if self.state is not _STOPPING and self.state is not _STOPPED:
                error = None  # up: pre_start succeeded, or a restart did, or resumed
                runtime.events.publish(ActorStarted(self.pid))
                if self.passivate_after is not None:
                    self.last_active = runtime.clock.monotonic()
                    self.passivation = Passivation(self)
                    runtime.deadlines.add(self.last_active + self.passivate_after, self.passivation)
        finally:
            self.borrowed = False
            self.task = None
            self.draining = False
            runtime.busy_done()
        if self.state is _STOPPING or (self.mailbox and self.state is _RUNNING):
            self.wake()
        if error is not None:
            await self.stop()
        return error

    def reinstate(self) -> None:
        """Reopen the mailbox of a suspended actor (no-op otherwise)."""
        if self.state is _SUSPENDED:
            self.state = _RUNNING
            self.runtime.events.publish(ActorReinstated(self.pid))
            if self.mailbox and not self.draining:
                self.wake()

    async def pause(self, seconds: float) -> None:
        """Wait ``seconds`` on the system clock inside the turn (a restart's backoff);
        a stop request ends the wait at once."""
        waiter: asyncio.Future[None] = self.runtime.loop.create_future()
        self.pausing = waiter
        sleeper = asyncio.ensure_future(self.runtime.sleep(seconds))

        def wake(_: object) -> None:
            if not waiter.done():
                waiter.set_result(None)

        sleeper.add_done_callback(wake)
        try:
            await waiter
        finally:
            self.pausing = None
            sleeper.cancel()

    def request_stop(self) -> None:
        """Begin stopping after the current message; never waits."""
        state = self.state
        if state is _STOPPING or state is _STOPPED:
            return
        self.state = _STOPPING
        if self.pausing is not None and not self.pausing.done():
            self.pausing.set_result(None)
        if state is not _STARTING and not self.draining:
            self.wake()

    async def stop(self) -> None:
        """Stop and return once fully stopped (at once when called from this actor's turn)."""
        if self.state is _STOPPED:
            return
        if self._stopped is None:
            self._stopped = self.runtime.loop.create_future()
        stopped = self._stopped
        self.request_stop()
        if self.task is not None and asyncio.current_task() is self.task:
            return  # stopping itself from receive: it stops once this turn ends
        await asyncio.shield(stopped)

    def interrupt(self) -> bool:
        """Cancel the handler this actor is running (the stop's grace ran out).

        Only a turn in its own drain task is cancelled, and not while it is already
        finishing its stop (``post_stop`` still runs). Returns whether it cancelled.
        """
        task = self.task
        if task is None or self.finishing or self.interrupted or self.borrowed:
            return False
        if task is asyncio.current_task():
            return False
        self.interrupted = True
        task.cancel()
        return True

    async def stop_children(self) -> None:
        if self.children:
            await asyncio.gather(*(child.stop() for child in list(self.children.values())))

    async def _finish_stop(self) -> None:
        runtime = self.runtime
        self.finishing = True
        if self.passivation is not None:
            runtime.deadlines.remove(self.passivation)
        await self.stop_children()
        if not self.post_stop_done:
            await self.run_post_stop("")
        self.state = _STOPPED
        self._reject_mailbox(DeadLetterReason.STOPPED)
        if self.unanswered:
            for reply in list(self.unanswered):
                fail_reply(reply, self.pid, DeadLetterReason.STOPPED)
        runtime.cell_stopped(self)
        runtime.events.publish(ActorStopped(self.pid))
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)

    def _reject_mailbox(self, reason: DeadLetterReason) -> None:
        mailbox = self.mailbox
        self.mailbox = None
        undeliverable = self.runtime.undeliverable
        if mailbox:
            items = iter(mailbox)
            for message, sender in zip(items, items, strict=True):
                reply = None
                if type(message) is Ask:
                    reply = message.reply
                    message = message.message
                undeliverable(message, sender, self.pid, reason, reply)
        waiting = self.waiting
        if waiting:
            # Sends still waiting for room: dead letters too, after what was queued
            # (their order), and each ``await pid.send`` raises why.
            self.waiting = None
            self.room = self.limit
            error = self.refused_error()
            for future, message, sender, reply in waiting:
                if future.done():
                    continue  # its sender gave up waiting (cancelled): never sent
                undeliverable(message, sender, self.pid, reason, reply)
                future.set_exception(error)

    def _admit(self) -> None:
        """A drain batch ended: move waiting sends into the mailbox, in order, once it is
        down to its low-water mark (half the bound) and as far as the bound allows; each
        one's future is then done (``await pid.send`` returns, a paused remote
        connection reads again). The hysteresis keeps a flood from waking its senders
        once per message."""
        mailbox = self.mailbox
        waiting = self.waiting
        if self.state is not _RUNNING or mailbox is None or waiting is None:
            return
        if len(mailbox) > self.low:
            return
        limit = self.limit
        while waiting and len(mailbox) < limit:
            future, message, sender, reply = waiting.popleft()
            if future.done():
                continue  # its sender gave up waiting (cancelled): never sent
            mailbox.append(message if reply is None else Ask(message, reply))
            mailbox.append(sender)
            future.set_result(None)
        if not waiting:
            self.room = limit  # nobody waits any more: tells may fill it again

    def _hold_unanswered(self, reply: Reply) -> None:
        """Remember an ask handled without an answer, so the stop can still answer it.

        Without this, an ask with ``timeout=None`` whose handler did not call
        ``respond`` would hang forever, even across ``system.stop()``.
        """
        held = self.unanswered
        if held is None:
            held = self.unanswered = set()
        held.add(reply)
        reply.add_done_callback(held.discard)  # called with the reply itself

    def _fail_current(self) -> None:
        """The turn was cut short by the stop's grace: fail the ask it was handling."""
        reply = self.turn_reply
        self.turn_reply = self.turn_item = None
        if reply is not None and not reply.done():
            reply.set_exception(DeadActorError(f"{self.pid} was stopped while handling this ask"))

    # -- what supervision does to the cell (see _supervising.Supervision) ----------------

    def _supervise(self) -> Supervision:
        supervision = self.supervision
        if supervision is None:
            supervision = self.supervision = Supervision(self)
        return supervision

    async def run_post_stop(self, during: str) -> None:
        """Call ``post_stop`` on the current instance (``during``: "restart" or "");
        scheduling from it raises, and a failure is logged, never raised."""
        self.in_post_stop = True
        try:
            await self.actor.post_stop(self.ctx)
        except Exception:
            if during:
                _log.exception("post_stop of %s failed during %s", self.pid, during)
            else:
                _log.exception("post_stop of %s failed", self.pid)
        finally:
            self.in_post_stop = False

    async def backoff(self, seconds: float) -> bool:
        """A restart's wait, between ``post_stop`` and the fresh instance; return whether
        the actor is still alive after it (a stop during the wait finishes it)."""
        self.post_stop_done = True  # a stop during the wait must not call it again
        await self.pause(seconds)
        if not self.alive():
            return False
        self.post_stop_done = False
        return True

    def renew_actor(self) -> bool:
        """A restart's fresh instance from the factory; when the factory fails, log it,
        begin the stop (``post_stop`` already ran) and return False."""
        try:
            self.actor = self.make_actor()
        except Exception:
            _log.exception("factory of %s failed during restart; stopping it", self.pid)
            self.post_stop_done = True
            self.request_stop()
            return False
        return True

    def suspend(self, error: BaseException) -> None:
        """SUSPEND: close the mailbox (queued messages become dead letters) until reinstated."""
        self.state = _SUSPENDED
        self._reject_mailbox(DeadLetterReason.SUSPENDED)
        self.runtime.events.publish(ActorSuspended(self.pid, error))

    def escalated(self, child: Cell, error: BaseException) -> None:
        """A child escalated ``error``: handle it in this actor's next turn."""
        if self.sysq is None:
            self.sysq = []
        self.sysq.append((child, error))
        if not self.draining and self.state is _RUNNING:
            self.wake()

    async def _take_escalations(self) -> None:
        """Handle failures escalated by children: this actor fails with their error."""
        sysq = self.sysq
        while sysq and self.state is _RUNNING:
            child, error = sysq.pop(0)
            if child.alive():
                await self._supervise().child_failed(child, error)


@final
class BoundedCell(Cell):
    """A cell whose mailbox holds at most ``bound`` messages (``mailbox_bound``).

    Past the bound a delivery is a dead letter with reason ``overflow`` (counted, never
    raised; an ask fails with :class:`~tocsin.BackpressureError`), while
    :meth:`offer` (``await pid.send``, a remote connection's frames) waits for room.
    """

    __slots__ = ()

    def deliver(self, message: Any, sender: Any, reply: Reply | None) -> bool:
        # Cell.deliver's body with the bound check added (one int compare): calling
        # Cell.deliver from here would cost more than the check (bench/_kernel_paths.py).
        state = self.state
        if state <= _RUNNING:
            mailbox = self.mailbox
            if mailbox is None:
                mailbox = self.mailbox = deque()
            elif len(mailbox) >= self.room:
                self.runtime.undeliverable(message, sender, self.pid, _OVERFLOW, reply)
                return False
            mailbox.append(message if reply is None else Ask(message, reply))
            mailbox.append(sender)
            if not self.draining and state is _RUNNING:
                if not self.runtime.on_loop_thread():
                    loop = _get_running_loop()
                    if loop is not self.runtime.loop:
                        mailbox.pop()  # not sent after all: take it back
                        mailbox.pop()
                        raise self.runtime.wrong_loop(f"send to {self.pid}", loop)
                self.wake()
            return True
        reason = DeadLetterReason.SUSPENDED if state is _SUSPENDED else DeadLetterReason.STOPPED
        self.runtime.undeliverable(message, sender, self.pid, reason, reply)
        return False

    def offer(self, message: Any, sender: Any, reply: Reply | None) -> asyncio.Future[None] | None:
        """Queue now when there is room and nobody waits before it; else wait in line
        (a future done once the message is in the mailbox, see ``Cell._admit``)."""
        mailbox = self.mailbox
        if (
            self.state <= _RUNNING
            and mailbox is not None
            and len(mailbox) >= self.room  # full, or others wait already (room is 0)
        ):
            future: asyncio.Future[None] = self.runtime.loop.create_future()
            waiting = self.waiting
            if waiting is None:
                waiting = self.waiting = deque()
            waiting.append((future, message, sender, reply))
            self.room = 0  # tells do not overtake a waiting send
            return future
        if self.deliver(message, sender, reply):
            return None
        return self.refusal()
