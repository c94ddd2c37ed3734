# SPDX-License-Identifier: Apache-2.0
"""``tocsin tasks list|retry|discard`` against a real SQLite file."""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
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
        "attempts": 6,  # parked: the first run and its 5 retries all failed
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
    assert "0/6" in live  # no failed run yet, of 6 allowed
    assert "2023-11-14T22:13:20+00:00" in live
    parked = next(line for line in out if "parked-1" in line)
    assert "6/6" in parked  # 6 runs made of the 6 allowed (1 + max_retries 5), not "6/5"
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
    assert "no such file" in capsys.readouterr().err
    assert not missing.exists()
    assert run("tasks", "list") == 2
    assert "TOCSIN_STORE" in capsys.readouterr().err
    # A store inside this process's memory is empty by construction: "no tasks" would
    # answer a mistake (issue 31, item 5).
    for url in ("memory://", "sqlite://:memory:"):
        assert run("tasks", "list", "--store", url) == 2
        assert "one process's memory" in capsys.readouterr().err


def test_an_unreachable_store_is_a_failure(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("tasks", "list", "--store", "postgresql://nobody@127.0.0.1:1/none") == 1
    assert "PostgreSQL store" in capsys.readouterr().err


# --- --json (issue 15 part 4) -------------------------------------------------------------


def test_list_json_is_one_document_with_the_documented_fields(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--json") == 0
    document = json.loads(capsys.readouterr().out)
    assert list(document) == ["tasks"]
    tasks = {(t["identity"], t["id"]): t for t in document["tasks"]}
    assert len(tasks) == 4
    live = tasks[("o-1", "live")]
    assert live == {
        "actor": "Order/o-1",
        "kind": "Order",
        "identity": "o-1",
        "id": "live",
        "name": "ship",
        "state": "pending",
        "due": "2023-11-14T22:13:20+00:00",
        "due_epoch": 1_700_000_000.0,
        "every": 60.0,
        "cron": None,
        "timezone": None,
        "attempts": 0,
        "runs_allowed": 6,
        "max_retries": 5,
        "last_error": None,
        "timeout": None,
        "created_at": "2020-09-13T12:26:40+00:00",
    }
    parked = tasks[("o-1", "parked-1")]
    assert (parked["state"], parked["attempts"], parked["runs_allowed"]) == ("parked", 6, 6)
    assert parked["last_error"].startswith("RuntimeError: carrier down xxx")  # not cut


def test_list_json_of_no_tasks_is_an_empty_list(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--json", "--actor", "No/one") == 0
    assert json.loads(capsys.readouterr().out) == {"tasks": []}


def test_state_running_is_not_offered_since_no_other_process_can_see_it(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run("tasks", "list", "--store", f"sqlite:///{db}", "--state", "running")
    assert exit_info.value.code == 2
    assert "invalid choice: 'running'" in capsys.readouterr().err


# --- read-only and unopenable stores (issue 10 items 14-15) --------------------------------


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_list_opens_read_only_and_writes_nothing(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_checkpoint_and_close(db))
    before = db.read_bytes(), _files(db.parent)
    assert run("tasks", "list", "--store", f"sqlite:///{db}") == 0
    assert "parked-1" in capsys.readouterr().out
    assert (db.read_bytes(), _files(db.parent)) == before


async def _checkpoint_and_close(path: Path) -> None:
    """Leave the file with no WAL, so that any write would show in its bytes."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.close()


@pytest.mark.parametrize("command", ["list", "retry", "discard"])
def test_another_applications_database_is_refused_and_left_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    other = tmp_path / "app.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE users (name TEXT)")
    conn.commit()
    conn.close()
    before = other.read_bytes(), _files(tmp_path)
    argv = ["tasks", command] + ([] if command == "list" else ["some-id"])
    assert run(*argv, "--store", f"sqlite:///{other}") == 2
    err = capsys.readouterr().err
    assert "is not a tocsin store" in err
    assert len(err.strip().splitlines()) == 1
    assert (other.read_bytes(), _files(tmp_path)) == before
    conn = sqlite3.connect(other)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    conn.close()


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("missing-dir/tasks.db", "missing-dir does not exist"),
        (".", "is a directory"),
        ("typo.db", "no such file"),
        ("junk.db", "is not a SQLite database"),
    ],
)
def test_each_unopenable_path_has_its_own_one_line_message_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    message: str,
) -> None:
    (tmp_path / "junk.db").write_text("not a database " * 100)
    monkeypatch.chdir(tmp_path)
    before = _files(tmp_path)
    for command in (["list"], ["retry", "x"]):
        assert run("tasks", *command, "--store", f"sqlite:///{name}") == 2
        err = capsys.readouterr().err
        assert message in err
        assert err.startswith("tocsin tasks: error: ")
        assert len(err.strip().splitlines()) == 1
    assert _files(tmp_path) == before


def test_read_only_media_gets_its_own_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real read-only mount needs privileges; the check reads the mount flag (statvfs)."""
    import os

    from tocsin.stores import _sqlite_readonly

    real = os.statvfs

    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly())
    assert _sqlite_readonly.on_read_only_media(str(tmp_path))
    error = _sqlite_readonly.open_error(str(tmp_path / "t.db"), sqlite3.OperationalError("x"))
    assert "is on read-only media" in str(error)
    error = _sqlite_readonly._unreadable(str(tmp_path / "t.db"), sqlite3.OperationalError("x"))
    assert "is on read-only media" in str(error)
    monkeypatch.setattr(os, "statvfs", real)
    assert not _sqlite_readonly.on_read_only_media(str(tmp_path))


def test_a_read_only_store_refuses_writes(db: Path) -> None:
    from tocsin.errors import StoreError

    async def go() -> None:
        store = SQLiteStore(db, read_only=True)
        await store.open()
        try:
            assert len(await store.list_tasks()) == 4
            with pytest.raises(StoreError, match="read-only"):
                await store.apply([PutState("Order", "o-1", "k", b"w")])
        finally:
            await store.close()

    asyncio.run(go())


def test_list_says_on_stderr_why_long_overdue_tasks_may_wait(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    async def add() -> None:
        store = SQLiteStore(db)
        await store.open()
        run_row = row("r1", state="pending", attempts=0, last_error=None)
        run_row = msgspec.structs.replace(run_row, kind="job:mail.welcome", identity="3")
        await store.apply([UpsertTask(run_row)])
        await store.close()

    asyncio.run(add())
    assert run("tasks", "list", "--store", f"sqlite:///{db}") == 0
    captured = capsys.readouterr()
    assert "job:mail.welcome/3" in captured.out
    notes = sorted(captured.err.splitlines(), key=lambda n: "job:" not in n)
    assert len(notes) == 2
    assert "job 'mail.welcome'" in notes[0]
    assert "worker that imported" in notes[0]
    assert "kind 'Order'" in notes[1]
    assert run("tasks", "list", "--store", f"sqlite:///{db}", "--state", "parked") == 0
    assert capsys.readouterr().err == ""  # parked tasks wait for an operator, not a worker
