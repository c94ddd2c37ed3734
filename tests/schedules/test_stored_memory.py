# SPDX-License-Identifier: Apache-2.0
"""What a node holds for its stored schedules: it reads them page by page (never every row
at once), every page's overdue instants are still decided, and what it keeps per stored
schedule stays under a bound (issue 30: at most 1 KB per stored schedule).

Bytes are counted with tracemalloc (the objects allocated and kept, not the allocator's
arenas: deterministic, whatever else runs on the machine). RSS per schedule is measured
by ``bench/schedules.py``."""

from __future__ import annotations

import gc
import tracemalloc
from datetime import UTC, datetime
from typing import Any

import pytest

from tocsin import ActorSystem, ManualClock
from tocsin.schedules import Interval, Schedule
from tocsin.schedules import _runner as runner_module
from tocsin.schedules._instants import resolve
from tocsin.schedules._spi import encode_spec, runner_of
from tocsin.stores import MemoryStore, ScheduleRow, ScheduleTickRow

T0 = datetime(2026, 3, 2, 9, 0, 0, tzinfo=UTC).timestamp()
RECORD = "tests.schedules.jobs_for_tests.record"
#: Bytes a node may keep per stored schedule (Interval, a job target): ~490 measured when
#: written (the decoded spec, the entry, its id, the instant walker, two instants); the
#: target is 1 KB of resident memory, which also pays the allocator's overhead.
RETAINED_MAX = 700


async def _seed(store: MemoryStore, n: int, at: float = T0 - 7200.0) -> None:
    """``n`` schedules every hour, added at ``at``."""
    for i in range(n):
        spec = resolve(Schedule(f"s{i:05d}", Interval(3600), RECORD), at)
        await store.write_schedule(ScheduleRow(spec.id, encode_spec(spec), 1, at, at), expect=None)


def _paged(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """Count the pages and ledger ranges ``store`` is asked for; refuse a read of every
    row at once."""
    seen: dict[str, list[Any]] = {"pages": [], "ranges": []}
    page, last_instants = store.schedule_page, store.schedule_last_instants

    async def schedule_page(after: str, limit: int) -> list[ScheduleRow]:
        rows = await page(after, limit)
        seen["pages"].append((after, limit, len(rows)))
        return rows

    async def schedule_rows() -> list[ScheduleRow]:
        raise AssertionError("a node loads its schedules page by page, never all at once")

    async def schedule_last_instants(
        first: str | None = None, last: str | None = None
    ) -> dict[str, float]:
        seen["ranges"].append((first, last))
        return await last_instants(first, last)

    monkeypatch.setattr(store, "schedule_page", schedule_page)
    monkeypatch.setattr(store, "schedule_rows", schedule_rows)
    monkeypatch.setattr(store, "schedule_last_instants", schedule_last_instants)
    return seen


async def test_a_node_loads_page_by_page_and_decides_every_pages_overdue_instants(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner_module, "PAGE", 4)
    store = MemoryStore()
    seen = _paged(store, monkeypatch)
    # Ten schedules every hour, stored two hours ago: each has an instant overdue at start
    # (Misfire.once claims the latest), and a ledger row on one of them says its latest
    # instant was decided already.
    await _seed(store, 10)
    anchor = resolve(Schedule("x", Interval(3600), RECORD), T0 - 7200.0).trigger
    latest = anchor.anchor.timestamp() + 7200.0  # type: ignore[union-attr]
    assert latest <= T0
    await store.record_schedule_tick(
        ScheduleTickRow("s00005", latest, latest, "delivered", "old", 1), keep=10
    )
    clock = ManualClock(wall=T0)
    async with ActorSystem("n1", clock=clock, store=store) as system:
        runner = runner_of(system.runtime)
        assert runner is not None
        await clock.settle()
        assert sorted(runner.entries) == [f"s{i:05d}" for i in range(10)]
        assert all(entry.armed for entry in runner.entries.values())
        # Pages of at most 4, each starting after the last id of the one before.
        assert seen["pages"] == [("", 4, 4), ("s00003", 4, 4), ("s00007", 4, 2)]
        assert seen["ranges"] == [("s00000", "s00003"), ("s00004", "s00007"), ("s00008", "s00009")]
        delivered = {
            sid
            for sid in runner.entries
            for row in await store.schedule_ticks(sid)
            if row.instant == latest and row.outcome == "delivered" and row.node == "n1"
        }
    # Every overdue latest instant decided here, but the one decided before.
    assert delivered == {f"s{i:05d}" for i in range(10)} - {"s00005"}


async def test_a_reload_forgets_removed_schedules_across_pages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(runner_module, "PAGE", 3)
    store = MemoryStore()
    await _seed(store, 7)
    clock = ManualClock(wall=T0)
    async with ActorSystem("n1", clock=clock, store=store) as system:
        runner = runner_of(system.runtime)
        assert runner is not None
        await clock.settle()
        for sid in ("s00000", "s00004", "s00006"):
            await store.delete_schedule(sid)
        await runner._reload()
        assert sorted(runner.entries) == ["s00001", "s00002", "s00003", "s00005"]


def _retained(n: int) -> Any:
    async def measure() -> float:
        store = MemoryStore()
        await _seed(store, n, at=T0)  # nothing overdue: what is kept is the schedules
        system = ActorSystem("n1", clock=ManualClock(wall=T0), store=store)
        gc.collect()
        tracemalloc.start(1)
        try:
            before = tracemalloc.get_traced_memory()[0]
            await system.start()
            gc.collect()
            after = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
            await system.stop()
        return (after - before) / n

    return measure()


async def test_memory_per_stored_schedule_is_bounded() -> None:
    # The store's rows were made before the count: what is counted is what the node
    # keeps for them. Two sizes: a per-schedule cost, not a fixed one spread thin.
    small = await _retained(1_000)
    large = await _retained(4_000)
    assert large <= RETAINED_MAX, f"{large:.0f} B retained per stored schedule"
    assert small <= RETAINED_MAX + 200, f"{small:.0f} B retained per stored schedule"
