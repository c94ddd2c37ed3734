# SPDX-License-Identifier: Apache-2.0
"""Every console endpoint over real HTTP (aiohttp client against the real server)."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from tests.console.console_support import FAILING, HOSTILE, HOSTILE_NAME, RAN, populate
from yarl import URL

from tocsin import ActorSystem, ManualClock
from tocsin.console import SESSION_TTL, Console, serve, serve_store
from tocsin.console._app import sessions_of
from tocsin.console._render import SECTIONS
from tocsin.metrics import Metrics, prometheus_endpoint
from tocsin.stores import MemoryStore

T0 = 1_700_000_000.0
TOKEN = "s3cret-token-for-tests-only"


@pytest.fixture(autouse=True)
def _reset() -> None:
    FAILING.clear()
    RAN.clear()


@asynccontextmanager
async def console(**options: Any) -> AsyncIterator[tuple[ActorSystem, ManualClock, Console]]:
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock, store=MemoryStore()) as system:
        await populate(system)
        await clock.advance(0)  # both tasks run, fail, and park (max_retries=0)
        metrics = prometheus_endpoint(Metrics.of(system))
        server = await serve(system, "127.0.0.1:0", metrics=metrics, interval=0.05, **options)
        async with server:
            yield system, clock, server


def auth(server: Console) -> dict[str, str]:
    """The header a script (Prometheus, curl) passes: the console's token as a bearer."""
    return {"Authorization": f"Bearer {server.token}"}


async def get(server: Console, path: str = "", **kw: Any) -> tuple[int, str, Any]:
    """``GET path`` of ``server`` with its token (unless ``headers`` says otherwise)."""
    headers = kw.pop("headers", auth(server) if server.token is not None else {})
    async with (
        aiohttp.ClientSession() as http,
        http.get(server.url + path, headers=headers, **kw) as r,
    ):
        return r.status, await r.text(), r.headers


async def test_page_shows_schedules_with_cron_description_and_parked_tasks() -> None:
    async with console() as (_system, _clock, server):
        status, html, headers = await get(server)
        assert status == 200
        assert headers["Content-Type"].startswith("text/html")
        assert "standup" in html
        assert "Europe/Paris" in html
        assert "At 09:30, on Monday through Friday" in html
        assert "t-charge" in html
        assert "t-ship" in html
        assert 'aria-label="Retry task t-charge (charge) of ConsoleWorker/order-1"' in html
        assert "/user/sink" in html


async def test_each_schedule_shows_how_late_its_last_tick_fired() -> None:
    async with console() as (_system, clock, server):
        _, html, _ = await get(server)
        row = html.split("every-second", 1)[1].split("</tr>", 1)[0]
        assert 'data-label="Last tick late by">—<' in row  # not fired yet
        await clock.advance(1.0)  # on time
        _, html, _ = await get(server)
        row = html.split("every-second", 1)[1].split("</tr>", 1)[0]
        assert 'data-label="Last tick late by">0.0 ms<' in row
        await clock.jump(2.5)  # a stall: the tick due at +2 s fires at +3.5 s
        _, html, _ = await get(server)
        row = html.split("every-second", 1)[1].split("</tr>", 1)[0]
        assert 'data-label="Last tick late by">1500.0 ms<' in row
        standup = html.split("standup", 1)[1].split("</tr>", 1)[0]
        assert 'data-label="Last tick late by">—<' in standup


async def test_hostile_payload_text_is_escaped_everywhere() -> None:
    async with console() as (_system, _clock, server):
        _, html, headers = await get(server)
        assert HOSTILE not in html
        assert HOSTILE_NAME not in html
        assert "/user/sink&lt;img src=x onerror=alert(1)&gt;" in html
        assert "&lt;script&gt;alert(&#x27;pwned&#x27;)&lt;/script&gt;" in html
        assert "<script>" not in html.replace('<script src="static/console.js" defer>', "")
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert headers["X-Content-Type-Options"] == "nosniff"
        _, raw, _ = await get(server, "snapshot.json")
        assert HOSTILE in raw  # JSON carries the data as data (served as application/json)


async def test_events_stream_pushes_rendered_sections_to_every_subscriber() -> None:
    async with console() as (_system, _clock, server):

        async def first_update() -> dict[str, str]:
            async with (
                aiohttp.ClientSession(headers=auth(server)) as http,
                http.get(server.url + "events") as r,
            ):
                assert r.headers["Content-Type"] == "text/event-stream"
                event = None
                async for line in r.content:
                    text = line.decode().rstrip("\n")
                    if text.startswith("event: "):
                        event = text[7:]
                    elif text.startswith("data: ") and event == "update":
                        data: dict[str, str] = json.loads(text[6:])
                        return data
            raise AssertionError("stream ended")

        a, b = await asyncio.gather(first_update(), first_update())
        assert set(a) == set(SECTIONS)
        assert "standup" in b["schedules"]
        assert HOSTILE not in a["schedules"]


async def test_retry_button_makes_a_parked_task_run_again_now() -> None:
    async with console() as (_system, clock, server):
        _, html, _ = await get(server)
        csrf = html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        FAILING.discard("charge")
        form = {"csrf": csrf, "kind": "ConsoleWorker", "identity": "order-1", "id": "t-charge"}
        async with aiohttp.ClientSession(headers=auth(server)) as http:
            async with http.post(server.url + "tasks/retry", data=form, allow_redirects=False) as r:
                assert r.status == 303
                assert "done=retried" in r.headers["Location"]
            await clock.advance(0)  # the woken alarm fires: the task runs and succeeds
            assert RAN.count("charge") == 2
            async with http.get(server.url + "?done=retried&id=t-charge&actor=x") as r:
                page = await r.text()
        parked = page.split('id="parked"', 1)[1].split("</section>", 1)[0]
        assert "t-charge" not in parked
        assert "t-ship" in parked
        assert "Task t-charge of x is pending again" in page


async def test_discard_button_deletes_a_parked_task() -> None:
    async with console() as (_system, _clock, server):
        _, html, _ = await get(server)
        csrf = html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = {"csrf": csrf, "kind": "ConsoleWorker", "identity": "order-1", "id": "t-ship"}
        async with aiohttp.ClientSession(headers=auth(server)) as http:
            async with http.post(server.url + "tasks/discard", data=form) as r:
                assert r.status == 200  # followed the redirect to the page
                page = await r.text()
            assert "t-ship" not in page.split('id="parked"', 1)[1].split("</section>", 1)[0]
            again = dict(form)
            async with http.post(server.url + "tasks/discard", data=again) as r:
                assert r.status == 409  # not there any more: said so, nothing done
                assert "no task 't-ship'" in await r.text()


async def test_actions_refuse_a_missing_csrf_token_or_another_origin() -> None:
    async with console() as (_system, _clock, server):
        _, html, _ = await get(server)
        csrf = html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = {"kind": "ConsoleWorker", "identity": "order-1", "id": "t-ship"}
        async with aiohttp.ClientSession(headers=auth(server)) as http:
            async with http.post(server.url + "tasks/retry", data=form) as r:
                assert r.status == 403
            async with http.post(
                server.url + "tasks/retry",
                data={**form, "csrf": csrf},
                headers={"Origin": "http://evil.example"},
            ) as r:
                assert r.status == 403
            async with http.get(server.url + "tasks/retry") as r:
                assert r.status == 405  # actions are POST only


async def test_metrics_endpoint_serves_prometheus_text() -> None:
    async with console() as (_system, clock, server):
        await clock.advance(2.0)
        status, text, headers = await get(server, "metrics")
        assert status == 200
        assert headers["Content-Type"].startswith("text/plain")
        families = {f.name: f for f in text_string_to_metric_families(text)}
        runs = {s.labels["outcome"]: s.value for s in families["tocsin_durable_task_runs"].samples}
        assert runs["failed"] == 2
        assert families["tocsin_durable_task_parks"].samples[0].value == 2


async def test_static_files_and_unknown_routes() -> None:
    async with console() as (_system, _clock, server):
        status, js, headers = await get(server, "static/console.js")
        assert status == 200
        assert "EventSource" in js
        assert headers["Content-Type"].startswith("text/javascript")
        status, _, _ = await get(server, "static/../_app.py")
        assert status == 404
        status, _, _ = await get(server, "nothing-here")
        assert status == 404


async def test_a_console_without_a_token_is_loopback_only_and_refuses_foreign_hosts() -> None:
    async with console(no_token=True) as (_system, _clock, server):
        assert server.token is None
        assert server.login_url == server.url
        status, html, _ = await get(server)  # no credentials needed
        assert status == 200
        assert "Sign out" not in html  # nothing to sign out of
        status, _, _ = await get(server, "", headers={"Host": "evil.example:8765"})
        assert status == 421  # DNS rebinding: a foreign name pointing at 127.0.0.1
        async with (
            aiohttp.ClientSession() as http,
            http.get(f"http://localhost:{server.port}/") as r,
        ):
            assert r.status == 200


async def test_without_a_token_given_one_is_made_and_the_printed_url_carries_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="tocsin.console")
    async with console() as (_system, _clock, server):
        token = server.token
        assert token is not None
        assert len(token) >= 40  # secrets.token_urlsafe(32)
        assert server.login_url == f"{server.url}?token={token}"
        assert f"serving {server.login_url}" in caplog.text  # logged, as Jupyter prints it
        status, html, _ = await get(server, headers={})
        assert status == 401  # any local user of the host: the sign-in page, nothing else
        assert "Console token" in html
        assert "?token=" in html  # it says where the token is
        assert "standup" not in html
        for path in ("snapshot.json", "events", "metrics"):
            assert (await get(server, path, headers={}))[0] == 401
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.post(server.url + "tasks/retry", data={"id": "t-charge"}) as r:
                assert r.status == 401  # no action without the token either
            async with http.get(server.login_url) as r:
                assert r.status == 200
                assert "standup" in await r.text()
                assert "?token=" not in str(r.url)  # redirected off the URL holding it
                assert "Sign out" in await r.text()
    async with console() as (_system, _clock, other):
        assert other.token != token  # one per start


async def test_token_is_required_everywhere_but_static_and_login() -> None:
    async with console(token=TOKEN) as (_system, _clock, server):
        assert server.token == TOKEN
        status, html, _ = await get(server, headers={})
        assert status == 401
        assert "Console token" in html
        status, _, headers = await get(server, "metrics", headers={})
        assert status == 401
        assert headers["WWW-Authenticate"] == 'Bearer realm="tocsin console"'
        status, _, _ = await get(server, "static/console.css", headers={})
        assert status == 200
        status, _, _ = await get(server, "login", headers={})
        assert status == 200  # the sign-in form
        status, _, _ = await get(server, "metrics")  # Authorization: Bearer TOKEN
        assert status == 200
        status, _, _ = await get(server, "", headers={"Authorization": "Bearer wrong"})
        assert status == 401
        # The default jar refuses cookies of IP-address hosts; a browser does not.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.post(server.url + "login", data={"token": "wrong"}) as r:
                assert r.status == 401
                assert "Wrong token" in await r.text()
            async with http.post(server.url + "login", data={"token": TOKEN}) as r:
                assert r.status == 200  # redirected to the page, with the session cookie
                assert "standup" in await r.text()
            name = f"tocsin_console_{server.port}"
            cookie = http.cookie_jar.filter_cookies(URL(server.url))[name]
            assert TOKEN not in cookie.value
            async with http.get(server.url + "events") as r:
                assert r.status == 200
        jar = aiohttp.CookieJar(unsafe=True)
        async with (
            aiohttp.ClientSession(cookie_jar=jar) as http,
            http.get(server.url + f"?token={TOKEN}") as r,
        ):
            assert r.status == 200
            assert "standup" in await r.text()
            assert TOKEN not in str(r.url)  # redirected off the URL holding the token
        async with (
            aiohttp.ClientSession() as http,
            http.get(server.url + "?token=wrong", allow_redirects=False) as r,
        ):
            assert r.status == 401
            assert "Set-Cookie" not in r.headers


async def login(http: aiohttp.ClientSession, server: Console) -> str:
    """Sign ``http`` in through the printed URL; the session cookie's value."""
    async with http.get(server.login_url, allow_redirects=False) as r:
        assert r.status == 303
        assert r.headers["Location"] == "/"
        set_cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in set_cookie
    assert "SameSite=Strict" in set_cookie
    assert f"Max-Age={int(SESSION_TTL)}" in set_cookie  # 12 h
    name = f"tocsin_console_{server.port}"
    value: str = http.cookie_jar.filter_cookies(URL(server.url))[name].value
    return value


async def test_a_session_cookie_expires_after_its_ttl_on_the_server_too() -> None:
    async with console() as (_system, _clock, server):
        sessions = sessions_of(server.app)
        clock = sessions.clock = ManualClock(wall=T0)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            value = await login(http, server)
            assert server.token is not None
            assert server.token not in value
            await clock.advance(SESSION_TTL - 1)
            async with http.get(server.url) as r:
                assert r.status == 200
            await clock.advance(1)  # the browser may keep it; the server refuses it
            async with http.get(server.url) as r:
                assert r.status == 401
                assert "session expired or was signed out" in await r.text()
            # A forged expiry does not help: the MAC covers it.
            _, nonce, mac = value.split(".")
            forged = f"{int(T0 + 10 * SESSION_TTL)}.{nonce}.{mac}"
            async with http.get(server.url, cookies={f"tocsin_console_{server.port}": forged}) as r:
                assert r.status == 401


async def test_session_ttl_is_an_option_checked_at_the_call() -> None:
    async with console(session_ttl=120) as (_system, _clock, server):
        sessions_of(server.app).clock = clock = ManualClock(wall=T0)
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            async with http.get(server.login_url, allow_redirects=False) as r:
                assert "Max-Age=120" in r.headers["Set-Cookie"]
            await clock.advance(120)
            async with http.get(server.url) as r:
                assert r.status == 401
    async with ActorSystem(clock=ManualClock(wall=T0)) as system:
        with pytest.raises(ValueError, match=r"`session_ttl` must be between 60 seconds"):
            await serve(system, "127.0.0.1:0", session_ttl=5)


async def test_sign_out_clears_the_cookie_and_the_old_cookie_is_refused() -> None:
    async with console() as (_system, _clock, server):
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            value = await login(http, server)
            async with http.get(server.url) as r:
                page = await r.text()
            assert '<button type="submit" id="sign-out">Sign out</button>' in page
            csrf = page.split('action="logout"', 1)[1].split('value="', 1)[1].split('"', 1)[0]
            # Without the CSRF token (a page of another site posting the form): refused.
            async with http.post(server.url + "logout", data={}) as r:
                assert r.status == 403
            async with http.get(server.url + "events") as events:
                assert events.status == 200
                async with http.post(
                    server.url + "logout", data={"csrf": csrf}, allow_redirects=False
                ) as r:
                    assert r.status == 303
                    assert r.headers["Location"] == "login?signed_out=1"
                    assert "Max-Age=0" in r.headers["Set-Cookie"]
                name = f"tocsin_console_{server.port}"
                assert not http.cookie_jar.filter_cookies(URL(server.url)).get(name)
                # The open stream of that session ends at its next update.
                rest = await asyncio.wait_for(events.content.read(), 30)
                assert isinstance(rest, bytes)
            async with http.get(server.url + "login?signed_out=1") as r:
                assert r.status == 200
                assert "Signed out." in await r.text()
        # A copy of the cookie (taken before sign-out) no longer works either.
        async with (
            aiohttp.ClientSession() as http,
            http.get(server.url, cookies={f"tocsin_console_{server.port}": value}) as r,
        ):
            assert r.status == 401
        # Another session of the same token is not affected.
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            await login(http, server)
            async with http.get(server.url) as r:
                assert r.status == 200


async def test_bad_binds_and_tokens_are_refused_at_the_call() -> None:
    async with ActorSystem(clock=ManualClock(wall=T0)) as system:
        with pytest.raises(ValueError, match=r"without a token.*loopback binds only"):
            await serve(system, "0.0.0.0:0", no_token=True)
        with pytest.raises(ValueError, match=r"`no_token=True` and a `token`"):
            await serve(system, "127.0.0.1:0", TOKEN, no_token=True)
        with pytest.raises(ValueError, match=r"at least 16 characters.*got 5 characters"):
            await serve(system, "0.0.0.0:0", token="short")
        with pytest.raises(ValueError, match="`bind` must be 'host:port'"):
            await serve(system, "127.0.0.1")
        with pytest.raises(ValueError, match="`bind` must be"):
            await serve(system, "127.0.0.1:99999")
        with pytest.raises(ValueError, match="`interval`"):
            await serve(system, "127.0.0.1:0", interval=0)
        server = await serve(system, "0.0.0.0:0", token=TOKEN)  # any address, with a token
        await server.close()
        server = await serve(system, "0.0.0.0:0")  # or with the one made for it
        assert server.token is not None
        await server.close()


async def test_store_only_console_lists_tasks_and_acts_without_a_system() -> None:
    clock = ManualClock(wall=T0)
    store = MemoryStore()
    async with ActorSystem(clock=clock, store=store) as system:
        await populate(system)
        await clock.advance(0)
    await store.open()
    announced: list[None] = []
    await store.watch(lambda: announced.append(None))  # what a running system would hear
    async with await serve_store(store, "127.0.0.1:0") as server:
        _, html, _ = await get(server)
        assert "t-charge" in html
        assert "store memory://" in html
        assert "Schedules live in a running system" in html
        csrf = html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        form = {"csrf": csrf, "kind": "ConsoleWorker", "identity": "order-1", "id": "t-charge"}
        async with (
            aiohttp.ClientSession(headers=auth(server)) as http,
            http.post(server.url + "tasks/retry", data=form) as r,
        ):
            assert r.status == 200
        row = await store.get_task("ConsoleWorker", "order-1", "t-charge")
        assert row is not None
        assert row.state == "pending"
        assert row.attempts == 0
        assert len(announced) == 1  # as `tocsin tasks retry`: systems on the store run it now
    await store.close()


async def test_serve_console_adds_prometheus_metrics_in_one_call() -> None:
    from tocsin.metrics import serve_console

    async with ActorSystem(clock=ManualClock(wall=T0)) as system:
        await populate(system)
        async with await serve_console(system, "127.0.0.1:0") as server:
            status, text, _ = await get(server, "metrics")
            assert status == 200
            assert "tocsin_schedules" in text
            _, html, _ = await get(server)
            assert 'href="metrics"' in html


async def test_members_are_listed_and_escaped_when_given() -> None:
    from dataclasses import dataclass
    from datetime import UTC, datetime

    @dataclass(frozen=True)
    class Member:
        name: str
        address: str
        joined: datetime
        last_seen: datetime

    async def members() -> list[Member]:
        at = datetime.fromtimestamp(T0, tz=UTC)
        return [Member(f"n1{HOSTILE}", "tocsin://n1@10.0.0.5:7100", at, at)]

    async with console(members=members) as (_system, _clock, server):
        _, html, _ = await get(server)
        section = html.split('id="members"', 1)[1].split("</section>", 1)[0]
        assert "tocsin://n1@10.0.0.5:7100" in section
        assert "n1&lt;script&gt;" in section
        assert "2023-11-14T22:13:20Z" in section


async def test_a_member_list_that_cannot_be_read_is_said_and_the_page_still_shows() -> None:
    from tocsin.errors import CoordinatorError

    async def members() -> list[Any]:
        raise CoordinatorError(f"Redis coordinator unreachable {HOSTILE}")

    async with console(members=members) as (_system, _clock, server):
        status, html, _ = await get(server)
        assert status == 200
        section = html.split('id="members"', 1)[1].split("</section>", 1)[0]
        assert "Cannot read the members" in section
        assert "unreachable &lt;script&gt;" in section
        assert "t-charge" in html  # the other sections are read as usual
        _, body, _ = await get(server, "snapshot.json")
        assert json.loads(body)["members_error"].startswith("Redis coordinator unreachable")


async def test_dead_letters_per_second_are_shown_from_successive_refreshes() -> None:
    async with console() as (system, _clock, server):
        sink = await system.actor_of(f"sink{HOSTILE_NAME}")
        await system.stop_actor(sink)
        rate = None
        async with (
            aiohttp.ClientSession(headers=auth(server)) as http,
            http.get(server.url + "events") as r,
        ):
            buffer = b""
            async for chunk in r.content.iter_any():
                buffer += chunk
                events, _, buffer = buffer.rpartition(b"\n\n")
                for event in events.split(b"\n\n"):
                    if event.startswith(b"event: update"):
                        summary = json.loads(event.split(b"data: ", 1)[1]).get("summary", "")
                        if "— per second" not in summary and "per second" in summary:
                            rate = summary.split("total, ", 1)[1].split(" per second", 1)[0]
                if rate is not None:
                    break
                for _ in range(3):
                    sink.tell("lost")  # dead letters keep arriving between refreshes
        assert rate is not None
        assert float(rate) >= 0
        assert system.dead_letters >= 3


async def test_closing_the_server_ends_open_event_streams() -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem(clock=clock) as system:
        server = await serve(system, "127.0.0.1:0", interval=0.05)
        async with (
            aiohttp.ClientSession(headers=auth(server)) as http,
            http.get(server.url + "events") as r,
        ):
            await r.content.readuntil(b"event: update")
            closing = asyncio.create_task(server.close())
            rest = await asyncio.wait_for(r.content.read(), 30)  # EOF: the stream ended
            assert isinstance(rest, bytes)
            await asyncio.wait_for(closing, 30)


async def test_a_schedules_page_lists_its_history_and_its_pause_note() -> None:
    """Issue 23: ``/schedule?reference=...``: the ring newest first, escaped; the pause
    note, time and node on the page and in the schedules table; 404 for an unknown one."""
    async with console() as (system, clock, server):
        reference = f"every-second{HOSTILE}"
        await clock.advance(2.0)
        await system.pause_schedule(reference, note=f"vendor down {HOSTILE}")
        await clock.advance(1.0)
        await system.resume_schedule(reference)
        await system.pause_schedule("standup", note="freeze")
        _, html, _ = await get(server)
        assert 'href="schedule?reference=every-second%3Cscript%3E' in html
        standup = html.split("standup", 1)[1].split("</tr>", 1)[0]
        assert '<q class="pause-note">freeze</q>' in standup
        assert "by tocsin" in standup
        assert 'datetime="2023-11-14T22:13:23+00:00"' in standup  # paused at T0 + 3 s
        status, page, _ = await get(server, "schedule", params={"reference": reference})
        assert status == 200
        assert HOSTILE not in page
        body = page.split('<div id="history">', 1)[1]
        outcomes = [cell.split("</span>")[0] for cell in body.split('class="outcome outcome-')[1:]]
        assert outcomes == ['paused">paused', 'delivered">delivered', 'delivered">delivered']
        status, page, _ = await get(server, "schedule", params={"reference": "standup"})
        assert "freeze" in page
        assert "Nothing recorded yet" in page
        status, text, _ = await get(server, "schedule", params={"reference": "nope"})
        assert status == 404
        assert "No live schedule with reference <code>nope</code>" in text
        status, _, _ = await get(server, "schedule", headers={})  # the token is needed here too
        assert status == 401
