# SPDX-License-Identifier: Apache-2.0
"""Jobs: plain async functions, run durably, enqueued from a worker or from a Client.

Run: python examples/jobs_quickstart.py
"""

from __future__ import annotations

import asyncio
import tempfile

from tocsin import ActorSystem, Client, JobContext, Retry, job

SENT: list[str] = []
ALL_SENT = asyncio.Event()


@job(retry=Retry(base=0.1, cap=1.0), max_retries=3)  # registered as "__main__.send_welcome"
async def send_welcome(ctx: JobContext, user_id: int, *, lang: str = "en") -> None:
    # At least once: a retry, or a crash before the run was recorded, runs it again with
    # the same ctx.job_id. Make the effect idempotent on it.
    ctx.logger.info("welcome %s (run %s, attempt %d)", user_id, ctx.job_id, ctx.attempt)
    SENT.append(f"{user_id}:{lang}")
    if len(SENT) == 3:
        ALL_SENT.set()


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = f"sqlite:///{tmp}/app.db"
        async with ActorSystem("worker", store=store) as system:
            await system.jobs.enqueue(send_welcome, 1)
            await system.jobs.enqueue(send_welcome, 2, lang="fr", delay=0.2)
            # A process that only produces work (a web worker) holds a Client on the
            # same store; the worker above sees its runs within about 10 ms.
            async with Client(store) as client:
                await client.jobs.enqueue(send_welcome, 3, id="welcome-3", delay=1)
                # The same id again replaces the pending run: still one welcome for 3.
                await client.jobs.enqueue(send_welcome, 3, id="welcome-3", delay=1)
            async with asyncio.timeout(30):
                await ALL_SENT.wait()
    print(sorted(SENT))  # ['1:en', '2:fr', '3:en']


if __name__ == "__main__":
    asyncio.run(main())
