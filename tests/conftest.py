# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures. Async tests are plain ``async def`` functions, run on a fresh loop.

A tiny hook replaces pytest-asyncio: every coroutine test runs in ``asyncio.run`` with a
per-test deadline of real time, so a hung test fails instead of hanging CI.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

#: Real seconds any single async test may take before it is failed (a hang, not a speed test).
ASYNC_TEST_LIMIT = 120.0


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    func = pyfuncitem.obj
    if not inspect.iscoroutinefunction(func):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}

    async def run() -> Any:
        return await asyncio.wait_for(func(**kwargs), ASYNC_TEST_LIMIT)

    asyncio.run(run())
    return True


# --- PostgreSQL: one throwaway server per session (tests/integration/pg.py) --------------


@pytest.fixture(scope="session")
def postgres_dsn() -> Iterator[str]:
    """DSN of a fresh PostgreSQL server started for this session (stopped at the end).

    Skips when no PostgreSQL binaries exist, unless ``TOCSIN_REQUIRE_POSTGRES=1`` or ``CI``
    is set: then it fails, so CI never passes by skipping the PostgreSQL suite.
    """
    import os

    from tests.integration.pg import PostgresUnavailable, temporary_server

    required = os.environ.get("TOCSIN_REQUIRE_POSTGRES") == "1" or bool(os.environ.get("CI"))
    try:
        server = temporary_server()
        dsn = server.__enter__().dsn
    except PostgresUnavailable as exc:
        if required:
            pytest.fail(f"PostgreSQL is required here (TOCSIN_REQUIRE_POSTGRES/CI): {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")
    try:
        yield dsn
    finally:
        server.__exit__(None, None, None)
