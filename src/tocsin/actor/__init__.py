# SPDX-License-Identifier: Apache-2.0
"""The actor runtime: systems, actors, PIDs, contexts, supervision and events."""

from ._actor import Actor
from ._context import ReceiveContext
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
)
from ._pid import PID, NoSender
from ._supervision import Directive, Supervisor
from ._system import ActorSystem

__all__ = [
    "PID",
    "Actor",
    "ActorPassivated",
    "ActorReinstated",
    "ActorRestarted",
    "ActorStarted",
    "ActorStopped",
    "ActorSuspended",
    "ActorSystem",
    "DeadLetter",
    "DeadLetterReason",
    "Directive",
    "EventStream",
    "NoSender",
    "ReceiveContext",
    "Subscription",
    "Supervisor",
]
