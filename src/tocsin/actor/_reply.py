# SPDX-License-Identifier: Apache-2.0
"""The reply path of an ``ask``: a :class:`Reply`, not necessarily a live future.

The kernel uses exactly four methods of a reply, the ones ``asyncio.Future`` has:
``done()``, ``set_result(value)``, ``set_exception(error)`` and
``add_done_callback(callback)``, and it always checks ``done()`` before setting one. A
local ask passes its own future (so a local ask costs nothing extra). An ask that came
from another node waits there, not here: the remote layer passes an object holding the
peer and a correlation id, whose ``set_result``/``set_exception`` write the reply frame.
Both travel through mailboxes, supervision and stops the same way.

Prior art: Akka's temporary ``PromiseActorRef`` (an ask's reply is itself an address, so
a remote node can answer it), pykka's ``Envelope.reply_to`` future.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ActorSuspendedError, BackpressureError, DeadActorError
from ._events import DeadLetterReason

if TYPE_CHECKING:
    from ._pid import PID

__all__ = ["Reply", "fail_reply"]


class Reply(Protocol):
    """Where the answer to one ask goes (``asyncio.Future`` is one)."""

    def done(self) -> bool:
        """Whether the ask is answered (or failed, or its asker gave up)."""
        ...

    def set_result(self, result: Any, /) -> None:
        """Answer the ask (only called while not ``done()``)."""
        ...

    def set_exception(self, exception: BaseException | type[BaseException], /) -> None:
        """Fail the ask (only called while not ``done()``)."""
        ...

    def add_done_callback(self, fn: Callable[[Any], object], /) -> None:
        """Call ``fn(self)`` once done."""
        ...


def fail_reply(reply: Reply, target: PID | None, reason: DeadLetterReason) -> None:
    """Fail an ask that cannot be answered: its target is suspended or stopped, or its
    bounded mailbox is full (``overflow``)."""
    if not reply.done():
        if reason is DeadLetterReason.SUSPENDED:
            reply.set_exception(ActorSuspendedError(f"{target} is suspended"))
        elif reason is DeadLetterReason.OVERFLOW:
            reply.set_exception(
                BackpressureError(
                    f"the mailbox of {target} is full (mailbox_bound): the ask was not "
                    "queued; `await pid.send(...)` waits for room instead"
                )
            )
        else:
            reply.set_exception(DeadActorError(f"{target} is stopped"))
