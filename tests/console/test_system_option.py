# SPDX-License-Identifier: Apache-2.0
"""``ActorSystem(console=..., console_token=...)``, end to end over real HTTP: the console
starts last with the system, stops first, and a console that cannot start fails the
whole start and leaves nothing running (the kernel's failed-start rule)."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import aiohttp
import pytest
from tests.console.console_support import FAILING, RAN, Sink, populate
from tests.eventually import eventually

from tocsin import ActorSystem
from tocsin.stores import MemoryStore

TOKEN = "s3cret-token-for-tests-only"


@pytest.fixture(autouse=True)
def _reset() -> None:
    FAILING.clear()
    RAN.clear()


async def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """GET ``url`` as a browser would (it keeps cookies of IP-address hosts)."""
    async with (
        aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http,
        http.get(url, headers=headers) as response,
    ):
        return response.status, await response.text()


def split(console_url: str) -> tuple[str, dict[str, str]]:
    """``system.console_url`` as the page's address and the bearer header of its token."""
    base, _, token = console_url.partition("?token=")
    assert token, f"{console_url!r} carries no token"
    return base, {"Authorization": f"Bearer {token}"}


def refused(url: str) -> bool:
    """Whether nothing listens at ``url``'s port any more."""
    port = int(url.rstrip("/").rsplit(":", 1)[1])
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


async def test_a_system_started_with_console_serves_its_page_and_metrics(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="tocsin.console")
    system = ActorSystem("shop", store=MemoryStore(), console="127.0.0.1:0")
    assert system.console_url is None
    async with system:
        await populate(system)
        url = system.console_url
        assert url is not None
        assert url.startswith("http://127.0.0.1:")
        base, bearer = split(url)  # a token was made for this start: the URL carries it
        assert f"serving {url}" in caplog.text  # and the console logged it
        status, html = await fetch(base)
        assert status == 401  # any other local user: the sign-in page
        assert "standup" not in html
        status, html = await fetch(url)  # the URL to open: signed in, then the page
        assert status == 200
        assert "standup" in html  # the schedule made by populate()
        assert "/user/sink" in html
        status, text = await fetch(base + "metrics", headers=bearer)
        assert status == 200
        assert "tocsin_schedule_ticks_delivered_total" in text
    assert system.console_url is None
    assert refused(base)  # stop() closed the console
    await system.start()  # a new start, a new token
    try:
        again = system.console_url
        assert again is not None
        assert split(again)[1] != bearer
    finally:
        await system.stop()


async def test_a_console_token_given_is_asked_for() -> None:
    async with ActorSystem(console="0.0.0.0:0", console_token=TOKEN) as system:
        url = system.console_url
        assert url is not None
        assert url.endswith(f"?token={TOKEN}")
        port = url.split("?", 1)[0].rstrip("/").rsplit(":", 1)[1]
        local = f"http://127.0.0.1:{port}/"
        status, _ = await fetch(local)
        assert status == 401
        status, _ = await fetch(local, headers={"Authorization": f"Bearer {TOKEN}"})
        assert status == 200
        status, _ = await fetch(f"{local}?token={TOKEN}")
        assert status == 200


async def test_the_url_carries_a_token_given_with_url_special_characters_intact() -> None:
    token = "a&b=c#d e/f?g%h+i-long-enough"
    async with ActorSystem(console="127.0.0.1:0", console_token=token) as system:
        url = system.console_url
        assert url is not None
        assert "a%26b%3Dc%23d%20e%2Ff%3Fg%25h%2Bi" in url
        status, html = await fetch(url)
        assert status == 200
        assert "tocsin console: sign in" not in html


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"console": "nonsense"}, "must be 'host:port'"),
        ({"console": "127.0.0.1:70000"}, "must be 'host:port'"),
        ({"console": "127.0.0.1:0", "console_token": "short"}, "at least 16 characters"),
        ({"console_token": TOKEN}, "without `console`"),
    ],
)
def test_bad_console_options_fail_at_construction(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ActorSystem(**options)  # type: ignore[arg-type]


async def test_a_console_that_cannot_bind_fails_the_start_and_leaves_nothing_running(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        store = f"sqlite:///{tmp_path / 'tasks.db'}"
        system = ActorSystem(store=store, console=f"127.0.0.1:{port}")
        with pytest.raises(OSError):
            await system.start()
        assert not system.running
        assert system.console_url is None
        # The store was closed again: another system can take ownership of it.
        async with ActorSystem(store=store) as other:
            await other.spawn(Sink, "probe")
    # Retried once the port is free, the same system starts, serves and stops.
    await system.start()
    try:
        assert system.console_url is not None
        assert system.console_url.startswith(f"http://127.0.0.1:{port}/?token=")
        status, _ = await fetch(system.console_url)
        assert status == 200
    finally:
        await system.stop()
    assert refused(f"http://127.0.0.1:{port}/")


async def test_a_clustered_system_shows_its_members_on_the_page_and_in_metrics() -> None:
    from tocsin import Cluster

    coordinator = "memory://ops-console-members"
    async with (
        ActorSystem("node-a", cluster=Cluster(coordinator=coordinator), console="127.0.0.1:0") as a,
        ActorSystem("node-b", cluster=Cluster(coordinator=coordinator)),
    ):
        url = a.console_url
        assert url is not None
        await eventually(  # a member list is at most lease/3 old
            lambda: {member.name for member in a.cluster.members()} == {"node-a", "node-b"},
            "node-a sees both members",
        )
        _, html = await fetch(url)
        assert "node-a" in html
        assert "node-b" in html
        base, bearer = split(url)
        _, text = await fetch(base + "metrics", headers=bearer)
        assert "tocsin_cluster_members 2.0" in text
        assert "tocsin_cluster_leases_renewed_total" in text
