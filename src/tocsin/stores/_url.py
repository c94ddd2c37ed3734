# SPDX-License-Identifier: Apache-2.0
"""Store URLs: ``memory://``, ``sqlite:///…``, ``postgresql://…``.

SQLite paths follow SQLAlchemy: after ``sqlite://`` comes ``/`` then the path, so
``sqlite:///tasks.db`` is ``tasks.db`` relative to the working directory and
``sqlite:////var/lib/app/tasks.db`` (four slashes) is absolute. ``sqlite://:memory:``
is a private in-memory database. ``?synchronous=FULL`` selects fsync-per-commit.
PostgreSQL URLs take ``?schema=NAME`` and ``?connect_timeout=SECONDS`` (read by tocsin)
and libpq's parameters (``stores/_dsn.py``); any other query option is refused.
"""

from __future__ import annotations

from typing import Final, cast
from urllib.parse import parse_qsl

from ..errors import InvalidStoreURLError
from ._dsn import redact
from ._protocols import Store
from .memory import MemoryStore

__all__ = ["open_store", "resolve_store"]

ALLOWED: Final = (
    "memory://, sqlite:///relative/path.db, sqlite:////absolute/path.db, "
    "sqlite://:memory:, postgresql://user@host/db (or postgres://)"
)


def open_store(url: str) -> Store:
    """Make the store a URL names; it is not opened yet (``await store.open()``).

    Args:
        url: a store URL (see the module docstring).

    Returns:
        A :class:`MemoryStore`, :class:`~tocsin.stores.sqlite.SQLiteStore` or
        :class:`~tocsin.stores.postgres.PostgresStore` (the last imports asyncpg, only
        then).

    Raises:
        InvalidStoreURLError: unknown scheme or malformed body; the message shows what
            was given and what is allowed.
    """
    if not isinstance(url, str):
        raise InvalidStoreURLError(
            f"store URL must be a str, got {type(url)!r}; allowed: {ALLOWED}"
        )
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise InvalidStoreURLError(f"store URL {redact(url)!r} has no scheme; allowed: {ALLOWED}")
    scheme = scheme.lower()
    if scheme == "memory":
        if rest:
            raise InvalidStoreURLError(f"store URL {redact(url)!r}: use plain 'memory://'")
        return MemoryStore()
    if scheme == "sqlite":
        return _sqlite(url, rest)
    if scheme in ("postgresql", "postgres"):
        if not rest:
            raise InvalidStoreURLError(
                f"store URL {redact(url)!r} names no server; allowed: {ALLOWED}"
            )
        from .postgres import PostgresStore

        return PostgresStore(url)
    raise InvalidStoreURLError(
        f"store URL {redact(url)!r} has unknown scheme {scheme!r}; allowed: {ALLOWED}"
    )


def resolve_store(store: str | Store | None) -> Store | None:
    """Accept a URL, a store instance or ``None`` wherever a store is configured.

    A URL goes through :func:`open_store`; a store is returned as is; ``None`` stays
    ``None`` (the caller decides what "no store" means).

    Raises:
        InvalidStoreURLError: a bad URL.
        TypeError: anything else.
    """
    if store is None:
        return None
    if isinstance(store, str):
        return open_store(store)
    given = cast(object, store)  # anything may come in at runtime, whatever the hint
    if isinstance(given, Store):
        return given
    if hasattr(given, "apply"):
        # A store written against an older protocol: say what it lacks (watch,
        # check_changes and announce were added with the change feed, issue 15).
        missing = [name for name in _STORE_MEMBERS if not hasattr(given, name)]
        raise TypeError(
            f"`store` {type(given).__qualname__} lacks {', '.join(missing)} of the Store "
            "protocol (tocsin.stores.Store); see docs/durable.md"
        )
    raise TypeError(f"`store` must be a store URL, a Store or None, got {type(given)!r}")


_STORE_MEMBERS: Final = (
    *(name for name in vars(Store) if not name.startswith("_") and callable(getattr(Store, name))),
    "url",
)


def _sqlite(url: str, rest: str) -> Store:
    from .sqlite import SQLiteStore

    body, _, query = rest.partition("?")
    options = dict(parse_qsl(query, keep_blank_values=True))
    synchronous = options.pop("synchronous", "NORMAL").upper()
    if options or synchronous not in ("NORMAL", "FULL"):
        raise InvalidStoreURLError(
            f"store URL {redact(url)!r}: the only SQLite option is synchronous=NORMAL|FULL"
        )
    if body in (":memory:", "/:memory:"):
        path = ":memory:"
    elif body.startswith("/") and len(body) > 1:
        path = body[1:]
    else:
        raise InvalidStoreURLError(
            f"store URL {redact(url)!r} has no file path (write sqlite:///relative.db or "
            f"sqlite:////absolute.db); allowed: {ALLOWED}"
        )
    return SQLiteStore(path, synchronous="FULL" if synchronous == "FULL" else "NORMAL")
