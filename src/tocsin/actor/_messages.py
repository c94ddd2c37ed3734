# SPDX-License-Identifier: Apache-2.0
"""Internal messages the runtime puts in a mailbox (never seen by ``receive``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, final

if TYPE_CHECKING:
    from ._cell import Cell

__all__ = ["Turn"]


@final
class Turn:
    """Runtime work that must run inside an actor's turn, in mailbox order.

    Durable task runs use it: they happen one at a time and never concurrently with
    ``receive``, because they are just another item of the actor's mailbox.
    """

    __slots__ = ("run",)

    def __init__(self, run: Callable[[Cell], Awaitable[None]]) -> None:
        self.run = run
