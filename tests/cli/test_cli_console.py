# SPDX-License-Identifier: Apache-2.0
"""``tocsin console --store URL``: a real process serving a real SQLite file over HTTP."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from tests.eventually import eventually_sync
from tests.procs import close_pipes, ready_line

from tocsin.cli import main
from tocsin.stores import TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore

#: Left out of `make check` (real processes); `make test` runs it.
pytestmark = pytest.mark.slow

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


def start(
    db: Path, tmp_path: Path, *extra: str, env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """``tocsin console`` on ``db``, and the line it printed once serving."""
    # stderr to a file: nothing reads a pipe while the console serves, and a full one
    # (64 KiB of logged requests or warnings) would block the server mid-test.
    errors = tmp_path / "console.stderr"
    environ = {k: v for k, v in os.environ.items() if k != "TOCSIN_CONSOLE_TOKEN"}
    with errors.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tocsin.cli", "console", "--store", f"sqlite:///{db}",
             "--bind", "127.0.0.1:0", "--interval", "0.1", *extra],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={**environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )  # fmt: skip
    # "tocsin console: serving http://127.0.0.1:PORT/?token=... (Ctrl-C to stop)"
    line = ready_line(proc, "tocsin console")
    assert "serving http://" in line, (line, errors.read_text(errors="replace"))
    return proc, line


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait(LIMIT)
    close_pipes(proc)


@pytest.fixture
def server(db: Path, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc, line = start(db, tmp_path)
    try:
        yield proc, line.split("serving ", 1)[1].split(" ", 1)[0]
    finally:
        stop(proc)


def fetch(url: str, token: str | None = None) -> str:
    """GET ``url``: as a browser (keeping the session cookie the token is swapped for),
    or as a script with the token as a bearer."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor())
    with browser.open(urllib.request.Request(url, headers=headers), timeout=LIMIT) as response:
        body: bytes = response.read()
        return body.decode()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=LIMIT) as response:
            code: int = response.status
            return code
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the response's socket (warnings are errors)
            return exc.code


def test_console_serves_a_store_and_stops_cleanly_on_sigterm(
    server: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = server
    base, _, token = url.partition("?token=")
    assert len(token) >= 40  # made for this run: the printed URL carries it, as Jupyter's
    assert status(base) == 401  # another user of the machine: the sign-in page only
    page = fetch(url)  # the printed URL: signed in, redirected to the page
    assert "p-1" in page
    assert "q-1" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert" not in page
    assert "Sign out" in page

    def parked_counted() -> str | None:  # the refresher reads the store for /metrics
        text = fetch(base + "metrics", token)
        return text if 'tocsin_durable_tasks{state="parked"} 1.0' in text else None

    metrics = eventually_sync(parked_counted, "/metrics counts the parked task", within=LIMIT)
    assert 'tocsin_durable_tasks{state="parked"} 1.0' in metrics
    assert 'tocsin_durable_tasks{state="pending"} 1.0' in metrics
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(LIMIT) == 0


def test_a_token_given_is_asked_for_and_not_printed(db: Path, tmp_path: Path) -> None:
    token = "an-operator-chosen-token-1234"
    proc, line = start(db, tmp_path, env={"TOCSIN_CONSOLE_TOKEN": token})
    try:
        assert token not in line
        assert "sign in with the token given" in line
        url = line.split("serving ", 1)[1].split(" ", 1)[0]
        assert status(url) == 401
        assert "p-1" in fetch(url, token)
        assert "p-1" in fetch(f"{url}?token={token}")
    finally:
        stop(proc)


def test_no_token_serves_loopback_without_one(db: Path, tmp_path: Path) -> None:
    proc, line = start(db, tmp_path, "--no-token")
    try:
        assert "without a token (--no-token" in line
        url = line.split("serving ", 1)[1].split(" ", 1)[0]
        assert "?token=" not in url
        page = fetch(url)
        assert "p-1" in page
        assert "Sign out" not in page
    finally:
        stop(proc)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["console"], "no store"),
        (
            ["console", "--store", "sqlite:///{db}", "--bind", "0.0.0.0:0", "--no-token"],
            "for loopback binds only",
        ),
        (
            ["console", "--store", "sqlite:///{db}", "--no-token", "--token", "x" * 20],
            "--no-token and a token",
        ),
        (["console", "--store", "sqlite:///{db}", "--token", "short"], "at least 16 characters"),
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
