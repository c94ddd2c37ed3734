# SPDX-License-Identifier: Apache-2.0
"""One actor's machinery: mailbox, turn loop, supervision, stop.

An idle actor owns no task and no mailbox object (a ``deque`` costs ~600 bytes even
empty), so 100,000 idle actors stay cheap. A delivery to an idle actor creates its
mailbox and one task; the task drains the mailbox in batches of :data:`THROUGHPUT`
messages, yielding to the loop between batches (fair dispatch), and ends when the mailbox
is empty.

Prior art: pykka's ``_actor_loop_setup/running/teardown``, Proto.Actor's mailbox
(``throughput`` batch, system messages first), Akka's restart (children stopped,
``postStop`` on the failed instance, mailbox kept, failed message dropped).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..errors import ActorSuspendedError, DeadActorError
from ..scheduling._scheduler import ScheduleRecord
from ..scheduling._timers import STALE
from ._actor import Actor
from ._context import ReceiveContext
from ._events import (
    ActorReinstated,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    ActorSuspended,
    DeadLetterReason,
)
from ._messages import Turn
from ._passivation import Passivation
from ._pid import PID
from ._supervision import Directive, Supervisor

if TYPE_CHECKING:
    from ..scheduling._scheduler import ScheduleRecord
    from ._system import ActorSystem

__all__ = ["THROUGHPUT", "Cell", "CellState"]

#: Messages one actor handles before yielding to the event loop (fairness).
THROUGHPUT = 256

_log = logging.getLogger("tocsin.actor")


@final
class _Ask:
    """An ask's message and reply future, as they wait in a mailbox."""

    __slots__ = ("message", "reply")

    def __init__(self, message: Any, reply: asyncio.Future[Any]) -> None:
        self.message = message
        self.reply = reply


class CellState(enum.IntEnum):
    STARTING = 0
    RUNNING = 1
    SUSPENDED = 2
    STOPPING = 3
    STOPPED = 4


_STARTING = CellState.STARTING
_RUNNING = CellState.RUNNING
_SUSPENDED = CellState.SUSPENDED
_STOPPING = CellState.STOPPING
_STOPPED = CellState.STOPPED


@final
class Cell:
    """The runtime side of one actor incarnation (internal)."""

    __slots__ = (
        "_stopped",
        "actor",
        "children",
        "ctx",
        "depth_high",
        "factory",
        "in_post_stop",
        "last_active",
        "mailbox",
        "owned",
        "parent",
        "passivate_after",
        "passivation",
        "pid",
        "restarts",
        "scheduled",
        "state",
        "supervisor",
        "sysq",
        "system",
        "task",
        "unanswered",
    )

    def __init__(
        self,
        system: ActorSystem,
        path: str,
        factory: Callable[[], Actor],
        parent: Cell | None,
        supervisor: Supervisor,
        passivate_after: float | None,
    ) -> None:
        self.system = system
        self.pid = PID(system.address, path, system._next_uid(), self)
        self.factory = factory
        self.in_post_stop = False
        self.parent = parent
        self.supervisor = supervisor
        self.passivate_after = passivate_after
        self.children: dict[str, Cell] = {}
        self.ctx = ReceiveContext(self)
        self.state = _STARTING
        # Message and sender alternate in one deque: no envelope tuple per message. Tuples
        # holding objects are tracked by the cyclic GC, and at 100k msgs/s the collector
        # spent more time on queued envelopes than the dispatch itself (bench/scheduler.py).
        self.mailbox: deque[Any] | None = None
        self.scheduled = False
        self.task: asyncio.Task[None] | None = None
        self.sysq: list[tuple[Cell, BaseException]] | None = None
        self.restarts: list[float] | None = None
        self.owned: set[ScheduleRecord] | None = None
        self.passivation: Passivation | None = None
        self.last_active = 0.0
        self.depth_high = 0  # ops hook (issue 14): mailbox high-water, see _drain
        self.unanswered: set[asyncio.Future[Any]] | None = None
        self._stopped: asyncio.Future[None] | None = None
        self.actor = self._make_actor()

    # -- delivery (hot path) -----------------------------------------------------------

    def _deliver(self, message: Any, sender: Any, reply: asyncio.Future[Any] | None) -> bool:
        """Enqueue a message; return False (and dead-letter it) if the actor cannot take it."""
        state = self.state
        if state <= _RUNNING:
            mailbox = self.mailbox
            if mailbox is None:
                mailbox = self.mailbox = deque()
            mailbox.append(message if reply is None else _Ask(message, reply))
            mailbox.append(sender)
            if not self.scheduled and state is _RUNNING:
                self._schedule()
            return True
        reason = DeadLetterReason.SUSPENDED if state is _SUSPENDED else DeadLetterReason.STOPPED
        self.system._undeliverable(message, sender, self.pid, reason, reply)
        return False

    def _alive(self) -> bool:
        """Whether the actor can still take messages (maybe after a reinstate)."""
        return self.state < _STOPPING

    def _schedule(self) -> None:
        self.scheduled = True
        self.system._busy += 1
        self.task = self.system._loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            await self._drain()
            if self.state is _STOPPING:
                await self._finish_stop()
        finally:
            self.task = None
            self._idle()

    def _idle(self) -> None:
        self.scheduled = False
        if self.passivate_after is not None:
            self.last_active = self.system.clock.monotonic()
        self.system._busy_done()
        # A message may have arrived while the stop or a restart was being finished.
        if self.mailbox and self.state is _RUNNING:
            self._schedule()

    async def _drain(self) -> None:
        ctx = self.ctx
        system = self.system
        while True:
            if self.sysq:
                await self._process_system()
            mailbox = self.mailbox
            if self.state is not _RUNNING or not mailbox:
                return
            actor = self.actor
            handled = 0
            # ops hook (issue 14): mailbox high-water mark, sampled once per batch, where the
            # mailbox is deepest (it fills while the actor waits for its turn), not per send.
            if len(mailbox) > self.depth_high:
                self.depth_high = len(mailbox)
            popleft = mailbox.popleft
            while mailbox and handled < THROUGHPUT:
                message = popleft()
                sender = popleft()
                handled += 1
                reply = None
                cls = type(message)
                if cls in _WRAPPED:  # one check on the common path
                    if cls is _Ask:
                        reply = message.reply
                        message = message.message
                    elif cls is ScheduleRecord:
                        message = message.open()
                        if message is STALE:
                            continue
                    else:
                        try:
                            await message.run(self)
                        except Exception:
                            _log.exception("runtime work in the turn of %s failed", self.pid)
                        continue
                ctx.message = message
                ctx.sender = sender
                ctx._reply = reply
                try:
                    await actor.receive(ctx)
                except Exception as exc:
                    if reply is not None and not reply.done():
                        reply.set_exception(exc)
                    await self._failed(exc)
                    actor = self.actor
                else:
                    if reply is not None and not reply.done():
                        self._hold(reply)
                if self.state is not _RUNNING or self.sysq:
                    break
            ctx.message = None
            ctx._reply = None
            system._progress += handled
            if mailbox and self.state is _RUNNING:
                await asyncio.sleep(0)  # fairness: let other actors and I/O run

    def _hold(self, reply: asyncio.Future[Any]) -> None:
        """Remember an ask handled without an answer, so the stop can still answer it.

        Without this, an ask with ``timeout=None`` whose handler did not call
        ``respond`` would hang forever, even across ``system.stop()``.
        """
        held = self.unanswered
        if held is None:
            held = self.unanswered = set()
        held.add(reply)
        reply.add_done_callback(held.discard)

    # -- lifecycle ---------------------------------------------------------------------

    def _make_actor(self) -> Actor:
        actor = self.factory()
        if not isinstance(actor, Actor):
            raise TypeError(
                f"actor factory {self.factory!r} returned {actor!r}; it must return an "
                f"instance of tocsin.Actor (pass the class itself, or a zero-argument callable)"
            )
        return actor

    async def first_start(self) -> None:
        """Run the first ``pre_start`` (in the spawner's coroutine) and open the mailbox."""
        self.scheduled = True  # deliveries meanwhile only enqueue
        # The spawner's task runs this actor's turn for now, so that a stop called from
        # `pre_start` returns at once (as from `receive`) instead of awaiting itself.
        self.task = asyncio.current_task()
        system = self.system
        system._busy += 1
        try:
            try:
                await self.actor.pre_start(self.ctx)
            except Exception as exc:
                if self.state is _STARTING:
                    self.state = _RUNNING
                await self._failed(exc)
            if self.state is _STARTING:
                self.state = _RUNNING
            if self.state is not _STOPPING and self.state is not _STOPPED:
                system.events.publish(ActorStarted(self.pid))
                if self.passivate_after is not None:
                    self.last_active = system.clock.monotonic()
                    self.passivation = Passivation(self)
                    system._deadlines.add(self.last_active + self.passivate_after, self.passivation)
        finally:
            self.task = None
            self.scheduled = False
            system._busy_done()
        if self.state is _STOPPING or (self.mailbox and self.state is _RUNNING):
            self._schedule()

    async def _failed(self, error: Exception) -> None:
        """Apply the supervisor's directive for ``error`` (runs in this actor's turn)."""
        _log.debug("actor %s failed", self.pid, exc_info=error)
        directive = self._decide(error)
        if directive is Directive.RESTART:
            await self._restart(error)
        else:
            self._apply(directive, error)

    def _decide(self, error: BaseException) -> Directive:
        directive = self.supervisor.decide(error)
        if directive is Directive.RESTART and not self._may_restart():
            _log.warning("actor %s passed its restart limit; stopping it", self.pid)
            return Directive.STOP
        return directive

    def _may_restart(self) -> bool:
        limit = self.supervisor.max_restarts
        if limit is None:
            return True
        now = self.system.clock.monotonic()
        horizon = now - self.supervisor.within
        times = [t for t in (self.restarts or ()) if t > horizon]
        if len(times) >= limit:
            self.restarts = times
            return False
        times.append(now)
        self.restarts = times
        return True

    def _apply(self, directive: Directive, error: BaseException) -> None:
        if directive is Directive.RESUME:
            return
        if directive is Directive.SUSPEND:
            self._suspend(error)
        elif directive is Directive.ESCALATE and self.parent is not None:
            parent = self.parent
            if parent.sysq is None:
                parent.sysq = []
            parent.sysq.append((self, error))
            if not parent.scheduled and parent.state is _RUNNING:
                parent._schedule()
        else:  # STOP, or ESCALATE from a top-level actor
            self.request_stop()

    async def _restart(self, error: BaseException) -> None:
        while True:
            await self._stop_children()
            self.in_post_stop = True  # scheduling from post_stop raises, restart or not
            try:
                await self.actor.post_stop(self.ctx)
            except Exception:
                _log.exception("post_stop of %s failed during restart", self.pid)
            finally:
                self.in_post_stop = False
            try:
                self.actor = self._make_actor()
            except Exception:
                _log.exception("factory of %s failed during restart; stopping it", self.pid)
                self.request_stop()
                return
            self.system.events.publish(ActorRestarted(self.pid, error))
            try:
                await self.actor.pre_start(self.ctx)
                return
            except Exception as exc:
                error = exc
                directive = self._decide(exc)
                if directive is not Directive.RESTART:
                    self._apply(directive, exc)
                    return
                await asyncio.sleep(0)  # a crash loop must not starve the event loop

    async def _process_system(self) -> None:
        """Handle failures escalated by children: this actor fails with their error."""
        while self.sysq and self.state is _RUNNING:
            child, error = self.sysq.pop(0)
            if child.state >= _STOPPING:
                continue
            directive = self._decide(error)
            if directive is Directive.RESTART:
                await self._restart(error)  # stops children, the failed one included
            else:
                self._apply(directive, error)

    def _suspend(self, error: BaseException) -> None:
        self.state = _SUSPENDED
        self._reject_mailbox(DeadLetterReason.SUSPENDED)
        self.system.events.publish(ActorSuspended(self.pid, error))

    def reinstate(self) -> None:
        """Reopen the mailbox of a suspended actor (no-op otherwise)."""
        if self.state is _SUSPENDED:
            self.state = _RUNNING
            self.system.events.publish(ActorReinstated(self.pid))
            if self.mailbox and not self.scheduled:
                self._schedule()

    def _reject_mailbox(self, reason: DeadLetterReason) -> None:
        mailbox = self.mailbox
        self.mailbox = None
        if not mailbox:
            return
        items = iter(mailbox)
        for message, sender in zip(items, items, strict=True):
            reply = None
            if type(message) is _Ask:
                reply = message.reply
                message = message.message
            self.system._undeliverable(message, sender, self.pid, reason, reply)

    def request_stop(self) -> None:
        """Begin stopping after the current message; never waits."""
        state = self.state
        if state is _STOPPING or state is _STOPPED:
            return
        self.state = _STOPPING
        if state is not _STARTING and not self.scheduled:
            self._schedule()

    async def stop(self) -> None:
        """Stop and return once fully stopped (at once when called from this actor's turn)."""
        if self.state is _STOPPED:
            return
        if self._stopped is None:
            self._stopped = self.system._loop.create_future()
        stopped = self._stopped
        self.request_stop()
        if self.task is not None and asyncio.current_task() is self.task:
            return  # stopping itself from receive: it stops once this turn ends
        await asyncio.shield(stopped)

    async def _stop_children(self) -> None:
        if self.children:
            await asyncio.gather(*(child.stop() for child in list(self.children.values())))

    async def _finish_stop(self) -> None:
        system = self.system
        if self.passivation is not None:
            system._deadlines.remove(self.passivation)
        await self._stop_children()
        try:
            await self.actor.post_stop(self.ctx)
        except Exception:
            _log.exception("post_stop of %s failed", self.pid)
        self.state = _STOPPED
        self._reject_mailbox(DeadLetterReason.STOPPED)
        if self.unanswered:
            for reply in list(self.unanswered):
                fail_reply(reply, self.pid, DeadLetterReason.STOPPED)
        system._cell_stopped(self)
        system.events.publish(ActorStopped(self.pid))
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)


def fail_reply(reply: asyncio.Future[Any], target: PID | None, reason: DeadLetterReason) -> None:
    """Fail an ask that cannot be answered: its target is suspended or stopped."""
    if not reply.done():
        if reason is DeadLetterReason.SUSPENDED:
            reply.set_exception(ActorSuspendedError(f"{target} is suspended"))
        else:
            reply.set_exception(DeadActorError(f"{target} is stopped"))


_WRAPPED = frozenset({_Ask, ScheduleRecord, Turn})
