# SPDX-License-Identifier: Apache-2.0
"""Ticks in flight and the stale-tick filter.

A scheduled message travels to its target wrapped in a :class:`Tick` that points at its
schedule record. When the target's turn reaches it, :meth:`Tick.open` drops it if the
schedule was cancelled, replaced, or died with its owner meanwhile, so that once
``cancel_schedule`` returns no tick of that schedule reaches ``receive``, not even one
already queued (Akka ``TimerSchedulerImpl.interceptTimerMsg``; the record's ``dead`` flag
plays the part of Akka's generation: a replacement is a new record).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, final

if TYPE_CHECKING:
    from ._scheduler import ScheduleRecord

__all__ = ["STALE", "Tick"]


@final
class _Stale:
    __slots__ = ()

    def __repr__(self) -> str:
        return "STALE"


#: Returned by :meth:`Tick.open` for a tick that must not be delivered.
STALE: Any = _Stale()


@final
class Tick:
    """One delivery of a schedule, as it sits in a mailbox (internal)."""

    __slots__ = ("record",)

    def __init__(self, record: ScheduleRecord) -> None:
        self.record = record

    def open(self) -> Any:
        """The message to deliver, or :data:`STALE`; a schedule's last tick retires it."""
        record = self.record
        if record.dead:
            record.scheduler.ticks_discarded += 1
            return STALE
        if record.final:
            record.scheduler._retire(record)
        return record.message

    def __repr__(self) -> str:
        return f"Tick({self.record.reference!r})"
