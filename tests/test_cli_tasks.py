# SPDX-License-Identifier: Apache-2.0
"""``tocsin tasks list|retry|discard`` against a real SQLite file."""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

import msgspec
import pytest

from tocsin.cli._tasks import register
from tocsin.stores import PutState, TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore


def row(id: str, *, identity: str = "o-1", state: str = "parked", **kw: object) -> TaskRow:
    fields: dict[str, object] = {
        "kind": "Order",
        "identity": identity,
        "id": id,
        "name": "ship",
        "payload": b"",
        "due": 1_700_000_000.0,
        "every": None,
        "attempts": 5,
        "max_retries": 5,
        "created_at": 1_600_000_000.0,
        "state": state,
        "last_error": "RuntimeError: carrier down " + "x" * 80,
    }
    fields.update(kw)
    return TaskRow(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.db"

    async def seed() -> None:
        store = SQLiteStore(path)
        await store.open()
        await store.apply(
            [
                UpsertTask(row("parked-1")),
                UpsertTask(row("shared")),
                UpsertTask(row("shared", identity="o-2")),
                UpsertTask(row("live", state="pending", every=60.0, attempts=0, last_error=None)),
                PutState("Order", "o-1", "k", b"v"),
            ]
        )
        await store.close()

    asyncio.run(seed())
    return path


def run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="tocsin")
    register(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(argv)
    code: int = ns.func(ns)
    return code


def read(path: Path) -> list[TaskRow]:
    async def go() -> list[TaskRow]:
        store = SQLiteStore(path)
        await store.open()
        try:
            return await store.list_tasks()
        finally:
            await store.close()

    return asyncio.run(go())


def test_list_prints_a_table_of_every_task(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("tasks", "list", "--store", f"sqlite:///{db}") == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == [
        "ACTOR", "ID", "NAME", "STATE", "DUE", "(UTC)", "EVERY", "ATTEMPTS", "LAST", "ERROR"
    ]  # fmt: skip
    assert len(out) == 5
    live = next(line for line in out if " live " in line)
    assert "Order/o-1" in live
    assert "pending" in live
    assert "60s" in live
    assert "0/5" in live
    assert "2023-11-14T22:13:20+00:00" in live
    parked = next(line for line in out if "parked-1" in line)
    assert "5/5" in parked
    assert parked.endswith("…")
    assert "RuntimeError: carrier down" in parked


def test_list_shows_a_cron_tasks_expression_and_zone(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def add() -> None:
        store = SQLiteStore(db)
        await store.open()
        cron = row("nightly", state="pending", attempts=0, last_error=None)
        cron = msgspec.structs.replace(cron, cron="0 0 3 * * ?", timezone="Europe/Paris")
        await store.apply([UpsertTask(cron)])
        await store.close()

    asyncio.run(add())
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--actor", "Order/o-1") == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if "nightly" in line)
    assert "cron 0 0 3 * * ? (Europe/Paris)" in line


def test_list_filters_by_actor_and_state(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--actor", "Order/o-2") == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[1] for line in lines] == ["shared"]
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--state", "pending") == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split()[1] for line in lines] == ["live"]
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--actor", "No/one") == 0
    assert capsys.readouterr().out.strip() == "no tasks"


def test_store_url_can_come_from_the_environment(
    db: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOCSIN_STORE", f"sqlite:///{db}")
    assert run("tasks", "list") == 0
    assert "parked-1" in capsys.readouterr().out


def test_retry_makes_a_parked_task_pending_now_with_attempts_reset(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = time.time()
    assert run("tasks", "retry", "parked-1", "--store", f"sqlite:///{db}") == 0
    assert "retrying Order/o-1 parked-1" in capsys.readouterr().out
    got = next(r for r in read(db) if r.id == "parked-1")
    assert got.state == "pending"
    assert got.attempts == 0
    assert before - 1 <= got.due <= time.time() + 1
    assert got.last_error is not None
    assert got.last_error.startswith("RuntimeError")


def test_discard_deletes_a_parked_task(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("tasks", "discard", "parked-1", "--store", f"sqlite:///{db}") == 0
    assert "discarded Order/o-1 parked-1" in capsys.readouterr().out
    assert "parked-1" not in [r.id for r in read(db)]


def test_an_id_shared_by_actors_needs_actor(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run("tasks", "retry", "shared", "--store", f"sqlite:///{db}") == 1
    err = capsys.readouterr().err
    assert "used by 2 actors" in err
    assert "--actor" in err
    assert "Order/o-2" in err
    assert (
        run("tasks", "discard", "shared", "--store", f"sqlite:///{db}", "--actor", "Order/o-2") == 0
    )
    assert [(r.id, r.identity) for r in read(db) if r.id == "shared"] == [("shared", "o-1")]


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (("tasks", "retry", "nope"), 1, "no task with id 'nope'"),
        (("tasks", "retry", "shared", "--actor", "Order/o-9"), 1, "of actor Order/o-9"),
        (("tasks", "retry", "live"), 1, "is pending, not parked"),
        (("tasks", "discard", "live"), 1, "is pending, not parked"),
        (("tasks", "list", "--actor", "no-slash"), 2, "--actor must be KIND/ID"),
    ],
)
def test_errors_go_to_stderr_with_an_exit_code(
    db: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], code: int, message: str
) -> None:
    assert run(*argv, "--store", f"sqlite:///{db}") == code
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""


def test_bad_store_urls_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOCSIN_STORE", raising=False)
    assert run("tasks", "list", "--store", "redis://x") == 2
    assert "unknown scheme 'redis'" in capsys.readouterr().err
    missing = tmp_path / "typo.db"
    assert run("tasks", "list", "--store", f"sqlite:///{missing}") == 2
    assert "no such SQLite store file" in capsys.readouterr().err
    assert not missing.exists()
    assert run("tasks", "list") == 2
    assert "TOCSIN_STORE" in capsys.readouterr().err


def test_an_unreachable_store_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("tasks", "list", "--store", "postgresql://nobody@127.0.0.1:1/none") == 1
    assert "PostgreSQL store" in capsys.readouterr().err
