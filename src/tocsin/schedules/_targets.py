# SPDX-License-Identifier: Apache-2.0
"""Where a stored schedule's instant goes: a job (a function found by its stable name) or
a durable identity's method (a one-shot task row, run as any durable task is).

A job name is looked up in the job registry when ``tocsin.jobs`` provides one, else
imported as ``module.qualname`` (the name ``@job`` gives by default): nothing read from
the store is evaluated, only looked up. A name no module of this process defines is not
run here (``failed``, naming it).
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, final

from .._codec import encode
from ..stores import TaskRow, UpsertTask

if TYPE_CHECKING:
    from ..actor import Tick
    from ..durable._spi import DurableRuntime
    from ._values import Durable

__all__ = ["RunContext", "find_job", "queue_durable", "task_id"]

_log = logging.getLogger("tocsin.schedules")


@final
@dataclass(frozen=True, slots=True)
class RunContext:
    """What a job run of a stored schedule is given as its first argument (the fields of
    the job context: ``system``, ``job_id``, ``attempt``, ``tick``, ``fence``, ``logger``)."""

    system: Any
    job_id: str
    attempt: int
    tick: Tick
    fence: int | None
    logger: logging.Logger


def find_job(name: str) -> Callable[..., Awaitable[Any]]:
    """The function registered or importable as ``name``.

    Raises:
        LookupError: no module of this process defines it (the message names it).
    """
    try:
        jobs = importlib.import_module("tocsin.jobs")
    except ImportError:
        jobs = None
    lookup = getattr(jobs, "find_job", None) if jobs is not None else None
    if callable(lookup):
        try:
            found = lookup(name)
        except LookupError:
            found = None
        if callable(found):
            return found  # type: ignore[no-any-return]
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            module = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        obj: Any = module
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute, None)
            if obj is None:
                break
        if obj is not None and callable(obj):
            return getattr(obj, "fn", obj)  # type: ignore[no-any-return]
    raise LookupError(
        f"no job named {name!r} in this process: import its module (ActorSystem(jobs=[...]))"
    )


def task_id(schedule_id: str, instant: float) -> str:
    """The id of the durable task row of ``instant`` (ISO 8601 UTC, milliseconds): a
    second delivery of the same instant replaces its pending row, never adds one."""
    moment = datetime.fromtimestamp(instant, UTC).isoformat(timespec="milliseconds")
    return f"{schedule_id}@{moment.replace('+00:00', 'Z')}"


async def queue_durable(
    durable: DurableRuntime, target: Durable, schedule_id: str, instant: float, now: float
) -> str:
    """Write the one-shot task of ``instant`` for ``target``'s identity and wake it here;
    the identity's owner runs it (``method(payload)``, retried and parked as any task).
    Returns the task's id."""
    row = TaskRow(
        kind=target.kind,
        identity=target.identity,
        id=task_id(schedule_id, instant),
        name=target.method,
        payload=encode(target.payload),
        due=now,
        every=None,
        attempts=0,
        max_retries=5,
        created_at=now,
    )
    await durable.store.apply([UpsertTask(row)])
    durable.wake(target.kind, target.identity, now)
    return row.id
