# SPDX-License-Identifier: Apache-2.0
"""The :class:`Actor` base class."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._context import ReceiveContext

__all__ = ["Actor"]


class Actor(ABC):
    """Subclass this and implement :meth:`receive`.

    One message at a time: ``receive``, ``pre_start`` and ``post_stop`` of one actor never
    run concurrently with each other. A restart builds a fresh instance from the factory
    given to ``spawn``, so state kept on ``self`` starts over.
    """

    async def pre_start(self, ctx: ReceiveContext) -> None:
        """Runs on every start, restarts included, before any message.

        Register timers here with ``replace=True`` so a restart never doubles them. If it
        raises, the supervisor handles the failure as if ``receive`` had raised. Messages
        arriving meanwhile wait in the mailbox.
        """

    @abstractmethod
    async def receive(self, ctx: ReceiveContext) -> None:
        """Handle ``ctx.message``; answer an ``ask`` with ``ctx.respond(value)``."""

    async def post_stop(self, ctx: ReceiveContext) -> None:
        """Runs once the children have stopped, on a stop and before a restart.

        Scheduling calls from here raise ``DeadActorError``. An exception is logged and
        does not prevent the stop.
        """
