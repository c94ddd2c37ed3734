# SPDX-License-Identifier: Apache-2.0
"""Files are ours: SQLite files and lock files are created 0600, nothing is written
through a symlink, and another OS user's read never leaves files the owner cannot open
(docs/security.md, "Files are ours")."""

from __future__ import annotations

import asyncio
import io
import os
import select
import shutil
import signal
import sqlite3
import stat
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tocsin.cli import main as cli_main
from tocsin.cluster import open_coordinator
from tocsin.errors import StoreError
from tocsin.stores import TaskRow, UpsertTask
from tocsin.stores.sqlite import SQLiteStore

SERVICE_UID = 1  # daemon: the user the service runs as
OTHER_UID = 65534  # nobody: another local user
WAIT = 60.0


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def task(id: str) -> TaskRow:
    return TaskRow(
        kind="Order",
        identity="o-1",
        id=id,
        name="ship",
        payload=b"",
        due=1_700_000_000.0,
        every=None,
        attempts=6,
        max_retries=5,
        created_at=1_600_000_000.0,
        state="parked",
        last_error="RuntimeError: carrier down",
    )


async def write_tasks(path: Path, *ids: str, exclusive: bool = False) -> None:
    store = SQLiteStore(str(path))
    await store.open(exclusive=exclusive)
    try:
        await store.apply([UpsertTask(task(i)) for i in ids])
    finally:
        await store.close()


@pytest.fixture
def loose_umask() -> Iterator[None]:
    old = os.umask(0)  # the modes come from tocsin, not from a strict umask
    yield
    os.umask(old)


async def test_a_new_store_and_its_wal_shm_and_owner_lock_are_0600(
    tmp_path: Path, loose_umask: None
) -> None:
    path = tmp_path / "tasks.db"
    store = SQLiteStore(str(path))
    await store.open(exclusive=True)
    try:
        await store.apply([UpsertTask(task("a"))])
        made = [path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-owner")]
        assert {p.name: mode(p) for p in made} == {p.name: 0o600 for p in made}
    finally:
        await store.close()


async def test_a_new_sqlite_coordinator_file_is_0600(tmp_path: Path, loose_umask: None) -> None:
    path = tmp_path / "cluster.db"
    coordinator = open_coordinator(f"sqlite:///{path}")
    await coordinator.open()
    await coordinator.close()
    assert mode(path) == 0o600


async def test_a_symlink_at_the_store_path_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    link = tmp_path / "tasks.db"
    link.symlink_to(victim)
    dangling = tmp_path / "other.db"
    dangling.symlink_to(tmp_path / "created-through-the-link.db")
    for path in (link, dangling):
        with pytest.raises(StoreError, match="symbolic link"):
            await SQLiteStore(str(path)).open()
    assert victim.read_text() == "keep me"
    assert not (tmp_path / "created-through-the-link.db").exists()
    assert not Path(f"{link}-wal").exists()


async def test_a_symlink_at_the_owner_lock_is_refused_and_its_target_not_truncated(
    tmp_path: Path,
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path = tmp_path / "tasks.db"
    Path(f"{path}-owner").symlink_to(victim)
    with pytest.raises(StoreError, match="symbolic link"):
        await SQLiteStore(str(path)).open(exclusive=True)
    assert victim.read_text() == "keep me"


# -- another OS user (issue 31, defect 1): forked children that drop to a uid ------------


def as_user(uid: int, fn: Callable[[], int]) -> tuple[int, str]:
    """Run ``fn`` in a forked child as ``uid`` (its own group); its exit code and output.

    Forked rather than exec'd: the interpreter may live where that user cannot read it.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 70
        try:
            os.close(read_end)
            os.dup2(write_end, 1)
            os.dup2(write_end, 2)
            sys.stdout = sys.stderr = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            code = fn()
        except BaseException as exc:
            print(f"child failed: {type(exc).__name__}: {exc}")
        finally:
            os._exit(code)
    os.close(write_end)
    chunks = []
    end = time.monotonic() + WAIT
    while True:
        ready, _, _ = select.select([read_end], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            break
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode(errors="replace")


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory both users may write (where the defect bit: files appeared in it)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as two OS users (CI and the dev box run as root)")
    path = Path(tempfile.mkdtemp(prefix="tocsin-shared-", dir="/tmp"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path)


def service_writes(path: Path, *ids: str) -> int:
    asyncio.run(write_tasks(path, *ids))
    return 0


def listing(path: Path) -> Callable[[], int]:
    return lambda: cli_main(["tasks", "list", "--store", f"sqlite:///{path}"])


def owners(directory: Path) -> dict[str, int]:
    return {p.name: p.lstat().st_uid for p in directory.iterdir()}


def test_tasks_list_by_another_user_leaves_nothing_the_service_cannot_open(
    shared_dir: Path,
) -> None:
    path = shared_dir / "tasks.db"
    assert as_user(SERVICE_UID, lambda: service_writes(path, "first")) == (0, "")
    assert mode(path) == 0o600
    # 0600: another user cannot read it at all, and is told so; nothing is created.
    code, out = as_user(OTHER_UID, listing(path))
    assert code == 2, out
    assert "permission denied: it is mode 0600 and belongs to uid 1" in out
    assert sorted(owners(shared_dir)) == ["tasks.db"]
    # An operator lets others read it: the listing works and still creates nothing.
    path.chmod(0o644)
    code, out = as_user(OTHER_UID, listing(path))
    assert code == 0, out
    assert "first" in out
    assert owners(shared_dir) == {"tasks.db": SERVICE_UID}
    # The service opens its store again and writes: the defect failed right here.
    assert as_user(SERVICE_UID, lambda: service_writes(path, "second")) == (0, "")


def test_tasks_list_by_another_user_while_the_service_runs_reads_through_its_wal(
    shared_dir: Path,
) -> None:
    path = shared_dir / "tasks.db"
    assert as_user(SERVICE_UID, lambda: service_writes(path, "first")) == (0, "")
    path.chmod(0o644)
    go_on_r, go_on_w = os.pipe()
    held_r, held_w = os.pipe()

    def hold() -> int:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("UPDATE tocsin_tasks SET name = 'ship-late'")  # lives in the WAL
        os.write(held_w, b"x")
        os.read(go_on_r, 1)
        conn.close()
        return 0

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.setgroups([])
        os.setgid(SERVICE_UID)
        os.setuid(SERVICE_UID)
        os._exit(hold())
    try:
        assert select.select([held_r], [], [], WAIT)[0], "the service did not open its store"
        assert os.path.exists(f"{path}-wal")
        before = owners(shared_dir)
        code, out = as_user(OTHER_UID, listing(path))
        assert code == 0, out
        assert "ship-late" in out  # read through the service's WAL
        assert owners(shared_dir) == before
    finally:
        os.write(go_on_w, b"x")
        os.waitpid(pid, 0)
    assert as_user(SERVICE_UID, lambda: service_writes(path, "second")) == (0, "")


def test_a_write_command_by_another_user_is_refused_naming_the_owner(shared_dir: Path) -> None:
    path = shared_dir / "tasks.db"
    assert as_user(SERVICE_UID, lambda: service_writes(path, "first")) == (0, "")
    path.chmod(0o646)  # writable by the other user, yet not a shared-group file
    retry = ["tasks", "discard", "first", "--store", f"sqlite:///{path}", "--actor", "Order/o-1"]
    code, out = as_user(OTHER_UID, lambda: cli_main(retry))
    assert code != 0, out
    assert "run this as daemon (uid 1)" in out
    assert owners(shared_dir) == {"tasks.db": SERVICE_UID}
    assert as_user(SERVICE_UID, lambda: service_writes(path, "second")) == (0, "")
