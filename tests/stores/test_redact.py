# SPDX-License-Identifier: Apache-2.0
"""Secrets never shown: every password a store or coordinator URL can carry is masked in
what tocsin prints, raises and serves (docs/security.md, "Secrets never shown")."""

from __future__ import annotations

import pytest

from tocsin import Cluster
from tocsin.console._data import redact_url
from tocsin.errors import InvalidCoordinatorURLError, InvalidStoreURLError
from tocsin.stores import open_store
from tocsin.stores._spi import has_secret, redact

SECRET = "hunter2-s3cr3t"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://app:{SECRET}@db:5432/shop", "postgresql://app:***@db:5432/shop"),
        (f"postgresql://db/shop?password={SECRET}", "postgresql://db/shop?password=***"),
        (
            f"postgresql://db/shop?sslmode=require&sslpassword={SECRET}&schema=s",
            "postgresql://db/shop?sslmode=require&sslpassword=***&schema=s",
        ),
        (f"redis://:{SECRET}@cache:6379/0", "redis://:***@cache:6379/0"),
        (f"rediss://cache/0?ssl_password={SECRET}", "rediss://cache/0?ssl_password=***"),
        (f"postgressql://app:{SECRET}@db/shop", "postgressql://app:***@db/shop"),  # a typo
        (f"postgresql:/app:{SECRET}@db/shop", "postgresql:/app:***@db/shop"),  # one slash
        (f"redis:app:{SECRET}@cache", "redis:app:***@cache"),
        (f"postgresql://app:{SECRET}@[::1/shop", "postgresql://app:***@[::1/shop"),
        (f"postgresql://app:pa@{SECRET}@db/shop", "postgresql://app:***@db/shop"),
        (f"postgresql://db/shop?PassWord={SECRET}", "postgresql://db/shop?PassWord=***"),
        (f"postgresql://db/shop?x=1?password={SECRET}", "postgresql://db/shop?x=1?password=***"),
        (f"postgresql://db/shop#password={SECRET}", "postgresql://db/shop#password=***"),
        ("sqlite:///tasks.db", "sqlite:///tasks.db"),
        (
            "sqlite:////var/lib/app/t.db?synchronous=FULL",
            "sqlite:////var/lib/app/t.db?synchronous=FULL",
        ),
        ("postgresql://app@db/shop", "postgresql://app@db/shop"),
    ],
)
def test_redact_masks_every_password_and_keeps_the_rest(url: str, shown: str) -> None:
    assert redact(url) == shown
    assert redact_url(url) == shown  # what the console page and snapshot.json show
    assert has_secret(url) == (SECRET in url)


def test_redact_of_something_that_is_not_a_str_names_its_type_only() -> None:
    assert redact(b"postgresql://u:pw@h/db") == "<bytes>"


@pytest.mark.parametrize(
    "url",
    [
        f"postgressql://app:{SECRET}@db/shop",  # a mistyped scheme
        f"postgresql://app:{SECRET}@db/shop?shema=x",  # a mistyped option
        f"postgresql://db/shop?password={SECRET}&shema=x",
        f"postgresql://db/shop?password={SECRET}&connect_timeout=never",
        f"sqlite://app:{SECRET}@host/t.db",
        f"memory://app:{SECRET}@x",
        f"app:{SECRET}@db/shop",
    ],
)
def test_store_url_errors_never_show_the_password(url: str) -> None:
    with pytest.raises(InvalidStoreURLError) as info:
        open_store(url)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        f"redis://:{SECRET}@cache/abc",
        f"redis://cache/0?password={SECRET}&prefx=a",
        f"postgresql://db/shop?password={SECRET}&connect_timeout=-1",
        f"postgressql://app:{SECRET}@db/shop",
        f"redis://cache/0?ssl_password={SECRET}",
    ],
)
def test_coordinator_url_errors_never_show_the_password(url: str) -> None:
    with pytest.raises(InvalidCoordinatorURLError) as info:
        Cluster(url)
    assert SECRET not in str(info.value)


@pytest.mark.parametrize("option", ["ssl_password", "ssl_certfile", "ssl_cert_reqs"])
def test_a_tls_option_on_a_plain_redis_url_is_a_typed_error_naming_rediss(option: str) -> None:
    # redis-py passed it to a plain connection: a TypeError traceback at the first command.
    with pytest.raises(InvalidCoordinatorURLError, match=r"rediss://") as info:
        Cluster(f"redis://cache:6379/0?{option}={SECRET}")
    assert (SECRET in str(info.value)) == ("password" not in option)


def test_a_tls_option_on_a_rediss_url_is_accepted() -> None:
    Cluster(f"rediss://cache:6379/0?ssl_password={SECRET}")


def test_coordinators_and_stores_show_urls_without_their_passwords() -> None:
    pytest.importorskip("redis")
    pytest.importorskip("asyncpg")
    from tocsin.cluster._redis import RedisCoordinator
    from tocsin.stores.postgres import PostgresStore

    shown: list[RedisCoordinator | PostgresStore] = [
        RedisCoordinator(f"rediss://:{SECRET}@cache/0?ssl_password={SECRET}"),
        PostgresStore(f"postgresql://app:{SECRET}@db/shop?sslpassword={SECRET}"),
        PostgresStore(f"postgresql://db/shop?password={SECRET}"),
    ]
    for thing in shown:
        assert SECRET not in thing.url
        assert SECRET not in repr(thing)
