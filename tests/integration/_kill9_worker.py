# SPDX-License-Identifier: Apache-2.0
"""Child process of ``test_kill9.py``: durable actors with hundreds of tasks on a real store.

Usage: ``python _kill9_worker.py LOG (sqlite PATH | postgres DSN SCHEMA) [--until-done]``

Every task run appends one line to LOG (flushed and fsync'd before the task method
returns), so a line in the log means "the method ran", whatever happens after:

    <event> <identity> <task id> <wall time> <os pid> <due>

``event`` is ``one`` (one-shot), ``every`` (recurring) or ``fail`` (a run that raises).
``due`` is the wall time the run was due at (the task's ``due`` as the run sees it in
``ctx.message``) for ``every`` runs, ``-`` otherwise: it lets the parent check the
recurring schedule itself, independently of how late a loaded machine ran it. Each
incarnation first writes ``start - - <wall time> <os pid> -``. The parent SIGKILLs
this process at random moments; ``--until-done`` runs until every one-shot has run and
every failing task is parked, then stops the system cleanly and exits 0.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

from tocsin import ActorSystem, ReceiveContext
from tocsin.durable import DurableActor, RetryPolicy, TaskRecord
from tocsin.stores import Store

IDENTITIES = [f"w-{i}" for i in range(10)]
ONE_SHOTS = 40  # per identity
EVERY = {"every-a": 0.5, "every-b": 0.7}  # per identity: id -> interval (s)
FAILING = 3  # per identity
FAIL_RETRIES = 2
SPREAD = 6.0  # seconds over which one-shots and failing tasks first come due
#: Short backoff (same formula, smaller base) so parking happens within seconds.
POLICY = RetryPolicy(base=0.2, cap=1.0)

_log_fd = -1


def log(event: str, identity: str, task_id: str, due: float | None = None) -> None:
    at = f"{due:.6f}" if due is not None else "-"
    line = f"{event} {identity} {task_id} {time.time():.6f} {os.getpid()} {at}\n".encode()
    os.write(_log_fd, line)  # O_APPEND: one write per line
    os.fsync(_log_fd)


class Kill9Worker(DurableActor):
    retry_policy = POLICY

    async def pre_start(self, ctx: ReceiveContext) -> None:
        for task_id, interval in EVERY.items():
            await self.every(interval, "tick", task_id, id=task_id)
        if await self.storage.get("seeded"):
            return
        # Seeding commits atomically with its flag: a kill never leaves half a seed.
        index = IDENTITIES.index(self.identity)
        async with self.transaction():
            for n in range(ONE_SHOTS):
                delay = 0.05 + SPREAD * ((n * 7 + index) % ONE_SHOTS) / ONE_SHOTS
                await self.schedule(delay, "one", n, id=f"one-{n}")
            for n in range(FAILING):
                delay = 0.05 + SPREAD * (n + 1) / (FAILING + 1)
                await self.schedule(delay, "fail", n, id=f"fail-{n}", max_retries=FAIL_RETRIES)
            await self.storage.put("seeded", True)

    async def one(self, n: int) -> None:
        log("one", self.identity, f"one-{n}")

    async def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> None:
        # The recurring "tick" has no method of its own: on_task sees the running task
        # (ctx.message), whose due time goes into the log.
        assert name == "tick", name
        record = ctx.message
        assert isinstance(record, TaskRecord)
        log("every", self.identity, payload, record.due.timestamp())

    async def fail(self, n: int) -> None:
        log("fail", self.identity, f"fail-{n}")
        raise RuntimeError(f"fail-{n} fails on purpose")


def make_store(args: list[str]) -> Store:
    if args[0] == "sqlite":
        from tocsin.stores.sqlite import SQLiteStore

        return SQLiteStore(args[1])
    from tocsin.stores.postgres import PostgresStore

    return PostgresStore(args[1], schema=args[2])


async def done(store: Store) -> bool:
    rows = await store.list_tasks(Kill9Worker.kind)
    one_shots = [r for r in rows if r.id.startswith("one-")]
    failing = [r for r in rows if r.id.startswith("fail-") and r.state != "parked"]
    return not one_shots and not failing


async def main(argv: list[str]) -> int:
    global _log_fd
    until_done = "--until-done" in argv
    args = [a for a in argv if a != "--until-done"]
    _log_fd = os.open(args[0], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    store = make_store(args[1:])
    # Before start(): the durable runtime may run due tasks while start() goes on, and a
    # kill landing then must not leave an incarnation with runs but no start line.
    log("start", "-", "-")
    async with ActorSystem("kill9", store=store) as system:
        for identity in IDENTITIES:
            await system.durable(Kill9Worker, identity)
        started = time.monotonic()
        while True:
            await asyncio.sleep(0.1)
            # Run a little after the last one-shot so the cadence after the last restart shows.
            if until_done and time.monotonic() - started > 3.0 and await done(store):
                break
            if time.monotonic() - started > 150:
                return 3  # the parent's deadline is shorter; never linger
    log("exit", "-", "-")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
