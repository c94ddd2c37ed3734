# SPDX-License-Identifier: Apache-2.0
"""The stale-tick filter's sentinel.

A scheduled message travels to its target as the schedule record itself (no wrapper per
tick). When the target's turn reaches it, ``ScheduleRecord.open`` returns :data:`STALE`
if the schedule was cancelled, replaced, or died with its owner meanwhile, so that once
``cancel_schedule`` returns no tick of that schedule reaches ``receive``, not even one
already queued (Akka ``TimerSchedulerImpl.interceptTimerMsg``; the record's ``dead`` flag
plays the part of Akka's generation: a replacement is a new record).
"""

from __future__ import annotations

from typing import Any, final

__all__ = ["STALE"]


@final
class _Stale:
    __slots__ = ()

    def __repr__(self) -> str:
        return "STALE"


#: Returned by ``ScheduleRecord.open`` for a tick that must not be delivered.
STALE: Any = _Stale()
