# SPDX-License-Identifier: Apache-2.0
"""Runs an operator asks for: ``trigger`` (one run now) and ``backfill`` (the instants a
task would have run in a past range), issue 23, the durable part.

Each such run is a one-shot row of its own beside the task, so the task's own row (its
due time, its cursor) is untouched: ``trigger`` does not move the next run, and a
backfill never disturbs the live cadence. The row copies the task's method, payload,
retries and budget; its policy cursor names the task (``of``) and says ``manual`` or
``backfill``, so ``current_task`` reads ``Tick(reference=<task id>, instant, manual=...,
backfill=...)``. Runs of one identity are serialized in its actor's turn, so these wait
for a run in flight, whatever the overlap policy. Its id is ``<task id>@manual:<time>``
or ``<task id>@backfill:<instant>`` (ISO 8601, UTC): a second backfill of the same
instant replaces the pending row instead of adding one.

Pure functions over rows: the actor's methods and ``tocsin tasks trigger/backfill``
(which writes to the store from another process) build the same rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Final

import msgspec

from ..clock import WALL_TOLERANCE
from ..stores import TaskRow
from ..triggers import MAX_BACKFILL
from ._plan import Cursor, Instants, decode_policy, encode_policy
from ._policy import TaskPolicy

__all__ = ["BACKFILL_LIMIT", "backfill_instants", "backfill_rows", "trigger_row"]

#: Most instants one backfill runs (a wider range is a ``ValueError``: narrow it): the
#: policy engine's one backfill limit, the same for every tier.
BACKFILL_LIMIT: Final = MAX_BACKFILL

_DEFAULT: Final = TaskPolicy()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")


def _policy_of(row: TaskRow) -> tuple[TaskPolicy, Cursor]:
    if row.policy is None:
        return _DEFAULT, Cursor()
    return decode_policy(row.policy)


def _child(
    row: TaskRow, policy: TaskPolicy, instant: float, due: float, now: float, *, manual: bool
) -> TaskRow:
    what = "manual" if manual else "backfill"
    cursor = Cursor(instant=instant, of=row.id, manual=manual, backfill=not manual)
    return msgspec.structs.replace(
        row,
        id=f"{row.id}@{what}:{_iso(now if manual else instant)}",
        due=due,
        every=None,
        cron=None,
        attempts=0,
        created_at=now,
        state="pending",
        last_error=None,
        policy=encode_policy(policy, cursor),
    )


def trigger_row(row: TaskRow, now: float) -> TaskRow:
    """The row of one manual run of ``row``'s task now (``instant``: now)."""
    policy, _ = _policy_of(row)
    return _child(row, policy, now, now, now, manual=True)


def backfill_instants(row: TaskRow, start: float, end: float, default_zone: str) -> list[float]:
    """The instants of ``row``'s task in ``[start, end)``, oldest first, without those its
    calendar excludes. An ``every`` task's are its cadence: its pending instant plus or
    minus whole intervals.

    Raises:
        ValueError: ``end`` is not after ``start``, the task is not recurring, or the
            range holds more than :data:`BACKFILL_LIMIT` instants.
    """
    if not end > start:
        raise ValueError(f"backfill: `end` must be after `start`, got {_iso(start)} .. {_iso(end)}")
    policy, cursor = _policy_of(row)
    instants = Instants.of(row, policy, default_zone)
    if not instants.recurring:
        raise ValueError(f"backfill: task {row.id!r} is not recurring (no interval, no cron)")
    found: list[float] = []
    every = instants.every
    if every is not None:
        pending = cursor.instant if cursor.instant is not None else row.due
        steps = -((pending - start) // every)  # the first whole step at or after start
        candidate = pending + steps * every
        while candidate < start:
            candidate += every
    else:
        candidate_or_none = instants.after(start - 1.0)
        while candidate_or_none is not None and candidate_or_none < start:
            candidate_or_none = instants.after(candidate_or_none)
        if candidate_or_none is None:
            return found
        candidate = candidate_or_none
    while candidate < end:
        if not instants.excluded(candidate):
            if len(found) == BACKFILL_LIMIT:
                raise ValueError(
                    f"backfill: more than {BACKFILL_LIMIT:,} instants in "
                    f"{_iso(start)} .. {_iso(end)}; narrow the range"
                )
            found.append(candidate)
        following = instants.after(candidate)
        if following is None:
            break
        candidate = following
    return found


def backfill_rows(row: TaskRow, instants: list[float], now: float) -> list[TaskRow]:
    """One backfilled run per instant, oldest first, paced at the task's
    ``misfire.rate`` (as fast as the drain takes them without one)."""
    policy, _ = _policy_of(row)
    rate = policy.misfire.rate
    spacing = 0.0 if rate is None else 1.0 / rate + WALL_TOLERANCE
    return [
        _child(row, policy, instant, now + k * spacing, now, manual=False)
        for k, instant in enumerate(instants)
    ]
