# SPDX-License-Identifier: Apache-2.0
"""FastAPI: each web worker holds a tocsin Client; `tocsin run` workers run the jobs.

Serve and work (two commands, one store):

    cd examples
    TOCSIN_STORE=sqlite:///app.db uvicorn web_fastapi:app --workers 4
    tocsin run web_jobs:main --workers 2 --store sqlite:///app.db

Run as a script it checks itself in one process: python examples/web_fastapi.py
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from web_jobs import check, lifespan_of, send_welcome, store_url

from tocsin import Client


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    # One Client per web worker process: it opens the store, runs nothing, and closes
    # when uvicorn (or gunicorn) stops the worker on SIGTERM.
    async with Client(store_url()) as client:
        app.state.tocsin = client
        yield


app = FastAPI(lifespan=lifespan)


@app.post("/signup/{user_id}", status_code=202)
async def signup(user_id: int, request: Request) -> dict[str, str]:
    client: Client = request.app.state.tocsin
    # The id makes a double submit one welcome, not two.
    run_id = await client.jobs.enqueue(send_welcome, user_id, id=f"welcome-{user_id}")
    return {"job": run_id}


async def _post(user_id: int) -> int:
    import httpx

    async with lifespan_of(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://app") as http:
            return (await http.post(f"/signup/{user_id}")).status_code


if __name__ == "__main__":
    asyncio.run(check(_post))
