# SPDX-License-Identifier: Apache-2.0
"""tocsin: an asyncio actor runtime whose sense of time is built in."""

from __future__ import annotations

from .clock import Clock, ManualClock, SystemClock
from .errors import (
    ActorNameTakenError,
    ActorNotFoundError,
    ActorSuspendedError,
    ActorSystemNotStartedError,
    AskTimeoutError,
    CodecError,
    DeadActorError,
    InvalidCronExpressionError,
    InvalidIntervalError,
    InvalidStoreURLError,
    RemotingDisabledError,
    ScheduleAlreadyExistsError,
    ScheduleNotFoundError,
    ScheduleReferenceRequiredError,
    StoreError,
    TaskNotFoundError,
    TocsinError,
)

__version__ = "0.1.0.dev0"

__all__ = [
    "ActorNameTakenError",
    "ActorNotFoundError",
    "ActorSuspendedError",
    "ActorSystemNotStartedError",
    "AskTimeoutError",
    "Clock",
    "CodecError",
    "DeadActorError",
    "InvalidCronExpressionError",
    "InvalidIntervalError",
    "InvalidStoreURLError",
    "ManualClock",
    "RemotingDisabledError",
    "ScheduleAlreadyExistsError",
    "ScheduleNotFoundError",
    "ScheduleReferenceRequiredError",
    "StoreError",
    "SystemClock",
    "TaskNotFoundError",
    "TocsinError",
]
