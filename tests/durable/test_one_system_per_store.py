# SPDX-License-Identifier: Apache-2.0
"""One system per store outside cluster mode (issue 10 item 6), and a CLI retry reaching
a running system at once (issue 15 part 4).

The ownership tests use ``ManualClock``. The CLI tests are about real processes and real
time (``tocsin tasks`` runs in a subprocess while the system runs here), so they wait real
time, bounded, and assert the outcome: the retried task ran long before the 150 s
look-ahead poll that used to be the only way a running system saw it.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from tests.durable.durable_support import Backend
from tests.eventually import eventually as _wait_for

from tocsin import ActorSystem, ManualClock
from tocsin.durable import Call, DurableActor
from tocsin.errors import StoreError

T0 = 1_700_000_000.0
RUNS: list[str] = []
ROOT = Path(__file__).parents[2]


class OwnedOrder(DurableActor):
    kind = "OwnershipOrder"

    async def ship(self, payload: Any) -> None:
        RUNS.append(self.identity)
        if payload == "fail-first" and RUNS.count(self.identity) == 1:
            raise RuntimeError("carrier down")

    async def add(self, payload: Any) -> str:
        return await self.queue("ship", payload, id="ship-1", max_retries=0)


async def test_second_system_on_one_store_is_refused_naming_the_holder(
    backend: Backend,
) -> None:
    RUNS.clear()
    clock = ManualClock(T0)
    first = ActorSystem("first", clock=clock, store=backend.make())
    await first.start()
    try:
        second = ActorSystem("second", clock=clock, store=backend.make())
        with pytest.raises(StoreError, match="already owned by a running system") as info:
            await second.start()
        message = str(info.value)
        assert f"host {socket.gethostname()} pid {os.getpid()}" in message
        assert "cluster" in message
        # The holder is unaffected and runs its task exactly once.
        pid = await first.durable(OwnedOrder, "o-1")
        await pid.ask(Call("add"))
        await clock.advance(1)
        assert RUNS == ["o-1"]
    finally:
        await first.stop()
    # Released with the first system's stop: the refused system's start can simply be
    # retried (a failed start leaves nothing half-open).
    await second.start()
    try:
        pid = await second.durable(OwnedOrder, "o-2")
        await pid.ask(Call("add"))
        await clock.advance(1)
        assert RUNS == ["o-1", "o-2"]
    finally:
        await second.stop()


# --- real processes, real time ------------------------------------------------------------


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tocsin.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )


async def _cli_retry_reaches_running_system(url: str, store: Any) -> None:
    RUNS.clear()
    async with ActorSystem("cli-retry", store=store) as system:
        pid = await system.durable(OwnedOrder, "o-1")
        await pid.ask(Call("add", "fail-first"))
        await _wait_for(lambda: RUNS == ["o-1"])  # ran once, failed, parked

        async def parked() -> bool:
            rows = await system._durable.store.list_tasks(state="parked")  # type: ignore[union-attr]
            return len(rows) == 1

        deadline = time.monotonic() + 30
        while not await parked():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        # An operator's tool takes no ownership: it works while the system runs.
        listing = await asyncio.to_thread(_cli, "tasks", "list", "--store", url)
        assert listing.returncode == 0, listing.stderr
        assert "ship-1" in listing.stdout
        retried = await asyncio.to_thread(_cli, "tasks", "retry", "ship-1", "--store", url)
        assert retried.returncode == 0, retried.stderr
        # Without the change feed the running system would only see it at its next
        # look-ahead poll, 150 s away; a bounded 30 s wait proves it came through.
        await _wait_for(lambda: RUNS == ["o-1", "o-1"])


@pytest.mark.integration
async def test_cli_retry_reaches_a_running_system_on_sqlite(tmp_path: Path) -> None:
    from tocsin.stores.sqlite import SQLiteStore

    path = tmp_path / "tasks.db"
    await _cli_retry_reaches_running_system(f"sqlite:///{path}", SQLiteStore(path))


@pytest.mark.integration
async def test_cli_retry_reaches_a_running_system_on_postgres(postgres_dsn: str) -> None:
    # The CLI uses the default schema, so this test owns `public` of the test database
    # for its duration (no other test uses it).
    await _cli_retry_reaches_running_system(postgres_dsn, postgres_dsn)
