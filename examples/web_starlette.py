# SPDX-License-Identifier: Apache-2.0
"""Starlette: the lifespan opens a tocsin Client per web worker; handlers enqueue.

    cd examples
    TOCSIN_STORE=sqlite:///app.db uvicorn web_starlette:app --workers 4
    tocsin run web_jobs:main --workers 2 --store sqlite:///app.db

Run as a script it checks itself in one process: python examples/web_starlette.py
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from web_jobs import check, lifespan_of, send_welcome, store_url

from tocsin import Client


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    # One Client per web worker process, closed when the server stops the worker.
    async with Client(store_url()) as client:
        app.state.tocsin = client
        yield


async def signup(request: Request) -> JSONResponse:
    client: Client = request.app.state.tocsin
    user_id = int(request.path_params["user_id"])
    run_id = await client.jobs.enqueue(send_welcome, user_id, id=f"welcome-{user_id}")
    return JSONResponse({"job": run_id}, status_code=202)


app = Starlette(
    routes=[Route("/signup/{user_id:int}", signup, methods=["POST"])], lifespan=lifespan
)


async def _post(user_id: int) -> int:
    import httpx

    async with lifespan_of(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            return (await http.post(f"/signup/{user_id}")).status_code


if __name__ == "__main__":
    asyncio.run(check(_post))
