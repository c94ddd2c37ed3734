# SPDX-License-Identifier: Apache-2.0
"""``tocsin console --store URL --coordinator URL``: a real console process reading the
live members of a real cluster (SQLite, PostgreSQL, Redis coordinators; clustered
``ActorSystem`` nodes in this process) over HTTP, live: a node that leaves disappears.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from tests.eventually import eventually
from tests.procs import close_pipes, ready_line

from tocsin import ActorSystem, Cluster, Remoting
from tocsin.cli import main
from tocsin.cluster import open_coordinator
from tocsin.stores.sqlite import SQLiteStore

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Real seconds any one expected change may take to show (a bound on a busy 2-core box).
WAIT = 30.0
SECRET = b"console-cluster-test-secret"


@pytest.fixture(params=["sqlite", "postgres", "redis"])
def coordinator_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/coordinator.db"
    if request.param == "postgres":
        dsn: str = request.getfixturevalue("postgres_dsn")
        return f"{dsn}?schema=con_{uuid.uuid4().hex[:12]}"
    url: str = request.getfixturevalue("redis_url")
    return f"{url}?prefix=con{uuid.uuid4().hex[:12]}:"


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    path = tmp_path / "tasks.db"

    async def create() -> None:
        store = SQLiteStore(path)
        await store.open()
        await store.close()

    asyncio.run(create())
    return f"sqlite:///{path}"


@pytest.fixture
def console(
    coordinator_url: str, store_url: str, tmp_path: Path
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The console process, serving before any node joins (its ready line is read with
    a blocking wait: no node of this process must be renewing a lease meanwhile)."""

    async def create_schema() -> None:  # the nodes' first open would; the file must exist
        coordinator = open_coordinator(coordinator_url)
        await coordinator.open()
        await coordinator.close()

    asyncio.run(create_schema())
    errors = tmp_path / "console.stderr"
    with errors.open("wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tocsin.cli", "console", "--store", store_url,
             "--coordinator", coordinator_url, "--bind", "127.0.0.1:0", "--interval", "0.1"],
            stdout=subprocess.PIPE, stderr=stderr, text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    try:
        line = ready_line(proc, "tocsin console")
        assert "serving http://" in line, (line, errors.read_text(errors="replace"))
        yield proc, line.split("serving ", 1)[1].split(" ", 1)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(WAIT)
        close_pipes(proc)


def node(name: str, url: str) -> ActorSystem:
    return ActorSystem(
        name,
        remoting=Remoting(listen="tcp://127.0.0.1:0", secret=SECRET),
        cluster=Cluster(url, lease=10.0),
    )


def members_section(html: str) -> str:
    return html.split('id="members"', 1)[1].split("</section>", 1)[0]


def bearer(url: str) -> dict[str, str]:
    """The header carrying the token of the console's printed URL (``/?token=...``)."""
    token = url.partition("?token=")[2]
    assert token, f"{url!r} carries no token"
    return {"Authorization": f"Bearer {token}"}


async def wait_page(url: str, check: str, present: bool) -> str:
    """The members section once ``check`` is (or is no longer) in it, within WAIT."""
    async with aiohttp.ClientSession(headers=bearer(url)) as http:

        async def seen() -> str | None:
            async with http.get(url) as response:
                assert response.status == 200
                section = members_section(await response.text())
            return section if (check in section) == present else None

        what = f"{check!r} {'shows' if present else 'left'} in the members section"
        return await eventually(seen, what, within=WAIT)


async def metrics_text(url: str) -> str:
    base = url.partition("?")[0]
    async with (
        aiohttp.ClientSession(headers=bearer(url)) as http,
        http.get(base + "metrics") as response,
    ):
        assert response.status == 200
        return await response.text()


async def test_console_shows_the_live_members_and_a_node_that_leaves_disappears(
    console: tuple[subprocess.Popen[str], str], coordinator_url: str
) -> None:
    proc, url = console
    section = await wait_page(url, "No members.", present=True)  # read, none joined yet
    a, b = node("shop-a", coordinator_url), node("shop-b", coordinator_url)
    await a.start()
    try:
        await b.start()
        try:
            await wait_page(url, "shop-b", present=True)
            section = await wait_page(url, "shop-a", present=True)
            assert a.address is not None
            assert b.address is not None
            assert a.address in section  # the node's remoting address, as peers dial it
            assert b.address in section

            async def two_members() -> bool:  # /metrics is read by its own refresher
                return "tocsin_cluster_members 2.0" in await metrics_text(url)

            await eventually(two_members, "/metrics counts two members", within=WAIT)
        finally:
            await b.stop()  # a graceful leave: its lease is removed at once
        section = await wait_page(url, "shop-b", present=False)
        assert "shop-a" in section
    finally:
        await a.stop()
    await wait_page(url, "No members.", present=True)
    proc.send_signal(signal.SIGTERM)
    assert await asyncio.to_thread(proc.wait, WAIT) == 0


def test_an_unreachable_coordinator_exits_1(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["console", "--store", store_url, "--coordinator", "redis://127.0.0.1:1/0",
            "--bind", "127.0.0.1:0"]  # fmt: skip
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("tocsin console: error: Redis coordinator")
    assert err.count("\n") == 1  # one line, no traceback


@pytest.mark.parametrize(
    ("coordinator", "message"),
    [
        ("mysql://db/x", "unknown scheme 'mysql'"),
        ("memory://x", "inside one process"),
        ("sqlite:///{missing}", "no such SQLite coordinator file"),
        ("sqlite:///:memory:", "no shareable file path"),
        ("nonsense", "has no scheme"),
    ],
)
def test_a_bad_coordinator_url_exits_2_with_one_line(
    coordinator: str,
    message: str,
    store_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = coordinator.format(missing=tmp_path / "missing.db")
    assert main(["console", "--store", store_url, "--coordinator", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tocsin console: error: ")
    assert message in err
    assert err.count("\n") == 1
    assert not (tmp_path / "missing.db").exists()  # never created by mistake
