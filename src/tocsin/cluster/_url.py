# SPDX-License-Identifier: Apache-2.0
"""Coordinator URLs: ``memory://NAME``, ``sqlite:///path``, ``postgresql://…``, ``redis://…``.

SQLite paths follow the store URLs (and SQLAlchemy): ``sqlite:///rel.db`` is relative to
the working directory, ``sqlite:////abs/path.db`` (four slashes) is absolute. A private
``:memory:`` SQLite database cannot be shared by nodes, so it is refused.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl, urlsplit

from ..clock import Clock
from ..errors import InvalidCoordinatorURLError
from ..stores._spi import (
    PG_OPTIONS,
    REDIS_OPTIONS,
    check_connect_timeout,
    redact,
    split_options,
    unknown_message,
)
from ._protocol import Coordinator

__all__ = ["ALLOWED", "check_coordinator_url", "open_coordinator"]

ALLOWED: Final = (
    "memory:// or memory://NAME, sqlite:///relative.db, sqlite:////absolute.db, "
    "postgresql://user@host/db (or postgres://), redis://host:port/db (or rediss://, unix://)"
)
_REDIS: Final = ("redis", "rediss", "unix")


def check_coordinator_url(url: object) -> str:
    """Validate a coordinator URL without importing any driver; return its scheme.

    Raises:
        InvalidCoordinatorURLError: not a str, unknown scheme, or malformed body; the
            message says what was given and what is allowed.
    """
    if not isinstance(url, str):
        raise InvalidCoordinatorURLError(
            f"`coordinator` must be a URL str or a Coordinator, got {type(url).__name__}; "
            f"allowed: {ALLOWED}"
        )
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep:
        raise InvalidCoordinatorURLError(
            f"coordinator URL {redact(url)!r} has no scheme; allowed: {ALLOWED}"
        )
    if scheme == "memory":
        if "/" in rest or "?" in rest:
            raise InvalidCoordinatorURLError(
                f"coordinator URL {redact(url)!r}: write memory:// or memory://NAME (a plain name)"
            )
        return scheme
    if scheme == "sqlite":
        path, _, query = rest.partition("?")
        if not path.startswith("/") or len(path) < 2 or path in ("/:memory:",):
            raise InvalidCoordinatorURLError(
                f"coordinator URL {redact(url)!r} has no shareable file path (write "
                f"sqlite:///relative.db or sqlite:////absolute.db); allowed: {ALLOWED}"
            )
        if query:
            raise InvalidCoordinatorURLError(
                f"coordinator URL {redact(url)!r}: a SQLite coordinator URL takes no query options "
                f"(got {query!r})"
            )
        return scheme
    if scheme in ("postgresql", "postgres", *_REDIS):
        if not rest:
            raise InvalidCoordinatorURLError(
                f"coordinator URL {redact(url)!r} names no server; allowed: {ALLOWED}"
            )
        if scheme in _REDIS:
            _check_redis(url, scheme)
        else:
            _check_postgres(url)
        return scheme
    raise InvalidCoordinatorURLError(
        f"coordinator URL {redact(url)!r} has unknown scheme {scheme!r}; allowed: {ALLOWED}"
    )


def _check_postgres(url: str) -> None:
    _, mine, unknown = split_options(url, PG_OPTIONS, ("schema", "connect_timeout"))
    if unknown:
        raise InvalidCoordinatorURLError(
            "coordinator URL " + unknown_message(url, unknown, PG_OPTIONS)
        )
    if "connect_timeout" in mine:
        try:
            check_connect_timeout(mine["connect_timeout"])
        except ValueError as exc:
            raise InvalidCoordinatorURLError(f"coordinator URL {redact(url)!r}: {exc}") from None


def _check_redis(url: str, scheme: str) -> None:
    _, mine, unknown = split_options(url, REDIS_OPTIONS, ("db",))
    if unknown:
        raise InvalidCoordinatorURLError(
            "coordinator URL " + unknown_message(url, unknown, REDIS_OPTIONS)
        )
    # redis-py passes ssl_* options to a plain connection, which fails on the first command
    # with a TypeError traceback: they belong to rediss:// (TLS) only; say it now.
    names = {name for name, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)}
    tls_only = sorted(name for name in names if name.startswith("ssl_"))
    if tls_only and scheme != "rediss":
        raise InvalidCoordinatorURLError(
            f"coordinator URL {redact(url)!r}: TLS option {', '.join(tls_only)} given, and "
            f"{scheme}:// does not use TLS; write rediss://HOST:PORT/DB for a TLS connection, "
            "or drop the option"
        )
    # redis-py would fail on the first command (`/abc`) or take a part of it; say it now.
    path = urlsplit(url).path.strip("/") if scheme != "unix" else ""
    for db in (path, mine.get("db", "")):
        if db and not (db.isascii() and db.isdigit()):
            raise InvalidCoordinatorURLError(
                f"coordinator URL {redact(url)!r}: the Redis database must be a number "
                f"(redis://host:port/0, or ?db=0), got {db!r}"
            )


def open_coordinator(url: str, *, clock: Clock | None = None) -> Coordinator:
    """Make the coordinator a URL names; it is not opened yet (``await c.open()``).

    Args:
        url: a coordinator URL (see :data:`ALLOWED`).
        clock: for ``memory://`` and ``sqlite://``, the clock judging leases and lateness
            (PostgreSQL and Redis use the server's clock).

    Raises:
        InvalidCoordinatorURLError: a bad URL.
        ImportError: the driver of that scheme is not installed (the message names the
            extra to install).
    """
    scheme = check_coordinator_url(url)
    rest = url.partition("://")[2]
    if scheme == "memory":
        from ._memory import MemoryCoordinator

        return MemoryCoordinator(rest, clock=clock)
    if scheme == "sqlite":
        from ._sqlite import SQLiteCoordinator

        return SQLiteCoordinator(rest.partition("?")[0][1:], clock=clock)
    if scheme in _REDIS:
        from ._redis import RedisCoordinator

        return RedisCoordinator(url)
    from ._postgres import PostgresCoordinator

    return PostgresCoordinator(url)
