# SPDX-License-Identifier: Apache-2.0
"""JobContext: what a running job knows about its run."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, final

from ..actor import Tick

__all__ = ["JobContext"]


@final
@dataclass(frozen=True, slots=True)
class JobContext:
    """The first argument of every job: ``async def f(ctx: JobContext, *args, **kwargs)``.

    Made by tocsin for each run (build one yourself only to call a job directly in a
    unit test).

    Attributes:
        system: the :class:`~tocsin.ActorSystem` running the job (spawn, ask, enqueue
            more work from here).
        job_id: the run's id: what ``enqueue`` returned (stable across retries, and the
            upsert key when ``enqueue(id=...)`` gave it): a natural idempotency key.
        attempt: 1 for the first run, 2 for the first retry, ...
        tick: the :class:`~tocsin.Tick` of a run fired by a schedule (its ``instant``
            and ``fence``), ``None`` for an enqueued run.
        fence: in cluster mode the owner's epoch, which grows with every change of
            owner (a zombie's write is refused below a newer fence); ``None`` otherwise.
        logger: a logger named ``tocsin.jobs.<job name>``.
        name: the job's registered name.
    """

    system: Any
    job_id: str
    attempt: int
    tick: Tick | None
    fence: int | None
    logger: logging.Logger
    name: str = ""
