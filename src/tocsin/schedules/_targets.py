# SPDX-License-Identifier: Apache-2.0
"""Where a stored schedule's instant goes: a job (a function found by its stable name) or
a durable identity's method (a one-shot task row, run as any durable task is).

A job name is looked up in the job registry (``@job``), never imported: nothing read
from the store is evaluated or loaded. A job's run is a durable job run
(:func:`tocsin.jobs.job_row`), stored by the runner; a name no module of the deciding
node registered is stored all the same and waits for a worker that imported it (its
ledger row says so).
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .._codec import encode
from ..jobs import JobSpec, resolve
from ..stores import TaskRow, UpsertTask

if TYPE_CHECKING:
    from ..durable._spi import DurableRuntime
    from ._values import Durable

__all__ = ["find_job", "queue_durable", "task_id"]

_log = logging.getLogger("tocsin.schedules")


def find_job(name: str) -> JobSpec:
    """The job registered as ``name`` in this process (``@job`` in a module it imported,
    ``ActorSystem(jobs=[...])``). A stored name is only looked up, never imported: what
    the store says runs no code a process did not load itself.

    Raises:
        JobNotFoundError: no job of that name in this process (the message names it).
    """
    return resolve(name)


def task_id(schedule_id: str, instant: float, *, manual: bool = False) -> str:
    """The id of the durable task row of ``instant`` (ISO 8601 UTC, milliseconds): a
    second delivery of the same instant replaces its pending row, never adds one. A
    manual run's is ``<id>@manual:<instant>``: apart from the regular tick's, and still
    ``<id>`` before its last ``@`` (the same shard: runs of one schedule never overlap)."""
    moment = datetime.fromtimestamp(instant, UTC).isoformat(timespec="milliseconds")
    kind = "manual:" if manual else ""
    return f"{schedule_id}@{kind}{moment.replace('+00:00', 'Z')}"


async def queue_durable(
    durable: DurableRuntime,
    target: Durable,
    schedule_id: str,
    instant: float,
    now: float,
    *,
    manual: bool = False,
) -> str:
    """Write the one-shot task of ``instant`` for ``target``'s identity (the caller wakes
    its owner); the owner runs it (``method(payload)``, retried and parked as any task).
    Returns the task's id."""
    row = TaskRow(
        kind=target.kind,
        identity=target.identity,
        id=task_id(schedule_id, instant, manual=manual),
        name=target.method,
        payload=encode(target.payload),
        due=now,
        every=None,
        attempts=0,
        max_retries=5,
        created_at=now,
    )
    await durable.store.apply([UpsertTask(row)])
    return row.id
