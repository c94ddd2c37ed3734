# SPDX-License-Identifier: Apache-2.0
"""Stored schedules as rows: the schedule table, its ledger and its claims, and the
:class:`ScheduleStore` protocol the memory, SQLite and PostgreSQL stores implement.

The store knows nothing of triggers or targets: a schedule's spec arrives as codec bytes
encoded by :mod:`tocsin.schedules` (never pickled), beside the columns the store itself
must compare or change (version, pause state, times). Times are epoch seconds (UTC).

Three tables (DESIGN.md "Schedules as data"):

* ``tocsin_schedules``: one row per schedule: the spec, its ``version`` (bumped by every
  change of the spec, never by pause or resume), the pause state beside it, created and
  updated times. Every change also bumps one store-wide *revision*
  (``tocsin_meta['schedules']``), which nodes poll to see changes made elsewhere.
* ``tocsin_schedule_history``: the ledger: one row per ``(id, instant, manual)`` (a
  run asked for by ``trigger`` is a row of its own, even at the instant of a regular
  tick), written by the node that decided the instant, kept to the newest ``keep`` per
  schedule, and kept when the schedule is removed (its rows age out only as newer ones
  come, which for a removed schedule means never: ``history(id)`` keeps answering).
* ``tocsin_schedule_requests``: runs an operator asked for from another process
  (``tocsin schedules trigger/backfill``): every node running schedules claims each and
  the winner runs it and deletes the request.
* ``tocsin_schedule_claims``: the single-node claims (no coordinator): put-if-absent by
  key, kept until they expire; expired ones are purged as claims come.

Prior art: APScheduler 4's data store (schedules as rows with a version-free upsert),
Temporal's schedule records, procrastinate's ``periodic_defers`` unique key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import msgspec

__all__ = [
    "SchedulePause",
    "ScheduleRequest",
    "ScheduleRow",
    "ScheduleStore",
    "ScheduleTickRow",
]


class ScheduleRow(msgspec.Struct, frozen=True):
    """One stored schedule, as stored.

    ``spec`` is the schedule's value as codec bytes (:mod:`tocsin.schedules` reads it);
    ``version`` counts the changes of the spec (1 when added). ``paused``, ``note``,
    ``paused_by`` and ``paused_at`` are operational state: a spec change keeps them.
    """

    id: str
    spec: bytes
    version: int
    created_at: float
    updated_at: float
    paused: bool = False
    note: str | None = None
    paused_by: str | None = None
    paused_at: float | None = None


class SchedulePause(msgspec.Struct, frozen=True):
    """A schedule's pause state as :meth:`ScheduleStore.pause_schedule_row` writes it
    (the columns ``paused``, ``note``, ``paused_by``, ``paused_at`` of its row): paused,
    with the note, who and when; or resumed (``SchedulePause(False)``: all cleared)."""

    paused: bool
    note: str | None = None
    by: str | None = None
    at: float | None = None


class ScheduleTickRow(msgspec.Struct, frozen=True):
    """One ledger row: what became of ``instant`` of schedule ``id``.

    ``outcome`` an ``Outcome`` value or one of the stored schedules' own (``failed``,
    ``retried``); ``detail`` more about it (an error's text, how many were coalesced);
    ``node`` who decided it; ``version`` the spec version it was decided under; ``note``
    and ``by`` the pause's note and who paused (``paused`` rows); ``started`` when the
    handler started (delivered rows whose run this node saw start), else ``None``;
    ``manual`` a run asked for by ``trigger`` (keyed apart from the regular tick of the
    same instant, so a trigger at the millisecond of a decided instant still runs).
    """

    id: str
    instant: float
    at: float
    outcome: str
    node: str
    version: int
    detail: str | None = None
    note: str | None = None
    by: str | None = None
    started: float | None = None
    manual: bool = False


class ScheduleRequest(msgspec.Struct, frozen=True):
    """A run of ``instant`` of schedule ``id`` an operator asked for: ``manual`` (a
    trigger: run now, even paused) or not (a backfill of a past instant, claimed with
    the same key as its regular tick). ``at``: when it was asked."""

    id: str
    instant: float
    manual: bool
    at: float


@runtime_checkable
class ScheduleStore(Protocol):
    """What a store offers stored schedules. Every method is one atomic step.

    Guarantees (``tests/stores/test_schedule_rows.py`` runs them on memory, SQLite and
    PostgreSQL alike): :meth:`write_schedule` is a compare-and-set on ``version``, so two
    nodes upserting one schedule at once write it once; :meth:`claim_schedule_tick`
    grants each unexpired key once; every change to ``tocsin_schedules`` moves
    :meth:`schedules_revision`.
    """

    async def schedule_rows(self) -> list[ScheduleRow]:
        """Every stored schedule, by id."""
        ...

    async def schedule_page(self, after: str, limit: int) -> list[ScheduleRow]:
        """At most ``limit`` stored schedules whose ids sort after ``after`` (``""``: from
        the first), by id: a node reads every schedule page by page (what it holds at once
        while loading is one page, not every row)."""
        ...

    async def schedule_row(self, schedule_id: str) -> ScheduleRow | None:
        """One stored schedule, or ``None``."""
        ...

    async def schedule_rows_of(self, schedule_ids: Sequence[str]) -> dict[str, ScheduleRow]:
        """The stored schedules of ``schedule_ids`` by id (an id not stored is left out),
        read at once: what the deciding node re-reads for every instant of a timer batch
        it won, in one round trip rather than one each."""
        ...

    async def write_schedule(self, row: ScheduleRow, *, expect: int | None) -> bool:
        """Insert (``expect=None``: only if absent) or change (only if the stored
        ``version`` is ``expect``) one schedule's spec, version and times; the pause
        state of an existing row is kept. Returns whether it was written."""
        ...

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Remove one schedule (its ledger stays); whether it existed."""
        ...

    async def pause_schedule_row(self, schedule_id: str, pause: SchedulePause) -> bool:
        """Set the pause state (the version is untouched); whether the schedule exists."""
        ...

    async def schedules_revision(self) -> int:
        """A number that moves at every change of ``tocsin_schedules`` (0: never)."""
        ...

    async def record_schedule_tick(
        self, row: ScheduleTickRow, keep: int, *, replace: bool = True
    ) -> None:
        """Write the ledger row of ``(row.id, row.instant, row.manual)`` (``replace``:
        replacing one there, a later decision about the same instant, as ``failed`` after
        ``delivered``, keeping its ``started``; else only if there is none), then keep
        only the newest ``keep`` rows of that schedule (by instant)."""
        ...

    async def schedule_ticks(
        self, schedule_id: str, limit: int | None = None
    ) -> list[ScheduleTickRow]:
        """The ledger of one schedule, oldest instant first; with ``limit`` the newest
        ``limit`` of them (an unknown or removed id: its kept rows, or none)."""
        ...

    async def schedule_last_instants(
        self, first: str | None = None, last: str | None = None
    ) -> dict[str, float]:
        """The newest instant of each schedule's ledger, manual runs aside, by id (one
        read: what a node starting finds overdue since); with ``first`` and ``last``,
        only the ids from ``first`` to ``last`` (both included: one page of
        :meth:`schedule_page`)."""
        ...

    async def schedule_tick(
        self, schedule_id: str, instant: float, *, manual: bool = False
    ) -> ScheduleTickRow | None:
        """The ledger row of one instant (``manual``: of the run ``trigger`` asked for
        at it), or ``None``."""
        ...

    async def claim_schedule_tick(self, key: str, node: str, now: float, expires: float) -> bool:
        """Put-if-absent the claim ``key`` until ``expires``; a claim of that key that
        expired by ``now`` is replaced. Returns whether this call won it."""
        ...

    async def request_schedule_run(self, request: ScheduleRequest) -> None:
        """Record ``request`` (a second identical one is a no-op) and move the revision,
        so nodes running schedules look at the requests."""
        ...

    async def schedule_requests(self) -> list[ScheduleRequest]:
        """The requests not yet done, oldest instant first."""
        ...

    async def delete_schedule_request(self, request: ScheduleRequest) -> None:
        """Forget a request (done, or for a schedule that is gone)."""
        ...
