# SPDX-License-Identifier: Apache-2.0
"""The ScheduleStore contract (stored schedules, their ledger, single-node claims), run
unchanged on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tocsin.stores import (
    MemoryStore,
    SchedulePause,
    ScheduleRequest,
    ScheduleRow,
    ScheduleStore,
    ScheduleTickRow,
    Store,
)


def _make(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    if request.param == "memory":
        store = MemoryStore()
        return lambda: store
    if request.param == "sqlite":
        from tocsin.stores.sqlite import SQLiteStore

        return lambda: SQLiteStore(tmp_path / "s.db")
    from tocsin.stores.postgres import PostgresStore

    dsn = request.getfixturevalue("postgres_dsn")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    return lambda: PostgresStore(dsn, schema=schema)


@pytest.fixture(
    params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.integration)]
)
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], Store]:
    return _make(request, tmp_path)


def row(
    sid: str = "nightly", version: int = 1, spec: bytes = b"\x01", at: float = 10.0
) -> ScheduleRow:
    return ScheduleRow(id=sid, spec=spec, version=version, created_at=at, updated_at=at)


async def test_a_store_is_a_schedule_store(make: Callable[[], Store]) -> None:
    assert isinstance(make(), ScheduleStore)


async def test_rows_of_many_ids_are_read_at_once_and_the_missing_left_out(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        # More ids than one SQLite statement takes: read in parts, answered whole.
        for i in range(0, 1200, 2):
            assert await s.write_schedule(row(f"s{i:04d}", at=float(i)), expect=None)
        assert await s.pause_schedule_row("s0002", SchedulePause(True, "OPS-1", "n1", 5.0))
        wanted = [f"s{i:04d}" for i in range(1200)] + ["s0002"]  # odd ones: not stored
        got = await s.schedule_rows_of(wanted)
        assert sorted(got) == [f"s{i:04d}" for i in range(0, 1200, 2)]
        assert got["s0004"] == row("s0004", at=4.0)
        assert got["s0002"].paused
        assert got["s0002"].note == "OPS-1"
        assert await s.schedule_rows_of([]) == {}
        assert await s.schedule_rows_of(["nope"]) == {}
    finally:
        await store.close()


async def test_add_is_insert_if_absent_and_update_is_compare_and_set_on_version(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        assert await s.schedules_revision() == 0
        assert await s.write_schedule(row(), expect=None)
        assert not await s.write_schedule(row(spec=b"\x02"), expect=None)  # held: no overwrite
        r1 = await s.schedules_revision()
        assert r1 > 0
        assert await s.pause_schedule_row("nightly", SchedulePause(True, "OPS-42", "n1", 20.0))
        r2 = await s.schedules_revision()
        assert r2 > r1
        # A stale version writes nothing; the current one writes and keeps the pause.
        assert not await s.write_schedule(row(version=2, spec=b"\x03", at=30.0), expect=7)
        assert await s.write_schedule(row(version=2, spec=b"\x03", at=30.0), expect=1)
        got = await s.schedule_row("nightly")
        assert got == ScheduleRow(
            id="nightly",
            spec=b"\x03",
            version=2,
            created_at=10.0,
            updated_at=30.0,
            paused=True,
            note="OPS-42",
            paused_by="n1",
            paused_at=20.0,
        )
        assert await s.schedules_revision() > r2
        assert [r.id for r in await s.schedule_rows()] == ["nightly"]
        assert not await s.pause_schedule_row("nope", SchedulePause(True))
        assert await s.pause_schedule_row(
            "nightly", SchedulePause(False)
        )  # every pause field cleared
        assert await s.schedule_row("nightly") == ScheduleRow("nightly", b"\x03", 2, 10.0, 30.0)
        assert await s.delete_schedule("nightly")
        assert not await s.delete_schedule("nightly")
        assert await s.schedule_row("nightly") is None
        assert await s.schedule_rows() == []
    finally:
        await store.close()


async def test_the_ledger_keeps_one_row_per_instant_the_newest_keep_and_outlives_removal(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        await s.write_schedule(row(), expect=None)
        for i in range(5):
            tick = ScheduleTickRow(
                "nightly", 100.0 + i, 101.0 + i, "delivered", "n1", 1, started=100.5 + i
            )
            await s.record_schedule_tick(tick, keep=3)
        # A later decision about one instant replaces its row, keeping when it started.
        failed = ScheduleTickRow("nightly", 104.0, 109.0, "failed", "n1", 1, detail="boom")
        await s.record_schedule_tick(failed, keep=3)
        await s.delete_schedule("nightly")
        rows = await s.schedule_ticks("nightly")
        assert [r.instant for r in rows] == [102.0, 103.0, 104.0]
        assert rows[-1] == ScheduleTickRow(
            "nightly", 104.0, 109.0, "failed", "n1", 1, detail="boom", started=104.5
        )
        assert [r.instant for r in await s.schedule_ticks("nightly", limit=2)] == [103.0, 104.0]
        paused = ScheduleTickRow("other", 5.0, 6.0, "paused", "n2", 3, note="why", by="ops")
        await s.record_schedule_tick(paused, keep=10)
        assert await s.schedule_ticks("other") == [paused]
        assert await s.schedule_ticks("unknown") == []
    finally:
        await store.close()


async def test_a_claim_is_granted_once_until_it_expires(make: Callable[[], Store]) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        assert await s.claim_schedule_tick("a@1", "n1", now=10.0, expires=70.0)
        assert not await s.claim_schedule_tick("a@1", "n2", now=11.0, expires=71.0)
        assert await s.claim_schedule_tick("a@2", "n2", now=11.0, expires=71.0)
        assert await s.claim_schedule_tick("a@1", "n2", now=70.0, expires=130.0)  # expired
    finally:
        await store.close()


async def test_a_batch_of_claims_is_decided_as_the_single_claims_would_be(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    batch: Any = store.claim_schedule_ticks  # type: ignore[attr-defined]
    try:
        assert await store.claim_schedule_tick("held@1", "n1", now=10.0, expires=70.0)  # type: ignore[attr-defined]
        assert await store.claim_schedule_tick("old@1", "n1", now=10.0, expires=20.0)  # type: ignore[attr-defined]
        won = await batch(
            [("a@1", 71.0), ("held@1", 71.0), ("old@1", 71.0), ("b@1", 71.0), ("a@1", 71.0)],
            "n2",
            30.0,
        )
        # a new key wins, a held one loses, an expired one is taken over, a key given
        # twice is won once (first)
        assert won == [True, False, True, True, False]
        assert await batch([("a@1", 90.0), ("c@1", 90.0)], "n1", 31.0) == [False, True]
        assert await batch([], "n1", 31.0) == []
    finally:
        await store.close()


async def test_an_older_sqlite_file_gets_the_schedule_tables_on_open(tmp_path: Path) -> None:
    from tocsin.stores.sqlite import SQLiteStore

    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    await store.open()
    await store.close()
    with sqlite3.connect(path) as conn:  # as a file made before stored schedules
        for table in ("tocsin_schedules", "tocsin_schedule_history", "tocsin_schedule_claims"):
            conn.execute(f"DROP TABLE {table}")
    conn.close()
    store = SQLiteStore(path)
    await store.open()
    try:
        assert await store.write_schedule(row(), expect=None)
        assert [r.id for r in await store.schedule_rows()] == ["nightly"]
    finally:
        await store.close()


async def test_an_outcome_written_without_the_claim_never_hides_the_winners_row(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        won = ScheduleTickRow("a", 1.0, 2.0, "delivered", "n1", 1, started=1.5)
        await s.record_schedule_tick(won, keep=5)
        late = ScheduleTickRow("a", 1.0, 3.0, "coalesced", "n2", 1, detail="1")
        await s.record_schedule_tick(late, keep=5, replace=False)
        assert await s.schedule_ticks("a") == [won]
        await s.record_schedule_tick(
            ScheduleTickRow("a", 2.0, 3.0, "claim_error", "n2", 1), keep=5, replace=False
        )
        assert [r.outcome for r in await s.schedule_ticks("a")] == ["delivered", "claim_error"]
    finally:
        await store.close()


async def test_requests_are_recorded_once_listed_oldest_first_and_forgotten(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        before = await s.schedules_revision()
        late = ScheduleRequest("a", 20.0, False, 1.0)
        early = ScheduleRequest("b", 10.0, True, 2.0)
        await s.request_schedule_run(late)
        await s.request_schedule_run(early)
        await s.request_schedule_run(late)  # the same again: one row
        assert await s.schedules_revision() > before
        assert await s.schedule_requests() == [early, late]
        await s.delete_schedule_request(early)
        assert await s.schedule_requests() == [late]
    finally:
        await store.close()


async def test_one_instants_row_is_read_by_its_key(make: Callable[[], Store]) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        row = ScheduleTickRow("a", 7.0, 8.0, "delivered", "n1", 2, started=7.5)
        await s.record_schedule_tick(row, keep=5)
        assert await s.schedule_tick("a", 7.0) == row
        assert await s.schedule_tick("a", 8.0) is None
    finally:
        await store.close()


async def test_the_newest_instant_of_each_ledger_in_one_read(make: Callable[[], Store]) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        assert await s.schedule_last_instants() == {}
        for sid, instant in (("a", 1.0), ("a", 5.0), ("b", 3.0)):
            row = ScheduleTickRow(sid, instant, instant, "delivered", "n1", 1)
            await s.record_schedule_tick(row, keep=5)
        assert await s.schedule_last_instants() == {"a": 5.0, "b": 3.0}
    finally:
        await store.close()


async def test_a_manual_runs_row_is_kept_apart_from_the_ticks_row_of_its_instant(
    make: Callable[[], Store],
) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        tick = ScheduleTickRow("a", 7.0, 8.0, "delivered", "n1", 2, started=7.5)
        manual = ScheduleTickRow("a", 7.0, 9.0, "delivered", "n2", 2, started=9.5, manual=True)
        later = ScheduleTickRow("a", 30.0, 31.0, "failed", "n2", 2, detail="x", manual=True)
        for written in (tick, manual, later):
            await s.record_schedule_tick(written, keep=5)
        assert await s.schedule_tick("a", 7.0) == tick
        assert await s.schedule_tick("a", 7.0, manual=True) == manual
        assert await s.schedule_tick("a", 30.0) is None
        assert await s.schedule_ticks("a") == [tick, manual, later]
        assert await s.schedule_ticks("a", limit=2) == [manual, later]
        # A manual run says nothing of how far the schedule's instants were decided.
        assert await s.schedule_last_instants() == {"a": 7.0}
        # A second decision about the manual run replaces its own row only.
        failed = ScheduleTickRow("a", 7.0, 10.0, "failed", "n2", 2, detail="boom", manual=True)
        await s.record_schedule_tick(failed, keep=5)
        assert await s.schedule_tick("a", 7.0) == tick
        got = await s.schedule_tick("a", 7.0, manual=True)
        assert got is not None
        assert (got.outcome, got.started) == ("failed", 9.5)
        # The newest `keep` rows, whatever their kind.
        await s.record_schedule_tick(ScheduleTickRow("a", 40.0, 41.0, "delivered", "n1", 2), 2)
        assert [(r.instant, r.manual) for r in await s.schedule_ticks("a")] == [
            (30.0, True),
            (40.0, False),
        ]
    finally:
        await store.close()


async def test_schedules_read_page_by_page_in_id_order(make: Callable[[], Store]) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        assert await s.schedule_page("", 10) == []
        for sid in ("c", "a", "e", "b", "d"):
            assert await s.write_schedule(row(sid), expect=None)
        first = await s.schedule_page("", 2)
        assert [r.id for r in first] == ["a", "b"]
        assert [r.id for r in await s.schedule_page("b", 2)] == ["c", "d"]
        assert [r.id for r in await s.schedule_page("d", 2)] == ["e"]
        assert await s.schedule_page("e", 2) == []
        assert first[0] == await s.schedule_row("a")  # the same rows as a read of one
        await s.delete_schedule("c")
        await s.write_schedule(row("bb"), expect=None)
        assert [r.id for r in await s.schedule_page("b", 2)] == ["bb", "d"]
    finally:
        await store.close()


async def test_the_newest_instants_of_a_range_of_ids(make: Callable[[], Store]) -> None:
    store = make()
    await store.open()
    s: ScheduleStore = store  # type: ignore[assignment]
    try:
        for sid, instant in (("a", 1.0), ("b", 5.0), ("b", 6.0), ("c", 3.0), ("d", 2.0)):
            row = ScheduleTickRow(sid, instant, instant, "delivered", "n1", 1)
            await s.record_schedule_tick(row, keep=5)
        assert await s.schedule_last_instants("b", "c") == {"b": 6.0, "c": 3.0}
        assert await s.schedule_last_instants("bb", "cc") == {"c": 3.0}
        assert await s.schedule_last_instants("x", "z") == {}
    finally:
        await store.close()
