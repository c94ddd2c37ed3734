# SPDX-License-Identifier: Apache-2.0
"""The supervision algorithm: what a cell does when ``receive`` or ``pre_start`` raised.

Runs inside the failed actor's turn. The supervisor (``_supervision.Supervisor``) gives a
directive; a :class:`Supervision` (one per cell, made at its first failure) applies it:
restart (children stopped, ``post_stop`` on the failed instance, optional backoff, a fresh
instance from the factory, its ``pre_start``), resume, suspend, stop, or escalate to the
parent. Restarts are counted in a sliding window, which the supervision owns; past the
limit the actor stops. It acts on the cell only through the methods of :class:`Supervised`
(the cell's own module writes the cell's fields), so this module imports no cell.

Every supervised failure is logged at ERROR with its traceback on ``tocsin.actor``, so a
restart loop is visible by default (issue 10, item 13).

Prior art: Proto.Actor ``supervision.go`` (decider + restart statistics), Akka's restart
(children stopped, ``postStop`` on the failed instance, mailbox kept, failed message
dropped) and ``BackoffSupervisor``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol, final

from ._events import ActorRestarted
from ._supervision import Directive

if TYPE_CHECKING:
    from ._actor import Actor
    from ._context import ReceiveContext
    from ._pid import PID
    from ._runtime import Runtime
    from ._supervision import Supervisor

__all__ = ["Supervised", "Supervision"]

_log = logging.getLogger("tocsin.actor")


class Supervised(Protocol):
    """What supervision needs from the cell it supervises (``_cell.Cell``)."""

    @property
    def pid(self) -> PID: ...
    @property
    def runtime(self) -> Runtime: ...
    @property
    def supervisor(self) -> Supervisor: ...
    @property
    def actor(self) -> Actor: ...
    @property
    def ctx(self) -> ReceiveContext: ...
    @property
    def parent(self) -> Any: ...  # a Supervised, or None for a top-level actor

    def alive(self) -> bool: ...
    def request_stop(self) -> None: ...
    async def stop_children(self) -> None: ...
    async def run_post_stop(self, during: str) -> None: ...
    async def backoff(self, seconds: float) -> bool: ...
    def renew_actor(self) -> bool: ...
    def suspend(self, error: BaseException) -> None: ...
    def escalated(self, child: Any, error: BaseException) -> None: ...


@final
class Supervision:
    """One cell's failure handling: the supervisor's directive, applied, and the restart
    window it is counted in (owned here)."""

    __slots__ = ("_cell", "_restarts")

    def __init__(self, cell: Supervised) -> None:
        self._cell = cell
        #: Monotonic times of the restarts inside the supervisor's window.
        self._restarts: list[float] = []

    async def failed(self, error: Exception) -> BaseException:
        """Apply the supervisor's directive for ``error``; return the last error seen (a
        restart's ``pre_start`` may fail again)."""
        directive = self.decide(error)
        _log.error(
            "actor %s failed: %r; supervisor directive: %s",
            self._cell.pid,
            error,
            directive.value,
            exc_info=error,
        )
        if directive is Directive.RESTART:
            return await self.restart(error)
        self.apply(directive, error)
        return error

    async def child_failed(self, child: Supervised, error: BaseException) -> None:
        """A child escalated ``error`` and this actor's turn handles it now: this actor
        fails with the child's error."""
        directive = self.decide(error)
        _log.error(
            "actor %s escalated %r to %s; supervisor directive: %s",
            child.pid,
            error,
            self._cell.pid,
            directive.value,
            exc_info=error,
        )
        if directive is Directive.RESTART:
            await self.restart(error)  # stops children, the failed one included
        else:
            self.apply(directive, error)

    def decide(self, error: BaseException) -> Directive:
        """The supervisor's directive, turned into STOP past the restart limit."""
        cell = self._cell
        directive = cell.supervisor.decide(error)
        if directive is Directive.RESTART and not self._may_restart():
            _log.error("actor %s passed its restart limit; stopping it", cell.pid)
            return Directive.STOP
        return directive

    def _may_restart(self) -> bool:
        supervisor = self._cell.supervisor
        now = self._cell.runtime.clock.monotonic()
        horizon = now - supervisor.within
        times = [t for t in self._restarts if t > horizon]
        self._restarts = times
        limit = supervisor.max_restarts
        if limit is not None and len(times) >= limit:
            return False
        times.append(now)
        return True

    def apply(self, directive: Directive, error: BaseException) -> None:
        """Apply a directive other than RESTART."""
        cell = self._cell
        if directive is Directive.RESUME:
            return
        if directive is Directive.SUSPEND:
            cell.suspend(error)
        elif directive is Directive.ESCALATE and cell.parent is not None:
            cell.parent.escalated(cell, error)
        else:  # STOP, or ESCALATE from a top-level actor
            cell.request_stop()

    async def restart(self, error: BaseException) -> BaseException:
        """Restart the cell until a ``pre_start`` succeeds or the supervisor gives up;
        return the last error."""
        cell = self._cell
        while True:
            await cell.stop_children()
            await cell.run_post_stop("restart")
            delay = cell.supervisor.backoff_delay(len(self._restarts))
            if delay > 0 and not await cell.backoff(delay):
                return error  # stopped while waiting: the stop finishes it
            if not cell.renew_actor():
                return error
            cell.runtime.events.publish(ActorRestarted(cell.pid, error))
            try:
                await cell.actor.pre_start(cell.ctx)
                return error
            except Exception as exc:
                error = exc
                directive = self.decide(exc)
                _log.error(
                    "pre_start of %s failed during restart: %r; supervisor directive: %s",
                    cell.pid,
                    exc,
                    directive.value,
                    exc_info=exc,
                )
                if directive is not Directive.RESTART:
                    self.apply(directive, exc)
                    return exc
                await asyncio.sleep(0)  # a crash loop must not starve the event loop
