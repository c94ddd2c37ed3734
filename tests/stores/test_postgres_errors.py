# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL store lets no driver exception escape and bounds every call (issue 20,
items 6 and 8), shown on a pool that fails or never answers (no server needed)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

asyncpg = pytest.importorskip("asyncpg")

from tocsin.errors import StoreError  # noqa: E402
from tocsin.stores import postgres as postgres_module  # noqa: E402
from tocsin.stores.postgres import PostgresStore  # noqa: E402


class _Pool:
    """Stands for an asyncpg pool: every call raises ``error``, or never answers."""

    def __init__(self, error: BaseException | None) -> None:
        self.error = error

    async def fetch(self, *args: Any, **kwargs: Any) -> Any:
        if self.error is not None:
            raise self.error
        await asyncio.Event().wait()  # a frozen server

    execute = fetch


@pytest.mark.parametrize(
    "error",
    [
        asyncpg.InternalClientError("cannot perform operation: another operation in progress"),
        asyncpg.exceptions.ProtocolError("unexpected message"),
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
        ConnectionResetError("reset by peer"),
    ],
)
async def test_every_driver_error_becomes_a_store_error(error: BaseException) -> None:
    store = PostgresStore("postgresql://nobody@localhost/nothing")
    store._pool = _Pool(error)
    with pytest.raises(StoreError, match=r"PostgreSQL store .* failed") as caught:
        await store.next_due("K", "i")
    assert caught.value.__cause__ is error


async def test_a_call_that_never_answers_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(postgres_module, "CALL_TIMEOUT", 0.05)
    store = PostgresStore("postgresql://nobody@localhost/nothing", connect_timeout=0.05)
    store._pool = _Pool(None)
    with pytest.raises(StoreError, match=r"no answer within 0\.05 s"):
        await asyncio.wait_for(store.due_actors(0.0, 10), timeout=30)
