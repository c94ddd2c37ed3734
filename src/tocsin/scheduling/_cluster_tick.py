# SPDX-License-Identifier: Apache-2.0
"""One cluster cron tick this node won, on its way to the target: the schedule's record
plus what that one delivery carries (its nominal instant, the claim's fence, and, for
``delivery="at_least_once"``, what to call once ``receive`` has returned).

A wrapper per won tick (one small object per claim, beside a coordinator round trip):
two ticks of one schedule in a mailbox each keep their own fence, and ``finished()``
marks the right claim done. Everything else is the record's: ``open`` and ``rejected``
keep the stale-tick rule (a cancelled schedule's tick never reaches ``receive``).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol, final

from ..actor._spi import Cell, RuntimeItem, Tick

if TYPE_CHECKING:
    from ..actor._spi import SendTarget

__all__ = ["ClusterTick", "reports_completion"]


class _Scheduler(Protocol):
    """What a cluster tick needs of the scheduler (``Scheduler``)."""

    def stale(self, record: Any) -> Any: ...

    def last_tick_taken(self, record: Any) -> None: ...

    def tick_rejected(self, record: Any, at: float) -> Any: ...


class _Record(Protocol):
    """What a cluster tick needs of its schedule's record (``ScheduleRecord``)."""

    reference: str
    message: Any
    dead: bool
    final: bool
    queued: int

    @property
    def scheduler(self) -> _Scheduler: ...

    @property
    def tracked(self) -> bool: ...

    def finished(self) -> None: ...


def reports_completion(target: SendTarget) -> bool:
    """Whether ``target`` calls ``finished()`` on the items it is given once their
    ``receive`` returned: a local cell does; another target says so with a true
    ``completes`` attribute (a remote target that asks for completion frames). For any
    other, an ``at_least_once`` tick counts as done once it is handed over."""
    return isinstance(target, Cell) or bool(getattr(target, "completes", False))


@final
class ClusterTick(RuntimeItem):
    """A won cluster cron tick in its target's mailbox (internal)."""

    __slots__ = ("backfill", "done", "fence", "instant", "record", "tracked")

    def __init__(
        self,
        record: _Record,
        instant: float,
        fence: int,
        done: Callable[[], None] | None,
        backfill: bool = False,
    ) -> None:
        self.record = record
        self.instant = instant  # the nominal fire time (epoch seconds), the claim key's
        self.fence = fence
        self.done = done
        self.backfill = backfill
        # A remote target asks for a completion frame only when finished() matters.
        self.tracked = done is not None or record.tracked

    # As the scheduler's TickItem: the record counts its ticks waiting in mailboxes
    # (`queued`, incremented by Scheduler.send), and a stale one never reaches receive.
    def open(self) -> Any:
        record = self.record
        queued = record.queued = record.queued - 1
        if record.dead:
            return record.scheduler.stale(record)
        if record.final and not queued:
            record.scheduler.last_tick_taken(record)
        return record.message

    def rejected(self) -> Any:
        record = self.record
        record.queued -= 1
        return record.scheduler.tick_rejected(record, self.instant)

    def tick(self) -> Tick:
        return Tick(
            self.record.reference,
            datetime.fromtimestamp(self.instant, UTC),
            backfill=self.backfill,
            fence=self.fence,
        )

    def finished(self) -> None:
        done, self.done = self.done, None
        if done is not None:
            done()  # at_least_once: the claim is marked done
        self.record.finished()

    def handed_over(self) -> None:
        """The target does not report completion: done at send."""
        done, self.done = self.done, None
        if done is not None:
            done()
