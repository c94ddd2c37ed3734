# SPDX-License-Identifier: Apache-2.0
"""A throwaway Redis server for the test session: ``redis-server`` on a free loopback port.

It runs in its own temp directory with persistence off (tests need speed, not
durability), is waited for with PING, and is shut down and deleted after. Like
``pg.py`` for PostgreSQL.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["RedisUnavailable", "temporary_process", "temporary_server"]

#: Real seconds to wait for the server to answer PING after it is started.
START_TIMEOUT = 30.0


class RedisUnavailable(RuntimeError):
    """No ``redis-server`` binary on this machine."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@contextmanager
def temporary_server() -> Iterator[str]:
    """Start ``redis-server`` on 127.0.0.1:<free port>; yield its URL; stop and delete it."""
    with temporary_process() as (url, _):
        yield url


@contextmanager
def temporary_process() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """As :func:`temporary_server`, yielding the URL and the server's process too (a test
    may SIGSTOP it; it is sent SIGCONT before it is stopped)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RedisUnavailable(
            "no redis-server binary on PATH; install it (e.g. apt-get install redis-server)"
        )
    root = Path(tempfile.mkdtemp(prefix="tocsin-redis-"))
    port = _free_port()
    proc = subprocess.Popen(
        [
            binary,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(root),
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
            "--logfile",
            str(root / "redis.log"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                log = (root / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server did not start (exit {proc.poll()}):\n{log}")
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGCONT)  # a stopped server would never see SIGTERM
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(root, ignore_errors=True)
