# SPDX-License-Identifier: Apache-2.0
"""The checks of ``tocsin run`` that look at the machine and the network, run in the
arbiter before any fork: a SQLite file's directory exists and is writable, a PostgreSQL
or Redis server accepts a TCP (or Unix socket) connection, a port is free to bind.

Each failure is one :class:`RunUsageError` line (exit 2), where a worker would instead
fail to start, be restarted, and fail again with a traceback, forever. These checks say
"reachable now", nothing more: a server that goes away later is the workers' business
(their calls retry with backoff, ``docs/cluster.md``).
"""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

from ..stores._spi import redact
from ._errors import RunUsageError

__all__ = ["CONNECT_TIMEOUT", "check_bindable", "check_reachable", "check_sqlite_directory"]

#: Seconds the arbiter waits for a server's name to resolve and its port to accept a
#: connection, per ``--store`` / ``--coordinator``, before it refuses to start.
CONNECT_TIMEOUT: Final = 3.0

_DEFAULT_PORTS: Final = {"postgresql": 5432, "postgres": 5432, "redis": 6379, "rediss": 6379}


def sqlite_path(url: str) -> Path | None:
    """The file of a ``sqlite:///path`` URL (relative to the working directory), or None
    for another scheme or a private ``:memory:`` database."""
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() != "sqlite":
        return None
    body = rest.partition("?")[0]
    if body in (":memory:", "/:memory:") or not body.startswith("/") or len(body) < 2:
        return None
    return Path(body[1:]).absolute()


def check_sqlite_directory(option: str, url: str) -> None:
    """A SQLite file's directory must exist and be writable (SQLite creates the file and
    its ``-wal``/``-shm`` companions there).

    Raises:
        RunUsageError: it does not exist, is not a directory or is not writable.
    """
    path = sqlite_path(url)
    if path is None:
        return
    parent = path.parent
    if not parent.exists():
        raise RunUsageError(
            f"`{option}` {redact(url)!r}: the directory {str(parent)!r} does not exist; create it "
            "or fix the path"
        )
    if not parent.is_dir():
        raise RunUsageError(f"`{option}` {redact(url)!r}: {str(parent)!r} is not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise RunUsageError(
            f"`{option}` {redact(url)!r}: the directory {str(parent)!r} is not writable by this "
            "user (SQLite creates its journal files there)"
        )


def _servers(url: str) -> tuple[str, list[tuple[str, int]] | str] | None:
    """``(kind, [(host, port), ...])`` or ``(kind, unix socket path)`` a server URL
    names, or None when it names no host to check (libpq's defaults decide)."""
    scheme = url.partition("://")[0].lower()
    if scheme == "unix":  # redis over a Unix socket: unix:///path/redis.sock
        return "Redis", unquote(urlsplit(url).path)
    if scheme not in _DEFAULT_PORTS:
        return None
    kind = "Redis" if scheme.startswith("redis") else "PostgreSQL"
    netloc = url.partition("://")[2].partition("/")[0].partition("?")[0].rpartition("@")[2]
    if not netloc:
        return None
    default = _DEFAULT_PORTS[scheme]
    addresses = []
    for item in netloc.split(","):  # libpq accepts several hosts: any one will do
        host, port = item, default
        if item.startswith("["):  # [::1]:5432
            host, _, rest = item[1:].partition("]")
            if rest.startswith(":") and rest[1:].isdigit():
                port = int(rest[1:])
        elif item.count(":") == 1:
            host, _, text = item.partition(":")
            if text:
                if not text.isdigit():
                    return None  # malformed: the driver's own error says more
                port = int(text)
        host = unquote(host)
        if host.startswith("/"):  # a Unix socket directory (postgresql://%2Frun%2Fpg/db)
            return kind, f"{host}/.s.PGSQL.{port}"
        if host:
            addresses.append((host, port))
    return (kind, addresses) if addresses else None


def _connect(target: list[tuple[str, int]] | str, errors: list[str]) -> bool:
    """Whether one of ``target``'s addresses accepts a connection; reasons in ``errors``."""
    if isinstance(target, str):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            try:
                sock.connect(target)
            except OSError as exc:
                errors.append(f"{target}: {exc.strerror or exc}")
                return False
            return True
    for host, port in target:
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT).close()
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__
            errors.append(f"{host}:{port}: {reason}")
            continue
        return True
    return False


def check_reachable(option: str, url: str) -> None:
    """The PostgreSQL or Redis server ``url`` names accepts a connection, within
    :data:`CONNECT_TIMEOUT` seconds (name resolution included).

    A TCP (or Unix socket) connection only: no login, so a wrong password is still the
    workers' error. Other schemes, and a URL without a host, are not checked.

    Raises:
        RunUsageError: no address of the server accepted a connection in time.
    """
    servers = _servers(url)
    if servers is None:
        return
    kind, target = servers
    errors: list[str] = []
    result: list[bool] = []
    # In a thread, so that a name whose DNS server does not answer is bounded too.
    thread = threading.Thread(
        target=lambda: result.append(_connect(target, errors)),
        name="tocsin-run-check",
        daemon=True,
    )
    thread.start()
    thread.join(CONNECT_TIMEOUT * (1 + (len(target) if isinstance(target, list) else 1)))
    if result and result[0]:
        return
    where = target if isinstance(target, str) else ", ".join(f"{h}:{p}" for h, p in target)
    why = "; ".join(errors) if errors else f"no answer within {CONNECT_TIMEOUT:g} s"
    raise RunUsageError(
        f"`{option}`: cannot reach the {kind} server at {where} ({why}); start it or fix the URL"
    )


def check_bindable(option: str, host: str, port: int) -> None:
    """Nothing listens on ``host:port`` yet and this user may bind it (``SO_REUSEADDR``,
    as asyncio's servers set it, so a port in ``TIME_WAIT`` after a restart is free).

    Raises:
        RunUsageError: the port is in use, or the address is not this machine's.
    """
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise RunUsageError(f"`{option}`: cannot resolve {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            raise RunUsageError(
                f"`{option}`: cannot listen on {host}:{port}: {exc.strerror or exc}"
            ) from None
