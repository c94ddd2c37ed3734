# SPDX-License-Identifier: Apache-2.0
"""``system.schedules``: stored schedules' verbs (add, update, remove, get, list, pause,
resume, trigger, backfill, history) and the upsert of ``ActorSystem(schedules=[...])``.

Every verb reads and writes the store, so what it answers is the cluster's state, not
this node's: a schedule added on one node is listed by every other at once, and fires on
all of them within ``poll_interval``. Spec changes are compare-and-set on ``version`` (two
nodes upserting one declared schedule at once write it once); pause and resume change
only the pause state, never the version.

Prior art: APScheduler 4's ``add_schedule(..., conflict_policy=)`` / ``pause_schedule``,
Temporal's schedule client (``create``, ``update``, ``pause(note=)``, ``trigger``,
``backfill``, ``describe``), DBOS ``apply_schedules``.
"""

from __future__ import annotations

import builtins
import dataclasses
import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, Protocol, final

import msgspec

from ..actor import Outcome, TickOutcome
from ..errors import ScheduleAlreadyExistsError, ScheduleNotFoundError
from ..stores import (
    SchedulePause,
    ScheduleRequest,
    ScheduleRow,
    ScheduleStore,
    ScheduleTickRow,
)
from ..triggers import backfill_instants, check_note, next_delivered
from ._instants import resolve, trigger_of
from ._spec import decode_spec, diff, encode_spec
from ._values import Interval, Once, Schedule, StoredSchedule

if TYPE_CHECKING:
    from ..clock import Clock
    from ._runner import Runner

__all__ = ["Schedules", "Upserted"]

_log = logging.getLogger("tocsin.schedules")

#: Compare-and-set attempts of one change racing other writers before it gives up.
_CAS_ATTEMPTS: Final = 8


def _utc(seconds: float | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _epoch(value: datetime | float, name: str) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(f"`{name}` must be an aware datetime, got {value!r}")
        return value.timestamp()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"`{name}` must be an aware datetime or epoch seconds, got {value!r}")
    return float(value)


@final
@dataclasses.dataclass(frozen=True, slots=True)
class Upserted:
    """What an upsert did to one schedule: ``action`` is ``"added"``, ``"changed"``
    (with the ``fields`` that differ), ``"unchanged"``, ``"removed"`` (``prune``) or
    ``"passed"`` (a declared ``Once`` whose instant has passed: not stored again)."""

    id: str
    action: str
    fields: tuple[str, ...] = ()


class _Store(ScheduleStore, Protocol):
    """A schedule store that can tell other systems watching it of a change."""

    async def announce(self) -> None: ...


class _Missing:
    """No row was read beforehand (``_put`` reads it)."""


_MISSING: Final = _Missing()


def _unknown(schedule_id: str) -> ScheduleNotFoundError:
    return ScheduleNotFoundError(f"no stored schedule {schedule_id!r}")


def _keep_resolution(new: Schedule, old: Schedule | None, now: float) -> Schedule:
    """``new`` resolved for storage: an Interval without an anchor keeps the stored one
    while ``seconds`` is unchanged; a Once(delay=...) keeps the stored instant."""
    keep = None
    if old is not None:
        ot, nt = old.trigger, new.trigger
        same_grid = isinstance(ot, Interval) and ot.seconds == getattr(nt, "seconds", None)
        if isinstance(nt, Interval) and nt.anchor is None and same_grid:
            assert isinstance(ot, Interval)
            keep = ot.anchor
        if isinstance(nt, Once) and nt.at is None and isinstance(ot, Once):
            return dataclasses.replace(new, trigger=ot)
    return resolve(new, now, keep_anchor=keep)


@final
class Schedules:
    """Stored schedules (``system.schedules``): the store is the truth, this node runs them.

    Internal construction: the system makes one per start; use ``system.schedules``.
    """

    def __init__(self, store: _Store, clock: Clock, node: str, runner: Runner | None) -> None:
        self._store = store
        self._batching = False
        self._clock = clock
        self._node = node
        self._runner = runner

    # -- writing ---------------------------------------------------------------------------

    async def add(self, schedule: Schedule, *, replace: bool = False) -> StoredSchedule:
        """Store a new schedule (version 1). It never fires at once: its first instant is
        the first one after now (ask for a run now with :meth:`trigger`).

        Raises:
            ScheduleAlreadyExistsError: the id is held and ``replace`` is false.
            ValueError: a ``Once`` whose instant has passed.
            StoreError: the store failed.
        """
        if not isinstance(schedule, Schedule):
            raise TypeError(f"`schedule` must be a tocsin.Schedule, got {schedule!r}")
        now = self._clock.wall()
        resolved = resolve(schedule, now)
        trigger = resolved.trigger
        if isinstance(trigger, Once) and trigger.at is not None and trigger.at.timestamp() <= now:
            raise ValueError(
                f"schedule {schedule.id!r}: Once(at={trigger.at.isoformat()}) has passed; "
                "it would never run (use trigger() for a run now)"
            )
        row = ScheduleRow(
            id=schedule.id,
            spec=encode_spec(resolved),
            version=1,
            created_at=now,
            updated_at=now,
        )
        if await self._store.write_schedule(row, expect=None):
            await self._changed(row)
            return await self._snapshot(row)
        if not replace:
            raise ScheduleAlreadyExistsError(
                f"a stored schedule {schedule.id!r} exists; pass replace=True to replace "
                "it, or use update()"
            )
        written, _ = await self._put(schedule, force=True)
        return await self._snapshot(written)

    async def update(self, schedule_id: str, **changes: Any) -> StoredSchedule:
        """Change fields of a stored schedule's spec (``trigger=``, ``target=``,
        ``overlap=``, ...): a new version (none when nothing differs); the next instant is
        computed from the new trigger after now, and the pause state is kept. A restated
        ``Interval`` without an anchor keeps the stored one while its seconds are equal.

        Raises:
            ScheduleNotFoundError: no stored schedule ``schedule_id``.
            ValueError: ``id`` among the changes, an unknown field, or a value the
                :class:`Schedule` refuses (the 10-year instant check included).
        """
        if "id" in changes:
            raise ValueError("`id` cannot be changed by update(); add a new schedule instead")
        fields = {f.name for f in dataclasses.fields(Schedule)}
        unknown = sorted(set(changes) - fields)
        if unknown:
            raise ValueError(
                f"update(): unknown field(s) {', '.join(unknown)}; allowed: "
                f"{', '.join(sorted(fields - {'id'}))}"
            )
        for _ in range(_CAS_ATTEMPTS):
            row = await self._row(schedule_id)
            old = decode_spec(row.spec)
            new = dataclasses.replace(old, **changes)
            # A new trigger is resolved as an upsert resolves it: an Interval keeps its
            # stored anchor while its seconds are unchanged, a Once its stored instant.
            resolved = _keep_resolution(new, old, self._clock.wall())
            if not diff(old, resolved):
                return await self._snapshot(row)  # nothing changes: no new version
            written = await self._write(row, resolved)
            if written is not None:
                return await self._snapshot(written)
        raise _contended(schedule_id)

    async def remove(self, schedule_id: str, *, missing_ok: bool = False) -> bool:
        """Remove a stored schedule; its ledger is kept (``history`` still answers).

        Returns whether it existed.

        Raises:
            ScheduleNotFoundError: unknown id and not ``missing_ok``.
        """
        removed = await self._store.delete_schedule(schedule_id)
        await self._removed(schedule_id)
        if not removed and not missing_ok:
            raise _unknown(schedule_id)
        return removed

    async def pause(self, schedule_id: str, *, note: str | None = None) -> StoredSchedule:
        """Pause a stored schedule cluster-wide (its version is unchanged). Each of its
        instants that passes writes a ``paused`` ledger row with the note and who.

        Raises:
            ScheduleNotFoundError: unknown id.
            ValueError: a note over 4,096 UTF-8 bytes (the bound of every pause note).
        """
        return await self._set_paused(schedule_id, True, check_note(note))

    async def resume(self, schedule_id: str) -> StoredSchedule:
        """Resume a paused schedule: it goes on from now (never fires at once).

        Raises:
            ScheduleNotFoundError: unknown id.
        """
        return await self._set_paused(schedule_id, False, None)

    async def _set_paused(self, schedule_id: str, paused: bool, note: str | None) -> StoredSchedule:
        pause = (
            SchedulePause(True, note, self._node, self._clock.wall())
            if paused
            else SchedulePause(False)
        )
        ok = await self._store.pause_schedule_row(schedule_id, pause)
        if not ok:
            raise _unknown(schedule_id)
        row = await self._row(schedule_id)
        await self._changed(row)
        return await self._snapshot(row)

    # -- operating -------------------------------------------------------------------------

    async def trigger(self, schedule_id: str) -> datetime:
        """One run now, cluster-wide once, through the schedule's overlap policy (a paused
        schedule runs too: an explicit "run it now"). The next instant is unchanged.

        Returns the run's instant (now).

        Raises:
            ScheduleNotFoundError: unknown id.
        """
        row = await self._row(schedule_id)
        now = self._clock.wall()
        await self._run(row, now, manual=True)
        return datetime.fromtimestamp(now, UTC)

    async def backfill(
        self,
        schedule_id: str,
        start: datetime | float,
        end: datetime | float,
        *,
        dry_run: bool = False,
    ) -> list[datetime]:
        """The instants the schedule would have fired in ``[start, end)`` (its calendar
        applied), delivered oldest first unless ``dry_run``. Each is claimed with the same
        key as its regular tick, so an instant whose claim is still kept is not run twice.

        Raises:
            ScheduleNotFoundError: unknown id.
            ValueError: ``end`` not after ``start``, or more instants than the one
                backfill limit of every tier (:data:`tocsin.triggers.MAX_BACKFILL`).
        """
        first, last = _epoch(start, "start"), _epoch(end, "end")
        if not last > first:
            raise ValueError(f"backfill: `end` must be after `start`, got {start!r} .. {end!r}")
        row = await self._row(schedule_id)
        trigger = trigger_of(decode_spec(row.spec))
        found = backfill_instants(trigger, first, last, f"stored schedule {schedule_id!r}")
        if not dry_run:
            for instant in found:
                await self._run(row, instant, manual=False)
        return [datetime.fromtimestamp(t, UTC) for t in found]

    # -- reading ---------------------------------------------------------------------------

    async def get(self, schedule_id: str) -> StoredSchedule:
        """One stored schedule.

        Raises:
            ScheduleNotFoundError: unknown (or removed) id.
        """
        return await self._snapshot(await self._row(schedule_id))

    async def list(self) -> list[StoredSchedule]:
        """Every stored schedule, by id."""
        return [await self._snapshot(row) for row in await self._store.schedule_rows()]

    async def history(
        self, schedule_id: str, *, limit: int | None = None
    ) -> builtins.list[TickOutcome]:
        """The ledger of a schedule, oldest instant first (the newest ``limit`` with a
        limit): one row per instant, whichever node decided it. A removed schedule's kept
        rows answer too.

        Raises:
            ScheduleNotFoundError: no stored schedule and no ledger row for the id.
            ValueError: ``limit`` is not a positive int.
        """
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 1
        ):
            raise ValueError(f"`limit` must be a positive int or None, got {limit!r}")
        rows = await self._store.schedule_ticks(schedule_id, limit)
        if not rows and await self._store.schedule_row(schedule_id) is None:
            raise _unknown(schedule_id)
        return [tick_outcome(row) for row in rows]

    # -- the upsert at start -----------------------------------------------------------------

    async def apply(
        self, declared: Iterable[Schedule], *, prune: bool = False
    ) -> builtins.list[Upserted]:
        """Upsert ``declared``: missing ones added, changed ones updated (a new version),
        unchanged ones left alone; a pause is kept. With ``prune``, stored schedules
        declared nowhere are removed (``tocsin schedules apply --prune``).

        Raises:
            ValueError: two declared schedules share an id.
        """
        wanted = list(declared)
        ids = [s.id for s in wanted]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"schedules declared twice: {', '.join(twice)}")
        done: builtins.list[Upserted] = []
        # One read of what is stored, and one announcement at the end (not one per
        # schedule: ten thousand declared schedules would have every node re-read the
        # store ten thousand times).
        stored = {row.id: row for row in await self._store.schedule_rows()}
        self._batching = True
        try:
            for spec in wanted:
                try:
                    _, action = await self._put(spec, force=False, known=stored.get(spec.id))
                except _PassedOnce:
                    action = Upserted(spec.id, "passed")
                done.append(action)
            if prune:
                keep = set(ids)
                for sid in sorted(stored):
                    if sid not in keep and await self._store.delete_schedule(sid):
                        await self._removed(sid)
                        done.append(Upserted(sid, "removed"))
        finally:
            self._batching = False
            if any(d.action in ("added", "changed", "removed") for d in done):
                await self._announce()
        return done

    async def plan(
        self, declared: Iterable[Schedule], *, prune: bool = False
    ) -> builtins.list[Upserted]:
        """What :meth:`apply` would do, without doing it."""
        now = self._clock.wall()
        wanted = {s.id: s for s in declared}
        out: builtins.list[Upserted] = []
        stored = {row.id: row for row in await self._store.schedule_rows()}
        for sid, spec in wanted.items():
            row = stored.get(sid)
            if row is None:
                out.append(Upserted(sid, "added"))
                continue
            old = decode_spec(row.spec)
            fields = diff(old, _keep_resolution(spec, old, now))
            out.append(
                Upserted(sid, "changed", tuple(fields)) if fields else Upserted(sid, "unchanged")
            )
        if prune:
            out.extend(Upserted(sid, "removed") for sid in sorted(stored) if sid not in wanted)
        return out

    async def _put(
        self, spec: Schedule, *, force: bool, known: ScheduleRow | _Missing | None = _MISSING
    ) -> tuple[ScheduleRow, Upserted]:
        """Upsert ``spec``; ``known``: the stored row as just read (saves a read)."""
        for attempt in range(_CAS_ATTEMPTS):
            now = self._clock.wall()
            if attempt == 0 and not isinstance(known, _Missing):
                row = known
            else:
                row = await self._store.schedule_row(spec.id)
            if row is None:
                resolved = resolve(spec, now)
                trigger = resolved.trigger
                if (
                    isinstance(trigger, Once)
                    and trigger.at is not None
                    and trigger.at.timestamp() <= now
                ):
                    # Declared in code, decided and removed already (or past): not re-added.
                    _log.info("schedule %r: its Once has passed; not stored again", spec.id)
                    raise _PassedOnce(spec.id)
                fresh = ScheduleRow(spec.id, encode_spec(resolved), 1, now, now)
                if await self._store.write_schedule(fresh, expect=None):
                    await self._changed(fresh)
                    return fresh, Upserted(spec.id, "added")
                continue
            old = decode_spec(row.spec)
            resolved = _keep_resolution(spec, old, now)
            fields = diff(old, resolved)
            if not fields and not force:
                return row, Upserted(spec.id, "unchanged")
            written = await self._write(row, resolved)
            if written is not None:
                return written, Upserted(spec.id, "changed", tuple(fields))
        raise _contended(spec.id)

    async def _write(self, row: ScheduleRow, spec: Schedule) -> ScheduleRow | None:
        new = msgspec.structs.replace(
            row, spec=encode_spec(spec), version=row.version + 1, updated_at=self._clock.wall()
        )
        if not await self._store.write_schedule(new, expect=row.version):
            return None  # another writer came first: read again
        fresh = await self._store.schedule_row(row.id)
        if fresh is not None:
            await self._changed(fresh)
            return fresh
        return new

    # -- helpers ---------------------------------------------------------------------------

    async def _changed(self, row: ScheduleRow) -> None:
        """A change written here: this node re-arms now, the others are told."""
        if self._runner is not None:
            self._runner.changed(row)
        if not self._batching:
            await self._announce()

    async def _removed(self, schedule_id: str) -> None:
        if self._runner is not None:
            self._runner.removed(schedule_id)
        if not self._batching:
            await self._announce()

    async def _run(self, row: ScheduleRow, instant: float, *, manual: bool) -> None:
        """Claim and run ``instant`` here (a node), or ask the nodes to (a process that
        runs no schedules: ``tocsin schedules``, a client)."""
        runner = self._runner
        if runner is not None:
            runner.changed(row)
            entry = runner.entries.get(row.id)
            if entry is not None:
                runner.claim(entry, instant, manual=manual, backfill=not manual)
                return
        request = ScheduleRequest(row.id, instant, manual, self._clock.wall())
        await self._store.request_schedule_run(request)
        await self._announce()

    async def _announce(self) -> None:
        try:
            await self._store.announce()  # PostgreSQL: NOTIFY; memory: the watchers
        except Exception as exc:  # the change is written: peers see it at their backstop
            _log.warning("stored schedules: telling other nodes of a change failed: %s", exc)

    async def _row(self, schedule_id: str) -> ScheduleRow:
        row = await self._store.schedule_row(schedule_id)
        if row is None:
            raise _unknown(schedule_id)
        return row

    async def _snapshot(self, row: ScheduleRow) -> StoredSchedule:
        spec = decode_spec(row.spec)
        now = self._clock.wall()
        next_fire: float | None = None
        if not row.paused and spec.enabled:
            trigger = trigger_of(spec)
            instant = next_delivered(trigger, now)
            next_fire = None if instant is None else trigger.delivery(row.id, instant)
        last = await self._store.schedule_ticks(row.id, 1)
        created = _utc(row.created_at)
        updated = _utc(row.updated_at)
        assert created is not None
        assert updated is not None
        return StoredSchedule(
            spec=spec,
            id=row.id,
            version=row.version,
            paused=row.paused,
            note=row.note,
            paused_by=row.paused_by,
            paused_at=_utc(row.paused_at),
            next_fire_at=_utc(next_fire),
            last_outcome=last[-1].outcome if last else None,
            created_at=created,
            updated_at=updated,
        )


class _PassedOnce(Exception):
    """A declared Once whose instant has passed and that is not stored (not re-added)."""


def _contended(schedule_id: str) -> RuntimeError:
    return RuntimeError(
        f"schedule {schedule_id!r}: {_CAS_ATTEMPTS} writers changed it while this change "
        "was made; try again"
    )


def tick_outcome(row: ScheduleTickRow) -> TickOutcome:
    """A ledger row as the :class:`~tocsin.TickOutcome` ``history`` returns."""
    at = _utc(row.at)
    instant = _utc(row.instant)
    assert at is not None
    assert instant is not None
    return TickOutcome(
        reference=row.id,
        instant=instant,
        at=at,
        outcome=Outcome(row.outcome),
        detail=row.detail,
        node=row.node,
        version=row.version,
        note=row.note,
        paused_by=row.by,
        started=_utc(row.started),
        manual=row.manual,
    )
