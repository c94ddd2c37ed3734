# SPDX-License-Identifier: Apache-2.0
"""Stored schedules in the console over real HTTP: listed with spec, version, next
instant, last outcome and pause note; Pause (with a note), Resume and Trigger buttons
behind the token and the CSRF token; a ledger page per stored schedule; the same from
`tocsin console --store` (no running system)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import aiohttp
import pytest
from tests.schedules import jobs_for_tests as jobs

from tocsin import ActorSystem, ManualClock
from tocsin.console import Console, serve, serve_store
from tocsin.durable import Call, DurableActor
from tocsin.schedules import Interval, Schedule
from tocsin.stores import MemoryStore

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC).timestamp()
RECORD = "tests.schedules.jobs_for_tests.record"


@pytest.fixture(autouse=True)
def _runs() -> Iterator[None]:
    jobs.RUNS.clear()
    yield
    jobs.RUNS.clear()


@asynccontextmanager
async def console() -> AsyncIterator[tuple[ActorSystem, ManualClock, Console]]:
    clock = ManualClock(wall=T0)
    declared = [Schedule("hourly-<b>", Interval(10), RECORD)]
    async with ActorSystem("n1", clock=clock, store=MemoryStore(), schedules=declared) as system:
        await clock.advance(11)
        server = await serve(system, "127.0.0.1:0", interval=0.05)
        async with server:
            yield system, clock, server


def _auth(server: Console) -> dict[str, str]:
    return {"Authorization": f"Bearer {server.token}"}


async def _text(http: aiohttp.ClientSession, url: str) -> tuple[int, str]:
    async with http.get(url) as r:
        return r.status, await r.text()


def _csrf(html: str) -> str:
    return html.split('name="csrf" value="', 1)[1].split('"', 1)[0]


async def test_the_list_the_buttons_and_the_ledger_page() -> None:
    async with console() as (system, clock, server):
        http = aiohttp.ClientSession(headers=_auth(server))
        async with http:
            status, page = await _text(http, server.url)
            assert status == 200
            stored = page.split('id="stored"', 1)[1].split("</section>", 1)[0]
            assert "hourly-&lt;b&gt;" in stored  # escaped, never markup
            assert "every 10 s" in stored
            assert "delivered" in stored
            assert "2026-03-02T09:00:20Z" in stored  # the next instant
            form = {"csrf": _csrf(page), "id": "hourly-<b>", "note": "OPS-42 <i>"}
            async with http.post(
                server.url + "schedules/pause", data=form, allow_redirects=False
            ) as r:
                assert r.status == 303
            info = await system.schedules.get("hourly-<b>")
            assert (info.paused, info.note, info.version) == (True, "OPS-42 <i>", 1)
            status, page = await _text(http, server.url)
            stored = page.split('id="stored"', 1)[1].split("</section>", 1)[0]
            assert "OPS-42 &lt;i&gt;" in stored
            assert 'action="schedules/resume"' in stored
            async with http.post(server.url + "schedules/trigger", data=form) as r:
                assert r.status == 200  # followed to the page
            await clock.advance(0)
            assert [run[2] for run in jobs.RUNS] == [False, True]  # the tick, then manual
            async with http.post(server.url + "schedules/resume", data=form) as r:
                assert r.status == 200
            assert not (await system.schedules.get("hourly-<b>")).paused
            status, ledger = await _text(http, server.url + "stored?id=hourly-%3Cb%3E")
            assert status == 200
            assert ledger.count("outcome-delivered") == 2
            assert ledger.count("manual run") == 1  # the trigger's row says so
            status, _ = await _text(http, server.url + "stored?id=nope")
            assert status == 404


async def test_actions_need_the_csrf_token_and_name_an_unknown_id() -> None:
    async with console() as (_system, _clock, server):
        async with aiohttp.ClientSession(headers=_auth(server)) as http:
            _, page = await _text(http, server.url)
            async with http.post(server.url + "schedules/pause", data={"id": "x"}) as r:
                assert r.status == 403
            form = {"csrf": _csrf(page), "id": "nope"}
            async with http.post(server.url + "schedules/pause", data=form) as r:
                assert r.status == 404
                assert "'nope'" in await r.text()
        async with (
            aiohttp.ClientSession() as anonymous,
            anonymous.post(server.url + "schedules/pause", data=form) as r,
        ):
            assert r.status == 401  # no token: the sign-in page, nothing done


async def test_a_store_console_lists_and_pauses_stored_schedules_without_a_system() -> None:
    store = MemoryStore()
    clock = ManualClock(wall=T0)
    async with ActorSystem("n1", clock=clock, store=store) as system:
        await system.schedules.add(Schedule("r", Interval(60), RECORD))
    server: Any = await serve_store(store, "127.0.0.1:0", interval=0.05)
    async with server, aiohttp.ClientSession(headers=_auth(server)) as http:
        _, page = await _text(http, server.url)
        assert "every 60 s" in page
        form = {"csrf": _csrf(page), "id": "r", "note": "from the store console"}
        async with http.post(server.url + "schedules/pause", data=form) as r:
            assert r.status == 200
    row = await store.schedule_row("r")
    assert row is not None
    assert (row.paused, row.note, row.paused_by) == (True, "from the store console", "console")


class Minutely(DurableActor):
    kind = "console.Minutely<i>"

    async def tick(self, payload: Any) -> None:
        del payload

    async def start(self, payload: Any) -> None:
        await self.every(60, "tick", id="m")


async def test_a_durable_task_has_a_history_page_beside_the_stored_schedules() -> None:
    clock = ManualClock(wall=T0)
    async with ActorSystem("n1", clock=clock, store=MemoryStore()) as system:
        pid = await system.durable(Minutely, "u-1")
        await pid.ask(Call("start"))
        await clock.advance(60)  # one run
        await system.durable_tasks(Minutely, "u-1").pause_schedule("m", note="OPS-1 <b>")
        await clock.advance(120)  # two instants pass paused
        server = await serve(system, "127.0.0.1:0", interval=0.05)
        async with server, aiohttp.ClientSession(headers=_auth(server)) as http:
            status, page = await _text(http, server.url)
            assert status == 200
            link = "task?kind=console.Minutely%3Ci%3E&amp;identity=u-1&amp;id=m"
            assert link in page.split('id="tasks"', 1)[1]
            status, task = await _text(http, server.url + link.replace("&amp;", "&"))
            assert status == 200
            assert "console.Minutely&lt;i&gt;/u-1" in task  # escaped, never markup
            assert "paused: OPS-1 &lt;b&gt;" in task
            assert task.count("outcome-paused") == 2
            assert task.count("outcome-delivered") == 1
            status, _ = await _text(http, server.url + "task?kind=x&identity=y&id=nope")
            assert status == 404
