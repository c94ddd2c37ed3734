# SPDX-License-Identifier: Apache-2.0
"""Bounded strangers and scoped sessions: the console's connection gate, request
deadlines, cookie scope, per-session CSRF, wrong-token limits and TLS (docs/security.md).

Each attack of the security review is a test here; deadlines run on a ManualClock swapped
into the server's gate, so nothing sleeps.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.certs import make_certs
from tests.console.console_support import populate
from yarl import URL

from tocsin import ActorSystem, ManualClock
from tocsin.console import Console, serve
from tocsin.console._guard import (
    BODY_TIMEOUT,
    HEADER_TIMEOUT,
    LOG_EVERY,
    MAX_PENDING,
    MAX_WRONG_TOKENS,
)
from tocsin.metrics import Metrics, prometheus_endpoint
from tocsin.stores import MemoryStore

TOKEN = "a-console-token-of-32-characters"
WAIT = 30.0


@asynccontextmanager
async def console(**options: Any) -> AsyncIterator[tuple[Console, ManualClock]]:
    """A console with /metrics whose gate runs on a ManualClock (returned)."""
    system_clock = ManualClock()
    async with ActorSystem(clock=system_clock, store=MemoryStore()) as system:
        await populate(system)
        await system_clock.advance(0)  # the tasks run, fail and park
        metrics = prometheus_endpoint(Metrics.of(system))
        options.setdefault("token", TOKEN)
        server = await serve(system, "127.0.0.1:0", metrics=metrics, interval=0.05, **options)
        gate = ManualClock()
        server.guard.clock = gate
        async with server:
            yield server, gate


def bearer(server: Console) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


async def connect(server: Console) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(server.host, server.port)


async def closed_by_server(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the connection (EOF or reset), bounded."""
    try:
        return await asyncio.wait_for(reader.read(), WAIT) == b""
    except ConnectionResetError:
        return True


async def metrics_status(server: Console) -> int:
    async with (
        aiohttp.ClientSession() as http,
        http.get(server.url + "metrics", headers=bearer(server)) as r,
    ):
        await r.read()
        return r.status


async def test_metrics_answer_with_300_idle_strangers_connected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with console() as (server, _):
        strangers = [await connect(server) for _ in range(300)]
        try:
            assert await metrics_status(server) == 200
            assert await metrics_status(server) == 200
            async with (
                aiohttp.ClientSession() as http,
                http.get(server.url + "metrics", headers=bearer(server)) as r,
            ):
                text = await r.text()
            families = {f.name: f for f in text_string_to_metric_families(text)}
            refused = families["tocsin_console_connections_refused"].samples
            evicted = [s.value for s in refused if s.labels == {"reason": "evicted"}]
            assert evicted[0] >= 300 - MAX_PENDING
            stats = server.guard.stats()
            assert stats.open <= server.guard.max_connections
            assert stats.evicted >= 300 - MAX_PENDING  # pushed out, never queued
        finally:
            for _, writer in strangers:
                writer.close()
    # One line for the one peer (127.0.0.1) in that minute, and no traceback anywhere.
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING and "127.0.0.1" in r.message]
    assert len(lines) == 1, [r.message for r in lines]
    served = ("tocsin.console", "asyncio", "aiohttp")  # the parked tasks' tracebacks aside
    assert not [r for r in caplog.records if r.exc_info and r.name.startswith(served)]


async def test_requests_in_progress_beyond_the_cap_are_refused_not_queued() -> None:
    async with console(max_connections=2) as (server, _):
        busy = []
        for _ in range(2):  # two requests whose bodies are still coming
            reader, writer = await connect(server)
            writer.write(b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\nab")
            busy.append((reader, writer))
        await asyncio.sleep(0)  # let the heads be read
        for _ in range(20):
            if not server.guard.stats().open < 2 and not server.guard._pending:
                break
            await asyncio.sleep(0.01)
        reader, writer = await connect(server)
        assert await closed_by_server(reader)
        writer.close()
        assert server.guard.stats().refused == 1
        for _, w in busy:
            w.close()


async def test_a_request_head_slower_than_the_deadline_is_closed_and_counted() -> None:
    async with console() as (server, clock):
        reader, writer = await connect(server)
        writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # no blank line: never ends
        await writer.drain()
        await clock.advance(HEADER_TIMEOUT - 1)
        assert server.guard.stats().header_timeouts == 0
        await clock.advance(2)
        assert await closed_by_server(reader)
        writer.close()
        assert server.guard.stats().header_timeouts == 1
        assert await metrics_status(server) == 200  # others are served meanwhile


async def test_a_request_body_slower_than_the_deadline_is_closed_and_counted() -> None:
    async with console() as (server, clock):
        reader, writer = await connect(server)
        writer.write(
            b"POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
            b"Content-Type: application/x-www-form-urlencoded\r\n\r\ntoken="
        )
        await writer.drain()
        for _ in range(50):  # the head is read on the loop; wait for the body deadline
            if server.guard.stats().open == 1 and not server.guard._pending:
                break
            await asyncio.sleep(0.01)
        await clock.advance(HEADER_TIMEOUT + 1)  # past the head's deadline: not the rule now
        assert server.guard.stats().header_timeouts == 0
        await clock.advance(BODY_TIMEOUT)
        assert await closed_by_server(reader)
        writer.close()
        assert server.guard.stats().body_timeouts == 1


async def test_a_complete_request_is_not_cut_by_the_deadlines() -> None:
    async with console() as (server, clock):
        reader, writer = await connect(server)
        writer.write(
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + TOKEN.encode()
            + b"\r\nConnection: close\r\n\r\n"
        )
        answer = await asyncio.wait_for(reader.read(), WAIT)
        assert answer.startswith(b"HTTP/1.1 200")
        await clock.advance(HEADER_TIMEOUT + BODY_TIMEOUT)
        stats = server.guard.stats()
        assert (stats.header_timeouts, stats.body_timeouts) == (0, 0)
        writer.close()


async def test_wrong_tokens_are_logged_once_a_minute_and_limited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "tocsin.console")
    async with console() as (server, clock), aiohttp.ClientSession() as http:
        wrong = {"Authorization": "Bearer not-the-token-at-all"}
        for _ in range(MAX_WRONG_TOKENS):
            async with http.get(server.url + "metrics", headers=wrong) as r:
                assert r.status == 401
        async with http.get(server.url + "metrics", headers=bearer(server)) as r:
            assert r.status == 429  # even the right one, for the rest of the minute
        async with http.post(server.url + "login", data={"token": TOKEN}) as r:
            assert r.status == 429
        assert server.guard.stats().wrong_tokens == MAX_WRONG_TOKENS
        lines = [r.message for r in caplog.records if "wrong console token" in r.message]
        assert lines == ["console: wrong console token from 127.0.0.1"]
        await clock.advance(LOG_EVERY)
        assert await metrics_status(server) == 200


async def sign_in(http: aiohttp.ClientSession, server: Console) -> str:
    async with http.get(server.login_url) as r:
        assert r.status == 200
    cookie = http.cookie_jar.filter_cookies(URL(server.url))[f"tocsin_console_{server.port}"]
    return cookie.value


def jar() -> aiohttp.CookieJar:
    return aiohttp.CookieJar(unsafe=True)  # a browser keeps cookies of IP hosts


async def test_a_session_cookie_is_named_for_its_port_and_refused_by_another_console() -> None:
    async with console() as (one, _), console() as (two, _):
        async with aiohttp.ClientSession(cookie_jar=jar()) as http:
            value = await sign_in(http, one)
            async with http.get(one.url) as r:
                assert "Sign out" in await r.text()
        # The same token on both (as `tocsin run --console-token-file` gives every
        # worker), yet a session of one is no session of the other.
        cookies = {f"tocsin_console_{two.port}": value}
        async with aiohttp.ClientSession(cookies=cookies) as http, http.get(two.url) as r:
            assert r.status == 401
            assert "Console token" in await r.text()


def csrf_of(page: str) -> str:
    return page.split('name="csrf" value="', 1)[1].split('"', 1)[0]


async def test_the_csrf_token_belongs_to_the_session_and_dies_with_sign_out() -> None:
    async with console() as (server, _), aiohttp.ClientSession(cookie_jar=jar()) as http:
        await sign_in(http, server)
        async with http.get(server.url) as r:
            first = csrf_of(await r.text())
        async with http.post(server.url + "logout", data={"csrf": first}) as r:
            assert r.status == 200  # the sign-in page
        await sign_in(http, server)
        async with http.get(server.url) as r:
            second = csrf_of(await r.text())
        assert second != first
        form = {"kind": "ConsoleWorker", "identity": "order-1", "id": "t-ship"}
        async with http.post(server.url + "tasks/discard", data={**form, "csrf": first}) as r:
            assert r.status == 403  # the old session's token is dead
        assert server.guard.stats().wrong_csrf == 1
        async with http.post(server.url + "tasks/discard", data={**form, "csrf": second}) as r:
            assert r.status == 200


@pytest.fixture(scope="module")
def tls_context(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, Path]:
    certs = make_certs(tmp_path_factory.mktemp("certs"))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certs["tls_cert"], certs["tls_key"])
    return context, certs["tls_ca"]


async def test_under_tls_the_cookie_is_secure_and_failed_handshakes_are_counted(
    tls_context: tuple[ssl.SSLContext, Path],
) -> None:
    context, ca = tls_context
    client = ssl.create_default_context(cafile=str(ca))
    client.check_hostname = False  # the test certificate names "node", not 127.0.0.1
    async with console(ssl=context) as (server, _):
        assert server.url.startswith("https://")
        async with (
            aiohttp.ClientSession(cookie_jar=jar()) as http,
            http.get(server.login_url, ssl=client, allow_redirects=False) as r,
        ):
            assert r.status == 303
            assert "Secure" in r.headers["Set-Cookie"]
        # A client speaking plain HTTP to the TLS port: the handshake fails.
        reader, writer = await connect(server)
        writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await closed_by_server(reader)
        writer.close()
        for _ in range(100):
            gc.collect()
            if server.guard.stats().tls_failures:
                break
            await asyncio.sleep(0.01)
        assert server.guard.stats().tls_failures == 1
        assert server.guard.stats().open <= 1


async def test_a_store_url_password_is_masked_on_the_page_and_in_snapshot_json() -> None:
    from tocsin.console import serve_store

    secret = "hunter2-s3cr3t"
    store = MemoryStore()
    store.url = f"postgresql://app:{secret}@db/shop?sslpassword={secret}"  # as a store shows it
    await store.open()
    try:
        server = await serve_store(store, "127.0.0.1:0", token=TOKEN)
        async with server, aiohttp.ClientSession(headers=bearer(server)) as http:
            for path in ("", "snapshot.json"):
                async with http.get(server.url + path) as r:
                    text = await r.text()
                assert "postgresql://app:***@db/shop?sslpassword=***" in text
                assert secret not in text
    finally:
        await store.close()
