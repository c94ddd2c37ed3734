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


@pytest.fixture
def anyio_backend() -> Iterator[str]:  # pragma: no cover - for users of anyio-style tests
    yield "asyncio"
