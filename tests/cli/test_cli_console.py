# SPDX-License-Identifier: Apache-2.0
"""``tocsin console --store URL``: a real process serving a real SQLite file over HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from tests.procs import close_pipes, ready_line

from tocsin.cli import main
from tocsin.stores import TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore

#: Real seconds the server may take to start or stop (a bound, not a speed expectation).
LIMIT = 30.0


def row(id: str, state: Literal["pending", "running", "parked"]) -> TaskRow:
    return TaskRow(
        kind="Order", identity="o-1", id=id, name="ship", payload=b"", due=1_700_000_000.0,
        every=None, attempts=1, max_retries=0, created_at=1_600_000_000.0, state=state,
        last_error="RuntimeError('<script>alert(1)</script>')" if state == "parked" else None,
    )  # fmt: skip


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.db"

    async def seed() -> None:
        store = SQLiteStore(path)
        await store.open()
        await store.apply([UpsertTask(row("p-1", "parked")), UpsertTask(row("q-1", "pending"))])
        await store.close()

    asyncio.run(seed())
    return path


@pytest.fixture
def server(db: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    # stderr to a file: nothing reads a pipe while the console serves, and a full one
    # (64 KiB of logged requests or warnings) would block the server mid-test.
    errors = tmp_path / "console.stderr"
    with errors.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tocsin.cli", "console", "--store", f"sqlite:///{db}",
             "--bind", "127.0.0.1:0", "--interval", "0.1"],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        # "tocsin console: serving http://127.0.0.1:PORT/ ..."
        line = ready_line(proc, "tocsin console")
        assert "serving http://" in line, (line, errors.read_text(errors="replace"))
        yield proc, line.split("serving ", 1)[1].split(" ", 1)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(LIMIT)
        close_pipes(proc)


def fetch(url: str) -> str:
    with urllib.request.urlopen(url, timeout=LIMIT) as response:
        body: bytes = response.read()
        return body.decode()


def test_console_serves_a_store_and_stops_cleanly_on_sigterm(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = server
    page = fetch(url)
    assert "p-1" in page
    assert "q-1" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    for _ in range(int(LIMIT / 0.1)):  # the refresher reads the store for /metrics
        metrics = fetch(url + "metrics")
        if 'tocsin_durable_tasks{state="parked"} 1.0' in metrics:
            break
        time.sleep(0.1)
    assert 'tocsin_durable_tasks{state="parked"} 1.0' in metrics
    assert 'tocsin_durable_tasks{state="pending"} 1.0' in metrics
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(LIMIT) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["console"], "no store"),
        (["console", "--store", "sqlite:///{db}", "--bind", "0.0.0.0:0"], "needs a `token`"),
        (["console", "--store", "sqlite:///{db}", "--bind", "nonsense"], "`bind` must be"),
        (["console", "--store", "sqlite:///{missing}"], "no such SQLite store file"),
        (["console", "--store", "nope://x"], "store"),
        (["console", "--store", "sqlite:///{db}", "--coordinator", "memory://"], "one process"),
    ],
)
def test_bad_usage_exits_2_with_a_message(
    argv: list[str],
    message: str,
    db: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("TOCSIN_STORE", raising=False)
    monkeypatch.delenv("TOCSIN_CONSOLE_TOKEN", raising=False)
    monkeypatch.delenv("TOCSIN_COORDINATOR", raising=False)
    args = [a.format(db=db, missing=db.parent / "missing.db") for a in argv]
    assert main(args) == 2
    assert message in capsys.readouterr().err
