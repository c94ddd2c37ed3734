# SPDX-License-Identifier: Apache-2.0
"""bench/jobs.py's arq and Celery sides (run by an interpreter that has them installed,
never tocsin's: they are not tocsin dependencies; arq needs redis-py < 6 and Celery's
kombu >= 6.1, so each has its own).

``worker arq|celery REDIS_URL``: prints ``ready`` once consuming, runs until SIGTERM; each
run appends ``<enqueued> <started>`` to $BENCH_JOBS_OUT. ``produce arq|celery REDIS_URL
PRODUCERS JOBS PACE``: as bench/_jobs_tocsin.py. Both use their defaults (arq: max_jobs 10,
poll_delay 0.5 s; Celery: prefork, one process per core, the Redis broker's BRPOP).
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from typing import IO, Any

_OUT: IO[str] | None = None


def _record(enqueued: float) -> None:
    global _OUT
    started = time.time()
    if _OUT is None:
        _OUT = open(os.environ["BENCH_JOBS_OUT"], "a", buffering=1)  # noqa: SIM115
    _OUT.write(f"{enqueued} {started}\n")


# -- arq ---------------------------------------------------------------------------------


async def arq_record(ctx: dict[str, Any], enqueued: float) -> None:
    _record(enqueued)


def arq_worker(url: str) -> None:
    from arq.connections import RedisSettings
    from arq.worker import Worker

    async def ready(ctx: dict[str, Any]) -> None:
        print("ready", flush=True)

    Worker(
        functions=[arq_record],
        redis_settings=RedisSettings.from_dsn(url),
        on_startup=ready,
        handle_signals=True,
    ).run()


async def arq_produce(url: str, producers: int, jobs: int, pace: float) -> None:
    from arq import create_pool
    from arq.connections import RedisSettings

    pool = await create_pool(RedisSettings.from_dsn(url))  # one per process, shared

    async def one(count: int) -> None:
        for _ in range(count):
            await pool.enqueue_job("arq_record", time.time())
            if pace:
                await asyncio.sleep(pace)

    try:
        share = [jobs // producers + (1 if i < jobs % producers else 0) for i in range(producers)]
        await asyncio.gather(*(one(n) for n in share))
    finally:
        await pool.aclose()


# -- Celery ------------------------------------------------------------------------------


def _celery_app(url: str) -> Any:
    from celery import Celery

    app = Celery("bench_jobs", broker=url)
    app.conf.update(
        task_ignore_result=True, worker_hijack_root_logger=False, worker_redirect_stdouts=False
    )

    @app.task(name="celery_record")
    def celery_record(enqueued: float) -> None:
        _record(enqueued)

    return app


def celery_worker(url: str) -> None:
    from celery.signals import worker_ready

    app = _celery_app(url)
    worker_ready.connect(lambda **_: print("ready", flush=True), weak=False)
    app.worker_main(["worker", "--loglevel", "WARNING", "--without-gossip", "--without-mingle"])


def celery_produce(url: str, producers: int, jobs: int, pace: float) -> None:
    app = _celery_app(url)
    task = app.tasks["celery_record"]

    def one(count: int) -> None:
        for _ in range(count):
            task.delay(time.time())
            if pace:
                time.sleep(pace)

    share = [jobs // producers + (1 if i < jobs % producers else 0) for i in range(producers)]
    threads = [threading.Thread(target=one, args=(n,)) for n in share]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    role, system, url = sys.argv[1], sys.argv[2], sys.argv[3]
    if role == "worker":
        (arq_worker if system == "arq" else celery_worker)(url)
    else:
        producers, jobs, pace = int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
        if system == "arq":
            asyncio.run(arq_produce(url, producers, jobs, pace))
        else:
            celery_produce(url, producers, jobs, pace)
