# SPDX-License-Identifier: Apache-2.0
"""The task run in progress of one durable identity: which row, for which nominal
instant, on whose behalf (a manual or backfilled run names its task), and the budget of
a run suspended in the actor's turn. Written by the run only (``_run.run_task``), through
these methods; read by ``current_task``, listings and the handle's idle check.

An identity with no run in progress holds :data:`IDLE`, shared by all and never
written: each run makes its own :class:`CurrentRun` and hands the identity back to
:data:`IDLE` when it ends, so the 100,000s of identities resident between runs keep no
object of their own here (one fewer for each full collection of the cyclic GC)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Protocol, final

from ..triggers import Tick

if TYPE_CHECKING:
    from ..stores import TaskRow
    from ._plan import Cursor

__all__ = ["IDLE", "CurrentRun"]


class Budget(Protocol):
    """A suspended run's time budget (``_run.Budget`` is the one)."""

    def interrupt(self) -> None: ...


@final
class CurrentRun:
    """The run in progress of one identity (internal)."""

    __slots__ = ("budget", "id", "instant", "origin", "row")

    def __init__(self) -> None:
        #: The row being run, its id, and the nominal instant the run is for.
        self.row: TaskRow | None = None
        self.id: str | None = None
        self.instant = 0.0
        #: The row's policy cursor, if it has one (a manual or backfilled run names its
        #: task there).
        self.origin: Cursor | None = None
        #: The budget of the run while it is suspended in the actor's turn.
        self.budget: Budget | None = None

    def running(
        self, row: TaskRow | None, instant: float = 0.0, cursor: Cursor | None = None
    ) -> None:
        """This task runs now, for this nominal instant (``None``: no task runs)."""
        self.row = row
        self.id = None if row is None else row.id
        self.instant = instant
        self.origin = cursor

    def suspended(self, budget: Budget | None) -> None:
        """The run is suspended under ``budget`` (``None``: it no longer is); the
        system's stop and a lost lease interrupt it through it."""
        self.budget = budget

    def interrupt(self) -> None:
        """Cut a suspended run short (the system stops, or the lease was lost): it is not
        completed, so at-least-once delivery runs it again."""
        if self.budget is not None:
            self.budget.interrupt()

    def tick(self, fence: int | None) -> Tick | None:
        """``current_task``: the run in progress as a :class:`Tick`, made when read (a
        run that never looks pays nothing)."""
        row = self.row
        if row is None:
            return None
        origin = self.origin
        if origin is not None and origin.of is not None:
            return Tick(
                reference=origin.of,
                instant=datetime.fromtimestamp(self.instant, UTC),
                attempt=row.attempts + 1,
                manual=origin.manual,
                backfill=origin.backfill,
                fence=fence,
            )
        return Tick(
            reference=row.id,
            instant=datetime.fromtimestamp(self.instant, UTC),
            attempt=row.attempts + 1,
            fence=fence,
        )


#: The run in progress of every identity that has none: all fields empty, never written
#: (:func:`~._run.run_task` makes a :class:`CurrentRun` for each run).
IDLE: Final = CurrentRun()
