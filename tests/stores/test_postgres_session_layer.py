# SPDX-License-Identifier: Apache-2.0
"""The PostgreSQL session layer shared by the store and the coordinator (issue 21): one
wording of a failed call, one way of opening a pool and failing to."""

from __future__ import annotations

import socket

import pytest

from tocsin.errors import CoordinatorError, StoreError
from tocsin.stores._postgres_session import driver_errors, error_wrapper, open_pool


async def test_a_driver_error_becomes_the_clients_error_naming_what_failed() -> None:
    errors = error_wrapper("PostgreSQL coordinator postgresql://db/x", CoordinatorError)
    with pytest.raises(CoordinatorError) as caught:
        async with errors("renew"):
            raise ConnectionResetError("reset by peer")
    assert str(caught.value) == (
        "PostgreSQL coordinator postgresql://db/x: renew failed: reset by peer"
    )
    assert isinstance(caught.value.__cause__, ConnectionResetError)
    with pytest.raises(KeyError):  # not a driver error: left alone
        async with errors("renew"):
            raise KeyError("k")
    assert OSError in driver_errors()
    assert TimeoutError in driver_errors()


async def test_a_refused_connection_fails_open_pool_with_the_clients_error() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StoreError, match=r"^PostgreSQL store x: open failed: "):
        await open_pool(
            f"postgresql://u@127.0.0.1:{port}/d",
            schema="public",
            connect_timeout=5.0,
            label="PostgreSQL store x",
            error=StoreError,
            min_size=1,
            max_size=1,
        )
