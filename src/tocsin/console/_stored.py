# SPDX-License-Identifier: Apache-2.0
"""Stored schedules in the console: what their rows show (spec, version, next instant
after calendars, last outcome, pause note), their ledger page, and the three actions
(pause, resume, trigger).

Read from the store (a running system's, or the one ``tocsin console --store`` opened),
so every node's console shows the same list. Actions go through the system's
``system.schedules`` when there is one (a trigger then runs on this node), else through
the store alone (a trigger is a request the first node running schedules claims).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, final

from ..errors import ScheduleNotFoundError, TocsinError
from ..schedules import Schedules, StoredSchedule
from ..schedules._spi import spec_to_wire
from ..stores import ScheduleStore

if TYPE_CHECKING:
    from ..clock import Clock
    from ..triggers import TickOutcome

__all__ = ["ACTIONS", "StoredHistory", "StoredView", "act_on_stored", "read_stored", "stored_view"]

#: The actions the console offers on a stored schedule.
ACTIONS: Final = ("pause", "resume", "trigger")
#: Most stored schedules one snapshot lists (the page says how many more).
MAX_STORED: Final = 500


@final
@dataclass(frozen=True, slots=True)
class StoredView:
    """One stored schedule as the console shows it."""

    id: str
    describe: str
    version: int
    next_fire_at: datetime | None
    last_outcome: str | None
    paused: bool
    note: str | None
    paused_by: str | None
    paused_at: datetime | None


@final
@dataclass(frozen=True, slots=True)
class StoredHistory:
    """A stored schedule and its ledger (oldest first), for its page."""

    schedule: StoredView
    entries: tuple[TickOutcome, ...]


def _describe(info: StoredSchedule) -> str:
    wire = spec_to_wire(info.spec)
    trigger = wire["trigger"]
    if "interval" in trigger:
        when = f"every {trigger['interval']:g} s"
    elif "cron" in trigger:
        zone = trigger["timezone"] or "UTC"
        when = f"cron {trigger['cron']} ({zone})"
    else:
        when = "once"
    target = wire["target"]
    what = target["job"] if "job" in target else "durable " + "/".join(target["durable"])
    return f"{when} → {what}"


def stored_view(info: StoredSchedule) -> StoredView:
    """The row of ``info``."""
    return StoredView(
        id=info.id,
        describe=_describe(info),
        version=info.version,
        next_fire_at=info.next_fire_at,
        last_outcome=info.last_outcome,
        paused=info.paused,
        note=info.note,
        paused_by=info.paused_by,
        paused_at=info.paused_at,
    )


def schedules_of(store: object, clock: Clock, system: Any = None) -> Schedules | None:
    """The verbs over ``store``: a running system's own (``system.schedules``), else the
    store's alone; ``None`` for a store without stored schedules."""
    if system is not None and getattr(system, "running", False):
        found: Schedules = system.schedules
        return found
    if not isinstance(store, ScheduleStore):
        return None
    return Schedules(store, clock, "console", None)  # type: ignore[arg-type]


async def read_stored(
    schedules: Schedules | None,
) -> tuple[tuple[StoredView, ...] | None, int, str | None]:
    """The rows (at most :data:`MAX_STORED`), how many there are, and an error text."""
    if schedules is None:
        return None, 0, None
    try:
        found = await schedules.list()
    except TocsinError as exc:
        return None, 0, str(exc)
    return tuple(stored_view(i) for i in found[:MAX_STORED]), len(found), None


async def stored_history(schedules: Schedules | None, schedule_id: str) -> StoredHistory | None:
    """A stored schedule and its ledger; ``None`` if there is no such schedule."""
    if schedules is None:
        return None
    try:
        info = await schedules.get(schedule_id)
        entries = await schedules.history(schedule_id)
    except ScheduleNotFoundError:
        return None
    return StoredHistory(stored_view(info), tuple(entries))


async def act_on_stored(
    schedules: Schedules | None, action: str, schedule_id: str, note: str | None
) -> None:
    """Pause (with ``note``), resume or trigger one stored schedule.

    Raises:
        ScheduleNotFoundError: no such schedule.
        ValueError: an unknown action, or no store with stored schedules here.
    """
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}; allowed: {', '.join(ACTIONS)}")
    if schedules is None:
        raise ValueError("this console reads no store with stored schedules")
    if action == "pause":
        await schedules.pause(schedule_id, note=note or None)
    elif action == "resume":
        await schedules.resume(schedule_id)
    else:
        await schedules.trigger(schedule_id)
