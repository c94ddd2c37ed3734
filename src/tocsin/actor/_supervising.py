# SPDX-License-Identifier: Apache-2.0
"""The supervision algorithm: what a cell does when ``receive`` or ``pre_start`` raised.

Runs inside the failed actor's turn. The supervisor (``_supervision.Supervisor``) gives a
directive; this module applies it: restart (children stopped, ``post_stop`` on the failed
instance, optional backoff, a fresh instance from the factory, its ``pre_start``), resume,
suspend, stop, or escalate to the parent. Restarts are counted in a sliding window; past
the limit the actor stops.

Every supervised failure is logged at ERROR with its traceback on ``tocsin.actor``, so a
restart loop is visible by default (issue 10, item 13).

Prior art: Proto.Actor ``supervision.go`` (decider + restart statistics), Akka's restart
(children stopped, ``postStop`` on the failed instance, mailbox kept, failed message
dropped) and ``BackoffSupervisor``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from . import _lifecycle
from ._events import ActorRestarted, ActorSuspended, DeadLetterReason
from ._state import CellState
from ._supervision import Directive

if TYPE_CHECKING:
    from ._cell import Cell

__all__ = ["apply", "decide", "escalate", "failed", "process_escalations", "restart", "suspend"]

_log = logging.getLogger("tocsin.actor")


async def failed(cell: Cell, error: Exception) -> BaseException:
    """Apply the supervisor's directive for ``error``; return the last error seen (a
    restart's ``pre_start`` may fail again)."""
    directive = decide(cell, error)
    _log.error(
        "actor %s failed: %r; supervisor directive: %s",
        cell.pid,
        error,
        directive.value,
        exc_info=error,
    )
    if directive is Directive.RESTART:
        return await restart(cell, error)
    apply(cell, directive, error)
    return error


def decide(cell: Cell, error: BaseException) -> Directive:
    """The supervisor's directive, turned into STOP past the restart limit."""
    directive = cell.supervisor.decide(error)
    if directive is Directive.RESTART and not _may_restart(cell):
        _log.error("actor %s passed its restart limit; stopping it", cell.pid)
        return Directive.STOP
    return directive


def _may_restart(cell: Cell) -> bool:
    supervisor = cell.supervisor
    now = cell.runtime.clock.monotonic()
    horizon = now - supervisor.within
    times = [t for t in (cell.restarts or ()) if t > horizon]
    limit = supervisor.max_restarts
    if limit is not None and len(times) >= limit:
        cell.restarts = times
        return False
    times.append(now)
    cell.restarts = times
    return True


def apply(cell: Cell, directive: Directive, error: BaseException) -> None:
    """Apply a directive other than RESTART."""
    if directive is Directive.RESUME:
        return
    if directive is Directive.SUSPEND:
        suspend(cell, error)
    elif directive is Directive.ESCALATE and cell.parent is not None:
        escalate(cell.parent, cell, error)
    else:  # STOP, or ESCALATE from a top-level actor
        cell.request_stop()


async def restart(cell: Cell, error: BaseException) -> BaseException:
    """Restart ``cell`` until a ``pre_start`` succeeds or the supervisor gives up; return
    the last error."""
    while True:
        await cell.stop_children()
        cell.in_post_stop = True  # scheduling from post_stop raises, restart or not
        try:
            await cell.actor.post_stop(cell.ctx)
        except Exception:
            _log.exception("post_stop of %s failed during restart", cell.pid)
        finally:
            cell.in_post_stop = False
        delay = cell.supervisor.backoff_delay(len(cell.restarts or ()))
        if delay > 0:
            cell.post_stop_done = True  # a stop during the wait must not call it again
            await cell.pause(delay)
            if not cell.alive():
                return error  # stopped while waiting: the stop finishes it
            cell.post_stop_done = False
        try:
            cell.actor = cell.make_actor()
        except Exception:
            _log.exception("factory of %s failed during restart; stopping it", cell.pid)
            cell.post_stop_done = True
            cell.request_stop()
            return error
        cell.runtime.events.publish(ActorRestarted(cell.pid, error))
        try:
            await cell.actor.pre_start(cell.ctx)
            return error
        except Exception as exc:
            error = exc
            directive = decide(cell, exc)
            _log.error(
                "pre_start of %s failed during restart: %r; supervisor directive: %s",
                cell.pid,
                exc,
                directive.value,
                exc_info=exc,
            )
            if directive is not Directive.RESTART:
                apply(cell, directive, exc)
                return exc
            await asyncio.sleep(0)  # a crash loop must not starve the event loop


async def process_escalations(cell: Cell) -> None:
    """Handle failures escalated by children: this actor fails with their error."""
    while cell.sysq and cell.alive_running():
        child, error = cell.sysq.pop(0)
        if not child.alive():
            continue
        directive = decide(cell, error)
        _log.error(
            "actor %s escalated %r to %s; supervisor directive: %s",
            child.pid,
            error,
            cell.pid,
            directive.value,
            exc_info=error,
        )
        if directive is Directive.RESTART:
            await restart(cell, error)  # stops children, the failed one included
        else:
            apply(cell, directive, error)


def suspend(cell: Cell, error: BaseException) -> None:
    """SUSPEND: close the mailbox (queued messages become dead letters) until reinstated."""
    cell.state = CellState.SUSPENDED
    _lifecycle.reject_mailbox(cell, DeadLetterReason.SUSPENDED)
    cell.runtime.events.publish(ActorSuspended(cell.pid, error))


def escalate(cell: Cell, child: Cell, error: BaseException) -> None:
    """A child escalated ``error``: handle it in this actor's next turn."""
    if cell.sysq is None:
        cell.sysq = []
    cell.sysq.append((child, error))
    if not cell.draining and cell.state is CellState.RUNNING:
        cell.wake()
