# SPDX-License-Identifier: Apache-2.0
"""Passivation: an actor idle for ``passivate_after`` seconds is stopped.

The idle deadline lives in the shared heap. Nothing is done per message: the cell notes
the time once per batch it handles (``last_active``), and when the deadline fires it
either passivates the actor or re-arms for ``last_active + passivate_after``. So every
delivery counts as activity (scheduled ticks included) without a clock read or a heap
operation on the message path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, final

from .._deadlines import Deadline

if TYPE_CHECKING:
    from ._cell import Cell

__all__ = ["Passivation"]


@final
class Passivation(Deadline):
    """One actor's idle deadline in the shared heap."""

    __slots__ = ("cell",)

    def __init__(self, cell: Cell) -> None:
        super().__init__()
        self.cell = cell

    def fire(self, now: float, deadline: float) -> None:
        cell = self.cell
        after = cell.passivate_after
        if after is None or cell.passivation is not self or not cell.alive():
            return
        deadlines = cell.runtime.deadlines
        if cell.draining or not cell.alive_running():
            # Busy now, or suspended (a suspended actor is never passivated): look again
            # one full idle period later.
            deadlines.add(now + after, self)
            return
        due = cell.last_active + after
        if now >= due:
            cell.runtime.passivate(cell)
        else:
            deadlines.add(due, self)
