# SPDX-License-Identifier: Apache-2.0
"""The jobs of the web examples, and what runs them.

Web processes (web_fastapi.py, web_starlette.py, web_aiohttp.py, web_django.py) enqueue
``send_welcome`` through a ``tocsin.Client``; worker processes import this module and run
it:

    cd examples && tocsin run web_jobs:main --workers 2 --store sqlite:///app.db

Run as a script it checks itself: a Client enqueues, an in-process worker runs the job.
``lifespan_of`` drives an ASGI app's lifespan as uvicorn does (the examples' self-checks
use it; a server does this for you).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tocsin import ActorSystem, Client, JobContext, Retry, job

#: Where workers and web processes find the store (one URL for all of them).
STORE_ENV = "TOCSIN_STORE"


def store_url() -> str:
    """The durable store every process of the app shares (read at startup)."""
    return os.environ.get(STORE_ENV, "sqlite:///tocsin-web.db")


def outbox() -> Path:
    """Where ``send_welcome`` "sends" (a file, so that the example has a visible effect)."""
    return Path(os.environ.get("WELCOME_OUTBOX", "welcome-outbox.txt"))


# An explicit name: the default (module.qualname) would differ between a process that
# imports this file as `web_jobs` and one that imports it as `examples.web_jobs`.
@job(name="welcome.send", retry=Retry(base=2.0, cap=60.0), max_retries=5)
async def send_welcome(ctx: JobContext, user_id: int) -> None:
    """Send the welcome mail of ``user_id`` (at least once: retries reuse ctx.job_id)."""
    with outbox().open("a") as out:
        out.write(f"{user_id} {ctx.job_id}\n")
    ctx.logger.info("welcome sent to user %s", user_id)


async def main(system: ActorSystem) -> None:
    """``tocsin run web_jobs:main``: nothing to set up; importing this module registered
    the jobs, and each worker runs the runs due in the store."""


# -- the examples' self-checks ------------------------------------------------------------

Scope = MutableMapping[str, Any]
ASGIApp = Callable[
    [Scope, Callable[[], Awaitable[Scope]], Callable[[Scope], Awaitable[None]]], Awaitable[None]
]


@asynccontextmanager
async def lifespan_of(app: ASGIApp) -> AsyncIterator[None]:
    """Run ``app``'s ASGI lifespan startup, then its shutdown (what uvicorn does)."""
    inbox: asyncio.Queue[Scope] = asyncio.Queue()
    outbox_: asyncio.Queue[Scope] = asyncio.Queue()
    scope: Scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}

    async def serve() -> None:
        await app(scope, inbox.get, outbox_.put)

    task = asyncio.create_task(serve())
    await inbox.put({"type": "lifespan.startup"})
    started = await outbox_.get()
    if started["type"] != "lifespan.startup.complete":
        raise RuntimeError(f"lifespan startup failed: {started}")
    try:
        yield
    finally:
        await inbox.put({"type": "lifespan.shutdown"})
        await outbox_.get()
        await task


async def check(post: Callable[[int], Awaitable[int]]) -> None:
    """Start a worker, ``post(user_id)`` through a web app (its HTTP status), and wait
    until the worker sent the welcome. Raises if it did not within 30 s."""
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[STORE_ENV] = f"sqlite:///{tmp}/app.db"
        os.environ["WELCOME_OUTBOX"] = f"{tmp}/outbox.txt"
        async with ActorSystem("worker", store=store_url(), jobs=[__name__]):
            status = await post(7)
            assert status == 202, status
            async with asyncio.timeout(30):
                while not _welcomed(7):  # a file: nothing to wait on but time  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
        print("7 welcomed")


def _welcomed(user_id: int) -> bool:
    sent = outbox()
    return sent.exists() and any(
        line.split()[0] == str(user_id) for line in sent.read_text().splitlines()
    )


async def _self_check() -> None:
    async def post(user_id: int) -> int:
        async with Client(store_url()) as client:
            await client.jobs.enqueue(send_welcome, user_id)
        return 202

    await check(post)


if __name__ == "__main__":
    asyncio.run(_self_check())
