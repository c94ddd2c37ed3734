# SPDX-License-Identifier: Apache-2.0
"""Store URLs: what each scheme makes, and refusals that say what is allowed."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tocsin.errors import InvalidStoreURLError
from tocsin.stores import MemoryStore, open_store, resolve_store
from tocsin.stores.sqlite import SQLiteStore


def test_memory_url_makes_a_memory_store() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)


@pytest.mark.parametrize(
    ("url", "path", "sync"),
    [
        ("sqlite:///tasks.db", "tasks.db", "NORMAL"),
        ("sqlite:///data/tasks.db", "data/tasks.db", "NORMAL"),
        ("sqlite:////var/lib/app/tasks.db", "/var/lib/app/tasks.db", "NORMAL"),
        ("sqlite://:memory:", ":memory:", "NORMAL"),
        ("sqlite:///:memory:", ":memory:", "NORMAL"),
        ("sqlite:///tasks.db?synchronous=FULL", "tasks.db", "FULL"),
        ("SQLite:///t.db?synchronous=full", "t.db", "FULL"),
    ],
)
def test_sqlite_urls_follow_sqlalchemy_slashes(url: str, path: str, sync: str) -> None:
    store = open_store(url)
    assert isinstance(store, SQLiteStore)
    assert (store.path, store.synchronous) == (path, sync)


@pytest.mark.parametrize("url", ["postgresql://u:secret@db:5432/app", "postgres://u@db/app"])
def test_postgres_urls_make_a_postgres_store_without_leaking_the_password(url: str) -> None:
    from tocsin.stores.postgres import PostgresStore

    store = open_store(url)
    assert isinstance(store, PostgresStore)
    assert "secret" not in store.url
    assert "secret" not in repr(store)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("redis://localhost", "unknown scheme 'redis'"),
        ("tasks.db", "no scheme"),
        ("sqlite://", "no file path"),
        ("sqlite:///", "no file path"),
        ("sqlite://host/tasks.db", "no file path"),
        ("sqlite:///t.db?synchronous=OFF", "synchronous=NORMAL|FULL"),
        ("sqlite:///t.db?mode=ro", "synchronous=NORMAL|FULL"),
        ("memory://x", "memory://"),
        ("postgresql://", "names no server"),
        ("", "no scheme"),
    ],
)
def test_bad_urls_say_what_was_given_and_what_is_allowed(url: str, said: str) -> None:
    with pytest.raises(InvalidStoreURLError, match=said) as info:
        open_store(url)
    assert repr(url) in str(info.value) or url == ""
    assert isinstance(info.value, ValueError)


def test_resolve_store_passes_stores_and_none_through() -> None:
    store = MemoryStore()
    assert resolve_store(store) is store
    assert resolve_store(None) is None
    assert isinstance(resolve_store("memory://"), MemoryStore)
    with pytest.raises(TypeError, match="store URL, a Store or None"):
        resolve_store(42)  # type: ignore[arg-type]


def test_importing_tocsin_stores_does_not_import_asyncpg() -> None:
    code = "import sys, tocsin.stores; print('asyncpg' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False"


def test_resolve_store_names_what_an_incomplete_store_lacks() -> None:
    class OldStore:
        url = "old://"

        async def open(self) -> None: ...

        async def apply(self, ops: object) -> None: ...

    with pytest.raises(TypeError, match=r"OldStore lacks .*watch.*check_changes.*announce"):
        resolve_store(OldStore())  # type: ignore[arg-type]
