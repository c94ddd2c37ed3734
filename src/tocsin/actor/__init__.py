# SPDX-License-Identifier: Apache-2.0
"""The actor kernel: actors, PIDs, contexts, supervision, passivation and events.

:class:`~tocsin.ActorSystem`, which composes this kernel with scheduling and durable
actors, lives in :mod:`tocsin.system` (import it from ``tocsin``).
"""

from ..triggers import Misfire, Outcome, Overlap, Tick, TickOutcome
from ._actor import Actor
from ._context import ReceiveContext, SystemView
from ._events import (
    ActorPassivated,
    ActorReinstated,
    ActorRestarted,
    ActorStarted,
    ActorStopped,
    ActorSuspended,
    DeadLetter,
    DeadLetterReason,
    EventStream,
    Subscription,
    TickNotDelivered,
)
from ._pid import PID, NoSender, parse_pid
from ._supervision import Directive, Supervisor

__all__ = [
    "PID",
    "Actor",
    "ActorPassivated",
    "ActorReinstated",
    "ActorRestarted",
    "ActorStarted",
    "ActorStopped",
    "ActorSuspended",
    "DeadLetter",
    "DeadLetterReason",
    "Directive",
    "EventStream",
    "Misfire",
    "NoSender",
    "Outcome",
    "Overlap",
    "ReceiveContext",
    "Subscription",
    "Supervisor",
    "SystemView",
    "Tick",
    "TickNotDelivered",
    "TickOutcome",
    "parse_pid",
]
