# SPDX-License-Identifier: Apache-2.0
"""tocsin: an asyncio actor runtime whose sense of time is built in.

Timers and repeating ticks owned by actors, Quartz cron, and durable per-actor tasks
that survive crashes, all driven by one controllable clock.
"""

from __future__ import annotations

import typing  # a module, so `tocsin.TYPE_CHECKING` is not a public name

from ._client import Client
from ._version import __version__ as __version__
from .actor import (
    PID,
    Actor,
    ActorPassivated,
    ActorReinstated,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    ActorSuspended,
    DeadLetter,
    DeadLetterReason,
    Directive,
    EventStream,
    Misfire,
    NoSender,
    Outcome,
    Overlap,
    ReceiveContext,
    Subscription,
    Supervisor,
    Tick,
    TickNotDelivered,
    TickOutcome,
    parse_pid,
)
from .clock import Clock, ManualClock, SystemClock
from .cluster import (
    Cluster,
    ClusterMetrics,
    LeaseLost,
    LeaseRegained,
    Member,
    NodeJoined,
    NodeLeft,
)
from .cron import Calendar, CronExpression, DSTPolicy
from .durable import (
    Call,
    DurableActor,
    FenceGuard,
    Retry,
    RetryDecision,
    RetryPolicy,
    TaskParked,
    TaskRecord,
    TaskTimeoutError,
)
from .errors import (
    ActorNameTakenError,
    ActorNotFoundError,
    ActorStartError,
    ActorSuspendedError,
    ActorSystemNotStartedError,
    AddressInUseError,
    AskTimeoutError,
    BackpressureError,
    ClusterDisabledError,
    CodecError,
    CoordinatorError,
    CoordinatorUnavailableError,
    DeadActorError,
    FencedError,
    InvalidCoordinatorURLError,
    InvalidCronExpressionError,
    InvalidIntervalError,
    InvalidStoreURLError,
    InvalidTimezoneError,
    JobNotFoundError,
    MethodNotFoundError,
    NodeNameTakenError,
    NodeUnreachableError,
    NotOwnerError,
    RemoteActorError,
    RemotingDisabledError,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    ScheduleReferenceRequiredError,
    StoreError,
    TaskNotFoundError,
    TimezoneMismatchError,
    TocsinError,
    WrongEventLoopError,
)
from .jobs import JobContext, job
from .remote import RemoteMetrics, Remoting
from .schedules import Cron, Durable, Interval, Once, Schedule, StoredSchedule
from .scheduling import ScheduleInfo, ScheduleKind, SchedulerMetrics
from .system import ActorSystem
from .triggers import Delivery

if typing.TYPE_CHECKING:
    from ._run import run
else:
    # Not seen by type checkers: a module ``__getattr__`` would make every misspelt
    # ``tocsin.x`` type-check as Any.
    def __getattr__(name: str) -> typing.Any:
        """``tocsin.run``, loaded on first use: it manages processes and lives in its own
        layer above the facade (``tocsin._run``), so a plain ``import tocsin`` loads
        neither it nor the CLI nor argparse (issue 21)."""
        if name == "run":
            from ._run import run

            globals()["run"] = run  # later lookups are plain attribute reads
            return run
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "PID",
    "Actor",
    "ActorNameTakenError",
    "ActorNotFoundError",
    "ActorPassivated",
    "ActorReinstated",
    "ActorRestarted",
    "ActorStartError",
    "ActorStarted",
    "ActorStopped",
    "ActorSuspended",
    "ActorSuspendedError",
    "ActorSystem",
    "ActorSystemNotStartedError",
    "AddressInUseError",
    "AskTimeoutError",
    "BackpressureError",
    "Calendar",
    "Call",
    "Client",
    "Clock",
    "Cluster",
    "ClusterDisabledError",
    "ClusterMetrics",
    "CodecError",
    "CoordinatorError",
    "CoordinatorUnavailableError",
    "Cron",
    "CronExpression",
    "DSTPolicy",
    "DeadActorError",
    "DeadLetter",
    "DeadLetterReason",
    "Delivery",
    "Directive",
    "Durable",
    "DurableActor",
    "EventStream",
    "FenceGuard",
    "FencedError",
    "Interval",
    "InvalidCoordinatorURLError",
    "InvalidCronExpressionError",
    "InvalidIntervalError",
    "InvalidStoreURLError",
    "InvalidTimezoneError",
    "JobContext",
    "JobNotFoundError",
    "LeaseLost",
    "LeaseRegained",
    "ManualClock",
    "Member",
    "MethodNotFoundError",
    "Misfire",
    "NoSender",
    "NodeJoined",
    "NodeLeft",
    "NodeNameTakenError",
    "NodeUnreachableError",
    "NotOwnerError",
    "Once",
    "Outcome",
    "Overlap",
    "ReceiveContext",
    "RemoteActorError",
    "RemoteMetrics",
    "Remoting",
    "RemotingDisabledError",
    "Retry",
    "RetryDecision",
    "RetryPolicy",
    "Schedule",
    "ScheduleAlreadyExistsError",
    "ScheduleInfo",
    "ScheduleKind",
    "ScheduleNotFoundError",
    "ScheduleReferenceRequiredError",
    "SchedulerMetrics",
    "StoreError",
    "StoredSchedule",
    "Subscription",
    "Supervisor",
    "SystemClock",
    "TaskNotFoundError",
    "TaskParked",
    "TaskRecord",
    "TaskTimeoutError",
    "Tick",
    "TickNotDelivered",
    "TickOutcome",
    "TimezoneMismatchError",
    "TocsinError",
    "WrongEventLoopError",
    "job",
    "parse_pid",
    "run",
]

# Public objects report the path users import them from (``tocsin.PID``, not
# ``tocsin.actor._pid.PID``) in reprs, tracebacks and docs, as httpx and trio do.
for _name in __all__:
    _obj = globals().get(_name)  # None for a name loaded on first use (``run``)
    if isinstance(_obj, type) and _obj.__module__.startswith("tocsin."):
        _obj.__module__ = "tocsin"
del _name, _obj
