# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures.

Plain ``async def`` tests are run by tocsin's own pytest plugin (``tocsin.testing._plugin``,
installed with the package through its ``pytest11`` entry point), each on a fresh loop,
with the hang guard ``tocsin_async_timeout`` set in pyproject.toml.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

#: pytester runs user test files through the plugin in a subprocess (tests/testing/).
pytest_plugins = ["pytester"]

# Hypothesis times each example (200 ms deadline) and its data generation (the too_slow
# health check) in real time: speed assertions that a busy 2-core machine breaks at random
# (a descheduled example fails as DeadlineExceeded or "Flaky"). Tests assert outcomes, not
# speed (STYLE.md), so every property test runs without them (a hang is still caught: by
# tocsin_async_timeout in async tests, by the CI job's limit otherwise).
settings.register_profile("tocsin", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("tocsin")


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` deselected theirs: split what is left
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``TOCSIN_SHARD=k/n``: keep the files of shard k of n (tests/shards.py; ``make test``
    and ``make check`` run the shards side by side), deselecting the others'."""
    spec = os.environ.get("TOCSIN_SHARD")
    if not spec:
        return
    from tests.shards import files_of, parse, split

    shard = parse(spec)
    paths = [item.nodeid.split("::", 1)[0] for item in items]
    keep = split(files_of(paths), shard.count)[shard.index - 1]
    kept = [item for item, path in zip(items, paths, strict=True) if path in keep]
    dropped = [item for item, path in zip(items, paths, strict=True) if path not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = kept


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


# --- Redis: one throwaway server per session (tests/integration/redis_server.py) ---------


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a fresh ``redis-server`` started for this session (stopped at the end).

    Skips when ``redis-server`` is missing, unless ``TOCSIN_REQUIRE_REDIS=1`` or ``CI`` is
    set: then it fails, so CI never passes by skipping the Redis suite.
    """
    import os

    from tests.integration.redis_server import RedisUnavailable, temporary_server

    required = os.environ.get("TOCSIN_REQUIRE_REDIS") == "1" or bool(os.environ.get("CI"))
    try:
        server = temporary_server()
        url = server.__enter__()
    except RedisUnavailable as exc:
        if required:
            pytest.fail(f"Redis is required here (TOCSIN_REQUIRE_REDIS/CI): {exc}")
        pytest.skip(f"Redis unavailable: {exc}")
    try:
        yield url
    finally:
        server.__exit__(None, None, None)
