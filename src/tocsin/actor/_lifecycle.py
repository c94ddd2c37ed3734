# SPDX-License-Identifier: Apache-2.0
"""The start and stop of a cell: first ``pre_start``, the grace's interrupt, a restart's
backoff wait, and the final teardown (children, ``post_stop``, mailbox flushed as dead
letters, unanswered asks failed, stop listeners, ``ActorStopped``).

Kept apart from ``_cell.py`` (delivery and the turn loop) so each reads on its own.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from ..errors import DeadActorError
from . import _supervising
from ._events import ActorStarted, ActorStopped, DeadLetterReason
from ._mailbox import Ask
from ._passivation import Passivation
from ._reply import fail_reply
from ._state import CellState

if TYPE_CHECKING:
    from ._cell import Cell
    from ._reply import Reply

__all__ = [
    "fail_current",
    "finish_stop",
    "first_start",
    "hold_unanswered",
    "interrupt",
    "pause",
    "reject_mailbox",
]

_log = logging.getLogger("tocsin.actor")

_STARTING = CellState.STARTING
_RUNNING = CellState.RUNNING
_STOPPING = CellState.STOPPING
_STOPPED = CellState.STOPPED


async def first_start(cell: Cell) -> BaseException | None:
    """Run the first ``pre_start`` (in the spawner's coroutine) and open the mailbox.

    Returns ``None`` once the actor is up, or, when ``pre_start`` failed and the
    supervisor did not bring the actor up, the last error, after the actor has fully
    stopped (so its name is free again).
    """
    cell.draining = True  # deliveries meanwhile only enqueue
    # The spawner's task runs this actor's turn for now, so that a stop called from
    # `pre_start` returns at once (as from `receive`) instead of awaiting itself.
    cell.task = asyncio.current_task()
    runtime = cell.runtime
    cell.borrowed = True  # the task is the spawner's: the grace never cancels it
    runtime.busy += 1
    error: BaseException | None = None
    try:
        try:
            await cell.actor.pre_start(cell.ctx)
        except Exception as exc:
            if cell.state is _STARTING:
                cell.state = _RUNNING
            error = await _supervising.failed(cell, exc)
        if cell.state is _STARTING:
            cell.state = _RUNNING
        if cell.state is not _STOPPING and cell.state is not _STOPPED:
            error = None  # up: pre_start succeeded, or a restart did, or resumed
            runtime.events.publish(ActorStarted(cell.pid))
            if cell.passivate_after is not None:
                cell.last_active = runtime.clock.monotonic()
                cell.passivation = Passivation(cell)
                runtime.deadlines.add(cell.last_active + cell.passivate_after, cell.passivation)
    finally:
        cell.borrowed = False
        cell.task = None
        cell.draining = False
        runtime.busy_done()
    if cell.state is _STOPPING or (cell.mailbox and cell.state is _RUNNING):
        cell.wake()
    if error is not None:
        await cell.stop()
    return error


async def pause(cell: Cell, seconds: float) -> None:
    """Wait ``seconds`` on the system clock inside the turn (a restart's backoff);
    a stop request ends the wait at once."""
    waiter: asyncio.Future[None] = cell.runtime.loop.create_future()
    cell.pausing = waiter
    sleeper = asyncio.ensure_future(cell.runtime.sleep(seconds))

    def wake(_: object) -> None:
        if not waiter.done():
            waiter.set_result(None)

    sleeper.add_done_callback(wake)
    try:
        await waiter
    finally:
        cell.pausing = None
        sleeper.cancel()


def reject_mailbox(cell: Cell, reason: DeadLetterReason) -> None:
    mailbox = cell.mailbox
    cell.mailbox = None
    if not mailbox:
        return
    items = iter(mailbox)
    undeliverable = cell.runtime.undeliverable
    for message, sender in zip(items, items, strict=True):
        reply = None
        if type(message) is Ask:
            reply = message.reply
            message = message.message
        undeliverable(message, sender, cell.pid, reason, reply)


def interrupt(cell: Cell) -> bool:
    """Cancel the handler this actor is running (the stop's grace ran out).

    Only a turn in its own drain task is cancelled, and not while it is already
    finishing its stop (``post_stop`` still runs). Returns whether it cancelled.
    """
    task = cell.task
    if task is None or cell.finishing or cell.interrupted or cell.borrowed:
        return False
    if task is asyncio.current_task():
        return False
    cell.interrupted = True
    task.cancel()
    return True


async def finish_stop(cell: Cell) -> None:
    runtime = cell.runtime
    cell.finishing = True
    if cell.passivation is not None:
        runtime.deadlines.remove(cell.passivation)
    await cell.stop_children()
    if not cell.post_stop_done:
        cell.in_post_stop = True
        try:
            await cell.actor.post_stop(cell.ctx)
        except Exception:
            _log.exception("post_stop of %s failed", cell.pid)
        finally:
            cell.in_post_stop = False
    cell.state = _STOPPED
    reject_mailbox(cell, DeadLetterReason.STOPPED)
    if cell.unanswered:
        for reply in list(cell.unanswered):
            fail_reply(reply, cell.pid, DeadLetterReason.STOPPED)
    runtime.cell_stopped(cell)
    runtime.events.publish(ActorStopped(cell.pid))
    if cell._stopped is not None and not cell._stopped.done():
        cell._stopped.set_result(None)


def hold_unanswered(cell: Cell, reply: Reply) -> None:
    """Remember an ask handled without an answer, so the stop can still answer it.

    Without this, an ask with ``timeout=None`` whose handler did not call
    ``respond`` would hang forever, even across ``system.stop()``.
    """
    held = cell.unanswered
    if held is None:
        held = cell.unanswered = set()
    held.add(reply)
    reply.add_done_callback(held.discard)  # called with the reply itself


def fail_current(cell: Cell) -> None:
    """The turn was cut short by the stop's grace: fail the ask it was handling."""
    reply = cell.ctx._reply
    cell.ctx._reply = None
    if reply is not None and not reply.done():
        reply.set_exception(DeadActorError(f"{cell.pid} was stopped while handling this ask"))
