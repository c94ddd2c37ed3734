# SPDX-License-Identifier: Apache-2.0
"""A throwaway PostgreSQL server for the test session: initdb, pg_ctl start, stop, rm.

The server listens on 127.0.0.1 on a free port with its unix socket inside its own temp
directory, runs with ``fsync=off`` (tests need speed, not crash safety) and trusts local
logins. As root, every PostgreSQL binary runs as the ``postgres`` OS user (initdb refuses
to run as root), and the temp directory is handed to that user.

Prior art: procrastinate's and asyncpg's test clusters (``asyncpg.cluster``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = [
    "PostgresUnavailable",
    "find_bin_dir",
    "kill_server",
    "start_server",
    "stop_server",
    "temporary_server",
]

DATABASE = "tocsin_test"


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL binaries (or no way to run them) on this machine."""


@dataclass(frozen=True, slots=True)
class Server:
    dsn: str
    port: int
    data_dir: Path


def find_bin_dir() -> Path:
    """The directory holding ``initdb`` and ``pg_ctl`` (PATH first, then Debian layout)."""
    initdb = shutil.which("initdb")
    if initdb is not None:
        real = Path(initdb).resolve().parent
        if (real / "pg_ctl").exists():
            return real
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: int(Path(p).parent.name) if Path(p).parent.name.isdigit() else 0,
        reverse=True,
    )
    for candidate in candidates:
        if (Path(candidate) / "initdb").exists() and (Path(candidate) / "pg_ctl").exists():
            return Path(candidate)
    raise PostgresUnavailable(
        "no PostgreSQL server binaries found (initdb/pg_ctl on PATH or under "
        "/usr/lib/postgresql/*/bin); install postgresql (e.g. apt-get install postgresql)"
    )


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _runner() -> tuple[list[str], str | None]:
    """Command prefix to run PostgreSQL binaries, and the OS user they run as."""
    if os.geteuid() != 0:
        return [], None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise PostgresUnavailable(
            "running as root, and there is no 'postgres' OS user to run the server as"
        ) from None
    if shutil.which("runuser"):
        return ["runuser", "-u", "postgres", "--"], "postgres"
    raise PostgresUnavailable("running as root, and `runuser` is missing")


def _run(prefix: list[str], args: list[str], cwd: Path) -> None:
    proc = subprocess.run(
        [*prefix, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"{' '.join(args[:2])} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        )


#: Server settings of the test servers (speed, not crash safety); ``settings=`` overrides.
TEST_SETTINGS: Final = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def _start_args(
    bin_dir: Path, data: Path, port: int, settings: Mapping[str, str] | None = None
) -> list[str]:
    root = data.parent
    merged = {**TEST_SETTINGS, **(settings or {})}
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} " + " ".join(
        f"-c {name}={value}" for name, value in merged.items()
    )
    return [
        str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options,
        "-l", str(root / "server.log"), "-w", "-t", "60", "start",
    ]  # fmt: skip


def stop_server(server: Server) -> None:
    """Stop ``server`` (``-m fast``: a clean restart's stop, every session cut; not
    ``immediate``, which with this server's ``synchronous_commit=off`` may lose commits
    the clients were told of)."""
    prefix, _ = _runner()
    pg_ctl = str(find_bin_dir() / "pg_ctl")
    _run(prefix, [pg_ctl, "-D", str(server.data_dir), "-m", "fast", "-w", "stop"],
         server.data_dir.parent)  # fmt: skip


def kill_server(server: Server) -> None:
    """Crash ``server`` (``-m immediate``: every process quits at once, no shutdown
    checkpoint, as after a kill; it recovers on :func:`start_server`)."""
    prefix, _ = _runner()
    pg_ctl = str(find_bin_dir() / "pg_ctl")
    _run(prefix, [pg_ctl, "-D", str(server.data_dir), "-m", "immediate", "-w", "stop"],
         server.data_dir.parent)  # fmt: skip


def start_server(server: Server) -> None:
    """Start a server stopped by :func:`stop_server` again, on the same port and data;
    returns once it accepts connections."""
    prefix, _ = _runner()
    _run(prefix, _start_args(find_bin_dir(), server.data_dir, server.port), server.data_dir.parent)


@contextmanager
def temporary_server(settings: Mapping[str, str] | None = None) -> Iterator[Server]:
    """Start a fresh server with a database ``tocsin_test``; stop and delete it after.

    ``settings`` are ``-c name=value`` server settings on top of :data:`TEST_SETTINGS`
    (the benchmarks run with ``fsync=on``, for instance)."""
    bin_dir = find_bin_dir()
    prefix, user = _runner()
    root = Path(tempfile.mkdtemp(prefix="tocsin-pg-"))
    try:
        if user is not None:
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        data = root / "data"
        port = _free_port()
        _run(
            prefix,
            [
                str(bin_dir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
            ],
            root,
        )
        _run(prefix, _start_args(bin_dir, data, port, settings), root)
        try:
            _run(
                prefix,
                [
                    str(bin_dir / "createdb"),
                    "-h",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "-U",
                    "postgres",
                    DATABASE,
                ],
                root,
            )
            dsn = f"postgresql://postgres@127.0.0.1:{port}/{DATABASE}"
            yield Server(dsn=dsn, port=port, data_dir=data)
        finally:
            subprocess.run(
                [
                    *prefix,
                    str(bin_dir / "pg_ctl"),
                    "-D",
                    str(data),
                    "-m",
                    "immediate",
                    "-w",
                    "stop",
                ],
                cwd=root,
                capture_output=True,
                timeout=60,
                check=False,
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
