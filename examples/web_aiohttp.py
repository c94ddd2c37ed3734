# SPDX-License-Identifier: Apache-2.0
"""aiohttp: a cleanup context opens a tocsin Client per process; handlers enqueue.

    cd examples
    TOCSIN_STORE=sqlite:///app.db python -m aiohttp.web -H 127.0.0.1 -P 8080 web_aiohttp:make_app
    tocsin run web_jobs:main --workers 2 --store sqlite:///app.db

Run as a script it checks itself in one process: python examples/web_aiohttp.py
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from aiohttp import web
from web_jobs import check, send_welcome, store_url

from tocsin import Client

CLIENT = web.AppKey("tocsin", Client)


async def tocsin_client(app: web.Application) -> AsyncIterator[None]:
    async with Client(store_url()) as client:  # closed when the app shuts down
        app[CLIENT] = client
        yield


async def signup(request: web.Request) -> web.Response:
    user_id = int(request.match_info["user_id"])
    client = request.app[CLIENT]
    run_id = await client.jobs.enqueue(send_welcome, user_id, id=f"welcome-{user_id}")
    return web.json_response({"job": run_id}, status=202)


def make_app(argv: list[str] | None = None) -> web.Application:
    app = web.Application()
    app.cleanup_ctx.append(tocsin_client)
    app.router.add_post("/signup/{user_id:\\d+}", signup)
    return app


async def _post(user_id: int) -> int:
    from aiohttp.test_utils import TestClient, TestServer

    async with TestClient(TestServer(make_app())) as http:
        return (await http.post(f"/signup/{user_id}")).status


if __name__ == "__main__":
    asyncio.run(check(_post))
