# SPDX-License-Identifier: Apache-2.0
"""The reply path of an ``ask``: a :class:`Reply`, not a live ``asyncio.Future``.

A local ask waits on a future, so its reply is a :class:`FutureReply`. An ask that came
from another node waits there, not here: its reply is a correlation id and a way back
(the remote layer's own :class:`Reply` subclass, which sends the answer as a frame). The
kernel only ever calls the four methods below, so both kinds travel through mailboxes,
supervision and stops the same way.

Prior art: Akka's temporary ``PromiseActorRef`` (an ask's reply is itself an address, so
a remote node can answer it), pykka's ``Envelope.reply_to`` future.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, final

from ..errors import ActorSuspendedError, DeadActorError
from ._events import DeadLetterReason

if TYPE_CHECKING:
    from ._pid import PID

__all__ = ["FutureReply", "Reply", "fail_reply"]


class Reply(ABC):
    """Where the answer to one ask goes. Answered at most once; later calls are no-ops."""

    __slots__ = ()

    @abstractmethod
    def done(self) -> bool:
        """Whether the ask is answered (or failed, or gave up waiting)."""

    @abstractmethod
    def resolve(self, value: Any) -> None:
        """Answer the ask with ``value`` (no-op when already done)."""

    @abstractmethod
    def fail(self, error: BaseException) -> None:
        """Fail the ask with ``error`` (no-op when already done)."""

    @abstractmethod
    def add_done_callback(self, callback: Callable[[Reply], None]) -> None:
        """Call ``callback(self)`` once the reply is done (at once if it already is)."""


@final
class FutureReply(Reply):
    """The reply of an ask made in this process: a future the asker awaits."""

    __slots__ = ("future",)

    def __init__(self, future: asyncio.Future[Any]) -> None:
        self.future = future

    def done(self) -> bool:
        return self.future.done()

    def resolve(self, value: Any) -> None:
        if not self.future.done():
            self.future.set_result(value)

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)

    def add_done_callback(self, callback: Callable[[Reply], None]) -> None:
        self.future.add_done_callback(lambda _: callback(self))


def fail_reply(reply: Reply, target: PID | None, reason: DeadLetterReason) -> None:
    """Fail an ask that cannot be answered: its target is suspended or stopped."""
    if not reply.done():
        if reason is DeadLetterReason.SUSPENDED:
            reply.fail(ActorSuspendedError(f"{target} is suspended"))
        else:
            reply.fail(DeadActorError(f"{target} is stopped"))
