# SPDX-License-Identifier: Apache-2.0
"""``tocsin tasks trigger|backfill`` against a real SQLite file (issue 23): they add the
rows ``self.trigger`` / ``self.backfill`` add, and a system started on the file runs them."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.cli.test_cli_tasks import read, run

from tocsin import ActorSystem, ManualClock, SystemClock, Tick
from tocsin.durable import DurableActor
from tocsin.stores import PauseTask, TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore

TICKS: list[Tick] = []
HOUR = 3600.0
TOP = datetime(2026, 3, 2, 12, tzinfo=UTC)


class CliOps(DurableActor):
    kind = "CliOps"

    async def tick(self, payload: Any) -> None:
        assert self.current_task is not None
        TICKS.append(self.current_task)


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "ops.db"
    hourly = TaskRow(
        "CliOps", "c-1", "hourly", "tick", b"\xc0", TOP.timestamp() + HOUR, None, 0, 5,
        TOP.timestamp(), cron="0 0 * * * ?", timezone="UTC",
    )  # fmt: skip

    async def seed() -> None:
        store = SQLiteStore(path)
        await store.open()
        await store.apply([UpsertTask(hourly)])
        await store.close()

    asyncio.run(seed())
    TICKS.clear()
    return path


def _start_and_run(path: Path) -> None:
    async def go() -> None:
        # The commands stamp their rows with the real time: the system starts after it.
        later = datetime.fromtimestamp(SystemClock().wall() + 60, UTC)
        clock = ManualClock(wall=later)
        async with ActorSystem("cli-ops", clock=clock, store=f"sqlite:///{path}"):
            await clock.advance(1)

    asyncio.run(go())


def test_trigger_adds_one_manual_run_and_keeps_the_due_time(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("tasks", "trigger", "hourly", "--store", f"sqlite:///{db}") == 0
    assert "triggered CliOps/c-1 hourly (tick): run hourly@manual:" in capsys.readouterr().out
    rows = {r.id.partition("@")[2].partition(":")[0] or "task": r for r in read(db)}
    assert set(rows) == {"task", "manual"}
    assert rows["task"].due == TOP.timestamp() + HOUR
    _start_and_run(db)
    [tick] = [t for t in TICKS if t.manual]  # (the overdue task itself runs too)
    assert (tick.reference, tick.manual, tick.backfill) == ("hourly", True, False)


def test_backfill_dry_run_lists_and_adds_nothing(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--from", "2026-03-02T09:00", "--to", "2026-03-02T12:00+00:00", "--dry-run"]
    assert run("tasks", "backfill", "hourly", "--store", f"sqlite:///{db}", *argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "would run 3 instants of CliOps/c-1 hourly (tick)",
        "2026-03-02T09:00:00+00:00",
        "2026-03-02T10:00:00+00:00",
        "2026-03-02T11:00:00+00:00",
    ]
    assert [r.id for r in read(db)] == ["hourly"]


def test_backfill_adds_one_run_per_instant_that_a_system_runs(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--from", "2026-03-02T10:00Z", "--to", "2026-03-02T12:00Z"]
    assert run("tasks", "backfill", "hourly", "--store", f"sqlite:///{db}", *argv) == 0
    assert capsys.readouterr().out.startswith("backfilling 2 instants")
    assert len(read(db)) == 3
    _start_and_run(db)
    backfilled = [t for t in TICKS if t.backfill]  # (the overdue task itself runs too)
    assert [(t.instant.hour, t.reference) for t in backfilled] == [(10, "hourly"), (11, "hourly")]
    assert [r.id for r in read(db)] == ["hourly"]


def test_backfill_of_a_range_reaching_into_the_future_adds_only_past_instants(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    now = SystemClock().wall_datetime()
    start = (now.replace(minute=0, second=0, microsecond=0)).isoformat()
    end = now.replace(year=now.year + 1).isoformat()
    argv = ["--from", start, "--to", end]
    assert run("tasks", "backfill", "hourly", "--store", f"sqlite:///{db}", *argv) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("backfilling 1 instants")  # the hour that began, none later
    assert len(read(db)) == 2


def test_backfill_errors_are_one_line_with_an_exit_code(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = f"sqlite:///{db}"
    argv = ["--from", "2026-03-02T12:00Z", "--to", "2026-03-02T10:00Z"]
    assert run("tasks", "backfill", "hourly", "--store", store, *argv) == 1
    assert "end` must be after `start" in capsys.readouterr().err
    assert run("tasks", "trigger", "nope", "--store", store) == 1
    assert "no task with id 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        run("tasks", "backfill", "hourly", "--store", store, "--from", "x", "--to", "y")
    assert exit_info.value.code == 2


def test_history_prints_a_table_and_json(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = f"sqlite:///{db}"
    assert run("tasks", "history", "hourly", "--store", store) == 0
    assert capsys.readouterr().out == "no history for CliOps/c-1 hourly\n"
    _start_and_run(db)  # the overdue task runs: one delivered entry
    assert run("tasks", "history", "hourly", "--store", store) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split() == ["INSTANT", "(UTC)", "AT", "(UTC)", "OUTCOME", "DETAIL", "NODE"]
    assert "delivered" in table[1]
    assert table[1].endswith("cli-ops")
    assert run("tasks", "history", "hourly", "--store", store, "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert document["actor"] == "CliOps/c-1"
    [entry] = document["history"]
    assert set(entry) == {"instant", "at", "outcome", "detail", "node"}
    assert (entry["outcome"], entry["detail"], entry["node"]) == ("delivered", None, "cli-ops")


def test_list_json_shows_a_pause_with_its_note(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def pause() -> None:
        store = SQLiteStore(db)
        await store.open()
        await store.apply([PauseTask("CliOps", "c-1", "hourly", TOP.timestamp(), "OPS-42", "n1")])
        await store.close()

    asyncio.run(pause())
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--json") == 0
    [task] = json.loads(capsys.readouterr().out)["tasks"]
    assert (task["paused"], task["pause_note"], task["paused_by"]) == (True, "OPS-42", "n1")
    assert task["paused_at"] == "2026-03-02T12:00:00+00:00"
