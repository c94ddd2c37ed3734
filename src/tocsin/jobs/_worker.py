# SPDX-License-Identifier: Apache-2.0
"""How a worker runs jobs: each job is a durable kind, its runs are durable tasks.

A run enqueued for job ``billing.report`` is a task row of kind ``job:billing.report``,
identity one of :data:`SHARDS` shard names (a stable hash of the run's id), task id the
run's id. Everything durable tasks promise comes with it, unchanged: at least once, a
failed run retried with backoff (the job's :class:`~tocsin.Retry`), then parked in the
durable tasks' parked list (``tocsin tasks list --state parked``); in cluster mode each
shard has one activation in the cluster, fenced by its epoch. One exception: the run of a
stored schedule with ``delivery=at_most_once`` is marked started in the store (a
put-if-absent claim, then its ledger row's start) before its handler is called, and a run
found started already or failing is not run again (its ledger row says ``failed``).

Why shards, and why a kind per job:

* One identity per run would run every run in parallel, but each identity keeps a handle
  in the durable runtime for the life of the process: memory would grow with every run
  ever made. One identity per job would serialize all its runs (an identity runs its
  tasks one at a time). :data:`SHARDS` identities per job bound the memory and let up
  to that many runs of one job proceed at once, spread over the cluster's nodes.
* A kind per job makes "a due job no running node knows waits" fall out of the durable
  runtime: it activates only kinds whose class this process defined, and a job's class
  is defined when its ``@job`` runs. A worker that never imported the job leaves its runs
  in the store (and logs once that they wait); a worker that did runs them.
"""

from __future__ import annotations

import logging
import zlib
from typing import Any, Final, Protocol

from ..actor import Outcome, ReceiveContext, Tick, TickNotDelivered
from ..durable import DurableActor
from ..stores import ScheduleTickRow
from ._context import JobContext
from ._registry import JobSpec, on_register

__all__ = [
    "INTERRUPTED",
    "KIND_PREFIX",
    "SHARDS",
    "STARTS_SERVICE",
    "TASK_NAME",
    "JobActor",
    "actor_class",
    "kind_of",
    "shard_of",
    "start_mark",
]

#: Durable kinds of jobs are ``job:<name>``.
KIND_PREFIX: Final = "job:"
#: Identities (shards) of each job: runs of one job proceed at most this many at a time
#: per cluster, each shard's runs one after another.
SHARDS: Final = 16
#: The task name of every run (no method of the actor has it: runs reach ``on_task``).
TASK_NAME: Final = "job"
#: Run budget when the job gives none (the durable tasks' default).
DEFAULT_TIMEOUT: Final = 900.0

#: The ledger detail of an at-most-once run found started before (cut short by a crash,
#: a stop or a lapsed shard lease): it is not run again.
INTERRUPTED: Final = "interrupted: at_most_once, not run again"
#: The store claims marking an at-most-once run started are ``run-started:<id>@<instant>``
#: (never a schedule's claim key, ``schedule:...``), kept this long: past it the ledger
#: row's start still stops a second run while the schedule's ``history`` keeps the row.
START_MARK_PREFIX: Final = "run-started:"
START_MARK_SECONDS: Final = 7 * 86400.0

#: The runtime service told when a scheduled run starts or fails (the stored-schedule
#: runner: its start-lateness histogram, its outcome counts); a node without it records
#: the ledger all the same.
STARTS_SERVICE: Final = "schedules"

_log = logging.getLogger("tocsin.jobs")

_CLASSES: dict[str, type[JobActor]] = {}


class _Observer(Protocol):
    def observe_start(self, late: float) -> None: ...
    def observe_outcome(self, schedule_id: str, outcome: str) -> None: ...


def kind_of(name: str) -> str:
    """The durable kind of job ``name``."""
    return KIND_PREFIX + name


def shard_of(run_id: str) -> str:
    """The identity (shard) of run ``run_id``: stable across processes and restarts.

    Runs whose ids share the part before their last ``@`` share a shard, and so run one
    after another: a stored schedule's runs (``<schedule id>@<instant>``) never overlap.
    """
    key = run_id.rpartition("@")[0] or run_id
    return str(zlib.crc32(key.encode("utf-8")) % SHARDS)


class JobActor(DurableActor):
    """The durable actor behind one job (one subclass per job; internal).

    Its tasks name no method of the class, so each run reaches :meth:`on_task`, which
    calls the job function with a fresh :class:`JobContext`.
    """

    kind = "tocsin.job"
    spec: JobSpec | None = None
    logger: logging.Logger = logging.getLogger("tocsin.jobs")

    async def on_task(self, name: str, payload: Any, ctx: ReceiveContext) -> None:
        spec = self.spec
        if spec is None:  # the base class is never given runs
            raise RuntimeError(f"job actor {type(self).__qualname__} has no job")
        args, kwargs, tick = _arguments(payload)
        run = self.current_task
        if run is None:  # pragma: no cover - on_task runs only inside a task run
            raise RuntimeError("a job ran outside a durable task run")
        ledger = _ledger(payload) if tick is not None else None
        once = ledger is not None and ledger[3]
        if tick is not None and ledger is not None:
            if once and not await self._start_once(ctx, tick, ledger):
                return  # started before and cut short: at most once, so not again
            # The instant's ledger row follows the run: started (delivered on the
            # first attempt, retried after), failed with the error's text.
            again = run.attempt > 1 or ledger[2]
            outcome = Outcome.RETRIED if again else Outcome.DELIVERED
            await self._ledger(ctx, tick, ledger, str(outcome), None)
        context = JobContext(
            system=ctx.system,
            job_id=run.reference,
            attempt=run.attempt,
            tick=tick,
            fence=run.fence if tick is None else tick.fence,
            logger=self.logger,
            name=spec.name,
        )
        if tick is None or ledger is None:
            await spec.function(context, *args, **kwargs)
            return
        try:
            await spec.function(context, *args, **kwargs)
        except Exception as exc:
            text = f"{type(exc).__name__}: {exc}"
            await self._ledger(ctx, tick, ledger, str(Outcome.FAILED), text)
            if not once:
                raise  # the durable runtime retries it with backoff, then parks it
            # At most once: the handler ran; a retry would run it a second time. The
            # run ends here (its row says failed with the error's text).
            self.logger.warning(
                "stored schedule %r: the run of %s failed and is not retried "
                "(delivery=at_most_once): %s",
                tick.reference,
                tick.instant,
                text,
                exc_info=True,
            )

    async def _start_once(
        self, ctx: ReceiveContext, tick: Tick, ledger: tuple[int, int, bool, bool]
    ) -> bool:
        """Mark an at-most-once run started in the store before its handler runs;
        whether it may run. It may not when a run of the same instant started before
        (its ledger row has a start, or its start mark is taken: a crash, a stop or a
        lapsed shard lease cut that run short): its row then says failed with
        :data:`INTERRUPTED`. A store error raises before the handler ran (the durable
        runtime tries again later; nothing ran)."""
        handle = self._handle
        runtime = handle.runtime
        store = handle.store
        instant = tick.instant.timestamp()
        # Every store tocsin ships keeps the ledger and the claims (a ScheduleStore).
        read = getattr(store, "schedule_tick")  # noqa: B009
        claim = getattr(store, "claim_schedule_tick")  # noqa: B009
        found = await read(tick.reference, instant, manual=tick.manual)
        ran = found is not None and found.started is not None
        if not ran:
            # Put-if-absent: of two runs of one instant racing (a stalled owner woken
            # after its shard moved), one wins the mark and only it calls the handler.
            now = runtime.clock.wall()
            key = start_mark(tick.reference, instant, manual=tick.manual)
            ran = not await claim(key, runtime.name, now, now + START_MARK_SECONDS)
        if ran:
            await self._ledger(ctx, tick, ledger, str(Outcome.FAILED), INTERRUPTED)
            self.logger.warning(
                "stored schedule %r: the run of %s started before and was cut short; "
                "delivery=at_most_once, so it is not run again",
                tick.reference,
                tick.instant,
            )
        return not ran

    async def _ledger(
        self,
        ctx: ReceiveContext,
        tick: Tick,
        ledger: tuple[int, int, bool, bool],
        outcome: str,
        detail: str | None,
    ) -> None:
        """Write the ledger row of ``tick``'s instant (a failed write is logged: the
        ledger never fails a run)."""
        handle = self._handle
        runtime = handle.runtime
        now = runtime.clock.wall()
        instant = tick.instant.timestamp()
        version, history, _, _ = ledger
        failed = outcome == Outcome.FAILED
        row = ScheduleTickRow(
            id=tick.reference,
            instant=instant,
            at=now,
            outcome=outcome,
            node=runtime.name,
            version=version,
            detail=detail,
            started=None if failed else now,
            manual=tick.manual,
        )
        try:
            # Every store tocsin ships keeps the ledger (a ScheduleStore).
            record = getattr(handle.store, "record_schedule_tick")  # noqa: B009
            await record(row, history, replace=True)
        except Exception as exc:
            _log.warning(
                "stored schedule %r: the ledger row of %s failed: %s",
                tick.reference,
                tick.instant,
                exc,
            )
        observer: _Observer | None = None
        found = runtime.services.get(STARTS_SERVICE)
        if hasattr(found, "observe_start") and hasattr(found, "observe_outcome"):
            observer = found
        if observer is not None and outcome != Outcome.DELIVERED:
            observer.observe_outcome(tick.reference, outcome)  # tocsin_schedule_ticks_total
        if failed:
            ctx.system.events.publish(
                TickNotDelivered(tick.reference, tick.instant, Outcome.FAILED, detail, row.node)
            )
        elif observer is not None:
            observer.observe_start(now - instant)


def start_mark(reference: str, instant: float, *, manual: bool = False) -> str:
    """The store claim key marking the at-most-once run of ``reference``'s ``instant``
    started (``run-started:<id>@<instant>``; a manual run's ``<id>@manual@<instant>``)."""
    kind = "@manual" if manual else ""
    return f"{START_MARK_PREFIX}{reference}{kind}@{instant:.6f}"


def _arguments(payload: Any) -> tuple[list[Any], dict[str, Any], Tick | None]:
    """The stored arguments: ``{"a": [...], "k": {...}}``, and ``"t"``, a wire
    :class:`~tocsin.Tick`, for a run fired by a schedule."""
    if not isinstance(payload, dict):
        raise TypeError(f"a stored job run holds {{'a': args, 'k': kwargs}}, got {payload!r}")
    args = payload.get("a", [])
    kwargs = payload.get("k", {})
    if not isinstance(args, (list, tuple)) or not isinstance(kwargs, dict):
        raise TypeError(f"a stored job run holds {{'a': args, 'k': kwargs}}, got {payload!r}")
    wire = payload.get("t")
    tick = None if wire is None else Tick.from_wire(wire)
    return list(args), kwargs, tick


def _ledger(payload: dict[str, Any]) -> tuple[int, int, bool, bool] | None:
    """A stored schedule's run carries ``"s": [version, history, again, once]``: the
    ledger row to keep up to date (``again``: the instant was claimed again after its
    first winner went silent, so its run is a retry; ``once``: the schedule's delivery
    is at_most_once); a run fired any other way has none. A run stored before ``once``
    existed has three items and keeps the at-least-once behaviour it was stored with."""
    found = payload.get("s")
    if not isinstance(found, (list, tuple)) or len(found) not in (3, 4):
        return None
    version, history, again = found[:3]
    once = found[3] if len(found) == 4 else False
    if (
        isinstance(version, int)
        and isinstance(history, int)
        and isinstance(again, bool)
        and isinstance(once, bool)
        and not isinstance(version, bool)
        and not isinstance(history, bool)
    ):
        return version, history, again, once
    return None


def actor_class(spec: JobSpec) -> type[JobActor]:
    """The durable actor class of ``spec`` (made and registered by kind on first use)."""
    cls = _CLASSES.get(spec.name)
    if cls is not None and cls.spec is spec:
        return cls
    attributes: dict[str, Any] = {
        "kind": kind_of(spec.name),
        "spec": spec,
        "retry_policy": spec.retry,
        "task_timeout": DEFAULT_TIMEOUT if spec.timeout is None else spec.timeout,
        "logger": logging.getLogger(f"tocsin.jobs.{spec.name}"),
        "__module__": __name__,
        # The durable kind registry accepts a class redefined with the same module and
        # qualified name (a reloaded job) and refuses another class claiming the kind.
        "__qualname__": f"JobActor[{spec.name}]",
    }
    made = type(f"JobActor[{spec.name}]", (JobActor,), attributes)
    _CLASSES[spec.name] = made
    return made


# Every job registered in this process gets its durable class at once: a worker polling
# the store must find the kind of a due run as soon as the job's module is imported.
on_register(actor_class)
