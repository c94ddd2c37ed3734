# SPDX-License-Identifier: Apache-2.0
"""tocsin: an asyncio actor runtime whose sense of time is built in.

Timers and repeating ticks owned by actors, Quartz cron, and durable per-actor tasks
that survive crashes, all driven by one controllable clock.
"""

from __future__ import annotations

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
    NoSender,
    ReceiveContext,
    Subscription,
    Supervisor,
    parse_pid,
)
from .clock import Clock, ManualClock, SystemClock
from .cluster import Cluster, ClusterMetrics, Member, NodeJoined, NodeLeft
from .cron import Calendar, CronExpression, DSTPolicy
from .durable import (
    Call,
    DurableActor,
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
    AskTimeoutError,
    CodecError,
    CoordinatorError,
    DeadActorError,
    FencedError,
    InvalidCoordinatorURLError,
    InvalidCronExpressionError,
    InvalidIntervalError,
    InvalidStoreURLError,
    InvalidTimezoneError,
    NodeNameTakenError,
    NodeUnreachableError,
    RemoteActorError,
    RemotingDisabledError,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    ScheduleReferenceRequiredError,
    StoreError,
    TaskNotFoundError,
    TocsinError,
    WrongEventLoopError,
)

# ActorSystem(console=...): the facade sits below tocsin.metrics / tocsin.console and never
# imports them; the top of the package registers the service instead (issue 14).
from .metrics._console import CONSOLE_SERVICE as _CONSOLE_SERVICE
from .remote import RemoteMetrics, Remoting
from .scheduling import ScheduleInfo, ScheduleKind, SchedulerMetrics
from .system import SERVICES as _SERVICES
from .system import ActorSystem

_SERVICES.setdefault("console", _CONSOLE_SERVICE)
del _SERVICES, _CONSOLE_SERVICE

__version__ = "0.1.0.dev0"

# `run` manages processes, so it lives in the cli layer; imported after __version__,
# which tocsin.cli reads while it loads.
from .cli._run import run  # noqa: E402

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
    "AskTimeoutError",
    "Calendar",
    "Call",
    "Clock",
    "Cluster",
    "ClusterMetrics",
    "CodecError",
    "CoordinatorError",
    "CronExpression",
    "DSTPolicy",
    "DeadActorError",
    "DeadLetter",
    "DeadLetterReason",
    "Directive",
    "DurableActor",
    "EventStream",
    "FencedError",
    "InvalidCoordinatorURLError",
    "InvalidCronExpressionError",
    "InvalidIntervalError",
    "InvalidStoreURLError",
    "InvalidTimezoneError",
    "ManualClock",
    "Member",
    "NoSender",
    "NodeJoined",
    "NodeLeft",
    "NodeNameTakenError",
    "NodeUnreachableError",
    "ReceiveContext",
    "RemoteActorError",
    "RemoteMetrics",
    "Remoting",
    "RemotingDisabledError",
    "RetryDecision",
    "RetryPolicy",
    "ScheduleAlreadyExistsError",
    "ScheduleInfo",
    "ScheduleKind",
    "ScheduleNotFoundError",
    "ScheduleReferenceRequiredError",
    "SchedulerMetrics",
    "StoreError",
    "Subscription",
    "Supervisor",
    "SystemClock",
    "TaskNotFoundError",
    "TaskParked",
    "TaskRecord",
    "TaskTimeoutError",
    "TocsinError",
    "WrongEventLoopError",
    "parse_pid",
    "run",
]

# Public objects report the path users import them from (``tocsin.PID``, not
# ``tocsin.actor._pid.PID``) in reprs, tracebacks and docs, as httpx and trio do.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) and _obj.__module__.startswith("tocsin."):
        _obj.__module__ = "tocsin"
del _name, _obj
